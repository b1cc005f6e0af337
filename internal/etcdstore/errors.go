package etcdstore

import (
	"fmt"

	"github.com/pkg/errors"
)

// ErrFormat is wrapped by Load when the stored state is of an unknown
// format, does not decode, or does not agree with itself: the master
// refuses to start on it rather than overwrite it. The error names the key
// at fault and keeps what was wrong as its cause, so errors.Is sees both
// ErrFormat and the cause (e.g. taskqueue.ErrBadEntry, a *json.SyntaxError).
var ErrFormat = errors.New("etcdstore: stored state not understood")

// formatError is a stored state Load refuses: the key that holds it and why.
// It is the one way this package makes ErrFormat errors (see badState).
type formatError struct {
	key   string
	cause error
}

func (e *formatError) Error() string { return fmt.Sprintf("%v: %s: %v", ErrFormat, e.key, e.cause) }

// Is makes the error ErrFormat for errors.Is; Unwrap leads on to the cause.
func (e *formatError) Is(target error) bool { return target == ErrFormat }
func (e *formatError) Unwrap() error        { return e.cause }

// badState refuses what key holds because of cause.
func badState(key string, cause error) error {
	return errors.WithStack(&formatError{key: key, cause: cause})
}

// badStatef refuses what key holds, saying why.
func badStatef(key, format string, args ...any) error {
	return badState(key, errors.Errorf(format, args...))
}
