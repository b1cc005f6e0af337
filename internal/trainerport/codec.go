package trainerport

import (
	"io"
	"net/rpc"
	"sync"

	"github.com/pkg/errors"
	"github.com/sirupsen/logrus"

	"github.com/trainmaster/master/go/wire"
)

// limitedCodec wraps the codec of one connection, whatever its encoding,
// and holds it to Limits.MaxInflight: it reads a request only while fewer
// than that many calls of the connection await their replies. Each request
// read takes a slot, and the slot is freed exactly once: when its reply has
// been written, or at once when its header cannot be read (net/rpc answers
// nothing then). A request whose argument fails to decode, or names no
// method, is answered by net/rpc like any call, which frees its slot. It
// also tells the connection when calls start and end, for its idle timer,
// and stops reading when the connection is stopped.
//
// A large argument (over largeRequestBytes) also takes the connection's one
// large slot before it is decoded, until its reply is written: decoded, an
// argument can take 40 times its size on the wire (a []string of empty
// strings), so a connection holds at most one large argument and
// MaxInflight-1 small ones, whatever it pipelines.
//
// Calls are numbered by the codec itself (net/rpc sees its numbers; the
// inner codec gets its own back with each reply), so that a client reusing
// a sequence number cannot make one call's reply free another's slot.
//
// It is also where the port sees each call before its receiver does: a
// call of Authenticate is routed to the port's own receiver (auth.go), and
// every decoded argument passes trainerConn.decoded. A reply goes out with
// the method name the client sent.
type limitedCodec struct {
	rpc.ServerCodec
	conn  *trainerConn
	slots chan struct{} // one element per call awaiting its reply
	large chan struct{} // holds one element while a large call awaits its reply

	// bodyRead, if set, is called once each request's argument has been
	// read (or dropped): the connection's next request may be read.
	bodyRead func()

	// The call being read, between its header and its argument: only the
	// connection's reading goroutine uses them.
	method string // as the client sent it
	auth   bool   // a call of Authenticate

	// writing is held while a reply is written: the replies of a
	// connection's calls, which net/rpc's ServeRequest sends from each
	// call's goroutine, go out one at a time.
	writing sync.Mutex

	mu    sync.Mutex      // guards the fields below
	last  uint64          // the codec's number of the last call read; from 1
	inner map[uint64]sent // the codec's number -> the client's, per call awaiting its reply
	held  uint64          // the codec's number of the call holding the large slot; 0: none
}

// sent is how the client named a call: its number (the inner codec's) and
// its method.
type sent struct {
	seq    uint64
	method string
}

// largeRequestBytes is the size over which an argument is large: every call
// of a trainer but a dataset report of many files is smaller.
const largeRequestBytes = 4 << 10

// bodySizer is a codec that can tell the size of an argument before
// decoding it.
type bodySizer interface{ nextBodyBytes() int }

func newLimitedCodec(codec rpc.ServerCodec, conn *trainerConn, maxInflight int) *limitedCodec {
	return &limitedCodec{ServerCodec: codec, conn: conn, slots: make(chan struct{}, maxInflight),
		large: make(chan struct{}, 1), inner: map[uint64]sent{}}
}

// ReadRequestHeader waits for a free slot, then reads the next header. It
// answers io.EOF, which ends the connection once the calls in flight have
// their replies, when the connection is stopped.
func (c *limitedCodec) ReadRequestHeader(r *rpc.Request) error {
	if err := c.acquire(); err != nil {
		return err
	}
	if err := c.ServerCodec.ReadRequestHeader(r); err != nil {
		<-c.slots
		return c.conn.headerFailed(err)
	}
	c.method = r.ServiceMethod
	r.ServiceMethod, c.auth = c.conn.sv.authCall(r.ServiceMethod)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last++
	c.inner[c.last], r.Seq = sent{seq: r.Seq, method: c.method}, c.last
	c.conn.callStarted()
	return nil
}

func (c *limitedCodec) acquire() error { return c.take(c.slots) }

// awaitSlot waits until a request can be read within MaxInflight, without
// taking the slot (ReadRequestHeader does): the connection waits for its
// next request only then, and reads nothing meanwhile. Only the reading
// goroutine takes slots, so the slot stays free until it does.
func (c *limitedCodec) awaitSlot() error {
	if err := c.acquire(); err != nil {
		return err
	}
	<-c.slots
	return nil
}

