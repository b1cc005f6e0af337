package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/rpc"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/trainmaster/master/go/client"
	"github.com/trainmaster/master/go/recordio"
	"github.com/trainmaster/master/go/wire"
)

// positionVectors is the part of go/wire/testdata/contract.json about a
// task's positions, which python/tests/test_contract.py checks the Python
// client against too: tasks as the master sends them, and what a Records
// loop yields of each.
type positionVectors struct {
	File struct {
		Records  int    `json:"records"`
		PerChunk int    `json:"per_chunk"`
		Format   string `json:"format"`
	} `json:"file"`
	Positions []struct {
		Name   string          `json:"name"`
		Chunks []int           `json:"chunks"` // [first, end) of the file's chunks; none: a range task
		Task   json.RawMessage `json:"task"`
		Root   int             `json:"root"`
		Yield  [][3]any        `json:"yield"` // position, record, last
	} `json:"positions"`
}

// TestContractPositions runs a Records loop over each task of the vectors,
// handed out by a master that has that task alone, and checks the records
// it yields: positions, records (a file task's by the number in its data, a
// range task's by its Index), Last, Task and Pass.
func TestContractPositions(t *testing.T) {
	raw, err := os.ReadFile("../wire/testdata/contract.json")
	if err != nil {
		t.Fatal(err)
	}
	var v positionVectors
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Positions) == 0 {
		t.Fatal("no position vectors")
	}
	path := filepath.Join(t.TempDir(), "contract.recordio")
	record := func(i int) []byte { return fmt.Appendf(nil, v.File.Format, i) }
	if err := recordio.WriteFile(path, v.File.Records, record, recordio.WithMaxChunkBytes(v.File.PerChunk*len(record(0)))); err != nil {
		t.Fatal(err)
	}
	ix, err := recordio.IndexFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range ix.Chunks {
		if want := min(v.File.PerChunk, v.File.Records-i*v.File.PerChunk); int(c.NumRecords) != want {
			t.Fatalf("chunk %d holds %d records, want %d", i, c.NumRecords, want)
		}
	}
	for _, vec := range v.Positions {
		t.Run(vec.Name, func(t *testing.T) {
			var task wire.Task
			if err := json.Unmarshal(vec.Task, &task); err != nil {
				t.Fatal(err)
			}
			if vec.Chunks != nil {
				for i := vec.Chunks[0]; i < vec.Chunks[1]; i++ {
					c := ix.Chunks[i]
					task.Blocks = append(task.Blocks, wire.Block{Path: path, Idx: i, Offset: c.Offset, NumRecords: int(c.NumRecords)})
				}
			}
			var want [][3]any
			for _, y := range vec.Yield {
				want = append(want, [3]any{int(y[0].(float64)), int64(y[1].(float64)), y[2].(bool)})
			}
			got := yieldOf(t, task, v.File.Format)
			for _, r := range got {
				if r.Task != vec.Root || r.Pass != task.Pass {
					t.Fatalf("record at %d of task %d pass %d, want task %d pass %d", r.Position, r.Task, r.Pass, vec.Root, task.Pass)
				}
			}
			var yielded [][3]any
			for _, r := range got {
				yielded = append(yielded, [3]any{r.Position, r.Index, r.Last})
			}
			if !slices.Equal(yielded, want) {
				t.Errorf("yielded %v, want %v", yielded, want)
			}
		})
	}
}

// yieldOf returns the records a Records loop yields of task, a file task's
// Index set to the number its data holds in format.
func yieldOf(t *testing.T, task wire.Task, format string) []client.Record {
	m := &oneTask{task: task}
	srv := rpc.NewServer()
	if err := srv.RegisterName(wire.ServiceName, m); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return // closed: the test is over
			}
			go srv.ServeConn(conn)
		}
	}()
	c := client.New(client.ResolverFunc(func(context.Context) (string, error) { return ln.Addr().String(), nil }),
		client.Config{ProgressInterval: -1})
	defer c.Close()
	var got []client.Record
	for r, err := range c.Records(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		if r.Data != nil {
			if _, err := fmt.Sscanf(string(r.Data), format, &r.Index); err != nil {
				t.Fatalf("record %q: %v", r.Data, err)
			}
			r.Data = nil
		}
		got = append(got, r)
	}
	if m.failed != "" {
		t.Fatalf("the task was reported failed: %s", m.failed)
	}
	return got
}

// oneTask is a master whose job is one task: handed out once, then all
// passes are done.
type oneTask struct {
	mu     sync.Mutex // guards the fields below
	task   wire.Task
	handed bool
	failed string // why the task was reported failed, if it was
}

func (m *oneTask) GetTask(_ wire.Task, reply *wire.Task) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.handed {
		return wire.ErrAllDone
	}
	m.handed, *reply = true, m.task
	return nil
}

func (m *oneTask) TaskFinished(_ wire.Task, reply *int) error {
	*reply = int(wire.Recorded)
	return nil
}

func (m *oneTask) TaskFailed(t wire.Task, reply *int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.failed, *reply = t.Error, int(wire.Recorded)
	return nil
}
