package recordio

import (
	"encoding/binary"
	"fmt"

	"github.com/pkg/errors"
)

const (
	magic      = 0x01020304
	headerSize = 20

	// DefaultMaxChunkBytes is the reference writer's chunk limit: a chunk is
	// closed when adding a record would take its record bytes past it.
	DefaultMaxChunkBytes = 32 << 20

	// MaxChunkBytes bounds the uncompressed payload of a chunk the reader
	// accepts. It is far above what the writer produces for ordinary records
	// and keeps a decompression bomb from exhausting memory.
	MaxChunkBytes = 1 << 30
)

// Compressor says how a chunk's payload is stored.
type Compressor uint32

// The compressors of the format; the numbers are the on-disk values.
const (
	None   Compressor = 0
	Snappy Compressor = 1
	Gzip   Compressor = 2
)

func (c Compressor) String() string {
	switch c {
	case None:
		return "none"
	case Snappy:
		return "snappy"
	case Gzip:
		return "gzip"
	}
	return fmt.Sprintf("compressor(%d)", uint32(c))
}

func (c Compressor) valid() bool { return c <= Gzip }

// ParseCompressor maps "none", "snappy" or "gzip" to its Compressor.
func ParseCompressor(name string) (Compressor, error) {
	for _, c := range []Compressor{None, Snappy, Gzip} {
		if c.String() == name {
			return c, nil
		}
	}
	return 0, errors.Errorf("recordio: unknown compressor %q (want none, snappy or gzip)", name)
}

// header is a decoded chunk header.
type header struct {
	checksum    uint32
	compressor  Compressor
	payloadSize uint32
	numRecords  uint32
}

func (h header) encode(dst []byte) {
	binary.LittleEndian.PutUint32(dst[0:], magic)
	binary.LittleEndian.PutUint32(dst[4:], h.checksum)
	binary.LittleEndian.PutUint32(dst[8:], uint32(h.compressor))
	binary.LittleEndian.PutUint32(dst[12:], h.payloadSize)
	binary.LittleEndian.PutUint32(dst[16:], h.numRecords)
}

// decodeHeader parses a 20-byte header, checking the magic and compressor.
// chunk is the header's chunk number in its file. The errors say nothing of
// what the header holds instead of a magic or compressor: the bytes may be
// those of a file that is not RecordIO at all, and errors reach whoever
// named the file (a trainer reporting a dataset), who must learn nothing of
// its contents.
func decodeHeader(b []byte, chunk int) (header, error) {
	if binary.LittleEndian.Uint32(b) != magic {
		if chunk == 0 {
			return header{}, kindf(ErrBadMagic, ": not a RecordIO file")
		}
		return header{}, kindf(ErrBadMagic, ": no chunk header where chunk %d should start, the file is damaged from here", chunk)
	}
	h := header{
		checksum:    binary.LittleEndian.Uint32(b[4:]),
		compressor:  Compressor(binary.LittleEndian.Uint32(b[8:])),
		payloadSize: binary.LittleEndian.Uint32(b[12:]),
		numRecords:  binary.LittleEndian.Uint32(b[16:]),
	}
	if !h.compressor.valid() {
		return header{}, kindf(ErrCompressor, ": the header's compressor is not 0 (none), 1 (snappy) or 2 (gzip)")
	}
	return h, nil
}
