package trainerport

import (
	"encoding/gob"
	"time"
)

// An idle gob connection gives its decoder back. A gob.Decoder compiles a
// decoding engine for every type its stream sends, the type descriptions'
// own type included, and keeps them for the stream's life: about 9 KiB
// for a trainer of the contract, the most a connection costs the port,
// although most connections are idle most of the time. The types are
// sent once per stream, so a new decoder must be told them again: the
// frames keep, as sent, the type definitions the client sent (typeLog,
// about 1 KiB), and a decoder made again is given them before the next
// request. A connection that receives nothing for decoderIdle gives its
// decoder back (trainerConn.awaitRequest); its next request makes one
// again, compiling its engines anew (about 16 µs and 13 KB of garbage for
// a GetTask): one call in a second at most, per connection.

// decoderIdle is how long a connection waits for its next request before
// it gives its decoder back.
const decoderIdle = time.Second

// maxTypeBytes bounds the type definitions a connection keeps: a client
// that sends more keeps its decoder instead.
const maxTypeBytes = 16 << 10

// decode decodes the next value into v (nil: drops it), making the
// decoder again if it was given back. A stream gob refuses, or the frames
// skip a message of, is not replayed: the connection keeps its decoder.
func (c *gobCodec) decode(v any) error {
	if c.dec == nil {
		c.frames.types.rewind()
		c.dec = gob.NewDecoder(c.frames)
	}
	err := c.dec.Decode(v)
	if err != nil {
		c.frames.types.forget()
	}
	return err
}

// releasable says whether the codec holds a decoder it can give back.
func (c *gobCodec) releasable() bool { return c.dec != nil && c.frames.types.replayable() }

// release gives the decoder back; only the connection's reading goroutine,
// between requests, calls it.
func (c *gobCodec) release() { c.dec = nil }

// typeLog keeps the type definitions a client sent, each a gob message
// framed as sent (its length, then a negative type id and the type's
// description), in the order sent, until they are over maxTypeBytes.
type typeLog struct {
	sent      []byte
	recording bool // the message being passed on is a type definition kept
	lost      bool // a definition, or the stream, could not be kept: no replay
	replayed  int  // bytes of sent the current decoder has been given
}

// begin notes the start of a message of size bytes framed by head, whose
// content in follows: a type definition is kept.
func (l *typeLog) begin(head []byte, size uint64, in *connReader) {
	l.recording = false
	if l.lost || !definesType(in, size) {
		return
	}
	if uint64(len(l.sent)+len(head))+size > maxTypeBytes {
		l.forget()
		return
	}
	l.sent = append(l.sent, head...)
	l.replayed = len(l.sent)
	l.recording = true
}

// passed keeps p, bytes of the message passed on, if it is a type
// definition.
func (l *typeLog) passed(p []byte) {
	if l.recording {
		l.sent = append(l.sent, p...)
		l.replayed = len(l.sent)
	}
}

// replay copies into p what the current decoder has not been given of the
// definitions kept.
func (l *typeLog) replay(p []byte) int {
	n := copy(p, l.sent[l.replayed:])
	l.replayed += n
	return n
}

// rewind has the definitions given again, to a new decoder.
func (l *typeLog) rewind() { l.replayed = 0 }

func (l *typeLog) replayable() bool { return !l.lost }

// forget drops the definitions for good.
func (l *typeLog) forget() { *l = typeLog{lost: true} }

// definesType says whether the message of size bytes that in holds next
// is a type definition: its first value, a gob signed integer (an unsigned
// one whose low bit is the sign), is a negative type id.
func definesType(in *connReader, size uint64) bool {
	if size == 0 {
		return false
	}
	first, err := in.peek(1)
	if err != nil {
		return false
	}
	width := gobUintWidth(first[0])
	if width == 0 || uint64(width) > size {
		return false
	}
	b, err := in.peek(width)
	if err != nil {
		return false
	}
	return gobUint(b)&1 == 1
}
