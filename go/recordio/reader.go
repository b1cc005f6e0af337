package recordio

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"hash/crc32"
	"io"

	"github.com/pkg/errors"
)

// Reader reads and verifies chunks of one file by their offset: what a
// trainer does with the blocks of a task. It reuses its buffers, so the
// records it returns are valid only until the next ReadChunk. A Reader is not
// safe for concurrent use.
type Reader struct {
	src  io.ReaderAt
	size int64
	name string

	stored  []byte
	plain   []byte
	records [][]byte
	gz      *gzip.Reader
	bytesRd bytes.Reader
}

// NewReader reads chunks from src, which holds size bytes; name is used in
// errors.
func NewReader(src io.ReaderAt, size int64, name string) *Reader {
	return &Reader{src: src, size: size, name: name}
}

// Reset makes r read from another source, keeping its buffers.
func (r *Reader) Reset(src io.ReaderAt, size int64, name string) {
	r.src, r.size, r.name = src, size, name
}

// Name returns the name given to NewReader.
func (r *Reader) Name() string { return r.name }

// Size returns the size given to NewReader.
func (r *Reader) Size() int64 { return r.size }

// ReadChunk reads the chunk whose header is at offset, chunk being its number
// in the file (used in errors). It returns the chunk's records and the offset
// of the next chunk.
func (r *Reader) ReadChunk(chunk int, offset int64) (records [][]byte, next int64, err error) {
	h, next, err := r.readHeader(chunk, offset)
	if err != nil {
		return nil, 0, err
	}
	r.stored = grow(r.stored[:0], int(h.payloadSize))
	if err := readFullAt(r.src, r.stored, offset+headerSize); err != nil {
		return nil, 0, r.wrap(chunk, offset, err)
	}
	if sum := crc32.ChecksumIEEE(r.stored); sum != h.checksum {
		return nil, 0, r.errorf(chunk, offset, ErrChecksum, ": header says %#08x, payload has %#08x", h.checksum, sum)
	}
	plain, err := r.decompress(h.compressor)
	if err != nil {
		return nil, 0, r.wrap(chunk, offset, err)
	}
	r.records, err = splitRecords(r.records[:0], plain, h.numRecords)
	if err != nil {
		return nil, 0, r.wrap(chunk, offset, err)
	}
	return r.records, next, nil
}

// readHeader reads and checks the header at offset, and that the payload it
// announces fits in the file; next is the offset just past the payload.
func (r *Reader) readHeader(chunk int, offset int64) (h header, next int64, err error) {
	if offset < 0 || offset+headerSize > r.size {
		return header{}, 0, r.errorf(chunk, offset, ErrTruncated, ": header needs %d bytes, file has %d from here",
			headerSize, max(0, r.size-offset))
	}
	var b [headerSize]byte
	if err := readFullAt(r.src, b[:], offset); err != nil {
		return header{}, 0, r.wrap(chunk, offset, err)
	}
	if h, err = decodeHeader(b[:], chunk); err != nil {
		return header{}, 0, r.wrap(chunk, offset, err)
	}
	next = offset + headerSize + int64(h.payloadSize)
	if next > r.size {
		return header{}, 0, r.errorf(chunk, offset, ErrTruncated, ": payload of %d bytes, file has %d after the header",
			h.payloadSize, r.size-offset-headerSize)
	}
	return h, next, nil
}

func (r *Reader) decompress(c Compressor) ([]byte, error) {
	switch c {
	case None:
		if len(r.stored) > MaxChunkBytes {
			return nil, kindf(ErrTooLarge, ": payload over %d bytes", MaxChunkBytes)
		}
		return r.stored, nil
	case Snappy:
		var err error
		r.plain, err = appendSnappyUnframed(r.plain[:0], r.stored, MaxChunkBytes)
		return r.plain, err
	case Gzip:
		return r.gunzip()
	}
	return nil, kindf(ErrCompressor, " %d", uint32(c))
}

func (r *Reader) gunzip() ([]byte, error) {
	r.bytesRd.Reset(r.stored)
	var err error
	if r.gz == nil {
		r.gz, err = gzip.NewReader(&r.bytesRd)
	} else {
		err = r.gz.Reset(&r.bytesRd)
	}
	if err != nil {
		return nil, kindf(ErrDecompress, ": gzip: %v", err)
	}
	r.gz.Multistream(false)
	buf := bytes.NewBuffer(r.plain[:0])
	n, err := buf.ReadFrom(io.LimitReader(r.gz, MaxChunkBytes+1))
	r.plain = buf.Bytes()
	if err != nil {
		return nil, kindf(ErrDecompress, ": gzip: %v", err)
	}
	if n > MaxChunkBytes {
		return nil, kindf(ErrTooLarge, ": uncompressed payload over %d bytes", MaxChunkBytes)
	}
	return r.plain, nil
}

// splitRecords appends to dst the numRecords length-prefixed records of
// payload, which they must fill exactly.
func splitRecords(dst [][]byte, payload []byte, numRecords uint32) ([][]byte, error) {
	rest := payload
	for i := uint32(0); i < numRecords; i++ {
		if len(rest) < 4 {
			return dst, kindf(ErrRecordCount, ": header says %d records, payload holds %d", numRecords, i)
		}
		n := binary.LittleEndian.Uint32(rest)
		rest = rest[4:]
		if uint64(n) > uint64(len(rest)) {
			return dst, kindf(ErrRecordLength, ": record %d claims %d bytes, %d left", i, n, len(rest))
		}
		dst = append(dst, rest[:n:n])
		rest = rest[n:]
	}
	if len(rest) > 0 {
		return dst, kindf(ErrRecordCount, ": header says %d records, %d bytes left after them", numRecords, len(rest))
	}
	return dst, nil
}

// readFullAt reads len(b) bytes at off; a short read is ErrTruncated.
func readFullAt(src io.ReaderAt, b []byte, off int64) error {
	n, err := src.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return kindf(ErrTruncated, ": read %d of %d bytes at offset %d", n, len(b), off)
	}
	return errors.WithMessagef(err, "read %d bytes at offset %d", len(b), off)
}

func (r *Reader) wrap(chunk int, offset int64, err error) error {
	return &Error{Path: r.name, Chunk: chunk, Offset: offset, Err: err}
}

// errorf is wrap of kindf(kind, format, args...).
func (r *Reader) errorf(chunk int, offset int64, kind error, format string, args ...any) error {
	return r.wrap(chunk, offset, kindf(kind, format, args...))
}
