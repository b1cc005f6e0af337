package trainerport

import (
	"io"
	"net"
	"time"

	"github.com/pkg/errors"
)

// How a connection's requests are served. Each request is read by a
// goroutine of its own, which waits for its first byte, reads it (net/rpc's
// ServeRequest through the connection's codec), starts the goroutine of
// the next request as soon as its argument is read, and then serves the
// call and writes its reply: calls are served concurrently, within
// Limits.MaxInflight, as net/rpc's ServeCodec would serve them. What
// ServeCodec cannot do is wait for the next request in a short stack: its
// one goroutine per connection waits deep in the decoder, in a stack grown
// by the calls it read, and the runtime keeps 8 KiB of it per idle
// connection. Here an idle connection waits in a goroutine that has done
// nothing else, whose stack stays at the runtime's smallest, 2 KiB. A gob
// connection first waits decoderIdle under a deadline, then gives its
// decoder back (gobtypes.go) and waits on in a fresh goroutine: setting
// deadlines grows a stack past 2 KiB.
//
// The goroutines of a connection are counted (trainerConn.serving); the
// last to end, once reading has stopped and every call is answered, ends
// the connection.

// readNext starts the goroutine that reads c's next request.
func (c *trainerConn) readNext() {
	c.serving.Add(1)
	go c.serveNext()
}

// serveNext waits for c's next request, reads it and serves it. A request
// whose header cannot be read ends the reading of c.
func (c *trainerConn) serveNext() {
	defer c.leave()
	ready, err := c.awaitRequest()
	switch {
	case err != nil:
	case !ready:
		c.readNext() // idle, its decoder given back
	default:
		c.sv.rpc.ServeRequest(c.codec)
	}
}

// awaitRequest waits for the first byte of c's next request, and says
// whether it came; the first byte of the connection chooses its codec. A
// codec whose decoder can be given back waits at most decoderIdle, then
// gives it back.
func (c *trainerConn) awaitRequest() (ready bool, err error) {
	if c.codec == nil {
		first, err := c.in.peekByte()
		if err != nil {
			return false, err // the client left before sending anything
		}
		c.codec = c.sv.codec(c, first)
		return true, nil
	}
	if err := c.codec.awaitSlot(); err != nil {
		return false, err
	}
	if c.codec.releasable() && !c.in.buffered() {
		err := c.awaitWithin(c.sv.decoderIdle)
		if !c.timedOut(err) {
			return err == nil, c.headerFailed(err)
		}
		c.codec.release()
		return false, nil
	}
	err = c.headerFailed(c.codec.awaitRequest())
	return err == nil, err
}

// awaitWithin waits up to d for the first byte of c's next request, under
// a read deadline it clears after. stopReading sets a deadline too, after
// stopping c: c is checked after each change of the deadline, so that a
// stop this one overrode ends the reading all the same.
func (c *trainerConn) awaitWithin(d time.Duration) error {
	c.raw.SetReadDeadline(time.Now().Add(d))
	if c.life.Err() != nil {
		return io.EOF
	}
	err := c.codec.awaitRequest()
	c.raw.SetReadDeadline(time.Time{})
	if c.life.Err() != nil {
		return io.EOF
	}
	return err
}

// timedOut says whether err is awaitWithin's deadline, and not the
// connection's end.
func (c *trainerConn) timedOut(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() && c.life.Err() == nil
}

// leave ends one of c's goroutines; the last one ends c.
func (c *trainerConn) leave() {
	if c.serving.Add(-1) == 0 {
		c.end()
	}
}

// end ends c, whose calls are all answered, and tells the listeners and
// the server.
func (c *trainerConn) end() {
	c.close()
	c.closed()
	c.sv.untrack(c)
	c.sv.wg.Done()
}
