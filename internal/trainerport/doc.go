// Package trainerport is the trainer port: the TCP port on which trainers
// call the master. It serves receivers in the manner of net/rpc, and owns
// everything between the socket and a receiver's method: TLS, the choice
// of encoding, the limits that bound what a client can cost, the shared
// token, and the accounting of connections. It knows nothing of the
// services it serves, which know nothing of connections.
//
// A service is a receiver whose methods have net/rpc's shape,
//
//	func (t *T) MethodName(arg ArgType, reply *ReplyType) error
//
// registered under a name, with a Listener, if it wants one, that hears of
// connections opening, carrying a trainer's name and closing:
//
//	srv, err := trainerport.NewServer(trainerport.Config{Token: token, TLS: tlsConfig})
//	if err != nil { ... }
//	if err := srv.Register(wire.ServiceName, receiver, listener); err != nil { ... }
//	go srv.Serve(lis) // returns nil after Close, or the accept error that killed the port
//	...
//	srv.Close() // waits for the replies of the calls in flight, up to 2 s
//
// More services can be registered on the same port (before Serve), each
// under its own name; a client calls "Name.Method" (see the Example).
//
// What the port promises, whatever a client sends:
//   - Encodings: a connection speaks net/rpc's gob or JSON-RPC 1.0
//     (net/rpc/jsonrpc), told apart by its first byte ('{' opens JSON), to
//     the same receivers.
//   - TLS: with Config.TLS every connection is TLS (ServerTLS); a plain
//     client is answered an error saying so, in its encoding.
//   - Authentication: with Config.Token, a connection calls Authenticate
//     (on any service's name, e.g. "Master.Authenticate") with the token
//     before anything else. A call before that, or a wrong token, is
//     answered an error carrying wire.TextUnauthorized, and the connection
//     is closed after it. Without a token Authenticate succeeds and changes
//     nothing. The receivers have no Authenticate method: the port answers
//     it.
//   - Names: over a connection whose client certificate the port verified
//     (ServerTLS with client CAs), a call may name a trainer (a wire.Caller)
//     only by the certificate's common name, or by it followed by "-" or
//     "/" and anything; a call naming another is refused like a wrong token
//     (wire.TextUnauthorized, the connection closed after it), before it
//     reaches its receiver or carries the name. Elsewhere names are not
//     checked.
//   - Limits (Limits): connections, idle time, request size and calls in
//     flight per connection are bounded; what is refused is logged, rate
//     limited. The connections' default bound comes from the process's
//     file limit (DefaultMaxConns).
//   - Idle connections: a connection waiting for its next request holds
//     one goroutine on the runtime's smallest stack and no buffer, and a
//     gob connection idle for a second gives its decoder back (connio.go,
//     requests.go, gobtypes.go).
//   - Events: a Listener hears of each connection it serves: opened,
//     carrying a trainer's name (the argument of a call is a wire.Caller),
//     closed once its calls are answered.
//
// The port reads no file: callers load certificates and tokens.
package trainerport
