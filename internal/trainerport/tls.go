package trainerport

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/gob"
	"encoding/json"
	"io"
	"net"
	"net/rpc"
	"time"

	"github.com/pkg/errors"
)

// ServerTLS returns the TLS configuration of a port serving cert: TLS 1.2
// at least and, when clientCAs is not nil, a demand for a client
// certificate signed by one of them: a trainer without one is refused
// during the handshake. The port reads no file: the caller loads cert
// (tls.LoadX509KeyPair) and the CAs.
func ServerTLS(cert tls.Certificate, clientCAs *x509.CertPool) *tls.Config {
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if clientCAs != nil {
		cfg.ClientCAs, cfg.ClientAuth = clientCAs, tls.RequireAndVerifyClientCert
	}
	return cfg
}

// secure runs the TLS handshake, within tlsHandshakeTimeout and until the
// connection is stopped, and notes the client certificate that binds the
// connection's trainer names.
func (c *trainerConn) secure(cfg *tls.Config) error {
	tc := tls.Server(c.rw, cfg)
	ctx, cancel := context.WithTimeout(c.life, tlsHandshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		answerPlain(err)
		lingerBeforeClose(c.raw)
		return errors.Wrap(err, "master: TLS handshake")
	}
	c.rw = tc
	c.commonName, c.certified = boundName(tc)
	return nil
}

// lingerBeforeClose ends the sending side of a refused connection, then
// reads and drops what the client still sends, for up to a second, until
// it hangs up. Closing a socket with unread bytes makes the kernel send a
// reset, which can reach the client before the TLS alert saying why it was
// refused: the client would see "connection reset" and retry instead of
// stopping with "certificate required".
func lingerBeforeClose(conn net.Conn) {
	if cw, ok := conn.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	conn.SetReadDeadline(time.Now().Add(time.Second))
	io.Copy(io.Discard, io.LimitReader(conn, 1<<20))
}

// plainOnTLS is what a client that does not speak TLS is told on a TLS port.
const plainOnTLS = "master: this port speaks TLS and this client does not: give it the CA of the master's certificate (go/client: Config.TLS; cmd/trainer: -tls-ca)"

// answerPlain answers a client that sent plain bytes to the TLS port, when
// they may be a net/rpc call: with an error reply to its first call (a new
// gob client numbers it 0; a JSON reply has no id, the request's being
// unread), so that it says why instead of retrying a connection that ends.
func answerPlain(err error) {
	var plain tls.RecordHeaderError
	if !errors.As(err, &plain) || plain.Conn == nil {
		return
	}
	plain.Conn.SetWriteDeadline(time.Now().Add(time.Second))
	if plain.RecordHeader[0] == jsonOpening {
		json.NewEncoder(plain.Conn).Encode(map[string]any{"id": nil, "result": nil, "error": plainOnTLS})
		return
	}
	enc := gob.NewEncoder(plain.Conn)
	if enc.Encode(rpc.Response{Seq: 0, Error: plainOnTLS}) == nil {
		enc.Encode(struct{}{})
	}
}
