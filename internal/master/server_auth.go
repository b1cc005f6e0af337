package master

import (
	"crypto/sha256"
	"crypto/subtle"

	"github.com/pkg/errors"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/credfile"
)

// tokenGate holds the trainer port's shared token, as its SHA-256 sum, and
// checks a presented token against it in constant time (comparing the sums
// hides the token's length too). A nil *tokenGate means no token: every
// token passes.
type tokenGate struct{ sum [sha256.Size]byte }

func newTokenGate(token string) *tokenGate {
	if token == "" {
		return nil
	}
	return &tokenGate{sum: sha256.Sum256([]byte(token))}
}

func (g *tokenGate) matches(token string) bool {
	if g == nil {
		return true
	}
	sum := sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(sum[:], g.sum[:]) == 1
}

// admit lets a call of method through when the connection may make it:
// always without a token, after a successful Authenticate with one. Else it
// refuses the connection (trainerConn.refuse) and returns the error to
// answer, which carries wire.TextUnauthorized.
func (r *rpcService) admit(method string) error {
	if r.gate == nil || r.conn.authenticated.Load() {
		return nil
	}
	return r.conn.refuse(errors.Wrapf(wire.ErrUnauthorized, "master: %s.%s called before %s.Authenticate on a master that requires a token",
		wire.ServiceName, method, wire.ServiceName))
}

// Authenticate presents the shared token. It succeeds, changing nothing,
// on a master without a token; with one, a wrong token is answered an error
// carrying wire.TextUnauthorized and the connection is closed.
func (r *rpcService) Authenticate(token string, reply *int) error {
	if !r.gate.matches(token) {
		return r.conn.refuse(errors.Wrap(wire.ErrUnauthorized, "master: wrong token"))
	}
	if r.gate != nil {
		r.conn.authenticated.Store(true)
	}
	return nil
}

// ReadToken reads the shared token of the trainer port from path: the
// file's content without the white space around it. An empty token is an
// error: it would lock nothing.
func ReadToken(path string) (string, error) {
	token, err := credfile.Token(path)
	return token, errors.WithMessage(err, "master: read the token file")
}
