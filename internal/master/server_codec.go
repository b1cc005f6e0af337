package master

import (
	"io"
	"net/rpc"

	"github.com/pkg/errors"
	"github.com/sirupsen/logrus"
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
type limitedCodec struct {
	rpc.ServerCodec
	conn  *trainerConn
	slots chan struct{} // one element per call awaiting its reply
}

func newLimitedCodec(codec rpc.ServerCodec, conn *trainerConn, maxInflight int) *limitedCodec {
	return &limitedCodec{ServerCodec: codec, conn: conn, slots: make(chan struct{}, maxInflight)}
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
	c.conn.callStarted()
	return nil
}

func (c *limitedCodec) acquire() error {
	done := c.conn.life.Done()
	select {
	case <-done:
		return io.EOF
	default:
	}
	select {
	case c.slots <- struct{}{}:
		return nil
	case <-done:
		return io.EOF
	}
}

// ReadRequestBody reads the argument; one over the size limit has been
// skipped, and its error is the answer.
func (c *limitedCodec) ReadRequestBody(body any) error {
	err := c.ServerCodec.ReadRequestBody(body)
	var tooLarge *RequestTooLargeError
	if errors.As(err, &tooLarge) {
		c.conn.warn("refused a request over -max-request-bytes", logrus.Fields{"bytes": tooLarge.Size, "limit": tooLarge.Limit})
	}
	return err
}

// WriteResponse writes a reply, then frees the call's slot: a reply stuck
// behind a client that does not read keeps its slot, so such a client
// stops being read once MaxInflight replies wait.
func (c *limitedCodec) WriteResponse(r *rpc.Response, body any) error {
	defer c.conn.callEnded()
	defer func() { <-c.slots }()
	return c.ServerCodec.WriteResponse(r, body)
}
