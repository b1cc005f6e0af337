package recordio

import (
	"fmt"

	"github.com/pkg/errors"
)

// The classes of corruption. Every *Error wraps exactly one of them, so
// callers test with errors.Is(err, recordio.ErrChecksum) and the like.
var (
	ErrBadMagic     = errors.New("bad magic")
	ErrTruncated    = errors.New("truncated")
	ErrChecksum     = errors.New("checksum mismatch")
	ErrCompressor   = errors.New("unknown compressor")
	ErrDecompress   = errors.New("cannot decompress payload")
	ErrRecordLength = errors.New("record length past the payload")
	ErrRecordCount  = errors.New("record count mismatch")
	ErrTooLarge     = errors.New("chunk too large")
)

// ErrNotRegular is wrapped by the error of OpenFile, and so of IndexFile and
// the Scanner, for a path that is not a regular file: a directory, a FIFO, a
// socket or a device is never a RecordIO file.
var ErrNotRegular = errors.New("not a regular file")

// Error reports a problem with one chunk of one file.
type Error struct {
	Path   string // file name as given to the reader or index
	Chunk  int    // chunk number within the file, from 0
	Offset int64  // byte offset of the chunk header
	Err    error  // what is wrong; wraps one of the Err* sentinels
}

func (e *Error) Error() string {
	return fmt.Sprintf("recordio: %s: chunk %d at offset %d: %v", e.Path, e.Chunk, e.Offset, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// classed is an error of one class of corruption, kind, with its details:
// errors.Is matches kind, and the text is kind's followed by detail.
type classed struct {
	kind   error
	detail string
}

func (e *classed) Error() string { return e.kind.Error() + e.detail }

func (e *classed) Unwrap() error { return e.kind }

// kindf returns an error of the class kind whose text is kind's followed by
// the formatted detail: kindf(ErrTruncated, ": read %d of %d bytes", 3, 20)
// reads "truncated: read 3 of 20 bytes".
func kindf(kind error, format string, args ...any) error {
	return &classed{kind: kind, detail: fmt.Sprintf(format, args...)}
}
