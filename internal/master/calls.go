package master

import (
	"context"
	"maps"
	"slices"

	"github.com/pkg/errors"

	"github.com/trainmaster/master/go/wire"
)

// ReportDataset reports the files of the dataset train: the first report
// decides it, unless the master declared it; later ones must name the same
// patterns.
func (s *Service) ReportDataset(ctx context.Context, patterns []string) error {
	return s.DeclareDataset(ctx, wire.Dataset{Name: wire.DefaultDataset, Patterns: patterns})
}

// DeclareDataset reports a named dataset: the first report of a name
// decides it, unless the master declared it; a later one must describe the
// same dataset, and is refused with both descriptions otherwise.
func (s *Service) DeclareDataset(ctx context.Context, d wire.Dataset) error {
	d.Name = wire.DatasetName(d.Name)
	if err := wire.CheckDatasetName(d.Name); err != nil {
		return wire.WithKind(errNotAccepted, errors.Wrap(err, "master"))
	}
	if err := checkDeclaration(d); err != nil {
		return wire.WithKind(errNotAccepted, errors.WithMessage(err, "master"))
	}
	ds, err := s.dataset(ctx, d.Name, true)
	if err != nil {
		return err
	}
	if err := ds.Report(ctx, d); err != nil {
		s.forget(d.Name, ds)
		return err
	}
	return nil
}

// GetTask records the finish it carries, if any, then hands out a task of
// the dataset finished names; both changes are committed together before
// it replies.
func (s *Service) GetTask(ctx context.Context, finished wire.Task) (wire.Task, error) {
	d, err := s.dataset(ctx, finished.Dataset, false)
	if err != nil {
		return wire.Task{}, err
	}
	return d.GetTask(ctx, finished)
}

// reportTo routes a report of t to its dataset's report.
func (s *Service) reportTo(ctx context.Context, t wire.Task, report func(*datasetService, context.Context, wire.Task) (wire.Report, error)) (wire.Report, error) {
	d, err := s.dataset(ctx, t.Dataset, false)
	if err != nil {
		return 0, err
	}
	return report(d, ctx, t)
}

// TaskFinished records a finish report.
func (s *Service) TaskFinished(ctx context.Context, t wire.Task) (wire.Report, error) {
	return s.reportTo(ctx, t, (*datasetService).TaskFinished)
}

// TaskFailed records a failure report; the reason is kept and logged cut
// to wire.MaxErrorBytes.
func (s *Service) TaskFailed(ctx context.Context, t wire.Task) (wire.Report, error) {
	return s.reportTo(ctx, t, (*datasetService).TaskFailed)
}

// TaskProgress records how far the current dispatch of a task got
// (wire.Progress), and answers where it is to stop.
func (s *Service) TaskProgress(ctx context.Context, p wire.Progress) (wire.ProgressReply, error) {
	d, err := s.dataset(ctx, p.Dataset, false)
	if err != nil {
		return wire.ProgressReply{}, err
	}
	return d.TaskProgress(ctx, p)
}

// StartRound starts round r.Round of a dataset (wire.Round) and returns
// the round now current.
func (s *Service) StartRound(ctx context.Context, r wire.Round) (int, error) {
	d, err := s.dataset(ctx, r.Dataset, false)
	if err != nil {
		return 0, err
	}
	return d.StartRound(ctx, r.Round)
}

// Status describes the dataset train (wire.Status) once what it shows is
// durable, and names every dataset of the job.
func (s *Service) Status(ctx context.Context) (wire.Status, error) {
	return s.DatasetStatus(ctx, wire.DefaultDataset)
}

// DatasetStatus describes a dataset (wire.Status) once what it shows is
// durable, and names every dataset of the job. A dataset not reported yet
// shows DatasetReported false.
func (s *Service) DatasetStatus(ctx context.Context, name string) (wire.Status, error) {
	name = wire.DatasetName(name)
	d, err := s.dataset(ctx, name, false)
	var st wire.Status
	switch {
	case errors.Is(err, wire.ErrNoDataset):
		st.Dataset = name
	case err != nil:
		return wire.Status{}, err
	default:
		if st, err = d.Status(ctx); err != nil {
			return wire.Status{}, err
		}
	}
	st.Datasets = s.names()
	return st, nil
}

// names returns the names of the datasets of the job, sorted.
func (s *Service) names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.sets))
}

// Job returns the state of the dataset train, or false when the service
// has no such dataset or is not serving.
func (s *Service) Job() (JobState, bool) {
	d, err := s.known(wire.DefaultDataset)
	if d == nil || err != nil {
		return JobState{}, false
	}
	return d.Job()
}

// Jobs returns the state of every dataset of the job, in name order.
func (s *Service) Jobs() []JobState {
	var jobs []JobState
	for _, d := range s.each() {
		if j, ok := d.Job(); ok {
			jobs = append(jobs, j)
		}
	}
	return jobs
}
