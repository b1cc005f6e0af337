package client

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"math/rand/v2"
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
	// figures, and so that it knows who holds which task (a trainer that
	// is gone has its tasks handed out again at once). Default:
	// "hostname-pid-xxxx", the host's name, the process's id and four hex
	// digits drawn for this client (e.g. "gpu7-4242-9f3c"), or with a
	// client certificate in TLS its common name in place of the host's, as
	// a master started with -tls-client-ca wants (a name there must be the
	// certificate's common name, or begin with it and "-" or "/"): a trainer
	// restarted in a container, where the pid is often the same, must not
	// take its predecessor's name, or the master would wait for that one's
	// tasks to time out. A name given must be unique the same way. A name is
	// cut to wire.MaxTrainerNameBytes at a UTF-8 boundary, with control
	// characters replaced, as the master would (wire.TrainerName).
	Name string

	// Dataset is the dataset this client trains and reports about
	// (wire.Task.Dataset): every task it sends (GetTask's finished, the
	// zero Task included, TaskFinished and TaskFailed) and every progress
	// report names it, so that the master hands out that dataset's tasks
	// and books the reports there; StartRound and DatasetStatus are about
	// it too. Empty: wire.DefaultDataset ("train"), the dataset of
	// ReportDataset. A trainer that trains on one dataset and evaluates on
	// another uses one Client for each.
	Dataset string

	// ProgressInterval is how often Records reports how far it got in the
	// task it consumes (wire.Progress), so that after a fault the next
	// dispatch of the task starts there instead of at its first record;
	// it also reports when a loop ends in the middle of a task. 0 (the
	// default): as often as each task asks (wire.Task.ProgressMillis: a
	// fifth of its expected time, 1 s to 10 s), counted from the start of
	// the task, wire.DefaultProgressInterval (10s) when it asks nothing;
	// negative: never. Each report is one fenced write on the master.
	ProgressInterval time.Duration

	// Group, when its Ranks is set, makes this client rank Rank of a
	// group of ranks stepping together (wire's group.go): the master hands
	// it its share of each pass, and Records waits between passes once
	// its share is out (wire.TextRankDone) until the pass ends.
	Group wire.Group
	Rank  int

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
	if cfg.ProgressInterval == 0 {
		cfg.ProgressInterval = wire.DefaultProgressInterval
	}
	if cfg.Name == "" {
		cfg.Name = defaultName(certificateName(cfg.TLS))
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
// "host-pid-xxxx", xxxx drawn at each call, host being the common name of
// the client certificate, cn, or if "" the host's name, or "trainer" when
// the host has no name.
func defaultName(cn string) string {
	host := cn
	if host == "" {
		var err error
		if host, err = os.Hostname(); err != nil || host == "" {
			host = "trainer"
		}
	}
	return fmt.Sprintf("%s-%d-%04x", host, os.Getpid(), rand.Uint32()&0xffff)
}

// certificateName is the common name of the first client certificate of
// cfg, "" when it has none or it cannot be read: the name a master started
// with -tls-client-ca binds this trainer's name to.
func certificateName(cfg *tls.Config) string {
	if cfg == nil || len(cfg.Certificates) == 0 || len(cfg.Certificates[0].Certificate) == 0 {
		return ""
	}
	leaf := cfg.Certificates[0].Leaf
	if leaf == nil {
		var err error
		if leaf, err = x509.ParseCertificate(cfg.Certificates[0].Certificate[0]); err != nil {
			return ""
		}
	}
	return leaf.Subject.CommonName
}

func setDuration(d *time.Duration, def time.Duration) {
	if *d <= 0 {
		*d = def
	}
}
