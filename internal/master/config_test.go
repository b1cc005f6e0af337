package master

import (
	"context"
	"strings"
	"testing"

	"github.com/pkg/errors"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/taskqueue"
)

// TestValidate: Validate refuses what New refuses, with the same error.
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string // "" for a valid configuration
	}{
		{"zero", Config{}, ""},
		{"declared", Config{Dataset: []string{"/data/*.recordio"}, Datasets: []wire.Dataset{{Name: "eval", Records: 10, RecordsPerTask: 2}}}, ""},
		{"chunks", Config{ChunksPerTask: -1}, "chunks per task must be positive, not -1"},
		{"passes", Config{Queue: taskqueue.Config{Passes: -2}}, "passes must be between 1"},
		{"twice", Config{Datasets: []wire.Dataset{{Name: "eval", Records: 1, RecordsPerTask: 1}, {Name: "eval", Records: 2, RecordsPerTask: 1}}}, `dataset "eval" declared twice`},
		{"too many", Config{MaxDatasets: 1, Dataset: []string{"a"}, Datasets: []wire.Dataset{{Name: "eval", Records: 1, RecordsPerTask: 1}}}, "2 datasets declared, more than the 1 allowed"},
		{"range and files", Config{Datasets: []wire.Dataset{{Name: "eval", Records: 1, Patterns: []string{"a"}}}}, "gives both files and a number of records"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			_, newErr := New(tc.cfg)
			switch {
			case tc.want == "" && (err != nil || newErr != nil):
				t.Fatalf("Validate: %v, New: %v; want both nil", err, newErr)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate: %v, want %q", err, tc.want)
			case tc.want != "" && (newErr == nil || newErr.Error() != err.Error()):
				t.Fatalf("New: %v, Validate: %v; want the same error", newErr, err)
			}
		})
	}
}

// TestRunEndsWithItsContext: Run returns the cause of its context's end and
// leaves the service closed.
func TestRunEndsWithItsContext(t *testing.T) {
	s, _ := newService(t, Config{ChunksPerTask: 1})
	if err := s.ReportDataset(ctx, []string{writeDataset(t, t.TempDir(), 1, 2)}); err != nil {
		t.Fatal(err)
	}
	term, end := context.WithCancelCause(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- s.Run(term) }()
	if _, err := s.GetTask(ctx, wire.Task{}); err != nil {
		t.Fatalf("GetTask while running: %v", err)
	}
	gone := errors.New("lock lost")
	end(gone)
	if err := <-ran; err != gone {
		t.Fatalf("Run returned %v, want %v", err, gone)
	}
	if _, err := s.GetTask(ctx, wire.Task{}); !wire.Is(err, wire.TextNotServing) {
		t.Fatalf("GetTask after Run returned: %v", err)
	}
}

// TestDeclarationErrorPlaces: Validate says which declaration it refuses,
// and which one came first of a name declared twice, so that the command
// that read them can name their lines; its text names no program, while a
// trainer's refused declaration still reads "master: ...".
func TestDeclarationErrorPlaces(t *testing.T) {
	eval := wire.Dataset{Name: "eval", Records: 10, RecordsPerTask: 1}
	train := wire.Dataset{Name: "train", Records: 10, RecordsPerTask: 1}
	for _, tc := range []struct {
		name         string
		cfg          Config
		index, first int
		text         string
	}{
		{"twice", Config{Datasets: []wire.Dataset{eval, train, eval}}, 2, 0, `dataset "eval" declared twice`},
		{"train by -dataset too", Config{Dataset: []string{"a"}, Datasets: []wire.Dataset{eval, train}}, 2, 1, `dataset "train" declared twice`},
		{"bad name", Config{Datasets: []wire.Dataset{eval, {Name: "Eval", Records: 1, RecordsPerTask: 1}}}, 1, -1, `declared dataset: dataset name "Eval": want lower-case letters, digits, '_', '-' and '.', starting with a letter or a digit`},
		{"negative passes", Config{Datasets: []wire.Dataset{{Name: "eval", Records: 1, RecordsPerTask: 1, Passes: -1}}}, 0, -1, `dataset "eval": 0 chunks per task, -1 passes (want 0, the master's, or more)`},
		{"too many", Config{MaxDatasets: 1, Dataset: []string{"a"}, Datasets: []wire.Dataset{eval}}, 1, -1, "2 datasets declared, more than the 1 allowed (-max-datasets)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var de *DeclarationError
			err := tc.cfg.Validate()
			if !errors.As(err, &de) || de.Index != tc.index || de.First != tc.first || err.Error() != tc.text {
				t.Fatalf("Validate: %v (%+v); want %q at %d, first %d", err, de, tc.text, tc.index, tc.first)
			}
		})
	}
	s, _ := newService(t, Config{})
	err := s.DeclareDataset(ctx, wire.Dataset{Name: "eval", Records: 1, RecordsPerTask: 1, Passes: -1})
	if want := `master: dataset not accepted: master: dataset "eval": 0 chunks per task, -1 passes (want 0, the master's, or more)`; err == nil || err.Error() != want {
		t.Fatalf("DeclareDataset: %v; want %q", err, want)
	}
}
