package main

import (
	"fmt"
	"io"
	"net/http"
	"net/rpc"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/statusapi"
)

// TestHostileTrainerNamesHideNoHolder: while a trainer holds a task of a
// real master process (-max-trainers 50), clients flood it with
// fresh names: 5,000 GetTask calls for a dataset that does not exist add
// no trainer at all; 5,000 finish reports of a task they do not hold,
// which reach the dataset, fill the table, but the holder stays in
// /metrics (its holding_tasks and stalled series), /status.json and the
// page, which say how many trainers are not tracked.
func TestHostileTrainerNamesHideNoHolder(t *testing.T) {
	const shown, flood = 50, 5_000
	p, addr := startOnEtcd(t, "-dataset", writeDataset(t, 2), "-http-addr", "127.0.0.1:0",
		"-max-trainers", fmt.Sprint(shown))
	page := p.awaitDoor(30 * time.Second)
	holder, err := rpc.Dial("tcp", addr) // kept open: a holder without a connection is lost after -trainer-grace
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	var task wire.Task
	if err := holder.Call("Master.GetTask", wire.Task{Trainer: "holder"}, &task); err != nil {
		t.Fatal(err)
	}

	floodNames(t, addr, flood, func(i int) (string, any, any, string) {
		return "Master.GetTask", wire.Task{Dataset: "missing", Trainer: fmt.Sprintf("ghost-%d", i)}, new(wire.Task), wire.TextNoDataset
	})
	st := statusOf(t, page)
	if st.TrainersTotal != 1 || st.TrainersUntracked != 0 || trainerHolding(st, "holder") != 1 {
		t.Fatalf("after %d calls for a missing dataset: %d trainers (want 1), %d untracked (want 0), holder holding %d",
			flood, st.TrainersTotal, st.TrainersUntracked, trainerHolding(st, "holder"))
	}

	floodNames(t, addr, flood, func(i int) (string, any, any, string) {
		return "Master.TaskFinished", wire.Task{Index: task.Index, Pass: task.Pass, Epoch: task.Epoch + 1000, Trainer: fmt.Sprintf("name-%d", i)},
			new(wire.Report), ""
	})
	st = statusOf(t, page)
	if st.TrainersTotal != shown || st.TrainersUntracked != flood-(shown-1) || trainerHolding(st, "holder") != 1 {
		t.Errorf("after %d finishes under fresh names: %d trainers (want %d), %d untracked (want %d), holder holding %d",
			flood, st.TrainersTotal, shown, st.TrainersUntracked, flood-(shown-1), trainerHolding(st, "holder"))
	}
	// Once the flood's connections are closed, the holder is the one
	// trainer connected.
	awaitStatus(t, page, 10*time.Second, func(st statusapi.Status) bool { return st.TrainersConnected == 1 })
	metrics := httpBody(t, page+"metrics")
	for _, series := range []string{`trainmaster_trainer_holding_tasks{trainer="holder"} 1`, `trainmaster_trainer_stalled{trainer="holder"}`,
		"\ntrainmaster_trainers 1\n", fmt.Sprintf("\ntrainmaster_trainers_tracked %d\n", shown)} {
		if !strings.Contains(metrics, series) {
			t.Errorf("/metrics holds no %s", series)
		}
	}
	if n := strings.Count(metrics, "trainmaster_trainer_holding_tasks{"); n != shown {
		t.Errorf("/metrics holds %d trainers' holding_tasks, want %d", n, shown)
	}
	html := httpBody(t, page)
	if want := "4,951 more trainers that called lately are not shown"; !strings.Contains(html, want) || !strings.Contains(html, `data-name="holder"`) {
		t.Errorf("the page shows no holder, or does not say %q", want)
	}
}

// floodNames makes n calls over 4 connections at once, req(i) giving the
// i-th its method, argument, reply and the error text it must be answered
// with ("": any answer).
func floodNames(t *testing.T, addr string, n int, req func(i int) (method string, arg, reply any, want string)) {
	t.Helper()
	const conns = 4
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for c := range conns {
		wg.Go(func() {
			client, err := rpc.Dial("tcp", addr)
			if err != nil {
				errs <- err
				return
			}
			defer client.Close()
			for i := c; i < n; i += conns {
				method, arg, reply, want := req(i)
				err := client.Call(method, arg, reply)
				if want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
					errs <- fmt.Errorf("%s %d: answered %v, want %q", method, i, err, want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// trainerHolding is how many tasks the trainer called name holds in st, -1
// when st does not show it.
func trainerHolding(st statusapi.Status, name string) int {
	for _, tr := range st.Trainers {
		if tr.Name == name {
			return tr.Holding
		}
	}
	return -1
}

// httpBody returns the body of a GET of url, which must answer 200.
func httpBody(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v", url, resp.Status, err)
	}
	return string(b)
}

// TestMaxTrainersShownFlag: -max-trainers-shown is 1,000 by default and
// must be positive.
func TestMaxTrainersShownFlag(t *testing.T) {
	o, err := parseFlags(nil, io.Discard)
	if err != nil || o.maxTrainers != 1000 {
		t.Errorf("default: %d, %v", o.maxTrainers, err)
	}
	if _, err := parseFlags([]string{"-max-trainers-shown", "0"}, io.Discard); err == nil || err.Error() != "-max-trainers-shown must be positive, not 0" {
		t.Errorf("-max-trainers-shown 0: %v", err)
	}
}