// requestAwaiter is a codec that can wait for the next request without
// reading it: an idle connection then waits in a short stack, not in the
// depths of its decoder (requests.go).
type requestAwaiter interface{ awaitRequest() error }

// decoderReleaser is a codec whose decoder an idle connection gives back
// (gobtypes.go).
type decoderReleaser interface {
	releasable() bool
	release()
}

// releasable says whether the codec holds a decoder an idle connection
// gives back.
func (c *limitedCodec) releasable() bool {
	r, ok := c.ServerCodec.(decoderReleaser)
	return ok && r.releasable()
}

// release gives the codec's decoder back.
func (c *limitedCodec) release() { c.ServerCodec.(decoderReleaser).release() }

// awaitRequest waits for the next request, if the codec can.
func (c *limitedCodec) awaitRequest() error {
	if awaiter, ok := c.ServerCodec.(requestAwaiter); ok {
		return awaiter.awaitRequest()
	}
	return nil
}

// take puts an element in slots, waiting for room, unless the connection
// is stopped.
func (c *limitedCodec) take(slots chan struct{}) error {
	done := c.conn.life.Done()
	select {
	case <-done:
		return io.EOF
	default:
	}
	select {
	case slots <- struct{}{}:
		return nil
	case <-done:
		return io.EOF
	}
}

// takeLarge takes the large slot for the current call if its argument is
// large.
func (c *limitedCodec) takeLarge() error {
	sizer, ok := c.ServerCodec.(bodySizer)
	if !ok || sizer.nextBodyBytes() <= largeRequestBytes {
		return nil
	}
	if err := c.take(c.large); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held = c.last // the call whose header was read last is the one being read
	return nil
}

// ended forgets the call numbered own and returns how the client named
// it, and whether it held the large slot.
func (c *limitedCodec) ended(own uint64) (inner sent, heldLarge bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	inner = c.inner[own]
	delete(c.inner, own)
	if heldLarge = own == c.held; heldLarge {
		c.held = 0
	}
	return inner, heldLarge
}

// ReadRequestBody reads the argument; one over the size limit has been
// skipped, and its error is the answer. A nil body is net/rpc dropping the
// argument of a call it cannot serve (no such method).
func (c *limitedCodec) ReadRequestBody(body any) error {
	if c.bodyRead != nil {
		defer c.bodyRead()
	}
	if err := c.takeLarge(); err != nil {
		return c.cut(err)
	}
	err := c.ServerCodec.ReadRequestBody(body)
	var tooLarge *RequestTooLargeError
	switch {
	case errors.As(err, &tooLarge):
		c.conn.warn("refused a request over -max-request-bytes", logrus.Fields{"bytes": tooLarge.Size, "limit": tooLarge.Limit})
		return err
	case err != nil || body == nil:
		return c.cut(err)
	}
	return c.conn.decoded(c.method, c.auth, body)
}

// cut is the answer to a call whose argument could not be read: err, or,
// when the connection was stopped meanwhile (Server.Close, as a deposed
// master stops; a failed authentication), wire.ErrNotServing, which a
// client retries at the leader, rather than the stop's read deadline.
func (c *limitedCodec) cut(err error) error {
	if err == nil || c.conn.life.Err() == nil {
		return err
	}
	return wire.WithKind(wire.ErrNotServing, errors.WithMessage(err, "the connection was stopped while the call's argument was read"))
}

// WriteResponse writes a reply, then frees the call's slot: a reply stuck
// behind a client that does not read keeps its slot, so such a client
// stops being read once MaxInflight replies wait.
func (c *limitedCodec) WriteResponse(r *rpc.Response, body any) error {
	defer c.conn.callEnded()
	defer func() { <-c.slots }()
	call, heldLarge := c.ended(r.Seq)
	r.Seq, r.ServiceMethod = call.seq, call.method
	if heldLarge {
		defer func() { <-c.large }()
	}
	c.writing.Lock()
	defer c.writing.Unlock()
	return c.ServerCodec.WriteResponse(r, body)
}
