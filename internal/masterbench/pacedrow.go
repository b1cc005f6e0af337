package masterbench

import (
	"context"
	"fmt"
	"net/rpc"
	"regexp"
	"sync"
	"time"

	"github.com/pkg/errors"
	"github.com/sirupsen/logrus"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/trainmaster/master/go/wire"
)

// pacedJob is the master of one paced row, with its side door, on a
// dataset the row does not use up.
type pacedJob struct {
	job
	tasks int
	grace chan string // the grace of the first trainer it logged lost
}

// lostLine is the line a master logs when a trainer's grace ran out.
var lostLine = regexp.MustCompile(`msg="trainer lost[^"]*".* grace=(\S+)`)

// pacedTasks is a dataset's size in tasks that a row does not use up:
// every call its trainers can make until the requeue wait runs out, a
// tenth more, and one for each trainer to hold.
func pacedTasks(cfg Config, n int) int {
	span := 2*cfg.CallEvery + cfg.Warmup + cfg.Duration + cfg.RequeueWait
	return int(1.1*float64(n)*span.Seconds()/cfg.CallEvery.Seconds()) + n
}

// startPacedMaster writes the row's dataset, starts its master with room
// for n trainers' connections (-max-conns), and reports the dataset.
func startPacedMaster(ctx context.Context, cfg Config, n int) (*pacedJob, error) {
	j := &pacedJob{job: job{door: true, ns: fmt.Sprintf("/masterbench/%d/paced-%d", time.Now().UnixNano(), n)}, tasks: pacedTasks(cfg, n), grace: make(chan string, 1)}
	dir, pattern, err := writeDataset(cfg.Dir, j.tasks*cfg.ChunksPerTask)
	if err != nil {
		return nil, err
	}
	// The bench's own connections (the report, the door) need room too.
	cfg.MasterArgs = append(append([]string(nil), cfg.MasterArgs...), "-max-conns", fmt.Sprint(n+spareDescriptors))
	_, err = j.start(ctx, cfg, dir, pattern, func(line string) {
		if m := lostLine.FindStringSubmatch(line); m != nil {
			select {
			case j.grace <- m[1]:
			default:
			}
		}
	}, logrus.Fields{"trainers": n, "tasks": j.tasks})
	if err != nil {
		j.stop(ctx, cfg)
		return nil, err
	}
	return j, nil
}

// stop stops the master and deletes its namespace.
func (j *pacedJob) stop(ctx context.Context, cfg Config) {
	if j.masters != nil {
		j.masters.stopAll()
	}
	cfg.Client.Delete(context.WithoutCancel(ctx), j.ns+"/", clientv3.WithPrefix())
}

