package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/pkg/errors"

	"github.com/trainmaster/master/go/recordio"
)

func runWrite(args []string, std stdio) error {
	fs := newFlags("write", std.err)
	out := fs.String("o", "", "output `file` (required)")
	compressor := fs.String("compressor", "snappy", "chunk compression: none, snappy or gzip")
	maxChunk := fs.Int("max-chunk-bytes", recordio.DefaultMaxChunkBytes, "start a new chunk when a record would take the chunk's record bytes past `n`")
	framed := fs.Bool("framed", false, "stdin holds uint32 little-endian length + bytes per record, not lines")
	generate := fs.Int("generate", 0, "write `n` records \"record 00000000\", \"record 00000001\", ... instead of reading stdin (demos, containers without a shell)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *out == "" {
		return errUsage{"-o FILE is required"}
	}
	if fs.NArg() > 0 {
		return errUsage{fmt.Sprintf("unexpected arguments %q: records come from stdin", fs.Args())}
	}
	c, err := recordio.ParseCompressor(*compressor)
	if err != nil {
		return errUsage{err.Error()}
	}
	if *maxChunk <= 0 {
		return errUsage{fmt.Sprintf("-max-chunk-bytes must be positive, not %d", *maxChunk)}
	}
	in := std.in
	switch {
	case *generate < 0:
		return errUsage{fmt.Sprintf("-generate must not be negative, not %d", *generate)}
	case *generate > 0 && *framed:
		return errUsage{"-generate writes its own records: no -framed"}
	case *generate > 0:
		in = generated(*generate)
	}
	return writeFile(*out, in, *framed, recordio.WithCompressor(c), recordio.WithMaxChunkBytes(*maxChunk))
}

// generated returns the lines of -generate n.
func generated(n int) io.Reader {
	r, w := io.Pipe()
	go func() {
		buf := bufio.NewWriter(w)
		for i := range n {
			fmt.Fprintf(buf, "record %08d\n", i)
		}
		w.CloseWithError(buf.Flush())
	}()
	return r
}

// writeFile writes the records of in to path through a temporary file, so a
// failure never leaves a partial file under the final name.
func writeFile(path string, in io.Reader, framed bool, opts ...recordio.WriterOption) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	buf := bufio.NewWriterSize(tmp, 1<<20)
	w := recordio.NewWriter(buf, opts...)
	read := readLines
	if framed {
		read = readFramed
	}
	err = read(bufio.NewReaderSize(in, 1<<20), w.Write)
	if err == nil {
		err = w.Close()
	}
	if err == nil {
		err = buf.Flush()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return errors.WithMessagef(err, "write %s", path)
	}
	return os.Rename(tmp.Name(), path)
}

// readLines passes each line of in, without its newline, to emit. A last line
// without a newline is a record too; an empty input has no records.
func readLines(in *bufio.Reader, emit func([]byte) error) error {
	for line := 1; ; line++ {
		rec, err := in.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long := append([]byte(nil), rec...)
			for errors.Is(err, bufio.ErrBufferFull) {
				rec, err = in.ReadSlice('\n')
				long = append(long, rec...)
			}
			rec = long
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return errors.WithMessagef(err, "stdin line %d", line)
		}
		if errors.Is(err, io.EOF) && len(rec) == 0 {
			return nil
		}
		if n := len(rec); n > 0 && rec[n-1] == '\n' {
			rec = rec[:n-1]
		}
		if werr := emit(rec); werr != nil {
			return werr
		}
		if err != nil {
			return nil
		}
	}
}

// readFramed passes each length-framed record of in to emit.
func readFramed(in *bufio.Reader, emit func([]byte) error) error {
	var rec []byte
	for n := 0; ; n++ {
		var size [4]byte
		if _, err := io.ReadFull(in, size[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return errors.WithMessagef(err, "stdin record %d: length cut short", n)
		}
		length := binary.LittleEndian.Uint32(size[:])
		rec = rec[:0]
		if _, err := io.CopyN(bytesAppender{&rec}, in, int64(length)); err != nil {
			return errors.WithMessagef(io.ErrUnexpectedEOF, "stdin record %d: %d of %d bytes", n, len(rec), length)
		}
		if err := emit(rec); err != nil {
			return err
		}
	}
}

// bytesAppender grows a slice as data arrives, so a bogus length on stdin
// costs only the bytes really sent.
type bytesAppender struct{ b *[]byte }

func (a bytesAppender) Write(p []byte) (int, error) {
	*a.b = append(*a.b, p...)
	return len(p), nil
}
