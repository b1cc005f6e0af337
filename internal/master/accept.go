package master

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/pkg/errors"
	"github.com/sirupsen/logrus"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/dataset"
	"github.com/trainmaster/master/internal/taskqueue"
)

// Accepting a dataset: the first report of a name decides it, unless the
// master declared it; later ones are compared with it.

// Report accepts the dataset d describes on the first successful call;
// later calls must describe the same one (matches). The files are indexed
// outside the lock; the dataset is saved only if none was accepted
// meanwhile. With a declared dataset a report is only compared with it:
// nothing it names is opened.
func (s *datasetService) Report(ctx context.Context, d wire.Dataset) error {
	if s.declared != nil {
		if !matches(*s.declared, d) {
			return errors.Errorf("master: this master serves the dataset %s it declares; this call reports %s", describeDataset(*s.declared), describeDataset(d))
		}
		return nil
	}
	// A report over the limits is refused before it waits for the build
	// lock, so that it is not held in memory meanwhile.
	if !d.IsRange() {
		if err := s.cfg.DatasetConfig.CheckReport(d.Patterns); err != nil {
			return wire.WithKind(errNotAccepted, err)
		}
	}
	s.buildMu.Lock()
	defer s.buildMu.Unlock()
	if done, err := s.checkReported(ctx, d); done {
		return err
	}
	return s.accept(ctx, d)
}

// build builds the dataset d describes, a declaration the Service checked
// (checkDeclaration) before it got here.
func (s *datasetService) build(d wire.Dataset) (*dataset.Dataset, error) {
	var ds *dataset.Dataset
	var err error
	switch {
	case d.IsRange():
		ds, err = dataset.NewRange(d.Records, d.RecordsPerTask)
	default:
		chunks := d.ChunksPerTask
		if chunks == 0 {
			chunks = s.cfg.ChunksPerTask
		}
		ds, err = dataset.BuildWith(s.cfg.DatasetConfig, d.Patterns, chunks)
	}
	if err != nil {
		return nil, errors.WithMessagef(err, "master: dataset %q", d.Name)
	}
	ds.Name, ds.Passes, ds.ShuffleSeed, ds.Endless = d.Name, d.Passes, s.cfg.ShuffleSeed, d.Endless
	ds.Endless = endless(ds, s.cfg.Queue) // stored, so that inspect and a standby know it
	return ds, nil
}

// accept builds the dataset d describes and saves it. Called with buildMu
// held.
func (s *datasetService) accept(ctx context.Context, d wire.Dataset) error {
	start := s.cfg.Clock.Now()
	ds, err := s.build(d)
	if err != nil {
		return wire.WithKind(errNotAccepted, err)
	}
	q, err := taskqueue.New(s.queueConfig(ds, 0), ds.NumTasks(), ds.TaskRecords)
	if err != nil {
		return wire.WithKind(errNotAccepted, err)
	}
	if done, err := s.saveDataset(ctx, ds, q); done {
		return err
	}
	fields := logrus.Fields{"dataset": s.name, "tasks": ds.NumTasks(), "records": ds.NumRecords(), "took": s.cfg.Clock.Now().Sub(start).Round(time.Millisecond)}
	if ds.IsRange() {
		fields["records_per_task"] = ds.RecordsPerTask
	} else {
		fields["patterns"], fields["files"], fields["chunks"] = quotePatterns(ds.Patterns), len(ds.Files), ds.NumChunks()
	}
	s.cfg.Log.WithFields(fields).Info("dataset accepted; pass 0 started")
	return nil
}

// checkReported answers a report when a dataset is already accepted,
// reloading first after a failed commit: a save whose reply was lost may
// have been applied.
func (s *datasetService) checkReported(ctx context.Context, d wire.Dataset) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ready(ctx); err != nil {
		return true, err
	}
	return s.compareReported(d)
}

// compareReported answers a report when a dataset is already accepted.
// Called with s.mu held.
func (s *datasetService) compareReported(d wire.Dataset) (bool, error) {
	if s.ds == nil {
		return false, nil
	}
	if spec := s.ds.Spec(); !matches(spec, d) {
		return true, errors.Errorf("master: dataset already reported as %s; this call reports %s", describeDataset(spec), describeDataset(d))
	}
	return true, nil
}

// saveDataset stores an accepted dataset and starts serving it, unless one
// was accepted while it was built (a GetTask may have reloaded a save whose
// reply was lost, and dispatched from it: saving again would wipe that
// dispatch). done reports that the call is answered by err.
func (s *datasetService) saveDataset(ctx context.Context, ds *dataset.Dataset, q *taskqueue.Queues) (done bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ready(ctx); err != nil {
		return true, err
	}
	if done, err := s.compareReported(ds.Spec()); done {
		return true, err
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.CommitTimeout)
	defer cancel()
	if err := s.cfg.Store.SaveDataset(cctx, ds); err != nil {
		if errors.Is(err, ErrDatasetTooLarge) {
			return true, wire.WithKind(errNotAccepted, err)
		}
		return true, s.storeFailed(errors.WithMessage(err, "master: save dataset"))
	}
	s.ds, s.q, s.round = ds, q, 0
	return false, nil
}

// describeDataset names a declaration in an error or a log line, short
// whatever a client sent (its patterns by quotePatterns).
func describeDataset(d wire.Dataset) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%q: ", d.Name)
	if d.IsRange() {
		fmt.Fprintf(&b, "%d records in tasks of %d", d.Records, d.RecordsPerTask)
	} else {
		b.WriteString("files " + quotePatterns(d.Patterns))
		if d.ChunksPerTask != 0 {
			fmt.Fprintf(&b, " in tasks of %d chunks", d.ChunksPerTask)
		}
	}
	if d.Passes != 0 {
		fmt.Fprintf(&b, ", passes a round: %d", d.Passes)
	}
	if d.Endless {
		b.WriteString(", passes without end")
	}
	return b.String()
}

// quotePatterns names a list of patterns, which may come from a client, in
// an error or a log line, short whatever the list: at most three patterns,
// each cut by dataset.Quote, and how many there are.
func quotePatterns(patterns []string) string {
	const shown = 3
	quoted := make([]string, 0, shown)
	for _, p := range patterns[:min(len(patterns), shown)] {
		quoted = append(quoted, dataset.Quote(p))
	}
	if len(patterns) > shown {
		return fmt.Sprintf("[%s ...] (%d patterns)", strings.Join(quoted, " "), len(patterns))
	}
	return "[" + strings.Join(quoted, " ") + "]"
}
