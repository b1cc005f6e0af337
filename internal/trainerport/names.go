package trainerport

import (
	"crypto/tls"
	"strings"

	"github.com/pkg/errors"

	"github.com/trainmaster/master/go/wire"
)

// Names bound to certificates. Over a connection whose client presented a
// certificate the port verified (ServerTLS with client CAs: the master's
// -tls-client-ca), a trainer's name is bound to the certificate's common
// name: a call may name a trainer only by the common name itself, or by
// the common name followed by "-" or "/" and anything (so "gpu7" may call
// itself "gpu7", "gpu7-4242-9f3c", go/client's default name on a host of
// that name, or "gpu7/0"). A call naming any other trainer is refused, with
// an error carrying wire.TextUnauthorized, before it reaches its receiver
// or counts as carrying the name, and the connection is stopped as for a
// wrong token. A certificate without a common name binds no name: every
// named call over it is refused. A call naming no trainer (wire.CallerName
// ""), and every call over a connection without a verified certificate,
// passes: there, names are whatever the clients say.

// boundName is the common name of the verified client certificate of tc,
// the name its trainers' names are bound to; ok is false when the client
// presented no certificate the handshake verified.
func boundName(tc *tls.Conn) (commonName string, ok bool) {
	state := tc.ConnectionState()
	if len(state.VerifiedChains) == 0 || len(state.PeerCertificates) == 0 {
		return "", false
	}
	return state.PeerCertificates[0].Subject.CommonName, true
}

// nameBound says whether a trainer may call itself name over a connection
// whose client certificate has the common name commonName: name is
// commonName, or commonName followed by "-" or "/" and anything.
func nameBound(commonName, name string) bool {
	if commonName == "" {
		return false
	}
	rest, ok := strings.CutPrefix(name, commonName)
	return ok && (rest == "" || rest[0] == '-' || rest[0] == '/')
}

// checkName refuses name, a call's trainer as wire.CallerName keeps it,
// when c's client certificate does not bind it.
func (c *trainerConn) checkName(name string) error {
	if !c.certified || name == "" || nameBound(c.commonName, name) {
		return nil
	}
	return c.refuse(errors.Wrapf(wire.ErrUnauthorized,
		"master: trainer name %q is not bound to this connection's client certificate (common name %q): "+
			`with -tls-client-ca a trainer's name must be its certificate's common name, or begin with it followed by "-" or "/"`,
		name, c.commonName))
}
