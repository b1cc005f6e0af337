package client_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/trainmaster/master/go/client"
	"github.com/trainmaster/master/go/client/clienttest"
	"github.com/trainmaster/master/go/recordio"
	"github.com/trainmaster/master/go/wire"
)

// A trainer reports the dataset, two RecordIO files, and trains on the
// records the master hands it, task by task, until every pass is done. The
// master here is the fake of package clienttest; a job runs cmd/master and
// finds it with discovery.NewResolver instead of client.Static.
func Example() {
	dir, err := os.MkdirTemp("", "client-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	var paths []string
	for f := range 2 {
		path := filepath.Join(dir, fmt.Sprintf("part-%d.recordio", f))
		record := func(i int) []byte { return fmt.Appendf(nil, "file %d record %d", f, i) }
		if err := recordio.WriteFile(path, 2, record); err != nil {
			log.Fatal(err)
		}
		paths = append(paths, path)
	}
	m, err := clienttest.New(clienttest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()

	ctx := context.Background()
	c := client.New(client.Static(m.Addr()), client.Config{})
	defer c.Close()
	if err := c.ReportDataset(ctx, paths); err != nil {
		log.Fatal(err)
	}
	for rec, err := range c.Records(ctx) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("task %d pass %d: %s\n", rec.Task, rec.Pass, rec.Data)
	}
	// Output:
	// task 0 pass 0: file 0 record 0
	// task 0 pass 0: file 0 record 1
	// task 1 pass 0: file 1 record 0
	// task 1 pass 0: file 1 record 1
}

// A job may hold several named datasets. This trainer evaluates the
// index-range dataset "eval" beside the training set: it declares it
// (every trainer of it may), takes its tasks' record indexes to read from
// its own storage, and starts each next round once the round's passes are
// done. (Not run: the fake master serves the dataset "train" alone.)
func ExampleClient_StartRound() {
	ctx := context.Background()
	ev := client.New(client.Static("master:8080"), client.Config{Dataset: "eval"})
	defer ev.Close()
	if err := ev.Declare(ctx, wire.Dataset{Name: "eval", Records: 10_000, RecordsPerTask: 1000}); err != nil {
		log.Fatal(err)
	}
	evaluate := func(index int64) { /* read record index from storage, evaluate the model on it */ }
	for round := 0; round < 3; round++ {
		var err error
		round, err = ev.StartRound(ctx, round) // the round now current
		if err != nil {
			log.Fatal(err)
		}
		for rec, err := range ev.Records(ctx) { // until the round's passes are done
			if err != nil {
				log.Fatal(err)
			}
			evaluate(rec.Index)
		}
		fmt.Println("round", round, "evaluated")
	}
}

// A training loop written per epoch: each Pass loop trains one pass, and
// ends when the pass ends at the master, whichever trainers hold its last
// tasks. (Not run: a job runs cmd/master.)
func ExampleClient_Pass() {
	ctx := context.Background()
	c := client.New(client.Static("master:8080"), client.Config{})
	defer c.Close()
	train := func(data []byte) { /* a step of training on the record */ }
	for epoch := 0; ; epoch++ {
		n := 0
		for rec, err := range c.Pass(ctx) {
			if err != nil {
				log.Fatal(err)
			}
			train(rec.Data)
			n++
		}
		if n == 0 {
			break // every pass is done
		}
		fmt.Println("epoch", epoch, "trained", n, "records")
	}
}
