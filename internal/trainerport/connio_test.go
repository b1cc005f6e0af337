package trainerport

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"
)

// chunks is a connection that delivers its bytes in the given pieces, one
// per read at most, then io.EOF; each read says how much room it had.
type chunks struct {
	pieces [][]byte
	rooms  []int
}

func (c *chunks) Read(p []byte) (int, error) {
	c.rooms = append(c.rooms, len(p))
	if len(c.pieces) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.pieces[0])
	if c.pieces[0] = c.pieces[0][n:]; len(c.pieces[0]) == 0 {
		c.pieces = c.pieces[1:]
	}
	return n, nil
}

// stream is n bytes counting up from 0.
func stream(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

// split cuts b into pieces of the given sizes, the last taking the rest.
func split(b []byte, sizes ...int) [][]byte {
	var pieces [][]byte
	for _, n := range sizes {
		pieces, b = append(pieces, b[:n]), b[n:]
	}
	return append(pieces, b)
}

// TestConnReaderPassesTheStream: whatever pieces the connection delivers
// and however the decoder reads (bytes, short or long reads, skips), the
// bytes come out in order, each once, and the pooled buffer is held only
// while it has bytes unread.
func TestConnReaderPassesTheStream(t *testing.T) {
	const size = 3 * readBufferBytes
	for _, tc := range []struct {
		name   string
		pieces [][]byte
		reads  []int // > 0: Read of that many; 0: ReadByte; < 0: discard of that many
	}{
		{"bytes", split(stream(size), 1, 300, 5000), []int{0, 0, 0}},
		{"short reads", split(stream(size), 10, 256, 4096), []int{7, 7, 100, 200}},
		{"long reads", split(stream(size), 100), []int{5000, 300, 256}},
		{"skips", split(stream(size), 256, 256, 8000), []int{-1, -700, 0, -5000, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := stream(size)
			conn := &chunks{pieces: tc.pieces}
			in := newConnReader(conn)
			var got []byte
			for step := 0; ; step++ {
				n := tc.reads[step%len(tc.reads)]
				var err error
				switch left := len(src) - len(got); {
				case n > 0:
					p := make([]byte, n)
					n, err = in.Read(p)
					got = append(got, p[:n]...)
				case n < 0 && left > 0:
					var dropped int
					dropped, err = in.discard(min(-n, left))
					got = append(got, src[len(got):len(got)+dropped]...)
				default:
					var b byte
					if b, err = in.ReadByte(); err == nil {
						got = append(got, b)
					}
				}
				if in.r == in.w && in.pooled != nil {
					t.Fatalf("step %d: the pooled buffer is held with nothing unread", step)
				}
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
			}
			if !bytes.Equal(got, src) {
				t.Fatalf("passed on %d bytes, not the %d of the stream as sent", len(got), len(src))
			}
		})
	}
}

// TestConnReaderWaitsSmall: a connection that waits for its next request
// reads into its own array, and takes a pooled buffer only after a read
// that filled the array (more bytes are waiting), or to skip; a read of
// more than the array goes straight into the caller's buffer.
func TestConnReaderWaitsSmall(t *testing.T) {
	conn := &chunks{pieces: split(stream(2*readBufferBytes), 40, firstReadBytes, 20, 100)}
	in := newConnReader(conn)
	next := func() {
		if _, err := in.ReadByte(); err != nil {
			t.Fatal(err)
		}
	}
	for range 40 + firstReadBytes {
		next()
	}
	next() // after a read that filled the array: a pooled buffer
	for range 19 + 100 {
		next()
	}
	if n, err := in.Read(make([]byte, 1000)); n != 1000 || err != nil { // straight into the caller's buffer
		t.Fatalf("read %d, %v", n, err)
	}
	if _, err := in.discard(10); err != nil {
		t.Fatal(err)
	}
	want := []int{firstReadBytes, firstReadBytes, readBufferBytes, firstReadBytes, 1000, readBufferBytes}
	if got := conn.rooms; !slices.Equal(got, want) {
		t.Fatalf("reads with room for %v bytes, want %v", got, want)
	}
}

// TestReplyWriterOneWritePerReply: a reply's writes go out in one write
// of the connection, at flush, and nothing is held between replies.
func TestReplyWriterOneWritePerReply(t *testing.T) {
	var conn writes
	w := &replyWriter{conn: &conn}
	for _, reply := range [][]string{{"header", "body"}, {"h2", "b2", "b3"}} {
		for _, part := range reply {
			w.Write([]byte(part))
		}
		if err := w.flush(); err != nil {
			t.Fatal(err)
		}
		if w.buf != nil {
			t.Fatal("the writer holds a buffer between replies")
		}
	}
	w.Write([]byte("dropped"))
	w.drop()
	if want := []string{"headerbody", "h2b2b3"}; len(conn) != 2 || conn[0] != want[0] || conn[1] != want[1] || w.buf != nil {
		t.Fatalf("wrote %q, want %q", conn, want)
	}
}

// writes records each write.
type writes []string

func (w *writes) Write(p []byte) (int, error) {
	*w = append(*w, string(p))
	return len(p), nil
}
