package watch

import (
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/trainmaster/master/go/discovery"
	"github.com/trainmaster/master/internal/statusapi"
)

// The view: render and summary on statuses made by hand.

var watchT0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func seconds(v float64) *float64 { return &v }

// watchStatus is a leader's status in the middle of pass 2 of 3, with 8
// trainers of which the page lists the 6 stalled or slowest.
func watchStatus() statusapi.Status {
	leader := discovery.Master{Candidate: discovery.Candidate{Host: "node-a", PID: 41, HTTP: "10.0.0.5:8081"}, Key: "/master/lock/1", Leading: true}
	standby := discovery.Master{Candidate: discovery.Candidate{Host: "node-b", PID: 42, HTTP: "10.0.0.6:8081"}, Key: "/master/lock/2"}
	st := statusapi.Status{Time: watchT0, Leading: true, Masters: []discovery.Master{leader, standby}, TrainersTotal: 8,
		Job: &statusapi.JobStatus{Dataset: []string{"/data/part-*.recordio"}, Files: 8, Chunks: 520, ChunksPerTask: 10, Tasks: 52,
			Records: 16000, Pass: 1, Passes: 3, Todo: 20, Pending: 6, Done: 26, RecordsDone: 6720, RecordsPerSecond: 1234.4,
			PassETASeconds: seconds(7.5), JobETASeconds: seconds(65)},
		Trainers: []statusapi.TrainerStatus{
			{Name: "trainer-0", Stalled: true, LastSeen: watchT0.Add(-40 * time.Second), Holding: 1,
				Task: &statusapi.HeldTask{Index: 17, Pass: 1, HeldSeconds: 65}},
			{Name: "trainer-2", RecordsPerSecond: 310, LastSeen: watchT0, Holding: 2, Failures: 1,
				Task: &statusapi.HeldTask{Index: 30, Pass: 1, HeldSeconds: 3}},
			{Name: "trainer-5", RecordsPerSecond: 2.345, LastSeen: watchT0},
			{Name: "trainer-1", RecordsPerSecond: 400, LastSeen: watchT0, Timeouts: 2},
			{Name: "trainer-3", RecordsPerSecond: 420, LastSeen: watchT0},
			{Name: "trainer-4", RecordsPerSecond: 430, LastSeen: watchT0},
		}}
	return st
}

