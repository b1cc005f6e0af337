package recordio

import (
	"os"

	"github.com/pkg/errors"
)

// ChunkRef names one chunk of one file: its path, its number within the file
// and the byte offset of its header, which is all a reader needs to fetch it
// with one seek.
type ChunkRef struct {
	Path   string
	Chunk  int
	Offset int64
}

// Scanner yields the records of a list of chunks in order, opening one file
// at a time. Like bufio.Scanner, Record is valid until the next Scan. A
// Scanner is not safe for concurrent use; Close it to release the open file.
type Scanner struct {
	refs    []ChunkRef
	nextRef int
	skip    int // records still to drop before yielding
	limit   int // records still to yield; negative means no limit

	file    *os.File
	reader  *Reader
	records [][]byte
	pos     int
	current ChunkRef
	record  []byte
	err     error
}

// NewScanner scans every record of the given chunks.
func NewScanner(refs []ChunkRef) *Scanner {
	return &Scanner{refs: refs, limit: -1}
}

// ScanFiles indexes each file and scans all of their records in order.
func ScanFiles(paths ...string) (*Scanner, error) {
	var refs []ChunkRef
	for _, p := range paths {
		ix, err := IndexFile(p)
		if err != nil {
			return nil, err
		}
		refs = append(refs, ix.Refs(0, len(ix.Chunks))...)
	}
	return NewScanner(refs), nil
}

// ScanRecords scans count records of the indexed file starting at record
// first (both counted from the start of the file), reading only the chunks
// that hold them.
func ScanRecords(ix *Index, first, count int) *Scanner {
	from, skip := 0, first
	for from < len(ix.Chunks) && skip >= int(ix.Chunks[from].NumRecords) {
		skip -= int(ix.Chunks[from].NumRecords)
		from++
	}
	to, want := from, skip+count
	for to < len(ix.Chunks) && want > 0 {
		want -= int(ix.Chunks[to].NumRecords)
		to++
	}
	s := NewScanner(ix.Refs(from, to))
	s.skip, s.limit = skip, max(0, count)
	return s
}

// Scan advances to the next record; it returns false at the end or on error.
func (s *Scanner) Scan() bool {
	for s.err == nil && s.limit != 0 {
		if s.pos < len(s.records) {
			rec := s.records[s.pos]
			s.pos++
			if s.skip > 0 {
				s.skip--
				continue
			}
			s.record = rec
			s.limit--
			return true
		}
		if s.nextRef == len(s.refs) {
			break
		}
		s.err = s.load(s.refs[s.nextRef])
		s.nextRef++
	}
	s.record = nil
	return false
}

// Record returns the current record.
func (s *Scanner) Record() []byte { return s.record }

// Chunk returns the chunk the current record came from.
func (s *Scanner) Chunk() ChunkRef { return s.current }

// Err returns the first error met, or nil at a clean end.
func (s *Scanner) Err() error { return s.err }

// Close releases the open file.
func (s *Scanner) Close() error {
	s.records = nil
	if s.file == nil {
		return nil
	}
	err := s.file.Close()
	s.file = nil
	return err
}

func (s *Scanner) load(ref ChunkRef) error {
	records, err := s.ReadChunk(ref)
	if err != nil {
		return err
	}
	s.records, s.pos, s.current = records, 0, ref
	return nil
}

// ReadChunk reads one chunk directly, opening its file unless it is the one
// already open. The records are valid until the next call or Scan; use it
// instead of Scan, not between two Scans.
func (s *Scanner) ReadChunk(ref ChunkRef) ([][]byte, error) {
	if s.file == nil || s.reader.Name() != ref.Path {
		if err := s.open(ref.Path); err != nil {
			return nil, err
		}
	}
	records, _, err := s.reader.ReadChunk(ref.Chunk, ref.Offset)
	return records, err
}

func (s *Scanner) open(path string) error {
	if err := s.Close(); err != nil {
		return errors.WithMessage(err, "recordio")
	}
	f, size, err := OpenFile(path)
	if err != nil {
		return err
	}
	s.file = f
	if s.reader == nil {
		s.reader = NewReader(f, size, path)
	} else {
		s.reader.Reset(f, size, path)
	}
	return nil
}
