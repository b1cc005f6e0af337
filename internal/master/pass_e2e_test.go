package master_test

import (
	"context"
	"io"
	"maps"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/trainmaster/master/go/client"
	"github.com/trainmaster/master/go/recordio"
	"github.com/trainmaster/master/internal/dataset"
	"github.com/trainmaster/master/internal/master"
	"github.com/trainmaster/master/internal/master/mastertest"
	"github.com/trainmaster/master/internal/taskqueue"
	"github.com/trainmaster/master/internal/trainerport"
)

// TestPassLoopsAgainstTheMaster: two trainers each run a Client.Pass loop
// at once, three times, against a master over the network with 2 passes:
// the first loops yield every record of pass 0 exactly once between them
// and nothing of pass 1, the second pass 1, the third nothing.
func TestPassLoopsAgainstTheMaster(t *testing.T) {
	const trainers, passes = 2, 2
	dir := t.TempDir()
	generate(t, dir, 2)
	patterns := []string{filepath.Join(dir, "*.recordio")}
	log := logrus.New()
	log.SetOutput(io.Discard)
	svc, err := master.New(master.Config{ChunksPerTask: 4, Log: log, Queue: taskqueue.Config{Passes: passes}})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	addr := mastertest.Serve(t, svc, trainerport.Config{Log: log})
	var clients []*client.Client
	for range trainers {
		c := client.New(client.Static(addr), client.Config{MinBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
		defer c.Close()
		clients = append(clients, c)
	}
	if err := clients[0].ReportDataset(context.Background(), patterns); err != nil {
		t.Fatal(err)
	}
	files, err := dataset.Expand(patterns)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{}
	scan, err := recordio.ScanFiles(files...)
	if err != nil {
		t.Fatal(err)
	}
	for scan.Scan() {
		want[string(scan.Record())]++
	}
	if err := scan.Err(); err != nil {
		t.Fatal(err)
	}
	scan.Close()
	for k := range passes + 1 {
		got := map[string]int{}
		var mu sync.Mutex
		var first, wg sync.WaitGroup
		first.Add(trainers)
		for _, c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n := 0
				for rec, err := range c.Pass(context.Background()) {
					if err != nil {
						t.Error(err)
						continue
					}
					if rec.Pass != k {
						t.Errorf("loop %d yielded a record of pass %d", k, rec.Pass)
					}
					if n++; n == 1 {
						// Neither loop begins after the other finished the pass.
						first.Done()
						first.Wait()
					}
					mu.Lock()
					got[string(rec.Data)]++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if k == passes {
			if len(got) != 0 {
				t.Fatalf("a loop begun once every pass is done yielded %d records", len(got))
			}
			continue
		}
		if !maps.Equal(got, want) {
			t.Fatalf("loop %d: %d distinct records, want each of %d once", k, len(got), len(want))
		}
	}
}
