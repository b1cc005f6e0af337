// Command trainer is the reference trainer: it takes tasks from the master
// through go/client, consumes their records and prints, for each pass, how
// many records and bytes it consumed and their digest.
//
//	trainer (-addr HOST:PORT | -endpoints URL,... [-namespace NS]) [-dataset 'PATTERN,...'] [-name NAME] [-json] [-prefetch N] [-v]
//	        [-tls-ca FILE [-tls-cert FILE -tls-key FILE] [-tls-server-name NAME]] [-token-file FILE]
//	        [-stall-task N | -stall-after N] [-fail-task N | -fail-after N]
//	        [-ranks W -rank R [-batch B]] [-checkpoint-every N] [-resume ID] [-restart NAME] [-trace FILE]
//
// -ranks, -rank, -batch, -checkpoint-every, -resume and -restart: a rank
// of a group and data checkpoints (checkpoint.go).
//
// The digest is client.Digest: the sum modulo 2^64 of the first 8 bytes
// (big-endian) of SHA-256(uint32 little-endian length ‖ record) over the
// records. It does not depend on their order, so the digests that several
// trainers print for a pass add up to the digest of the whole dataset. Only
// tasks consumed to the end count (those the trainer reports finished).
//
// One line per pass, printed when the next pass starts or at the end:
//
//	pass 0: 1000 records, 24000 bytes, digest 3fa2c1d09e6b7a55
//
// or with -json {"pass":0,"records":1000,"bytes":24000,"digest":"3fa2c1d09e6b7a55"}.
// With -json it also prints a line for each task consumed to the end, as it
// is consumed: {"pass":0,"task":7,"records":30,"bytes":720,"digest":"..."},
// so that a script can check which tasks of which pass were consumed.
//
// -dataset reports comma-separated glob patterns to the master before
// training (one trainer, or the operator, must). -dataset-name trains
// another dataset of the job than train (declared by the master's
// -datasets file or another trainer); a record of an index-range dataset
// has no data, and counts in the digests as its index, 8 bytes
// little-endian. -name is the name the
// trainer gives the master with every call, for its per-trainer figures
// (client.Config.Name; default "hostname-pid-xxxx", or with -tls-cert
// "CN-pid-xxxx", CN the certificate's common name). -stall-task N makes the
// trainer hang, until it is interrupted, on the first record of task N the
// first time it gets it; -fail-task N makes it report task N failed the first
// time it gets it: both demonstrate how the master recovers.
//
// To a master whose trainer port is locked: -tls-ca names the CA of the
// master's certificate (and turns TLS on), -tls-cert and -tls-key the
// trainer's certificate for a master started with -tls-client-ca, and
// -tls-server-name the name to check the master's certificate against when
// it is not the host dialled; -token-file names a file holding the master's
// token (TRAINER_TOKEN_FILE in the environment does the same). A refused
// certificate or token ends the trainer with exit 1 and says why.
//
// It exits 0 when the master says all passes are done, 1 on an error or when
// interrupted (SIGINT, SIGTERM), 2 on bad usage. Every flag may also be set
// with a TRAINER_<FLAG> environment variable (TRAINER_ADDR, ...).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/namsral/flag"
	"github.com/pkg/errors"
	"github.com/sirupsen/logrus"
	"github.com/trainmaster/master/go/client"
	"github.com/trainmaster/master/go/discovery"
	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/etcdconn"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// options are the parsed flags.
type options struct {
	addr       string
	etcd       etcdconn.Options
	namespace  string
	dataset    []string
	named      string // the dataset to train (client.Config.Dataset)
	name       string
	json       bool
	prefetch   int
	progress   time.Duration
	trace      string
	verbose    bool
	stallTask  int
	failTask   int
	stallAfter int
	failAfter  int
	delay      time.Duration
	lock       lockOptions
	group      groupOptions
}

// groupOptions are the flags of a rank of a group and of data
// checkpoints (checkpoint.go).
type groupOptions struct {
	rank, ranks, batch int
	checkpointEvery    int    // records, or a rank's batches; 0: none
	resume             int64  // the checkpoint to rewind to before training; 0: none
	restart            string // names this run's restart and its checkpoints
}

// lockOptions are the flags of a locked trainer port: TLS and the token.
type lockOptions struct {
	tlsCA, tlsCert, tlsKey, tlsServerName string
	tokenFile                             string
}

