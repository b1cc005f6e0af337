package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/pkg/errors"

	"github.com/trainmaster/master/go/client"
)

// train reports the dataset if asked to, then consumes records until every
// pass is done, printing the passes' summaries as they end; what was
// consumed is printed even when it stops on an error.
func train(ctx context.Context, c *client.Client, o options, out io.Writer) (err error) {
	if len(o.dataset) > 0 {
		if err := c.ReportDataset(ctx, o.dataset); err != nil {
			return errors.WithMessage(err, "report dataset")
		}
	}
	p := &passPrinter{out: out, json: o.json, pass: -1}
	defer func() {
		if perr := p.flush(); err == nil {
			err = perr
		}
	}()
	trace, err := openTrace(o.trace)
	if err != nil {
		return err
	}
	defer trace.close()
	if o.group.resume > 0 {
		rep, err := c.Rewind(ctx, o.group.resume, o.group.restart)
		if err != nil {
			return errors.WithMessagef(err, "resume from checkpoint %d", o.group.resume)
		}
		if err := p.printEvent(fmt.Sprintf("rewound to checkpoint %d for restart %s (this call rewound: %v)", o.group.resume, o.group.restart, rep.Rewound),
			map[string]any{"rewound": o.group.resume, "restart": o.group.restart, "first": rep.Rewound}); err != nil {
			return err
		}
	}
	checkpoints := newCheckpointer(c, o.group, func(id int64, name string) error {
		if err := trace.checkpoint(id); err != nil {
			return err
		}
		return p.printEvent(fmt.Sprintf("checkpoint %d %s", id, name), map[string]any{"checkpoint": id, "name": name})
	})
	var task client.Digest // of the records of the current task so far
	stalled, tasks, from := false, 0, 0
	current := [3]int{-1, -1, -1} // the pass, task and next position of the records in task
	for rec, err := range c.Records(ctx) {
		if err != nil {
			return err
		}
		if current != [3]int{rec.Pass, rec.Task, rec.Position} {
			// The first record of a dispatch. The one before ended with
			// its last record, or was dropped (another trainer has it):
			// its records so far are no consumption of the task.
			task = client.Digest{}
			tasks++
			from = rec.Position
		}
		if !stalled && (rec.Task == o.stallTask || tasks == o.stallAfter) {
			stalled = true
			<-ctx.Done() // the loop then yields ctx.Err()
			continue
		}
		if o.delay > 0 {
			time.Sleep(o.delay)
		}
		task.Add(recordBytes(rec))
		current = [3]int{rec.Pass, rec.Task, rec.Position + 1}
		if err := trace.record(rec); err != nil {
			return err
		}
		if err := checkpoints.trained(ctx, rec); err != nil {
			return err
		}
		if rec.Last {
			if err := p.add(rec.Pass, rec.Task, from, task); err != nil {
				return err
			}
			current = [3]int{-1, -1, -1} // the rest of a task cut short may come next, from its cut
		}
	}
	return nil
}

// recordBytes is what the digests count of a record: its data, or the
// index of a record of an index-range dataset, 8 bytes little-endian.
func recordBytes(rec client.Record) []byte {
	if rec.Data == nil {
		return binary.LittleEndian.AppendUint64(nil, uint64(rec.Index))
	}
	return rec.Data
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
	From    int    `json:"from,omitempty"` // a task's line: the position of its first record consumed (wire.Progress)
	Records int64  `json:"records"`
	Bytes   int64  `json:"bytes"`
	Digest  string `json:"digest"`
}

func (p *passPrinter) add(pass, index, from int, task client.Digest) error {
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
	return p.printJSON(passLine{Pass: pass, Task: &index, From: from, Records: task.Records, Bytes: task.Bytes, Digest: task.String()})
}

// printEvent prints a line of its own (a checkpoint, a rewind): text, or
// with -json the object fields.
func (p *passPrinter) printEvent(text string, fields map[string]any) error {
	if p.json {
		b, _ := json.Marshal(fields)
		_, err := fmt.Fprintf(p.out, "%s\n", b)
		return err
	}
	_, err := fmt.Fprintln(p.out, text)
	return err
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

// traceFile is -trace: a line "pass task position" for every record
// trained, each written at once, so that what a trainer killed outright
// trained is known (cmd/chaos counts the records trained twice from it).
type traceFile struct{ f *os.File }

func openTrace(path string) (*traceFile, error) {
	if path == "" {
		return &traceFile{}, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, errors.WithMessage(err, "-trace")
	}
	return &traceFile{f: f}, nil
}

func (t *traceFile) record(rec client.Record) error {
	if t.f == nil {
		return nil
	}
	_, err := fmt.Fprintf(t.f, "%d %d %d\n", rec.Pass, rec.Task, rec.Position)
	return err
}

// checkpoint writes the line of a checkpoint stored after the records
// above it.
func (t *traceFile) checkpoint(id int64) error {
	if t.f == nil {
		return nil
	}
	_, err := fmt.Fprintf(t.f, "checkpoint %d\n", id)
	return err
}

func (t *traceFile) close() {
	if t.f != nil {
		t.f.Close()
	}
}
