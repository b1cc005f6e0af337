package wire

// WithKind returns an error that is both kind and cause to errors.Is and
// errors.As (github.com/pkg/errors' and the standard library's alike), and
// whose text is kind's, ": ", then cause's: the form every contract error
// takes on the wire, e.g. WithKind(ErrNotServing, err) is answered as
// "master is not serving: <why>". A nil cause returns kind itself.
//
// github.com/pkg/errors wraps one cause at a time; this is the one place
// an error carries two.
func WithKind(kind, cause error) error {
	if cause == nil {
		return kind
	}
	return &kindError{kind: kind, cause: cause}
}

type kindError struct{ kind, cause error }

func (e *kindError) Error() string   { return e.kind.Error() + ": " + e.cause.Error() }
func (e *kindError) Unwrap() []error { return []error{e.kind, e.cause} }