// TestWatchRender: the view's lines for a running job, and what changes
// for a narrow or wide terminal, a stale status, an unknown rate, no job,
// a standby, long or hostile names, unknown masters, and the end.
func TestWatchRender(t *testing.T) {
	full := []string{
		"leader   10.0.0.5:8081 (node-a, pid 41), 1 standing by",
		"dataset  /data/part-*.recordio: 8 files, 52 tasks of 10 chunks, 16000 records a…",
		"pass 2/3 [##################..........................]  42%  6720/16000 records",
		"rate     1234 rec/s   eta pass 8s, job 1m05s",
		"queues   todo 20  pending 6  done 26  failed 0  (of 52 tasks)",
		"trainers the 5 slowest of 8 (! stalled)",
		"  ! trainer-0       0 rec/s  task 17 for 1m05s, stalled, silent 40s",
		"    trainer-2     310 rec/s  task 30 for 3s (+1 more), 1 failed",
		"    trainer-5     2.3 rec/s",
		"    trainer-1     400 rec/s  2 timed out",
		"    trainer-3     420 rec/s",
	}
	for _, tc := range []struct {
		name  string
		edit  func(*statusapi.Status)
		width int
		now   time.Time
		want  []string // every line, when set
		has   []string // lines that must be there, when want is not set
		lacks []string // text no line may hold
	}{
		{name: "running, 80 columns", width: 80, want: full},
		{name: "bar of 10 at least, the line cut", width: 40, has: []string{
			"pass 2/3 [####......]  42%  6720/16000 …", "rate     1234 rec/s   eta pass 8s, job …"}},
		{name: "bar of 50 at most", width: 200, has: []string{
			"pass 2/3 [#####################.............................]  42%  6720/16000 records",
			"dataset  /data/part-*.recordio: 8 files, 52 tasks of 10 chunks, 16000 records a pass"}},
		{name: "narrower than 20 is drawn 20 wide", width: 5, has: []string{"leader   10.0.0.5:8…"}},
		{name: "a stale status says its age", width: 100, now: watchT0.Add(8 * time.Second), has: []string{
			"leader   10.0.0.5:8081 (node-a, pid 41), 1 standing by (status from 8s ago)",
			"  ! trainer-0       0 rec/s  task 17 for 1m05s, stalled, silent 48s"}},
		{name: "unknown rate", width: 80, edit: func(st *statusapi.Status) {
			st.Job.RecordsPerSecond, st.Job.PassETASeconds, st.Job.JobETASeconds = 0, nil, nil
		}, has: []string{"rate     0 rec/s   eta pass unknown, job unknown"}},
		{name: "no job yet", width: 80, edit: func(st *statusapi.Status) { st.Job, st.Trainers, st.TrainersTotal = nil, nil, 0 }, want: []string{
			"leader   10.0.0.5:8081 (node-a, pid 41), 1 standing by",
			"job      none yet: waiting for a trainer to report the dataset"}},
		{name: "standby", width: 100, edit: func(st *statusapi.Status) {
			st.Leading, st.Job, st.Trainers, st.TrainersTotal = false, nil, nil, 0
		}, want: []string{
			"this master stands by; leader 10.0.0.5:8081 (node-a, pid 41), 1 standing by",
			"job      shown by the leader's page (watch without -addr finds it through etcd)"}},
		{name: "no trainers yet", width: 80, edit: func(st *statusapi.Status) { st.Trainers, st.TrainersTotal = nil, 0 },
			has: []string{"trainers none yet"}},
		{name: "few trainers, none stalled", width: 80, edit: func(st *statusapi.Status) { st.Trainers, st.TrainersTotal = st.Trainers[3:5], 2 },
			has: []string{"trainers all 2, slowest first", "    trainer-1     400 rec/s  2 timed out"}, lacks: []string{"!"}},
		{name: "long names cut to the column", width: 60, edit: func(st *statusapi.Status) {
			st.Trainers[1].Name = "trainer-on-a-host-with-a-very-long-name-0123456789"
		}, has: []string{"  ! trainer-0                      0 rec/s  task 17 for 1m0…",
			"    trainer-on-a-host-with-…     310 rec/s  task 30 for 3s …"}},
		{name: "long names cut to the width", width: 30, edit: func(st *statusapi.Status) {
			st.Trainers[1].Name = "trainer-on-a-host-with-a-very-long-name-0123456789"
		}, has: []string{"  ! trainer-0                …", "    trainer-on-a-host-with-… …"}},
		{name: "control characters are not sent to the terminal", width: 80, edit: func(st *statusapi.Status) {
			st.Trainers[1].Name = "evil\x1b[2J\x07"
		}, has: []string{"    evil?[2J?     310 rec/s  task 30 for 3s (+1 more), 1 failed"}, lacks: []string{"\x1b", "\x07"}},
		{name: "masters unknown", width: 80, edit: func(st *statusapi.Status) { st.Masters, st.MastersError = nil, "etcd is down" },
			has: []string{"leader   unknown: etcd is down"}},
		{name: "an eval dataset beside train", width: 100, edit: func(st *statusapi.Status) {
			st.Datasets = []statusapi.JobStatus{
				{Name: "eval", Round: 2, RecordsPerTask: 1000, Tasks: 25, Records: 25000, Pass: 4, Passes: 6, Todo: 7, Pending: 2, Done: 16, RecordsDone: 16000},
				{Name: "holdout", RecordsPerTask: 10, Tasks: 10, Records: 100, Pass: 1, Passes: 1, AllDone: true, Done: 10},
			}
			st.Trainers[0].Task.Dataset = "eval"
			st.Trainers[1].Task.Dataset = "train"
		}, has: []string{
			"queues   todo 20  pending 6  done 26  failed 0  (of 52 tasks)",
			"eval     round 3, pass 5/6  64%  16000/25000 records, todo 7 pending 2 done 16 failed 0",
			"holdout  round 1 done (1 pass)",
			"  ! trainer-0       0 rec/s  eval task 17 for 1m05s, stalled, silent 40s",
			"    trainer-2     310 rec/s  task 30 for 3s (+1 more), 1 failed"}},
		{name: "an index-range train", width: 100, edit: func(st *statusapi.Status) {
			st.Job.Dataset, st.Job.Files, st.Job.Chunks, st.Job.ChunksPerTask, st.Job.RecordsPerTask = []string{}, 0, 0, 0, 1000
		}, has: []string{"dataset  index range: 52 tasks of 1000 records, 16000 records a pass"}},
		{name: "passes without end", width: 100, edit: func(st *statusapi.Status) {
			st.Job.Pass, st.Job.Passes, st.Job.Endless, st.Job.JobETASeconds = 11, 0, true, nil
			st.Datasets = []statusapi.JobStatus{{Name: "eval", RecordsPerTask: 10, Tasks: 10, Records: 100, Pass: 2, Endless: true, Todo: 10}}
		}, has: []string{
			"pass 12, no end [#####################.............................]  42%  6720/16000 records",
			"rate     1234 rec/s   eta pass 8s, job no end",
			"eval     round 1, pass 3, no end   0%  0/100 records, todo 10 pending 0 done 0 failed 0"},
			lacks: []string{"/0 ", "passes   all"}},
		{name: "groups of ranks train train and eval", width: 140, edit: func(st *statusapi.Status) {
			st.Job.Group = &statusapi.GroupStatus{Ranks: 3, Batch: 32, Batches: 167, Records: 16000}
			st.Datasets = []statusapi.JobStatus{{Name: "eval", RecordsPerTask: 10, Tasks: 10, Records: 100, Passes: 1, Todo: 10,
				Group: &statusapi.GroupStatus{Ranks: 2, Batch: 50, Batches: 1, Records: 100}}}
		}, has: []string{
			"queues   todo 20  pending 6  done 26  failed 0  (of 52 tasks)",
			"ranks    group of 3 ranks, batch 32, 167 batches a rank",
			"eval     round 1, pass 1/1   0%  0/100 records, todo 10 pending 0 done 0 failed 0, group of 2 ranks, batch 50, 1 batch a rank"}},
		{name: "checkpoints, train and eval rewound", width: 140, edit: func(st *statusapi.Status) {
			st.Job.Name = "train"
			st.Job.Rewound = &statusapi.RewindStatus{Checkpoint: 6, Restart: "r2\x1b[2J", Generation: 1767225600000, Pass: 1, Left: 9120}
			st.Checkpoints = &statusapi.CheckpointsStatus{Last: statusapi.CheckpointStatus{ID: 7, Name: "r2-120\x1b", Time: watchT0.Add(-90 * time.Second),
				Trainers: 3, Pinned: true}, Kept: []int64{3, 6, 7}, Pinned: []int64{3, 7}}
			st.Datasets = []statusapi.JobStatus{{Name: "eval", RecordsPerTask: 10, Tasks: 10, Records: 100, Passes: 1, Todo: 10,
				Rewound: &statusapi.RewindStatus{Checkpoint: 6, Restart: "r2", Generation: 5, Left: 1}}}
		}, has: []string{
			`checkpt  7 "r2-120\x1b" 1m30s ago by 3 trainers, pinned; kept 3 (pinned), 6, 7 (pinned)`,
			"train    rewound to checkpoint 6 for restart r2?[2J: pass 2 again, 9120 records to train (generation 1767225600000)",
			"eval     rewound to checkpoint 6 for restart r2: pass 1 again, 1 record to train (generation 5)"},
			lacks: []string{"\x1b["}},
		{name: "a checkpoint of one trainer", width: 100, edit: func(st *statusapi.Status) {
			st.Checkpoints = &statusapi.CheckpointsStatus{Last: statusapi.CheckpointStatus{ID: 1, Name: "s", Time: watchT0.Add(time.Second), Trainers: 1},
				Kept: []int64{1}}
		}, has: []string{`checkpt  1 "s" 0s ago by 1 trainer; kept 1`}, lacks: []string{"rewound"}},
		{name: "all passes done", width: 80, edit: func(st *statusapi.Status) {
			j := st.Job
			j.AllDone, j.Pass, j.Todo, j.Pending, j.Done, j.PassETASeconds, j.JobETASeconds = true, 3, 0, 0, 0, nil, nil
		}, has: []string{"passes   all 3 done"}, lacks: []string{"queues", "eta", "["}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := watchStatus()
			if tc.edit != nil {
				tc.edit(&st)
			}
			now := tc.now
			if now.IsZero() {
				now = watchT0
			}
			lines := render(st, tc.width, now)
			text := strings.Join(lines, "\n")
			if tc.want != nil && text != strings.Join(tc.want, "\n") {
				t.Errorf("render:\n%s\nwant:\n%s", text, strings.Join(tc.want, "\n"))
			}
			for _, want := range tc.has {
				if !strings.Contains("\n"+text+"\n", "\n"+want+"\n") {
					t.Errorf("no line %q in:\n%s", want, text)
				}
			}
			for _, not := range tc.lacks {
				if strings.Contains(text, not) {
					t.Errorf("%q in:\n%s", not, text)
				}
			}
			for _, l := range lines {
				if n := utf8.RuneCountInString(l); n > max(tc.width, minWidth) {
					t.Errorf("line of %d runes, wider than %d: %q", n, tc.width, l)
				}
			}
		})
	}
}

