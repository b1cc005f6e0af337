package master

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/trainmaster/master/go/recordio"
	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/taskqueue"
)

// fakeClock moves only when told; Advance runs the timers that come due.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c       *fakeClock
	at      time.Time
	f       func()
	stopped bool
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.stopped
	t.stopped = true
	return was
}

// Advance moves the clock and runs, in order, the timers due by then.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*fakeTimer
	keep := c.timers[:0]
	for _, t := range c.timers {
		switch {
		case t.stopped:
		case !t.at.After(c.now):
			t.stopped = true
			due = append(due, t)
		default:
			keep = append(keep, t)
		}
	}
	c.timers = keep
	c.mu.Unlock()
	for _, t := range due {
		t.f()
	}
}

// writeDataset writes files of chunks chunks of 3 records each and returns
// their glob pattern.
func writeDataset(t testing.TB, dir string, files, chunks int) string {
	t.Helper()
	for f := range files {
		path := filepath.Join(dir, fmt.Sprintf("part-%03d.recordio", f))
		record := func(i int) []byte { return fmt.Appendf(nil, "file %03d record %05d", f, i) }
		if err := recordio.WriteFile(path, chunks*3, record, recordio.WithMaxChunkBytes(3*len(record(0)))); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "part-*.recordio")
}

func quietLog() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

func writeFile(path, content string) error { return os.WriteFile(path, []byte(content), 0o644) }

func removeFile(path string) error { return os.Remove(path) }

// status is Service.Status, failing the test on an error.
func status(t testing.TB, s *Service) wire.Status {
	t.Helper()
	st, err := s.Status(context.Background())
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	return st
}

// pendingInMemory counts the pending tasks in memory, committed or not.
func pendingInMemory(svc *Service) int {
	s := train(svc)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.q.Count(taskqueue.Pending)
}

// train returns the service of the dataset train, failing if there is none.
func train(s *Service) *datasetService {
	d, err := s.known(wire.DefaultDataset)
	if d == nil || err != nil {
		panic(fmt.Sprintf("no dataset train: %v", err))
	}
	return d
}
