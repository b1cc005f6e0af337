package main

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
	"github.com/trainmaster/master/internal/taskqueue"
)

// TestStragglersSplitTrainsEveryRecordOnce: with -stragglers split, real
// trainer processes, one of them ten times slower than the others: at the
// end of the pass the idle trainers get pieces of the slow one's task and
// the task it had read ahead, and every record of the pass is trained
// exactly once (the -trace files of the trainers say who trained what).
func TestStragglersSplitTrainsEveryRecordOnce(t *testing.T) {
	pattern := writeDataset(t, 1) // 50 chunks of 20 records: 25 tasks of 40
	srv, _ := etcdtest.Start(t)
	endpoints := strings.Join(srv.Endpoints(), ",")
	p := startMaster(t, "-endpoints", endpoints, "-ttl", "10", "-dataset", pattern, "-chunks-per-task", "2",
		"-stragglers", "split", "-task-timeout-min", "5m")
	addr := p.awaitServing(30 * time.Second)
	traces := t.TempDir()
	const fast, slow = 10 * time.Millisecond, 100 * time.Millisecond
	startTrainers(t, trainerBinary(t), traces, []time.Duration{slow, fast, fast, fast}, "-addr", addr, "-progress-interval", "1s")()
	trained := readTraces(t, traces)
	for task := range 25 {
		for pos := range 40 {
			if n := trained[[3]int{0, task, pos}]; n != 1 {
				t.Errorf("task %d record %d trained %d times", task, pos, n)
			}
		}
	}
	if len(trained) != 1000 {
		t.Errorf("%d records trained, want the 1,000 of the pass", len(trained))
	}
	log := p.logText()
	if !strings.Contains(log, "straggler split") {
		t.Fatalf("no straggler split in the master's log:\n%s", lastLines(log, 40))
	}
	t.Logf("%d splits, %d backups", strings.Count(log, "straggler split"), strings.Count(log, "straggler backed up"))
}

// TestStragglersFlagDefault: -stragglers is split unless given; off and
// backup remain.
func TestStragglersFlagDefault(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want taskqueue.Stragglers
	}{
		{nil, taskqueue.StragglersSplit},
		{[]string{"-stragglers", "off"}, taskqueue.StragglersOff},
		{[]string{"-stragglers", "backup"}, taskqueue.StragglersBackup},
	} {
		o, err := parseFlags(tc.args, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if o.queue.Stragglers != tc.want {
			t.Errorf("%q: stragglers %v, want %v", tc.args, o.queue.Stragglers, tc.want)
		}
	}
}
