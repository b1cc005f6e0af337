package master

import (
	"fmt"
	"net/rpc"
	"testing"
	"time"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/trainerport/porttest"
)

// TestGetTaskSaysHowOftenToReport: through the port, GetTask's answer asks
// nothing (ProgressMillis 0: wire.DefaultProgressInterval) until the
// moving average is usable, then a fifth of the dispatch's expected time,
// over gob and JSON-RPC alike.
func TestGetTaskSaysHowOftenToReport(t *testing.T) {
	pattern := writeDataset(t, t.TempDir(), 1, 6) // 6 tasks of 3 records
	s, clock := newService(t, Config{ChunksPerTask: 1})
	addr := startServer(t, s)
	c, err := rpc.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var n int
	if err := c.Call("Master.ReportDataset", []string{pattern}, &n); err != nil {
		t.Fatal(err)
	}
	finished := wire.Task{Trainer: "t1"}
	for i := range 4 { // three finishes of 15 s: 5 s per record
		var task wire.Task
		if err := c.Call("Master.GetTask", finished, &task); err != nil {
			t.Fatal(err)
		}
		want := int64(0)
		if i == 3 {
			want = 3000 // 5 s × 3 records / 5
		}
		if task.ProgressMillis != want {
			t.Fatalf("task %d: ProgressMillis %d, want %d", i, task.ProgressMillis, want)
		}
		clock.Advance(15 * time.Second)
		finished = wire.Task{Index: task.Index, Epoch: task.Epoch, Pass: task.Pass, Trainer: "t1"}
	}
	replies := porttest.JSONSession(t, addr, `{"method":"Master.GetTask","params":[{"Trainer":"t2"}],"id":1}`)
	if got := fmt.Sprint(replies[0]["result"].(map[string]any)["ProgressMillis"]); got != "3000" {
		t.Fatalf("JSON-RPC: ProgressMillis %s, want 3000: %v", got, replies[0])
	}
}
