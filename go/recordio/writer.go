package recordio

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"hash/crc32"
	"io"
	"math"
	"os"

	"github.com/pkg/errors"
)

// WriterOption configures a Writer.
type WriterOption func(*Writer)

// WithCompressor sets how chunks are stored; the default is Snappy, as in the
// reference writer.
func WithCompressor(c Compressor) WriterOption {
	return func(w *Writer) { w.compressor = c }
}

// WithMaxChunkBytes sets the chunk byte limit (DefaultMaxChunkBytes when unset
// or not positive). It counts record bytes, not their length prefixes.
func WithMaxChunkBytes(n int) WriterOption {
	return func(w *Writer) {
		if n > 0 {
			w.maxChunkBytes = n
		}
	}
}

// ErrWriterClosed is returned by Write after Close.
var ErrWriterClosed = errors.New("recordio: writer closed")

// Writer writes records to an io.Writer in chunks. A chunk is written when the
// next record would take its record bytes past the limit (a record larger
// than the limit gets a chunk of its own) and on Flush or Close; an empty
// chunk is never written.
type Writer struct {
	out           io.Writer
	compressor    Compressor
	maxChunkBytes int

	payload     []byte // length-prefixed records of the open chunk
	recordBytes int    // record bytes in payload, without prefixes
	numRecords  int

	stored  []byte // compressed payload of the chunk being written
	scratch []byte
	gz      *gzip.Writer
	closed  bool
	err     error
}

// NewWriter returns a Writer that writes chunks to out.
func NewWriter(out io.Writer, opts ...WriterOption) *Writer {
	w := &Writer{out: out, compressor: Snappy, maxChunkBytes: DefaultMaxChunkBytes}
	for _, o := range opts {
		o(w)
	}
	return w
}

// Write adds one record. The record is copied; the caller may reuse it.
func (w *Writer) Write(record []byte) error {
	if w.closed {
		return ErrWriterClosed
	}
	if w.err != nil {
		return w.err
	}
	if len(record) > math.MaxUint32-4 {
		return errors.Errorf("recordio: record of %d bytes is too large for the format", len(record))
	}
	if w.numRecords > 0 && w.recordBytes+len(record) > w.maxChunkBytes {
		if err := w.Flush(); err != nil {
			return err
		}
	}
	w.payload = binary.LittleEndian.AppendUint32(w.payload, uint32(len(record)))
	w.payload = append(w.payload, record...)
	w.recordBytes += len(record)
	w.numRecords++
	return nil
}

// Flush writes the open chunk, if it holds any record.
func (w *Writer) Flush() error {
	if w.err != nil || w.numRecords == 0 {
		return w.err
	}
	w.err = w.writeChunk()
	w.payload, w.recordBytes, w.numRecords = w.payload[:0], 0, 0
	return w.err
}

// Close flushes the open chunk. It does not close the underlying writer.
func (w *Writer) Close() error {
	if w.closed {
		return w.err
	}
	err := w.Flush()
	w.closed = true
	return err
}

func (w *Writer) writeChunk() error {
	if err := w.compress(); err != nil {
		return err
	}
	if uint64(len(w.stored)) > math.MaxUint32 || uint64(w.numRecords) > math.MaxUint32 {
		return errors.Errorf("recordio: chunk of %d bytes and %d records is too large for the format", len(w.stored), w.numRecords)
	}
	var hdr [headerSize]byte
	header{
		checksum:    crc32.ChecksumIEEE(w.stored),
		compressor:  w.compressor,
		payloadSize: uint32(len(w.stored)),
		numRecords:  uint32(w.numRecords),
	}.encode(hdr[:])
	if _, err := w.out.Write(hdr[:]); err != nil {
		return errors.WithMessage(err, "recordio: write chunk header")
	}
	if _, err := w.out.Write(w.stored); err != nil {
		return errors.WithMessage(err, "recordio: write chunk payload")
	}
	return nil
}

// compress sets w.stored to the payload as the compressor stores it.
func (w *Writer) compress() error {
	switch w.compressor {
	case None:
		w.stored = w.payload
	case Snappy:
		w.stored, w.scratch = appendSnappyFramed(w.stored[:0], w.payload, w.scratch)
	case Gzip:
		buf := bytes.NewBuffer(w.stored[:0])
		if w.gz == nil {
			w.gz = gzip.NewWriter(buf)
		} else {
			w.gz.Reset(buf)
		}
		if _, err := w.gz.Write(w.payload); err != nil {
			return errors.WithMessage(err, "recordio: gzip")
		}
		if err := w.gz.Close(); err != nil {
			return errors.WithMessage(err, "recordio: gzip")
		}
		w.stored = buf.Bytes()
	default:
		return errors.WithMessage(kindf(ErrCompressor, " %d", uint32(w.compressor)), "recordio")
	}
	return nil
}

// WriteFile writes n records to a new file at path, record i being
// record(i), through a Writer with opts. It is how tools and tests make
// datasets.
func WriteFile(path string, n int, record func(i int) []byte, opts ...WriterOption) error {
	f, err := os.Create(path)
	if err != nil {
		return errors.WithMessage(err, "recordio")
	}
	w := NewWriter(f, opts...)
	for i := range n {
		if err := w.Write(record(i)); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Close(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return errors.WithMessage(err, "recordio")
	}
	return nil
}
