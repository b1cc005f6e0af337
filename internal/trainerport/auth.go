package trainerport

import (
	"crypto/sha256"
	"crypto/subtle"
	"strings"

	"github.com/pkg/errors"

	"github.com/trainmaster/master/go/wire"
)

// Authentication. With Config.Token set, a connection must call
// Authenticate, on any service registered, with the token before any other
// call; a call before that, or a wrong token, is answered an error carrying
// wire.TextUnauthorized and the connection is closed. Without a token,
// Authenticate succeeds and changes nothing. The port answers Authenticate
// itself, by its own receiver (authReceiver, under authService): the
// receivers registered know nothing of it.

// authMethod is the method name the port answers on every service.
const authMethod = "Authenticate"

// authService is the name the port registers authReceiver under; calls of
// authMethod on a registered service are routed to it, and checked alike
// when a client names it directly.
const authService = "TrainerPort"

// authReceiver is the net/rpc target of Authenticate: the codec checks the
// token when it decodes the argument (trainerConn.decoded), so a call that
// reaches the method has passed.
type authReceiver struct{}

// Authenticate answers a token the connection's codec accepted.
func (authReceiver) Authenticate(token string, reply *int) error { return nil }

// authCall says whether serviceMethod is a call of Authenticate, and
// returns the name to dispatch it under.
func (sv *Server) authCall(serviceMethod string) (dispatch string, ok bool) {
	service, method := splitMethod(serviceMethod)
	if method != authMethod || !(sv.services[service] || service == authService) {
		return serviceMethod, false
	}
	return authService + "." + authMethod, true
}

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

// decoded decides on a call of serviceMethod whose argument body has been
// decoded, before it reaches its receiver: Authenticate checks the token;
// any other call passes if the connection may make it and, under a client
// certificate, may name the trainer its argument names (names.go), and
// tells the listeners of that trainer. A call refused stops the connection
// (refuse); its error, which carries wire.TextUnauthorized, is the call's
// answer.
func (c *trainerConn) decoded(serviceMethod string, auth bool, body any) error {
	gate := c.sv.gate
	if auth {
		if !gate.matches(*body.(*string)) {
			return c.refuse(errors.Wrap(wire.ErrUnauthorized, "master: wrong token"))
		}
		c.authenticated = true
		return nil
	}
	if gate != nil && !c.authenticated {
		service, _ := splitMethod(serviceMethod)
		return c.refuse(errors.Wrapf(wire.ErrUnauthorized, "master: %s called before %s.%s on a master that requires a token",
			serviceMethod, service, authMethod))
	}
	if caller, ok := body.(wire.Caller); ok {
		name := caller.CallerName()
		if err := c.checkName(name); err != nil {
			return err
		}
		c.carries(name)
	}
	return nil
}

// splitMethod splits "Service.Method" as net/rpc does, at the last dot.
func splitMethod(serviceMethod string) (service, method string) {
	dot := strings.LastIndex(serviceMethod, ".")
	if dot < 0 {
		return "", serviceMethod
	}
	return serviceMethod[:dot], serviceMethod[dot+1:]
}
