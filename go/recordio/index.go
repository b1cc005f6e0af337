package recordio

import (
	"io"
)

// ChunkInfo locates one chunk, as read from its header.
type ChunkInfo struct {
	Offset      int64  // byte offset of the chunk header
	StoredBytes uint32 // payload size as stored (compressed)
	NumRecords  uint32
}

// Index lists the chunks of one file.
type Index struct {
	Path       string
	Size       int64
	Chunks     []ChunkInfo
	NumRecords int
}

// ScanIndex builds the index of size bytes of src by reading each chunk's
// header and seeking past its payload. It checks every header's magic and
// compressor and that every payload fits in the file; payloads themselves are
// not read, so checksums are verified only when a chunk is read.
func ScanIndex(src io.ReaderAt, size int64, name string) (*Index, error) {
	r := NewReader(src, size, name)
	ix := &Index{Path: name, Size: size}
	for offset := int64(0); offset < size; {
		chunk := len(ix.Chunks)
		h, next, err := r.readHeader(chunk, offset)
		if err != nil {
			return nil, err
		}
		ix.Chunks = append(ix.Chunks, ChunkInfo{Offset: offset, StoredBytes: h.payloadSize, NumRecords: h.numRecords})
		ix.NumRecords += int(h.numRecords)
		offset = next
	}
	return ix, nil
}

// IndexFile opens path with OpenFile (which never blocks and refuses
// anything but a regular file) and builds its index with ScanIndex.
func IndexFile(path string) (*Index, error) {
	f, size, err := OpenFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ScanIndex(f, size, path)
}

// Refs returns references to chunks [from, to) of the file, for a Scanner.
func (ix *Index) Refs(from, to int) []ChunkRef {
	refs := make([]ChunkRef, 0, max(0, to-from))
	for i := from; i < to; i++ {
		refs = append(refs, ChunkRef{Path: ix.Path, Chunk: i, Offset: ix.Chunks[i].Offset})
	}
	return refs
}
