package client

import (
	"crypto/tls"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/trainmaster/master/go/wire"
)

// Config tunes a Client. Its zero value is ready to use: every zero field
// takes the default named in its comment.
type Config struct {
	// MinBackoff is the first wait before a retry (default 100ms); each
	// further wait doubles, up to MaxBackoff (default 5s). Waits are
	// jittered between half and all of their length.
	MinBackoff time.Duration
	MaxBackoff time.Duration

	// Prefetch is how many tasks are fetched and read ahead while one is
	// being consumed (default 1). Negative means none: the next task is
	// fetched only once the current one is consumed.
	Prefetch int

	// DialTimeout bounds one attempt to connect to the master (default 5s).
	DialTimeout time.Duration

	// CallTimeout bounds one attempt of one call (default 30s). A call that
	// gets no reply in time is treated as a lost connection: the connection
	// is dropped and the call retried. It also bounds the final finish
	// reports sent when a loop ends because its context was cancelled.
	CallTimeout time.Duration

	// Log receives the client's logs: retries at debug level, failed tasks
	// at warning level. Nil means no logs.
	Log logrus.FieldLogger

	// TLS, if set, makes the client speak TLS to the master with it: RootCAs
	// holds the CA of the master's certificate (the system's when nil),
	// Certificates the client certificate of a master started with
	// -tls-client-ca, and ServerName the name to check the master's
	// certificate against (default: the host of the address dialled). A
	// certificate refused by either side is final: the call returns the
	// error instead of retrying.
	TLS *tls.Config

	// Token is the master's shared token (its -token-file), sent with
	// Master.Authenticate once per connection, before the first call. A
	// master that answers wire.TextUnauthorized (a wrong token, or none
	// given to a master that wants one) is final: the call returns that
	// error instead of retrying.
	Token string

	// Name is this trainer's name, sent with every task the client sends
	// (wire.Task.Trainer: GetTask's finished, the zero Task included,
	// TaskFinished and TaskFailed) so that the master can show per-trainer
	// figures. Default: "hostname-pid", the host's name and the process's
	// id (e.g. "gpu7-4242"). A name is cut to wire.MaxTrainerNameBytes at a
	// UTF-8 boundary, with control characters replaced, as the master
	// would (wire.TrainerName).
	Name string

	// Inject is for tests and demos of fault handling. When set, it is
	// called (from the prefetch goroutine) with every task received, before
	// its blocks are read; a non-nil error makes the client report the task
	// failed with that error's text, as if a block were unreadable, and move
	// on to the next task.
	Inject func(task wire.Task) error
}

// The defaults of Config's fields.
const (
	DefaultMinBackoff  = 100 * time.Millisecond
	DefaultMaxBackoff  = 5 * time.Second
	DefaultPrefetch    = 1
	DefaultDialTimeout = 5 * time.Second
	DefaultCallTimeout = 30 * time.Second
)

// withDefaults returns cfg with every zero field set to its default.
func (cfg Config) withDefaults() Config {
	setDuration(&cfg.MinBackoff, DefaultMinBackoff)
	setDuration(&cfg.MaxBackoff, DefaultMaxBackoff)
	setDuration(&cfg.DialTimeout, DefaultDialTimeout)
	setDuration(&cfg.CallTimeout, DefaultCallTimeout)
	if cfg.Name == "" {
		cfg.Name = defaultName()
	}
	cfg.Name = wire.TrainerName(cfg.Name)
	cfg.MaxBackoff = max(cfg.MaxBackoff, cfg.MinBackoff)
	switch {
	case cfg.Prefetch == 0:
		cfg.Prefetch = DefaultPrefetch
	case cfg.Prefetch < 0:
		cfg.Prefetch = 0
	}
	if cfg.Log == nil {
		quiet := logrus.New()
		quiet.SetOutput(io.Discard)
		quiet.SetLevel(logrus.PanicLevel)
		cfg.Log = quiet
	}
	return cfg
}

// defaultName is the name of a trainer whose Config.Name is empty:
// "hostname-pid" ("trainer-pid" when the host has no name).
func defaultName() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "trainer"
	}
	return fmt.Sprintf("%s-%d", host, os.Getpid())
}

func setDuration(d *time.Duration, def time.Duration) {
	if *d <= 0 {
		*d = def
	}
}
