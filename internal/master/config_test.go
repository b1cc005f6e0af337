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