// run runs the trainer and returns its exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stderr, "trainer: %v\n", err)
		}
		return 2
	}
	cfg, err := o.config(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "trainer: %v\n", err)
		return 1
	}
	resolver, closeEtcd, err := o.resolver(ctx, cfg.Log)
	if err != nil {
		fmt.Fprintf(stderr, "trainer: %v\n", err)
		return 1
	}
	defer closeEtcd()
	c := client.New(resolver, cfg)
	defer c.Close()
	if err := train(ctx, c, o, stdout); err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			err = errors.Errorf("interrupted (%v)", err)
		}
		fmt.Fprintf(stderr, "trainer: %v\n", err)
		return 1
	}
	return 0
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSetWithEnvPrefix("trainer", "TRAINER", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	var dataset string
	fs.StringVar(&o.addr, "addr", "", "master address, host:port (or find the master through -endpoints)")
	o.etcd.Register(fs)
	fs.StringVar(&o.namespace, "namespace", "", "`prefix` of the job's etcd keys (with -endpoints)")
	fs.StringVar(&dataset, "dataset", "", "comma-separated glob patterns of RecordIO files to report as the dataset")
	fs.StringVar(&o.named, "dataset-name", "", "train the dataset of this `name` (default train); a record of an index-range dataset counts in the digest as its index, 8 bytes little-endian")
	fs.StringVar(&o.name, "name", "", "`name` given to the master with every call, for its per-trainer figures (default hostname-pid-xxxx; with -tls-cert, the certificate's common name in place of the host's, as a master with -tls-client-ca wants)")
	fs.BoolVar(&o.json, "json", false, "print one JSON object per pass")
	fs.IntVar(&o.prefetch, "prefetch", 0, "tasks read ahead (0: the client's default, negative: none)")
	fs.DurationVar(&o.progress, "progress-interval", 0, "report how far this trainer got in its task this often, so that after a fault the task resumes there and a straggling task can be split (0: as often as each task asks, 1s to 10s; negative: never)")
	fs.BoolVar(&o.verbose, "v", false, "log the client's retries")
	fs.IntVar(&o.stallTask, "stall-task", -1, "hang on task `N` the first time it comes, until interrupted (demo)")
	fs.IntVar(&o.failTask, "fail-task", -1, "report task `N` failed the first time it comes (demo)")
	fs.IntVar(&o.stallAfter, "stall-after", 0, "hang on the `N`-th task received, until interrupted (demo)")
	fs.IntVar(&o.failAfter, "fail-after", 0, "report the `N`-th task received failed (demo)")
	fs.DurationVar(&o.delay, "record-delay", 0, "pretend to train: sleep this long on every record (demo)")
	fs.StringVar(&o.trace, "trace", "", "append a line \"pass task position\" to this `file` for every record trained (fault accounting: cmd/chaos)")
	o.lock.register(fs)
	o.group.register(fs)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if err := o.group.check(); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() > 0:
		return o, errors.Errorf("unexpected arguments %q", fs.Args())
	case (o.addr == "") == (len(o.etcd.Endpoints) == 0):
		return o, errors.New("give either -addr or -endpoints")
	case (o.lock.tlsCert == "") != (o.lock.tlsKey == ""):
		return o, errors.New("give -tls-cert and -tls-key together")
	}
	for _, p := range strings.Split(dataset, ",") {
		if p = strings.TrimSpace(p); p != "" {
			o.dataset = append(o.dataset, p)
		}
	}
	return o, nil
}

// resolver finds the master: at -addr, or through etcd, following failovers.
func (o options) resolver(ctx context.Context, log logrus.FieldLogger) (client.Resolver, func(), error) {
	if o.addr != "" {
		return client.Static(o.addr), func() {}, nil
	}
	cli, err := o.etcd.Connect(ctx, log)
	if err != nil {
		return nil, nil, err
	}
	return discovery.NewResolver(cli, o.namespace), func() { cli.Close() }, nil
}

// config is the client's configuration: the name, logs on stderr
// (warnings, or everything with -v), TLS and the token, and the -fail-task
// hook.
func (o options) config(stderr io.Writer) (client.Config, error) {
	log := logrus.New()
	log.SetOutput(stderr)
	log.SetLevel(logrus.WarnLevel)
	if o.verbose {
		log.SetLevel(logrus.DebugLevel)
	}
	cfg := client.Config{Prefetch: o.prefetch, Name: o.name, Dataset: o.named, Log: log, ProgressInterval: o.progress,
		Group: wire.Group{Ranks: o.group.ranks, Batch: o.group.batch}, Rank: o.group.rank}
	if o.failTask >= 0 || o.failAfter > 0 {
		cfg.Inject = o.failOnce()
	}
	var err error
	if cfg.TLS, err = o.lock.tlsConfig(); err != nil {
		return cfg, err
	}
	cfg.Token, err = o.lock.token()
	return cfg, err
}

// failOnce fails task -fail-task the first time it comes, and the
// -fail-after-th task received.
func (o options) failOnce() func(wire.Task) error {
	var failed atomic.Bool
	var received atomic.Int64
	return func(t wire.Task) error {
		nth := received.Add(1)
		switch {
		case t.Index == o.failTask && failed.CompareAndSwap(false, true):
			return errors.Errorf("failed on purpose (-fail-task %d)", o.failTask)
		case nth == int64(o.failAfter):
			return errors.Errorf("failed on purpose (-fail-after %d)", o.failAfter)
		}
		return nil
	}
}
