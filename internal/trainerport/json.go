package trainerport

import (
	"bufio"
	"io"
	"net/rpc"
	"net/rpc/jsonrpc"

	"github.com/pkg/errors"
)

// The trainer port speaks two encodings of the same service: net/rpc's gob
// and the standard library's JSON-RPC 1.0 (net/rpc/jsonrpc), for trainers in
// other languages. A connection's first byte tells them apart: '{' opens a
// JSON request, while a gob stream opens with a message length.

// jsonOpening is the first byte of a JSON-RPC connection.
const jsonOpening = '{'

// errJSONTooLarge ends a JSON-RPC connection whose request is over
// Limits.MaxRequestBytes: a JSON stream cannot be resynchronised after a
// request it does not read, so the connection is closed.
var errJSONTooLarge = errors.New("master: JSON-RPC request over the limit of -max-request-bytes")

// jsonCodec is jsonrpc's server codec over a budgetReader: each request may
// take at most MaxRequestBytes bytes read from the connection.
type jsonCodec struct {
	rpc.ServerCodec
	budget *budgetReader
}

func newJSONCodec(in *bufio.Reader, conn io.WriteCloser, maxRequestBytes int) *jsonCodec {
	budget := &budgetReader{in: in, max: maxRequestBytes}
	rwc := struct {
		io.Reader
		io.Writer
		io.Closer
	}{budget, conn, conn}
	return &jsonCodec{ServerCodec: jsonrpc.NewServerCodec(rwc), budget: budget}
}

// ReadRequestHeader reads the next request, within a fresh budget: jsonrpc
// decodes the whole request, its parameters included, with the header.
func (c *jsonCodec) ReadRequestHeader(r *rpc.Request) error {
	c.budget.left = c.budget.max
	return c.ServerCodec.ReadRequestHeader(r)
}

// budgetReader passes on at most left bytes until it is given a new
// budget, then fails with errJSONTooLarge. What the decoder reads ahead of
// a request counts against that request, so a request fails only when it
// is over the budget by itself.
type budgetReader struct {
	in   io.Reader
	max  int
	left int
}

func (b *budgetReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errJSONTooLarge
	}
	n, err := b.in.Read(p[:min(len(p), b.left)])
	b.left -= n
	return n, err
}
