package client_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/trainmaster/master/go/client"
	"github.com/trainmaster/master/go/client/clienttest"
)

// TestPassOneLoopPerPass: with one client or two sharing the work, each
// round of Pass loops yields every record of one pass exactly once, pass
// 0 first, nothing of the next pass, and a loop begun once every pass is
// done yields nothing.
func TestPassOneLoopPerPass(t *testing.T) {
	const passes = 2
	for _, trainers := range []int{1, 2} {
		t.Run(fmt.Sprintf("trainers=%d", trainers), func(t *testing.T) {
			cfg := fast
			cfg.Prefetch = 2
			h := setup(t, clienttest.Options{Passes: passes}, small, cfg)
			clients := []*client.Client{h.c}
			for len(clients) < trainers {
				clients = append(clients, h.newClient(t, cfg))
			}
			want := taskRecords(t, h.m)
			for k := range passes + 1 {
				keys := passLoops(t, clients, want, k < passes)
				var wantKeys []string
				for i := range want {
					if k < passes {
						wantKeys = append(wantKeys, fmt.Sprintf("%d/%03d", k, i))
					}
				}
				if !slices.Equal(keys, wantKeys) {
					t.Fatalf("loop %d delivered (pass/task):\n%v\nwant:\n%v", k, keys, wantKeys)
				}
			}
			if !h.m.AllDone() {
				t.Error("the master is not done: some finish was not reported")
			}
		})
	}
}

// passLoops runs a Pass loop in each client at once and returns the tasks
// they delivered, whole and in order (runs), as sorted "pass/task" keys.
// With meet, each loop waits at its first record until every loop has one,
// so that none begins after the others finished the pass.
func passLoops(t *testing.T, clients []*client.Client, want [][]string, meet bool) []string {
	t.Helper()
	var first, wg sync.WaitGroup
	first.Add(len(clients))
	recs := make([][]got, len(clients))
	errs := make([][]error, len(clients))
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for rec, err := range c.Pass(context.Background()) {
				if err != nil {
					errs[i] = append(errs[i], err)
					continue
				}
				if meet && len(recs[i]) == 0 {
					first.Done()
					first.Wait()
				}
				recs[i] = append(recs[i], got{string(rec.Data), rec.Task, rec.Pass, rec.Last})
			}
		}()
	}
	wg.Wait()
	var keys []string
	for i := range clients {
		if len(errs[i]) > 0 {
			t.Fatalf("client %d: errors %v", i, errs[i])
		}
		for _, d := range runs(t, recs[i], want) {
			keys = append(keys, fmt.Sprintf("%d/%03d", d.Pass, d.Index))
		}
	}
	slices.Sort(keys)
	return keys
}
