package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/namsral/flag"
	"github.com/pkg/errors"

	"github.com/trainmaster/master/internal/etcdconn"
	"github.com/trainmaster/master/internal/etcdembed"
	"github.com/trainmaster/master/internal/masterbench"
)

// A master started by `master bench -cpuprofile` profiles the windows the
// bench signals to it.
func init() { masterbench.ProfileOnSignals() }

// runBench is `master bench`: it measures this binary as a master against
// a real etcd, embedded (fsync on) unless -endpoints names one.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, o, asJSON, err := parseBench(args, stderr)
	if err != nil {
		return err
	}
	if cfg.Master, err = os.Executable(); err != nil {
		return err
	}
	if cfg.Dir == "" {
		if cfg.Dir, err = os.MkdirTemp("", "masterbench-"); err != nil {
			return err
		}
		defer os.RemoveAll(cfg.Dir)
	}
	if len(o.Endpoints) == 0 {
		srv, err := etcdembed.Start(ctx, etcdembed.Config{Name: "bench", Dir: filepath.Join(cfg.Dir, "etcd")})
		if err != nil {
			return errors.WithMessage(err, "embedded etcd")
		}
		defer srv.Close()
		o.Endpoints = srv.Endpoints()
		cfg.Log.WithField("endpoint", o.Endpoints[0]).Info("embedded etcd started (fsync on)")
	}
	if cfg.MasterArgs, cfg.Metrics, err = forwardEtcdOptions(o); err != nil {
		return err
	}
	cli, err := o.Connect(ctx, cfg.Log)
	if err != nil {
		return err
	}
	defer cli.Close()
	cfg.Client, cfg.Endpoints = cli, o.Endpoints
	var rep benchReport
	if len(cfg.Paced) > 0 {
		rep, err = masterbench.RunPaced(ctx, cfg)
	} else {
		rep, err = masterbench.Run(ctx, cfg)
	}
	if err != nil {
		return err
	}
	return writeReport(stdout, rep, asJSON)
}

// benchReport is either mode's report, which is never nil without an error.
type benchReport interface{ WriteText(io.Writer) error }

