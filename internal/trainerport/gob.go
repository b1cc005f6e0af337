package trainerport

import (
	"encoding/gob"
	"fmt"
	"io"
	"net/rpc"

	"github.com/pkg/errors"
)

// gobCodec is the server side of net/rpc's gob encoding (the wire format of
// rpc.ServeConn and rpc.Dial, byte for byte): a request is a gob-encoded
// rpc.Request then its argument, a reply an rpc.Response then its result.
// Unlike rpc.ServeConn it decodes from any reader, so that gobFrames can
// sit under its decoder. A reply that cannot be encoded whole closes the
// connection: the stream would be out of step. Its decoder is given back
// while the connection is idle (gobtypes.go).
type gobCodec struct {
	frames *gobFrames
	dec    *gob.Decoder // nil until a request is read, and while given back
	enc    *gob.Encoder
	out    *replyWriter
	closer io.Closer
}

func newGobCodec(in *gobFrames, conn io.WriteCloser) *gobCodec {
	out := &replyWriter{conn: conn}
	return &gobCodec{frames: in, enc: gob.NewEncoder(out), out: out, closer: conn}
}

// awaitRequest waits for the first byte of the next request (see
// connReader.await): the decoder reads no further than the messages it
// decodes, so what the client sent and gob did not read is in the reader.
func (c *gobCodec) awaitRequest() error { return c.frames.in.await() }

// nextBodyBytes is the size of the message the argument's decoding starts
// with: the argument itself, or the description of its type the first time
// the connection sends one.
func (c *gobCodec) nextBodyBytes() int { return c.frames.nextSize() }

func (c *gobCodec) ReadRequestHeader(r *rpc.Request) error { return c.decode(r) }

// ReadRequestBody decodes the argument; a nil body reads and drops it.
func (c *gobCodec) ReadRequestBody(body any) error { return c.decode(body) }

func (c *gobCodec) WriteResponse(r *rpc.Response, body any) error {
	defer c.out.drop()
	if err := c.encode(r, body); err != nil {
		c.closer.Close()
		return err
	}
	return nil
}

func (c *gobCodec) encode(r *rpc.Response, body any) error {
	if err := c.enc.Encode(r); err != nil {
		return errors.Wrap(err, "master: encode reply header")
	}
	if err := c.enc.Encode(body); err != nil {
		return errors.Wrap(err, "master: encode reply")
	}
	return errors.Wrap(c.out.flush(), "master: send reply")
}

func (c *gobCodec) Close() error { return c.closer.Close() }

// maxSkipBytes is the longest message gobFrames skips: a length over it is
// not from a client of the contract, and closes the connection.
const maxSkipBytes = 1 << 30

// RequestTooLargeError is the answer to a request message over
// Limits.MaxRequestBytes: the message was skipped, never held.
type RequestTooLargeError struct {
	Size, Limit uint64
}

func (e *RequestTooLargeError) Error() string {
	return fmt.Sprintf("master: request of %d bytes is over the limit of %d bytes (the master's -max-request-bytes); it was not read", e.Size, e.Limit)
}

// errUnframed: the stream is not a sequence of gob messages.
var errUnframed = errors.New("master: not a gob stream (bad message length)")

// gobFrames passes a gob stream through unchanged, message by message
// (a gob message is its length, as a gob unsigned integer, then that many
// bytes), and refuses a message over max bytes before reading any of it:
// the read that would begin the message fails with a *RequestTooLargeError,
// at the message boundary, and the next read first skips the message in
// buffer-sized pieces. The decoder above thus stays in step and goes on with
// the next message, and the skipped bytes are never held. A length that no
// gob message has ends the stream with errUnframed.
//
// It implements io.ByteReader so that gob reads from it directly instead of
// through a buffer of its own, which would read ahead of the boundaries.
type gobFrames struct {
	in      *connReader
	max     uint64
	left    uint64  // bytes of the current message not passed on yet
	head    []byte  // the current message's length prefix not passed on yet
	skip    uint64  // bytes of a refused message still to drop
	buf     [9]byte // holds head
	pending error   // the error of a length read by nextSize, for the next Read
	types   typeLog // the type definitions passed on, for a decoder made again (gobtypes.go)
}

func newGobFrames(in *connReader, max int) *gobFrames {
	return &gobFrames{in: in, max: uint64(max)}
}

func (f *gobFrames) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if n := f.types.replay(p); n > 0 {
		return n, nil
	}
	if err := f.pending; err != nil {
		f.pending = nil
		return 0, err
	}
	if len(f.head) == 0 && f.left == 0 {
		if err := f.next(); err != nil {
			return 0, err
		}
	}
	if len(f.head) > 0 {
		n := copy(p, f.head)
		f.head = f.head[n:]
		return n, nil
	}
	n, err := f.in.Read(p[:min(uint64(len(p)), f.left)])
	f.left -= uint64(n)
	f.types.passed(p[:n])
	return n, err
}

func (f *gobFrames) ReadByte() (byte, error) {
	var b [1]byte
	_, err := io.ReadFull(f, b[:])
	return b[0], err
}

// nextSize returns the size of the next message, reading its length if no
// message is under way (then the next Read passes it on, or fails as it
// would have). A message over max, or a stream that ended, counts as 0: the
// next Read says why.
func (f *gobFrames) nextSize() int {
	if f.pending == nil && len(f.head) == 0 && f.left == 0 {
		f.pending = f.next()
	}
	if f.pending != nil {
		return 0
	}
	return int(f.left)
}

// next drops what is left of a refused message, then reads the length of
// the next one and refuses it if it is over max.
func (f *gobFrames) next() error {
	if f.skip > 0 {
		n, err := f.in.discard(int(f.skip))
		f.skip -= uint64(n)
		if err != nil {
			return unexpected(err)
		}
	}
	size, width, err := f.readLength()
	if err != nil {
		return err
	}
	if size > f.max {
		f.skip = size
		return &RequestTooLargeError{Size: size, Limit: f.max}
	}
	f.head, f.left = f.buf[:width], size
	f.types.begin(f.head, size, f.in)
	return nil
}

// readLength reads a message's length, a gob unsigned integer, into f.buf.
func (f *gobFrames) readLength() (size uint64, width int, err error) {
	first, err := f.in.ReadByte()
	if err != nil {
		return 0, 0, err // io.EOF here is a clean end between messages
	}
	width = gobUintWidth(first)
	if width == 0 {
		return 0, 0, errUnframed
	}
	f.buf[0] = first
	if _, err := io.ReadFull(f.in, f.buf[1:width]); err != nil {
		return 0, 0, unexpected(err)
	}
	if size = gobUint(f.buf[:width]); size > maxSkipBytes {
		return 0, 0, errUnframed
	}
	return size, width, nil
}

// gobUintWidth is the width in bytes of a gob unsigned integer beginning
// with first: one byte below 0x80, else a byte holding the negated count
// of the big-endian bytes that follow, at most 8; 0 if no gob unsigned
// integer begins with first.
func gobUintWidth(first byte) int {
	if first < 0x80 {
		return 1
	}
	n := -int(int8(first))
	if n > 8 {
		return 0
	}
	return 1 + n
}

// gobUint is the value of the gob unsigned integer b, whose width
// (gobUintWidth(b[0])) b holds exactly.
func gobUint(b []byte) uint64 {
	if b[0] < 0x80 {
		return uint64(b[0])
	}
	var v uint64
	for _, x := range b[1:] {
		v = v<<8 | uint64(x)
	}
	return v
}

// unexpected turns an end of stream inside a message into
// io.ErrUnexpectedEOF.
func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