// TestWatchSummary: the plain line of each kind of status.
func TestWatchSummary(t *testing.T) {
	const leader = " | leader 10.0.0.5:8081 (node-a, pid 41), 1 standing by"
	for _, tc := range []struct {
		name string
		edit func(*statusapi.Status)
		want string
	}{
		{"running", nil, "pass 2/3 42% | 1234 rec/s | eta pass 8s job 1m05s | todo 20 pending 6 done 26 failed 0 | " +
			"slowest: trainer-0 (stalled, 0 rec/s), trainer-2 (310 rec/s), trainer-5 (2.3 rec/s), trainer-1 (400 rec/s), trainer-3 (420 rec/s)" + leader},
		{"unknown rate", func(st *statusapi.Status) {
			st.Job.RecordsPerSecond, st.Job.PassETASeconds, st.Job.JobETASeconds, st.Trainers = 0, nil, nil, nil
		}, "pass 2/3 42% | 0 rec/s | eta pass unknown job unknown | todo 20 pending 6 done 26 failed 0" + leader},
		{"without end", func(st *statusapi.Status) {
			st.Job.Pass, st.Job.Passes, st.Job.Endless, st.Job.JobETASeconds, st.Trainers = 11, 0, true, nil, nil
		}, "pass 12, no end 42% | 1234 rec/s | eta pass 8s job no end | todo 20 pending 6 done 26 failed 0" + leader},
		{"a group trains the pass", func(st *statusapi.Status) {
			st.Job.Group, st.Trainers = &statusapi.GroupStatus{Ranks: 3, Batch: 32, Batches: 167, Records: 16000}, nil
		}, "pass 2/3 42% | 1234 rec/s | eta pass 8s job 1m05s | todo 20 pending 6 done 26 failed 0, group of 3 ranks, batch 32, 167 batches a rank" + leader},
		{"no job yet", func(st *statusapi.Status) { st.Job, st.Trainers = nil, nil },
			"no job yet: waiting for a trainer to report the dataset" + leader},
		{"standby", func(st *statusapi.Status) { st.Leading, st.Job, st.Trainers = false, nil, nil },
			"this master stands by" + leader},
		{"all done", func(st *statusapi.Status) { st.Job.AllDone, st.Job.Pass, st.Trainers = true, 3, st.Trainers[4:5] },
			"all 3 passes done | slowest: trainer-3 (420 rec/s)" + leader},
		{"no masters", func(st *statusapi.Status) { st.Job, st.Trainers, st.Masters = nil, nil, nil },
			"no job yet: waiting for a trainer to report the dataset | leader unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := watchStatus()
			if tc.edit != nil {
				tc.edit(&st)
			}
			if got := summary(st); got != tc.want {
				t.Errorf("summary:\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestWatchFormats: durations, rates, percentages and bars.
func TestWatchFormats(t *testing.T) {
	for _, tc := range []struct {
		secs float64
		want string
	}{
		{0, "0s"}, {0.4, "0s"}, {59.4, "59s"}, {59.6, "1m00s"}, {65, "1m05s"}, {3599, "59m59s"}, {3600, "1h00m"},
		{3725, "1h02m"}, {99*3600 + 59*60, "99h59m"}, {100 * 3600, "4d04h"}, {-1, "unknown"}, {math.NaN(), "unknown"},
		{math.Inf(1), "unknown"},
	} {
		if got := formatDuration(tc.secs); got != tc.want {
			t.Errorf("formatDuration(%v) = %q, want %q", tc.secs, got, tc.want)
		}
	}
	if got := formatETA(nil); got != "unknown" {
		t.Errorf("formatETA(nil) = %q", got)
	}
	for r, want := range map[float64]string{0: "0", 0.04: "0.0", 2.345: "2.3", 9.96: "10.0", 10: "10", 1234.5: "1234"} {
		if got := formatRate(r); got != want {
			t.Errorf("formatRate(%v) = %q, want %q", r, got, want)
		}
	}
	for _, tc := range []struct {
		done, records int64
		doneTasks     int
		width         int
		pct           int
		bar           string
	}{
		{0, 1000, 0, 10, 0, ".........."},
		{420, 1000, 0, 10, 42, "####......"},
		{999, 1000, 0, 10, 99, "#########."}, // 100 only when all are done
		{1000, 1000, 0, 4, 100, "####"},
		{0, 0, 3, 8, 50, "####...."}, // no records known: tasks count
	} {
		j := &statusapi.JobStatus{RecordsDone: tc.done, Records: tc.records, Done: tc.doneTasks, Tasks: 6}
		if p, bar := j.Percent(), progressBar(j, tc.width); p != tc.pct || bar != tc.bar {
			t.Errorf("%d/%d records, %d/6 tasks: %d%% %q, want %d%% %q", tc.done, tc.records, tc.doneTasks, p, bar, tc.pct, tc.bar)
		}
	}
}
