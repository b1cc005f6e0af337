package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/trainmaster/master/go/client"
)

// train reports the dataset if asked to, then consumes records until every
// pass is done, printing the passes' summaries as they end; what was
// consumed is printed even when it stops on an error.
func train(ctx context.Context, c *client.Client, o options, out io.Writer) (err error) {
	if len(o.dataset) > 0 {
		if err := c.ReportDataset(ctx, o.dataset); err != nil {
			return fmt.Errorf("report dataset: %w", err)
		}
	}
	p := &passPrinter{out: out, json: o.json, pass: -1}
	defer func() {
		if perr := p.flush(); err == nil {
			err = perr
		}
	}()
	var task client.Digest // of the records of the current task so far
	stalled, tasks := false, 0
	for rec, err := range c.Records(ctx) {
		if err != nil {
			return err
		}
		if task.Records == 0 {
			tasks++ // the first record of a task
		}
		if !stalled && (rec.Task == o.stallTask || tasks == o.stallAfter) {
			stalled = true
			<-ctx.Done() // the loop then yields ctx.Err()
			continue
		}
		if o.delay > 0 {
			time.Sleep(o.delay)
		}
		task.Add(rec.Data)
		if rec.Last {
			if err := p.add(rec.Pass, rec.Task, task); err != nil {
				return err
			}
			task = client.Digest{}
		}
	}
	return nil
}

// passPrinter sums the digests of the tasks consumed, pass by pass, and
// prints a pass's line when a task of a later pass comes (tasks come in
// the order of their dispatch, so passes never go back) or at the end.
type passPrinter struct {
	out  io.Writer
	json bool
	pass int // -1 before the first task
	sum  client.Digest
}

type passLine struct {
	Pass    int    `json:"pass"`
	Task    *int   `json:"task,omitempty"` // set on the line of one task
	Records int64  `json:"records"`
	Bytes   int64  `json:"bytes"`
	Digest  string `json:"digest"`
}

func (p *passPrinter) add(pass, index int, task client.Digest) error {
	if pass != p.pass {
		if err := p.flush(); err != nil {
			return err
		}
		p.pass = pass
	}
	p.sum.Combine(task)
	if !p.json {
		return nil
	}
	return p.printJSON(passLine{Pass: pass, Task: &index, Records: task.Records, Bytes: task.Bytes, Digest: task.String()})
}

func (p *passPrinter) printJSON(line passLine) error {
	b, _ := json.Marshal(line)
	_, err := fmt.Fprintf(p.out, "%s\n", b)
	return err
}

// flush prints the current pass, if any task of it was consumed.
func (p *passPrinter) flush() error {
	if p.pass < 0 {
		return nil
	}
	line := passLine{Pass: p.pass, Records: p.sum.Records, Bytes: p.sum.Bytes, Digest: p.sum.String()}
	p.pass, p.sum = -1, client.Digest{}
	if p.json {
		return p.printJSON(line)
	}
	_, err := fmt.Fprintf(p.out, "pass %d: %d records, %d bytes, digest %s\n", line.Pass, line.Records, line.Bytes, line.Digest)
	return err
}
