package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
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
	fs := flag.NewFlagSetWithEnvPrefix("master bench", "MASTER_BENCH", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o etcdconn.Options
	o.Register(fs)
	dir := fs.String("dir", "", "`directory` for the datasets, master logs and the embedded etcd (default: a temporary one, removed afterwards)")
	chunks := fs.String("chunks", "1000", "comma-separated dataset sizes in `chunks`, each measured with every -trainers")
	trainers := fs.String("trainers", "1,64", "comma-separated `counts` of concurrent trainers")
	perTask := fs.Int("chunks-per-task", 1, "chunks per task")
	warmup := fs.Duration("warmup", time.Second, "unmeasured load before each window")
	duration := fs.Duration("duration", 5*time.Second, "measured window per row, for the master and for the bare transactions")
	failover := fs.Bool("failover", true, "also time a standby master taking over each dataset")
	codec := fs.String("codec", "gob", "the synthetic trainers' encoding: gob or json (JSON-RPC)")
	progress := fs.Bool("progress", false, "every trainer reports progress once in every task before asking for the next: a fenced write per task, what -progress-interval costs at most")
	door := fs.String("door", masterbench.DoorOff, "the masters' HTTP side door: off; on (-http-addr on loopback, every trainer sends a name, /metrics and /status.json read once a second); "+
		"or both: each row in four windows, off, on, on, off or the reverse, and the ratios of the two")
	profile := fs.String("cpuprofile", "", "`directory` where the leader writes a CPU profile of each measured window (go tool pprof)")
	checkpointEvery := fs.Int("checkpoint-every", 0, "every trainer takes a data checkpoint of its own every `N` tasks (0: none)")
	checkpointCompare := fs.Bool("checkpoint-compare", false, "with -checkpoint-every: each row in four windows of the same master, without and with the checkpoints, in a symmetric order, and the ratios of the two")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	logLevel := fs.String("log-level", "info", "log level of the bench's progress lines")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg := masterbench.Config{ChunksPerTask: *perTask, Warmup: *warmup, Duration: *duration, Failover: *failover, Codec: *codec, Progress: *progress,
		Door: *door, CheckpointEvery: *checkpointEvery, CheckpointCompare: *checkpointCompare}
	if cfg.CheckpointCompare && cfg.CheckpointEvery <= 0 {
		return errors.New("-checkpoint-compare needs -checkpoint-every")
	}
	var err error
	if *profile != "" {
		if cfg.Profile, err = profileDir(*profile); err != nil {
			return err
		}
	}
	if cfg.Chunks, err = intList("-chunks", *chunks); err != nil {
		return err
	}
	if cfg.Trainers, err = intList("-trainers", *trainers); err != nil {
		return err
	}
	if cfg.Log, err = newLogger(*logLevel, stderr); err != nil {
		return err
	}
	if cfg.Master, err = os.Executable(); err != nil {
		return err
	}
	if cfg.Dir = *dir; cfg.Dir == "" {
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
	rep, err := masterbench.Run(ctx, cfg)
	if err != nil {
		return err
	}
	return writeReport(stdout, rep, *asJSON)
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
func writeReport(w io.Writer, rep *masterbench.Report, asJSON bool) error {
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
