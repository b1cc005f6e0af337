package main

import (
	"net/rpc/jsonrpc"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/trainerport/porttest"
)

// TestHostileProgressFromAStranger is issue 23's first attack on a master
// process with a token: a trainer takes the only task (1,000 records);
// clients holding the token, on connections of their own, report its end
// under another name (gob) and under none (JSON-RPC). They must be answered
// superseded and move nothing, before and after the master is killed and
// restarted on its stored state; the holder reports 3 and fails the task,
// which is handed out again from 3: no record goes untrained.
func TestHostileProgressFromAStranger(t *testing.T) {
	pattern := writeDataset(t, 1) // 1,000 records
	const token = "stranger-test-token"
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"-data-dir", t.TempDir(), "-token-file", tokenFile, "-dataset", pattern, "-chunks-per-task", "50"}
	first := startMaster(t, args...)
	holder := dialAsTrainer(t, first.awaitServing(30*time.Second), token, "holder")
	task := holder.GetTask(wire.Task{})
	if task.Index != 0 || task.Epoch != 1 || task.From != 0 {
		t.Fatalf("the holder's task: %+v", task)
	}
	strangersReport(t, holder.addr, token, task)
	if rep := holder.Progress(task, 3); rep.Report != wire.Recorded {
		t.Fatalf("the holder's report: %v", rep.Report)
	}

	first.signal(syscall.SIGKILL)
	<-first.exited
	second := startMaster(t, args...)
	holder = dialAsTrainer(t, second.awaitServing(30*time.Second), token, "holder")
	strangersReport(t, holder.addr, token, task)
	if rep := holder.Failed(task, "the trainer's disk"); rep != wire.Recorded {
		t.Fatalf("the holder's failure report: %v", rep)
	}
	if again := holder.GetTask(wire.Task{}); again.Index != task.Index || again.From != 3 {
		t.Fatalf("handed out again: task %d from %d, want task %d from 3, where its holder got", again.Index, again.From, task.Index)
	}
}

// trainerConn is a gob connection to addr, past the token, calling for a
// trainer.
type trainerConn struct {
	*porttest.Trainer
	addr string
}

func dialAsTrainer(t *testing.T, addr, token, name string) trainerConn {
	t.Helper()
	rc, err := dialAuthenticated(addr, token)
	if err != nil {
		t.Fatal(err)
	}
	return trainerConn{Trainer: porttest.NewTrainer(t, name, rc), addr: addr}
}

// strangersReport has a stranger report the end of task under its own name
// over gob, and one under no name over JSON-RPC: both must be answered
// superseded.
func strangersReport(t *testing.T, addr, token string, task wire.Task) {
	t.Helper()
	end := 0
	for _, b := range task.Blocks {
		end += b.NumRecords
	}
	if rep := dialAsTrainer(t, addr, token, "stranger").Progress(task, end); rep.Report != wire.Superseded {
		t.Fatalf("a stranger's report of the holder's task: %v, want superseded", rep.Report)
	}
	jc, err := jsonrpc.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer jc.Close()
	if err := jc.Call("Master.Authenticate", token, new(int)); err != nil {
		t.Fatal(err)
	}
	var reply wire.ProgressReply
	p := wire.Progress{Index: task.Index, Epoch: task.Epoch, Pass: task.Pass, Done: end}
	if err := jc.Call("Master.TaskProgress", p, &reply); err != nil || reply.Report != wire.Superseded {
		t.Fatalf("an unnamed report of the holder's task over JSON-RPC: %+v %v, want superseded", reply, err)
	}
}
