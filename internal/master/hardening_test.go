package master_test

import (
	"context"
	"fmt"
	"io"
	"net/rpc"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pkg/errors"
	"github.com/sirupsen/logrus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/trainmaster/master/go/recordio"
	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/dataset"
	"github.com/trainmaster/master/internal/election"
	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
	"github.com/trainmaster/master/internal/etcdstore"
	"github.com/trainmaster/master/internal/master"
	"github.com/trainmaster/master/internal/master/mastertest"
	"github.com/trainmaster/master/internal/taskqueue"
	"github.com/trainmaster/master/internal/trainerport"
)

// leadStore wins the master lock of namespace on cli and returns a store
// fenced by it; the lock is released at the end of the test, or by closing
// the session it is held with (see resign).
func leadStore(t *testing.T, cli *clientv3.Client, namespace string) *etcdstore.Store {
	t.Helper()
	s, err := concurrency.NewSession(cli, concurrency.WithTTL(5))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	sessions.Store(namespace, s)
	l, err := election.Campaign(context.Background(), s, namespace+"/master/lock/", "test")
	if err != nil {
		t.Fatal(err)
	}
	return etcdstore.New(etcdstore.Config{Client: cli, Namespace: namespace, Fence: l.Fence(), Log: quiet()})
}

// sessions holds the session of each namespace's lock, for resign.
var sessions sync.Map

// resign releases the lock of namespace taken by leadStore.
func resign(t *testing.T, namespace string) {
	t.Helper()
	if s, ok := sessions.LoadAndDelete(namespace); ok {
		if err := s.(*concurrency.Session).Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// serve runs svc behind a net/rpc server on a loopback port and returns a
// client of it.
func serve(t *testing.T, svc *master.Service) *rpc.Client {
	t.Helper()
	return serveWith(t, svc, trainerport.Config{})
}

// serveWith is serve with a server configuration.
func serveWith(t *testing.T, svc *master.Service, cfg trainerport.Config) *rpc.Client {
	t.Helper()
	cfg.Log = quiet()
	rc, err := rpc.Dial("tcp", mastertest.Serve(t, svc, cfg))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rc.Close() })
	return rc
}

func newEtcdService(t *testing.T, store master.Store, cfg master.Config) *master.Service {
	t.Helper()
	cfg.Store, cfg.Log = store, quiet()
	svc, err := master.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	if err := svc.Restore(context.Background()); err != nil {
		t.Fatal(err)
	}
	return svc
}

