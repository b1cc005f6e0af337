package wire_test

import (
	"fmt"
	"io"
	"testing"

	"github.com/pkg/errors"

	"github.com/trainmaster/master/go/wire"
)

func TestWithKind(t *testing.T) {
	cause := errors.Wrap(io.ErrUnexpectedEOF, "read the pass key")
	err := wire.WithKind(wire.ErrNotServing, cause)
	if got, want := err.Error(), fmt.Errorf("%w: %w", wire.ErrNotServing, cause).Error(); got != want {
		t.Errorf("text %q, want %q", got, want)
	}
	for _, target := range []error{wire.ErrNotServing, io.ErrUnexpectedEOF} {
		if !errors.Is(err, target) {
			t.Errorf("errors.Is(%q, %q) = false", err, target)
		}
	}
	if errors.Is(err, wire.ErrNoTask) {
		t.Errorf("errors.Is(%q, %q) = true", err, wire.ErrNoTask)
	}
	if got := wire.WithKind(wire.ErrNoTask, nil); got != wire.ErrNoTask {
		t.Errorf("WithKind(kind, nil) = %v, want kind itself", got)
	}
}