// parseBench reads the flags of `master bench` into a run's configuration
// (without the master, the etcd client and, unless -dir, the directory),
// the etcd options and whether to print JSON.
func parseBench(args []string, stderr io.Writer) (masterbench.Config, etcdconn.Options, bool, error) {
	fs := flag.NewFlagSetWithEnvPrefix("master bench", "MASTER_BENCH", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o etcdconn.Options
	o.Register(fs)
	dir := fs.String("dir", "", "`directory` for the datasets, master logs and the embedded etcd (default: a temporary one, removed afterwards)")
	chunks := fs.String("chunks", "1000", "comma-separated dataset sizes in `chunks`, each measured with every -trainers")
	trainers := fs.String("trainers", "1,64", "comma-separated `counts` of concurrent trainers")
	perTask := fs.Int("chunks-per-task", 1, "chunks per task")
	warmup := fs.Duration("warmup", time.Second, "unmeasured load before each window (with -paced: after a first -call-every)")
	duration := fs.Duration("duration", 5*time.Second, "measured window per row, for the master and for the bare transactions")
	failover := fs.Bool("failover", true, "also time a standby master taking over each dataset")
	codec := fs.String("codec", "gob", "the synthetic trainers' encoding: gob or json (JSON-RPC)")
	progress := fs.Bool("progress", false, "every trainer reports progress once in every task before asking for the next: a fenced write per task, what -progress-interval costs at most (with -paced: half a -call-every after taking it)")
	door := fs.String("door", masterbench.DoorOff, "the masters' HTTP side door: off; on (-http-addr on loopback, every trainer sends a name, /metrics and /status.json read once a second); "+
		"or both: each row in four windows, off, on, on, off or the reverse, and the ratios of the two")
	profile := fs.String("cpuprofile", "", "`directory` where the leader writes a CPU profile of each measured window (go tool pprof)")
	checkpointEvery := fs.Int("checkpoint-every", 0, "every trainer takes a data checkpoint of its own every `N` tasks (0: none)")
	checkpointCompare := fs.Bool("checkpoint-compare", false, "with -checkpoint-every: each row in four windows of the same master, without and with the checkpoints, in a symmetric order, and the ratios of the two")
	paced := fs.String("paced", "", "comma-separated `counts` of paced trainers, each against a fresh master with its side door: every trainer, on its own connection, calls GetTask once per -call-every at a phase of its own; "+
		"then a tenth of the connections close at once and the requeue of their tasks is timed (the other modes' flags do not apply)")
	callEvery := fs.Duration("call-every", masterbench.DefaultCallEvery, "with -paced: the `period` of each trainer's GetTask calls")
	requeueWait := fs.Duration("requeue-wait", masterbench.DefaultRequeueWait, "with -paced: the longest wait for the closed trainers' tasks to be dispatched again")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	logLevel := fs.String("log-level", "info", "log level of the bench's progress lines")
	if err := fs.Parse(args); err != nil {
		return masterbench.Config{}, o, false, err
	}
	cfg := masterbench.Config{Dir: *dir, ChunksPerTask: *perTask, Warmup: *warmup, Duration: *duration, Failover: *failover, Codec: *codec, Progress: *progress,
		Door: *door, CheckpointEvery: *checkpointEvery, CheckpointCompare: *checkpointCompare, CallEvery: *callEvery, RequeueWait: *requeueWait}
	err := benchLists(fs, &cfg, *chunks, *trainers, *paced)
	if err == nil && *profile != "" {
		cfg.Profile, err = profileDir(*profile)
	}
	if err == nil {
		cfg.Log, err = newLogger(*logLevel, stderr)
	}
	return cfg, o, *asJSON, err
}

// benchLists reads the lists of counts, and refuses flags that do not
// apply to the mode they choose.
func benchLists(fs *flag.FlagSet, cfg *masterbench.Config, chunks, trainers, paced string) error {
	if cfg.CheckpointCompare && cfg.CheckpointEvery <= 0 {
		return errors.New("-checkpoint-compare needs -checkpoint-every")
	}
	var err error
	if paced == "" {
		if set := setFlags(fs, "call-every", "requeue-wait"); len(set) > 0 {
			return errors.Errorf("%s: only with -paced", strings.Join(set, ", "))
		}
		if cfg.Chunks, err = intList("-chunks", chunks); err != nil {
			return err
		}
		cfg.Trainers, err = intList("-trainers", trainers)
		return err
	}
	if cfg.Paced, err = intList("-paced", paced); err != nil {
		return err
	}
	if cfg.CallEvery <= 0 || cfg.RequeueWait <= 0 {
		return errors.New("-call-every and -requeue-wait must be positive")
	}
	if set := setFlags(fs, "chunks", "trainers", "failover", "door", "cpuprofile", "checkpoint-every", "checkpoint-compare"); len(set) > 0 {
		return errors.Errorf("-paced runs a mode of its own, without %s", strings.Join(set, ", "))
	}
	return nil
}

// setFlags returns those of names that were set, each with its dash.
func setFlags(fs *flag.FlagSet, names ...string) []string {
	var set []string
	fs.Visit(func(f *flag.Flag) {
		if slices.Contains(names, f.Name) {
			set = append(set, "-"+f.Name)
		}
	})
	return set
}

// profileDir makes dir, as an absolute path, for the CPU profiles of the
// masters, which learn it from the environment they inherit
// (masterbench.ProfileOnSignals).
func profileDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return "", err
	}
	return abs, os.Setenv(masterbench.ProfileEnv, abs)
}

// writeReport prints rep as text, or as indented JSON.
func writeReport(w io.Writer, rep benchReport, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return rep.WriteText(w)
}

// forwardEtcdOptions gives the masters the bench's etcd settings (the
// password through the environment, never on a command line) and returns
// an HTTP client for etcd's metrics page.
func forwardEtcdOptions(o etcdconn.Options) ([]string, *http.Client, error) {
	var args []string
	for flag, value := range map[string]string{"-etcd-cacert": o.CACert, "-etcd-cert": o.Cert, "-etcd-key": o.Key, "-etcd-user": o.User} {
		if value != "" {
			args = append(args, flag, value)
		}
	}
	if o.Password != "" {
		if err := os.Setenv("MASTER_ETCD_PASSWORD", o.Password); err != nil {
			return nil, nil, err
		}
	}
	tlsCfg, err := o.TLS()
	if err != nil {
		return nil, nil, err
	}
	return args, &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg}}, nil
}

func intList(name, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, errors.Errorf("%s: %q is not a positive whole number", name, f)
		}
		out = append(out, n)
	}
	return out, nil
}
