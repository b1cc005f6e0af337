package trainerport

import (
	"encoding/json"
	"io"
	"net/rpc"
	"sync"

	"github.com/pkg/errors"
)

// The trainer port speaks two encodings of the same service: net/rpc's gob
// and JSON-RPC 1.0 as the standard library's net/rpc/jsonrpc speaks it, for
// trainers in other languages. A connection's first byte tells them apart:
// '{' opens a JSON request, while a gob stream opens with a message length.

// jsonOpening is the first byte of a JSON-RPC connection.
const jsonOpening = '{'

// errJSONTooLarge ends a JSON-RPC connection whose request is over
// Limits.MaxRequestBytes: a JSON stream cannot be resynchronised after a
// request it does not read, so the connection is closed.
var errJSONTooLarge = errors.New("master: JSON-RPC request over the limit of -max-request-bytes")

// errMissingParams answers a request without params, in net/rpc/jsonrpc's
// words.
var errMissingParams = errors.New("jsonrpc: request body missing params")

// jsonCodec is the server side of JSON-RPC 1.0, byte for byte as
// net/rpc/jsonrpc's: a request is an object {"method", "params", "id"},
// whose params is an array holding the argument; a reply is
// {"id", "result", "error"}, with the request's id, and one of result and
// error null. Each request may take at most MaxRequestBytes read from the
// connection (budgetReader). It is the port's own, not jsonrpc's, for the
// sake of idle connections: its decoder, which reads ahead into a buffer
// of its own, is let go while the connection waits with nothing buffered
// (awaitRequest), so that an idle connection holds neither that buffer nor
// a read deep in the decoder.
type jsonCodec struct {
	in     *connReader
	budget *budgetReader
	out    io.WriteCloser
	enc    *json.Encoder

	// Only the connection's reading goroutine uses these.
	dec    *json.Decoder    // nil while the connection waits with nothing buffered
	params *json.RawMessage // of the request whose header was read last

	mu      sync.Mutex                  // guards the fields below
	last    uint64                      // the number of the last request read
	pending map[uint64]*json.RawMessage // number -> the client's id, per request awaiting its reply
}

// jsonRequest is a JSON-RPC request. A field left out, or null, is nil.
type jsonRequest struct {
	Method string           `json:"method"`
	Params *json.RawMessage `json:"params"`
	ID     *json.RawMessage `json:"id"`
}

// jsonReply is a JSON-RPC reply.
type jsonReply struct {
	ID     *json.RawMessage `json:"id"`
	Result any              `json:"result"`
	Error  any              `json:"error"`
}

// jsonNull is the id of a reply to a request that gave none.
var jsonNull = json.RawMessage("null")

func newJSONCodec(in *connReader, conn io.WriteCloser, maxRequestBytes int) *jsonCodec {
	return &jsonCodec{in: in, budget: &budgetReader{in: in, max: maxRequestBytes}, out: conn,
		enc: json.NewEncoder(conn), pending: map[uint64]*json.RawMessage{}}
}

// awaitRequest waits for the first byte of the next request, unless the
// decoder holds it already; a decoder holding nothing but white space is
// let go meanwhile.
func (c *jsonCodec) awaitRequest() error {
	if c.dec != nil {
		if holdsRequest(c.dec) {
			return nil
		}
		c.dec = nil
	}
	return c.in.await()
}

// holdsRequest says whether dec has buffered anything but white space.
func holdsRequest(dec *json.Decoder) bool {
	buffered := dec.Buffered()
	var p [64]byte
	for {
		n, err := buffered.Read(p[:])
		for _, b := range p[:n] {
			if !isJSONSpace(b) {
				return true
			}
		}
		if err != nil {
			return false
		}
	}
}

// isJSONSpace says whether b is white space between JSON values.
func isJSONSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

// ReadRequestHeader reads the next request, within a fresh budget: the
// whole request, its params included, is decoded with the header.
func (c *jsonCodec) ReadRequestHeader(r *rpc.Request) error {
	if c.dec == nil {
		c.dec = json.NewDecoder(c.budget)
	}
	c.budget.left = c.budget.max
	var req jsonRequest
	if err := c.dec.Decode(&req); err != nil {
		return err
	}
	c.params = req.Params
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last++
	c.pending[c.last] = req.ID
	r.ServiceMethod, r.Seq = req.Method, c.last
	return nil
}

// ReadRequestBody decodes the argument, the first element of params; a nil
// body drops it.
func (c *jsonCodec) ReadRequestBody(body any) error {
	params := c.params
	c.params = nil
	if body == nil {
		return nil
	}
	if params == nil {
		return errMissingParams
	}
	args := [1]any{body}
	return json.Unmarshal(*params, &args)
}

// WriteResponse writes the reply of request r.Seq. A result that cannot
// be encoded is not written: the stream stays in step.
func (c *jsonCodec) WriteResponse(r *rpc.Response, body any) error {
	id, ok := c.answered(r.Seq)
	if !ok {
		return errors.New("invalid sequence number in response")
	}
	reply := jsonReply{ID: id, Result: body}
	if r.Error != "" {
		reply.Result, reply.Error = nil, r.Error
	}
	return c.enc.Encode(reply)
}

// answered forgets request seq and returns the id its client gave it.
func (c *jsonCodec) answered(seq uint64) (id *json.RawMessage, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id, ok = c.pending[seq]
	delete(c.pending, seq)
	if id == nil {
		id = &jsonNull
	}
	return id, ok
}

func (c *jsonCodec) Close() error { return c.out.Close() }

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