// TestLongFailureReasonsDoNotStallTheJob: reports with reasons that add up
// to far over what etcd takes in one request are recorded, and the job
// finishes. Before reasons were cut and commits split by bytes, every
// commit touching those tasks failed with "request is too large", the
// reload re-armed every deadline, and the job stalled. The port takes
// requests of 1 MiB here, as the master did then (-max-request-bytes).
func TestLongFailureReasonsDoNotStallTheJob(t *testing.T) {
	_, cli := etcdtest.Start(t)
	pattern := writeFiles(t, 19)
	svc := newEtcdService(t, leadStore(t, cli, "/long"), master.Config{ChunksPerTask: 1, Queue: taskqueue.Config{MaxTimeouts: 10}})
	rc := serveWith(t, svc, trainerport.Config{Limits: trainerport.Limits{MaxRequestBytes: 1 << 20}})
	if err := rc.Call("Master.ReportDataset", []string{pattern}, new(int)); err != nil {
		t.Fatal(err)
	}
	huge := strings.Repeat("r", 800<<10)
	var failed []wire.Task
	for range 6 {
		var task wire.Task
		if err := rc.Call("Master.GetTask", wire.Task{}, &task); err != nil {
			t.Fatal(err)
		}
		failed = append(failed, task)
	}
	// Six failures at once, as from six trainers.
	var wg sync.WaitGroup
	errs := make(chan error, len(failed))
	for _, task := range failed {
		wg.Go(func() {
			task.Error = huge
			var rep int
			if err := rc.Call("Master.TaskFailed", task, &rep); err != nil || wire.Report(rep) != wire.Recorded {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("failure report: %v", err)
	}
	// A normal trainer now finishes every task.
	var finished wire.Task
	for {
		var task wire.Task
		err := rc.Call("Master.GetTask", finished, &task)
		if wire.Is(err, wire.TextAllDone) {
			break
		}
		if err != nil {
			t.Fatalf("get task: %v", err)
		}
		if len(task.Error) > 0 {
			t.Fatalf("dispatched task carries an error")
		}
		finished = task
	}
	var st wire.Status
	if err := rc.Call("Master.Status", 0, &st); err != nil || !st.AllDone {
		t.Fatalf("status %+v, %v", st, err)
	}
}

// lostReplyStore applies the first SaveDataset and then fails it, as when
// etcd applied a transaction whose reply was lost; it counts saves.
type lostReplyStore struct {
	master.Store
	saves atomic.Int32
}

func (s *lostReplyStore) SaveDataset(ctx context.Context, ds *dataset.Dataset) error {
	err := s.Store.SaveDataset(ctx, ds)
	if s.saves.Add(1) == 1 && err == nil {
		return context.DeadlineExceeded
	}
	return err
}

// TestRetriedReportKeepsCommittedDispatches: a report retried after a save
// whose reply was lost, racing with a GetTask that reloads the saved
// dataset and dispatches from it, must not save the dataset again (which
// deletes every task entry, so the dispatch would be forgotten and its
// finish refused as "epoch from the future"). The race is run many times:
// before the fix it was lost whenever the GetTask came while the report
// indexed the files.
func TestRetriedReportKeepsCommittedDispatches(t *testing.T) {
	_, cli := etcdtest.Start(t)
	pattern := writeFiles(t, 40)
	for i := range 20 {
		store := &lostReplyStore{Store: leadStore(t, cli, "/race")}
		svc := newEtcdService(t, store, master.Config{ChunksPerTask: 1})
		rc := serve(t, svc)
		if err := rc.Call("Master.ReportDataset", []string{pattern}, new(int)); !wire.Is(err, wire.TextNotServing) {
			t.Fatalf("round %d: first report: %v, want not serving", i, err)
		}
		retried := rc.Go("Master.ReportDataset", []string{pattern}, new(int), nil)
		var task wire.Task
		for {
			err := rc.Call("Master.GetTask", wire.Task{}, &task)
			if err == nil {
				break
			}
			if !wire.Is(err, wire.TextNoDataset) {
				t.Fatalf("round %d: get task: %v", i, err)
			}
		}
		if call := <-retried.Done; call.Error != nil {
			t.Fatalf("round %d: retried report: %v", i, call.Error)
		}
		var rep int
		if err := rc.Call("Master.TaskFinished", task, &rep); err != nil || wire.Report(rep) != wire.Recorded {
			t.Fatalf("round %d: finish of the dispatched task: %v %v", i, wire.Report(rep), err)
		}
		if n := store.saves.Load(); n != 1 {
			t.Fatalf("round %d: the dataset was saved %d times", i, n)
		}
		if _, err := cli.Delete(context.Background(), "/race/task_queues/", clientv3.WithPrefix()); err != nil {
			t.Fatal(err)
		}
		svc.Close()
		resign(t, "/race")
	}
}

// TestRestartWithFewerPassesServesAllDone: a finished job (or one past the
// passes now configured) restarted with a smaller -passes answers "all
// passes done" instead of failing to restore, which made the leader retake
// the lock and fail about five times a second for ever.
func TestRestartWithFewerPassesServesAllDone(t *testing.T) {
	_, cli := etcdtest.Start(t)
	pattern := writeFiles(t, 3)
	first := newEtcdService(t, leadStore(t, cli, "/fewer"), master.Config{ChunksPerTask: 1, Queue: taskqueue.Config{Passes: 3}})
	rc := serve(t, first)
	if err := rc.Call("Master.ReportDataset", []string{pattern}, new(int)); err != nil {
		t.Fatal(err)
	}
	var finished wire.Task
	for pass := 0; pass < 2; {
		var task wire.Task
		if err := rc.Call("Master.GetTask", finished, &task); err != nil {
			t.Fatal(err)
		}
		finished, pass = task, task.Pass
	}
	first.Close()
	resign(t, "/fewer")
	for _, passes := range []int{1, 2} {
		svc := newEtcdService(t, leadStore(t, cli, "/fewer"), master.Config{ChunksPerTask: 1, Queue: taskqueue.Config{Passes: passes}})
		var task wire.Task
		if err := serve(t, svc).Call("Master.GetTask", wire.Task{}, &task); !wire.Is(err, wire.TextAllDone) {
			t.Fatalf("-passes %d on a state at pass 2: %v, want all passes done", passes, err)
		}
		svc.Close()
		resign(t, "/fewer")
	}
}

// hangingStore hangs every Load after the first until its context ends,
// and fails commits while failing is set.
type hangingStore struct {
	master.Store
	loads   atomic.Int32
	failing atomic.Bool
}

func (s *hangingStore) Load(ctx context.Context) (*master.Snapshot, error) {
	if s.loads.Add(1) > 1 {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return s.Store.Load(ctx)
}

func (s *hangingStore) Commit(ctx context.Context, round int, ch taskqueue.Change) error {
	if s.failing.Load() {
		return context.DeadlineExceeded
	}
	return s.Store.Commit(ctx, round, ch)
}

// TestReloadHasADeadline: after a failed commit the state is reloaded
// before the next call; a reload that hangs ends at the commit timeout with
// "master is not serving", instead of holding the service's lock (Status
// included) for ever. Status never shows the change that failed.
func TestReloadHasADeadline(t *testing.T) {
	_, cli := etcdtest.Start(t)
	pattern := writeFiles(t, 3)
	store := &hangingStore{Store: leadStore(t, cli, "/hang")}
	svc := newEtcdService(t, store, master.Config{ChunksPerTask: 1, CommitTimeout: 300 * time.Millisecond})
	rc := serve(t, svc)
	if err := rc.Call("Master.ReportDataset", []string{pattern}, new(int)); err != nil {
		t.Fatal(err)
	}
	store.failing.Store(true)
	var task wire.Task
	if err := rc.Call("Master.GetTask", wire.Task{}, &task); !wire.Is(err, wire.TextNotServing) {
		t.Fatalf("get task with etcd failing: %v", err)
	}
	for range 2 { // both calls time out rather than hang
		var st wire.Status
		if err := rc.Call("Master.Status", 0, &st); !wire.Is(err, wire.TextNotServing) || st.Pending != 0 {
			t.Fatalf("status while the reload hangs: %+v, %v", st, err)
		}
	}
}

func quiet() *logrus.Logger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

// writeFiles writes one RecordIO file of n one-record chunks and returns its
// path.
func writeFiles(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data.recordio")
	record := func(i int) []byte { return fmt.Appendf(nil, "record %06d", i) }
	if err := recordio.WriteFile(path, n, record, recordio.WithMaxChunkBytes(len(record(0)))); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestDeclaredDataset: a master started with its own dataset accepts it
// itself; trainers' reports are only compared with it (nothing they name is
// opened), and a store holding another dataset is refused.
func TestDeclaredDataset(t *testing.T) {
	_, cli := etcdtest.Start(t)
	pattern := writeFiles(t, 4)
	svc := newEtcdService(t, leadStore(t, cli, "/declared"), master.Config{ChunksPerTask: 1, Dataset: []string{pattern}})
	rc := serve(t, svc)
	var st wire.Status
	if err := rc.Call("Master.Status", 0, &st); err != nil || !st.DatasetReported || st.Tasks != 4 {
		t.Fatalf("status of a master with a declared dataset: %+v, %v", st, err)
	}
	if err := rc.Call("Master.ReportDataset", []string{pattern}, new(int)); err != nil {
		t.Fatalf("report of the declared dataset: %v", err)
	}
	err := rc.Call("Master.ReportDataset", []string{"/etc/shadow"}, new(int))
	if err == nil || !strings.Contains(err.Error(), pattern) || !strings.Contains(err.Error(), "/etc/shadow") || strings.Contains(err.Error(), "magic") {
		t.Fatalf("report of another dataset: %v; want a refusal naming both, without opening it", err)
	}
	svc.Close()
	resign(t, "/declared")

	other := master.Config{ChunksPerTask: 1, Dataset: []string{writeFiles(t, 2)}, Store: leadStore(t, cli, "/declared"), Log: quiet()}
	refused, err := master.New(other)
	if err != nil {
		t.Fatal(err)
	}
	defer refused.Close()
	if err := refused.Restore(context.Background()); !errors.Is(err, master.ErrDeclaredDataset) || !strings.Contains(err.Error(), pattern) {
		t.Fatalf("restore of a store holding another dataset: %v", err)
	}

	missing := filepath.Join(t.TempDir(), "missing-*.recordio")
	absent, err := master.New(master.Config{Dataset: []string{missing}, Store: leadStore(t, cli, "/declared-missing"), Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer absent.Close()
	if err := absent.Restore(context.Background()); !errors.Is(err, master.ErrDeclaredDataset) || !strings.Contains(err.Error(), missing) {
		t.Fatalf("restore with a declared dataset that matches no file: %v", err)
	}
}

// TestDatasetRoot: with a dataset root, a report naming a file outside it
// is refused without the file being opened, and the error quotes nothing of
// its contents.
func TestDatasetRoot(t *testing.T) {
	_, cli := etcdtest.Start(t)
	inside := writeFiles(t, 2)
	svc := newEtcdService(t, leadStore(t, cli, "/root"), master.Config{ChunksPerTask: 1, DatasetConfig: dataset.Config{Root: filepath.Dir(inside)}})
	rc := serve(t, svc)
	for _, outside := range []string{"/etc/shadow", "/etc/*", filepath.Dir(inside) + "/../*"} {
		err := rc.Call("Master.ReportDataset", []string{outside}, new(int))
		if err == nil || !strings.Contains(err.Error(), "outside") || strings.Contains(err.Error(), "magic") {
			t.Fatalf("report of %s: %v; want refused as outside the root", outside, err)
		}
	}
	if err := rc.Call("Master.ReportDataset", []string{inside}, new(int)); err != nil {
		t.Fatalf("report inside the root: %v", err)
	}
}
