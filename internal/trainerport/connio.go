package trainerport

import (
	"cmp"
	"io"
	"sync"
)

// What a connection holds between its calls. Most of a job's connections
// are idle most of the time, each in a read that waits for the next
// request: what they hold there, times 10,000 trainers, is the port's
// memory. So a connection waits with a small array of its own
// (firstReadBytes), which takes a whole request of the usual size in one
// read; a larger message is read straight into its decoder's own buffer;
// and a buffer of readBufferBytes is taken from a pool only while more
// bytes are arriving than the array holds (a burst of pipelined calls, a
// request skipped), and given back once it has been read to its end.
// Replies are encoded into a pooled buffer, written in one write, and the
// buffer given back.

// firstReadBytes is the array a waiting connection reads into: a gob call
// of the contract, header and argument, is under 200 bytes once its types
// have been sent.
const firstReadBytes = 256

// readBufferBytes is the size of the pooled buffers: bufio's default.
const readBufferBytes = 4 << 10

// maxPooledBytes is the largest buffer given back to the pool: a reply
// that grew one larger (a task of many blocks) leaves it to the GC.
const maxPooledBytes = 64 << 10

// buffers are the pooled buffers of the connections' reads and replies.
var buffers = sync.Pool{New: func() any {
	b := make([]byte, readBufferBytes)
	return &b
}}

func takeBuffer() *[]byte { return buffers.Get().(*[]byte) }

func giveBack(b *[]byte) {
	if cap(*b) <= maxPooledBytes {
		buffers.Put(b)
	}
}

// connReader is the buffered reader of one connection's requests (see
// above). Only the connection's goroutine, which reads its requests, uses
// it.
type connReader struct {
	conn   io.Reader
	first  [firstReadBytes]byte
	pooled *[]byte // the buffer taken from buffers while buf is it; nil otherwise
	buf    []byte  // first[:] or *pooled
	r, w   int     // buf[r:w] is read from conn and not yet passed on
	more   bool    // the last read filled its buffer: more bytes are likely waiting
}

func newConnReader(conn io.Reader) *connReader {
	in := &connReader{conn: conn}
	in.buf = in.first[:]
	return in
}

// fill reads what conn has, waiting for at least a byte, into an empty
// buffer: the pooled one when the last read filled its buffer or large
// says more is to come, else the connection's array.
func (in *connReader) fill(large bool) error {
	if in.more || large {
		if in.pooled == nil {
			in.pooled = takeBuffer()
		}
		in.buf = (*in.pooled)[:cap(*in.pooled)]
	}
	n, err := in.conn.Read(in.buf)
	in.r, in.w, in.more = 0, n, n == len(in.buf)
	if n > 0 {
		return nil
	}
	in.release()
	return cmp.Or(err, io.ErrNoProgress)
}

// consumed passes on n bytes of the buffer, and gives the pooled buffer
// back once it is read to its end.
func (in *connReader) consumed(n int) {
	in.r += n
	if in.r == in.w {
		in.release()
	}
}

func (in *connReader) release() {
	in.r, in.w = 0, 0
	if in.pooled != nil {
		giveBack(in.pooled)
		in.pooled = nil
		in.buf = in.first[:]
	}
}

func (in *connReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if in.r == in.w {
		if len(p) >= len(in.first) {
			return in.conn.Read(p) // into the decoder's own buffer
		}
		if err := in.fill(false); err != nil {
			return 0, err
		}
	}
	n := copy(p, in.buf[in.r:in.w])
	in.consumed(n)
	return n, nil
}

func (in *connReader) ReadByte() (byte, error) {
	if err := in.await(); err != nil {
		return 0, err
	}
	b := in.buf[in.r]
	in.consumed(1)
	return b, nil
}

// await waits until a byte can be read without waiting, and returns the
// error that ends the stream if none comes. A connection waits for its
// next request here, in a short stack (the runtime shrinks an idle
// goroutine's stack to the next power of two above four times what it
// uses).
func (in *connReader) await() error {
	if in.r < in.w {
		return nil
	}
	return in.fill(false)
}

// buffered says whether a byte can be read without waiting.
func (in *connReader) buffered() bool { return in.r < in.w }

// peekByte returns the next byte without passing it on.
func (in *connReader) peekByte() (byte, error) {
	b, err := in.peek(1)
	if err != nil {
		return 0, err
	}
	return b[0], nil
}

// peek returns the next n bytes, at most firstReadBytes, without passing
// them on, waiting for them if they are not there yet.
func (in *connReader) peek(n int) ([]byte, error) {
	for in.w-in.r < n {
		if in.r == in.w {
			if err := in.fill(false); err != nil {
				return nil, err
			}
			continue
		}
		in.w, in.r = copy(in.buf, in.buf[in.r:in.w]), 0
		m, err := in.conn.Read(in.buf[in.w:])
		in.w += m
		if m == 0 {
			return nil, cmp.Or(err, io.ErrNoProgress)
		}
	}
	return in.buf[in.r : in.r+n], nil
}

// discard drops the next n bytes, and returns how many it dropped.
func (in *connReader) discard(n int) (int, error) {
	dropped := 0
	for dropped < n {
		if in.r == in.w {
			if err := in.fill(true); err != nil {
				return dropped, err
			}
		}
		step := min(n-dropped, in.w-in.r)
		in.consumed(step)
		dropped += step
	}
	return dropped, nil
}

// replyWriter gathers the writes of one reply in a pooled buffer, and
// sends them in one write by flush: the connection holds no buffer
// between its replies. net/rpc writes one reply at a time.
type replyWriter struct {
	conn io.Writer
	buf  *[]byte // taken from buffers by the reply's first write
}

func (w *replyWriter) Write(p []byte) (int, error) {
	if w.buf == nil {
		w.buf = takeBuffer()
		*w.buf = (*w.buf)[:0]
	}
	*w.buf = append(*w.buf, p...)
	return len(p), nil
}

// flush sends the reply gathered, and gives its buffer back.
func (w *replyWriter) flush() error {
	if w.buf == nil {
		return nil
	}
	defer w.drop()
	_, err := w.conn.Write(*w.buf)
	return err
}

// drop forgets the reply gathered, if any, and gives its buffer back.
func (w *replyWriter) drop() {
	if w.buf != nil {
		giveBack(w.buf)
		w.buf = nil
	}
}