// runPacedRow measures n paced trainers against a master of their own.
func runPacedRow(ctx context.Context, cfg Config, n int) (PacedResult, error) {
	res := PacedResult{Trainers: n, TargetPerSec: float64(n) / cfg.CallEvery.Seconds()}
	j, err := startPacedMaster(ctx, cfg, n)
	if err != nil {
		return res, err
	}
	defer j.stop(ctx, cfg)
	res.Tasks = j.tasks
	began := time.Now()
	f, err := dialFleet(dialer(cfg.Codec), j.addr, n, cfg.Progress)
	if err != nil {
		return res, err
	}
	defer f.close()
	res.Connect = time.Since(began)
	start := time.Now()
	f.from = start.Add(cfg.CallEvery + cfg.Warmup)
	f.until = f.from.Add(cfg.Duration)
	cfg.Log.WithFields(logrus.Fields{"trainers": n, "connect": res.Connect.Round(time.Millisecond), "window": f.from.Format(time.TimeOnly)}).Info("trainers connected; calling")
	fleetCtx, stopFleet := context.WithCancel(ctx)
	defer stopFleet()
	victimCtx, stopVictims := context.WithCancel(fleetCtx)
	defer stopVictims()
	tallies := make([]tally, n)
	var victims, others sync.WaitGroup
	stopAll := func() {
		stopFleet()
		victims.Wait()
		others.Wait()
	}
	defer stopAll() // before the connections close, on every return
	for i := range n {
		wg, c := &others, fleetCtx
		if isVictim(i) {
			wg, c = &victims, victimCtx
		}
		wg.Go(func() { f.run(c, i, scheduleOf(i, n, start, cfg.CallEvery), &tallies[i]) })
	}
	obs := observe(ctx, cfg, j.doorURL, f.from, f.until)
	if res.Master, err = readProcess(j.leader.Pid()); err != nil {
		return res, errors.WithMessagef(err, "the master (log: %s)", j.leader.Log)
	}
	res.Metrics, res.Fsync, res.Commit, res.CommitGroup = obs.page, obs.fsync, obs.commit, obs.group
	if obs.err != nil {
		cfg.Log.WithError(obs.err).WithField("failed", obs.page.Failed).Warn("reads of /metrics failed")
	}
	cfg.Log.WithField("trainers", n).Info("window measured; closing a tenth of the connections")
	res.Requeue, err = f.timeRequeue(ctx, stopVictims, &victims, cfg.RequeueWait)
	stopAll()
	if err != nil {
		return res, err
	}
	res.Requeue.Grace = awaitGrace(j.grace, res.Requeue.Held)
	res.tally(tallies, cfg.Duration, cfg.Progress)
	return res, nil
}

// awaitGrace returns the grace the master logged losing a trainer; it
// waits a little for the line when the closed trainers held tasks.
func awaitGrace(grace <-chan string, held int) string {
	limit := time.Second
	if held == 0 {
		limit = 0
	}
	select {
	case g := <-grace:
		return g
	case <-time.After(limit):
		return ""
	}
}

// timeRequeue stops the victims once their calls return (whatever the
// master takes to answer), closes their connections at once, and times until each task they held has been
// dispatched again to another trainer, waiting at most wait.
func (f *fleet) timeRequeue(ctx context.Context, stopVictims func(), victims *sync.WaitGroup, wait time.Duration) (Requeue, error) {
	stopVictims()
	victims.Wait()
	var r Requeue
	var closing []*rpc.Client
	var held []wire.Task
	for i, c := range f.conns {
		if !isVictim(i) {
			continue
		}
		closing = append(closing, c)
		if f.held[i].Epoch != 0 {
			held = append(held, f.held[i])
		}
	}
	r.Victims, r.Held = len(closing), len(held)
	done := f.requeue.arm(held)
	closed := time.Now()
	for _, c := range closing {
		c.Close()
	}
	select {
	case <-done:
	case <-time.After(wait):
		r.TimedOut = true
	case <-ctx.Done():
		return r, ctx.Err()
	}
	first, last, missing := f.requeue.seen()
	r.Again = r.Held - missing
	if !first.IsZero() {
		r.First = first.Sub(closed)
	}
	if !r.TimedOut && !last.IsZero() {
		r.All = last.Sub(closed)
	}
	return r, nil
}

// tally sums the trainers' tallies of a window of d.
func (r *PacedResult) tally(tallies []tally, d time.Duration, progress bool) {
	var get, prog callTally
	for _, t := range tallies {
		get.merge(t.getTask)
		prog.merge(t.progress)
		if r.Errors += t.errors; r.FirstError == "" && t.firstErr != nil {
			r.FirstError = t.firstErr.Error()
		}
	}
	r.GetTask = get.summary(d)
	if progress {
		p := prog.summary(d)
		r.TaskProgress = &p
	}
}

func (c *callTally) merge(o callTally) {
	c.calls += o.calls
	c.late += o.late
	c.noTask += o.noTask
	c.latencies = append(c.latencies, o.latencies...)
}

func (c *callTally) summary(d time.Duration) Calls {
	return Calls{Count: c.calls, PerSec: float64(c.calls) / d.Seconds(), Latency: summarise(c.latencies), Late: c.late, NoTask: c.noTask}
}
