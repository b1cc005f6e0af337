package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/namsral/flag"

	"github.com/trainmaster/master/go/recordio"
	"github.com/trainmaster/master/internal/dataset"
)

func runCat(args []string, std stdio) error {
	fs := newFlags("cat", std.err)
	framed := fs.Bool("framed", false, "write uint32 little-endian length + bytes per record, not lines")
	paths, err := parseFiles(fs, args)
	if err != nil {
		return err
	}
	out := bufio.NewWriterSize(std.out, 1<<20)
	for _, p := range paths {
		if err := catFile(out, p, *framed); err != nil {
			out.Flush()
			return err
		}
	}
	return out.Flush()
}

func catFile(out *bufio.Writer, path string, framed bool) error {
	s, err := recordio.ScanFiles(path)
	if err != nil {
		return err
	}
	defer s.Close()
	for s.Scan() {
		rec := s.Record()
		if framed {
			out.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(rec))))
		}
		out.Write(rec)
		if !framed {
			out.WriteByte('\n')
		}
	}
	return s.Err()
}

// fileStat is one line of 'recordio stat -json'.
type fileStat struct {
	Path    string `json:"path"`
	Records int    `json:"records"`
	Chunks  int    `json:"chunks"`
	Bytes   int64  `json:"bytes"`
}

func runStat(args []string, std stdio) error {
	fs := newFlags("stat", std.err)
	asJSON := fs.Bool("json", false, "print one JSON object per file per line")
	paths, err := parseFiles(fs, args)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(std.out)
	for _, p := range paths {
		ix, err := recordio.IndexFile(p)
		if err != nil {
			return err
		}
		st := fileStat{Path: p, Records: ix.NumRecords, Chunks: len(ix.Chunks), Bytes: ix.Size}
		if *asJSON {
			if err := enc.Encode(st); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(std.out, "%s\t%d records\t%d chunks\t%d bytes\n", st.Path, st.Records, st.Chunks, st.Bytes)
	}
	return nil
}

// errFound says verify found problems and has printed them.
type errFound struct{ n int }

func (e errFound) Error() string { return fmt.Sprintf("%d problems found", e.n) }

func runVerify(args []string, std stdio) error {
	fs := newFlags("verify", std.err)
	paths, err := parseFiles(fs, args)
	if err != nil {
		return err
	}
	problems := 0
	for _, p := range paths {
		records, chunks, errs := verifyFile(p)
		for _, e := range errs {
			fmt.Fprintln(std.err, e)
		}
		problems += len(errs)
		if len(errs) == 0 {
			fmt.Fprintf(std.out, "%s: ok, %d records in %d chunks\n", p, records, chunks)
		}
	}
	if problems > 0 {
		return errFound{problems}
	}
	return nil
}

// verifyFile reads every chunk of path. A bad header stops the walk (the next
// chunk cannot be found); a bad payload is reported and the walk goes on.
func verifyFile(path string) (records, chunks int, errs []error) {
	f, size, err := recordio.OpenFile(path)
	if err != nil {
		return 0, 0, []error{err}
	}
	defer f.Close()
	ix, err := recordio.ScanIndex(f, size, path)
	if err != nil {
		return 0, 0, []error{err}
	}
	r := recordio.NewReader(f, size, path)
	for i, c := range ix.Chunks {
		recs, _, err := r.ReadChunk(i, c.Offset)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		records += len(recs)
	}
	return records, len(ix.Chunks), errs
}

// parseFiles parses the flags and expands the FILE arguments in the order
// given: a file named explicitly where it is named, a glob's matches sorted,
// and a file named twice twice, as cat(1) would. (A dataset is the union of
// its patterns, sorted; a command line is not a dataset.)
func parseFiles(fs *flag.FlagSet, args []string) ([]string, error) {
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() == 0 {
		return nil, errUsage{"no FILE given"}
	}
	var paths []string
	for _, arg := range fs.Args() {
		matches, err := dataset.Expand([]string{arg})
		if err != nil {
			return nil, err
		}
		paths = append(paths, matches...)
	}
	return paths, nil
}
