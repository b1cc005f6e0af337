package client_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/trainmaster/master/go/client"
	"github.com/trainmaster/master/go/recordio"
	"github.com/trainmaster/master/internal/master"
	"github.com/trainmaster/master/internal/master/mastertest"
	"github.com/trainmaster/master/internal/trainerport"
)

// The benchmark dataset: benchFiles RecordIO files holding benchBytes of
// records in all, of 512 to 1,535 bytes (1 KiB on average) of word-like text
// that snappy compresses about as well as typical training examples, in
// chunks of up to 1 MiB of records. The master groups the chunks into tasks
// of its default size (10 chunks, about 10 MiB).
const (
	benchFiles      = 8
	benchBytes      = 64 << 20
	benchChunkBytes = 1 << 20
)

// benchRecords are the records of the benchmark dataset, made once.
var benchRecords = sync.OnceValue(func() [][]byte {
	rng := rand.New(rand.NewPCG(3, 4))
	words := []string{"alpha", "beta", "gamma", "delta", "tensor", "label", "0.125", "-3.5", "feature", "42"}
	var records [][]byte
	for n := 0; n < benchBytes; {
		size := 512 + rng.IntN(1024)
		b := make([]byte, 0, size+16)
		for len(b) < size {
			b = append(b, words[rng.IntN(len(words))]...)
			b = append(b, ' ')
		}
		records = append(records, b)
		n += len(b)
	}
	return records
})

// benchDataset is the benchmark dataset written with one compressor.
type benchDataset struct {
	paths   []string
	refs    []recordio.ChunkRef // every chunk of every file, in order
	records int64
	bytes   int64 // record bytes, without framing
}

// writeBenchDataset writes the dataset into a temporary directory.
func writeBenchDataset(b *testing.B, c recordio.Compressor) *benchDataset {
	b.Helper()
	recs := benchRecords()
	dir := b.TempDir()
	ds := &benchDataset{}
	per := (len(recs) + benchFiles - 1) / benchFiles
	for f := range benchFiles {
		part := recs[min(f*per, len(recs)):min((f+1)*per, len(recs))]
		path := filepath.Join(dir, fmt.Sprintf("part-%02d.recordio", f))
		err := recordio.WriteFile(path, len(part), func(i int) []byte { return part[i] },
			recordio.WithCompressor(c), recordio.WithMaxChunkBytes(benchChunkBytes))
		if err != nil {
			b.Fatal(err)
		}
		ix, err := recordio.IndexFile(path)
		if err != nil {
			b.Fatal(err)
		}
		ds.paths = append(ds.paths, path)
		ds.refs = append(ds.refs, ix.Refs(0, len(ix.Chunks))...)
		for _, r := range part {
			ds.records++
			ds.bytes += int64(len(r))
		}
	}
	return ds
}

// check fails b unless records and bytes are the whole dataset's.
func (ds *benchDataset) check(b *testing.B, who string, records, bytes int64) {
	b.Helper()
	if records != ds.records || bytes != ds.bytes {
		b.Fatalf("%s read %d records of %d bytes, the dataset holds %d of %d bytes", who, records, bytes, ds.records, ds.bytes)
	}
}

// scan reads every record of the dataset with a recordio.Scanner over all
// its chunks.
func (ds *benchDataset) scan(b *testing.B) (records, bytes int64) {
	s := recordio.NewScanner(ds.refs)
	for s.Scan() {
		records++
		bytes += int64(len(s.Record()))
	}
	if err := s.Err(); err != nil {
		b.Fatal(err)
	}
	s.Close()
	return records, bytes
}

// benchMaster is a real master (go/master's Service with its in-memory
// store, served over net/rpc on loopback) for one pass over the dataset,
// and a client that has reported the dataset to it.
type benchMaster struct {
	svc *master.Service
	srv *trainerport.Server
	c   *client.Client
}

func startBenchMaster(b *testing.B, ds *benchDataset) *benchMaster {
	b.Helper()
	quiet := logrus.New()
	quiet.SetOutput(io.Discard)
	svc, err := master.New(master.Config{Log: quiet})
	if err != nil {
		b.Fatal(err)
	}
	srv, err := trainerport.NewServer(trainerport.Config{Log: quiet})
	if err != nil {
		b.Fatal(err)
	}
	if err := mastertest.Register(srv, svc); err != nil {
		b.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go srv.Serve(lis)
	m := &benchMaster{svc: svc, srv: srv, c: client.New(client.Static(lis.Addr().String()), client.Config{})}
	if err := m.c.ReportDataset(context.Background(), ds.paths); err != nil {
		m.close()
		b.Fatal(err)
	}
	return m
}

func (m *benchMaster) close() {
	m.c.Close()
	m.srv.Close()
	m.svc.Close()
}

// read consumes the pass with the client's Records loop.
func (m *benchMaster) read(b *testing.B) (records, bytes int64) {
	for rec, err := range m.c.Records(context.Background()) {
		if err != nil {
			b.Fatal(err)
		}
		records++
		bytes += int64(len(rec.Data))
	}
	return records, bytes
}

// readDigests checks, once, that the client yields exactly the records the
// scanner does (an order-independent digest of every record).
func readDigests(b *testing.B, ds *benchDataset) {
	b.Helper()
	want, err := client.DigestRecords(recordio.NewScanner(ds.refs), nil)
	if err != nil {
		b.Fatal(err)
	}
	m := startBenchMaster(b, ds)
	defer m.close()
	var got client.Digest
	for rec, err := range m.c.Records(context.Background()) {
		if err != nil {
			b.Fatal(err)
		}
		got.Add(rec.Data)
	}
	if got != want || want.Records != ds.records || want.Bytes != ds.bytes {
		b.Fatalf("client read %+v, scanner %+v, the dataset holds %d records of %d bytes", got, want, ds.records, ds.bytes)
	}
}

// warmUp reads two passes with the client, untimed, so that the passes
// timed after them find the buffers it keeps for reading tasks allocated and
// grown to the largest chunks (the testing package collects garbage before
// each benchmark, which may drop them).
func warmUp(b *testing.B, ds *benchDataset) {
	b.Helper()
	for range 2 {
		m := startBenchMaster(b, ds)
		n, bytes := m.read(b)
		m.close()
		ds.check(b, "client", n, bytes)
	}
}

// BenchmarkRecords compares, on the same files, the client's Records loop
// against a real master on loopback with recordio's Scanner reading every
// chunk of the files directly. Both count every record and its bytes; the
// loop body does nothing else, so this is the most the client can add to a
// trainer's cost of reading.
//
// For each compressor: "scanner" and "client" measure one pass each (MB/s
// of record bytes; the master's start and the dataset report are not
// timed), and "ratio" alternates the two in every iteration and reports
// both rates and client/scanner, the figure to keep at 0.7 or above (its
// ns/op counts everything, the master's starts included). Each starts with
// untimed passes: the figures are those of a trainer's later passes, the
// first ones also allocate and grow the client's read buffers.
func BenchmarkRecords(b *testing.B) {
	for _, c := range []recordio.Compressor{recordio.Snappy, recordio.None} {
		b.Run(c.String(), func(b *testing.B) {
			ds := writeBenchDataset(b, c)
			readDigests(b, ds)
			b.Run("scanner", func(b *testing.B) {
				b.SetBytes(ds.bytes)
				ds.scan(b) // warm-up, not timed
				for b.Loop() {
					n, bytes := ds.scan(b)
					ds.check(b, "scanner", n, bytes)
				}
			})
			b.Run("client", func(b *testing.B) {
				b.SetBytes(ds.bytes)
				warmUp(b, ds)
				for b.Loop() {
					b.StopTimer()
					m := startBenchMaster(b, ds)
					b.StartTimer()
					n, bytes := m.read(b)
					b.StopTimer()
					m.close()
					ds.check(b, "client", n, bytes)
					b.StartTimer()
				}
			})
			b.Run("ratio", func(b *testing.B) {
				var scanT, clientT time.Duration
				ds.scan(b)
				warmUp(b, ds)
				for b.Loop() {
					start := time.Now()
					n, bytes := ds.scan(b)
					scanT += time.Since(start)
					ds.check(b, "scanner", n, bytes)

					m := startBenchMaster(b, ds)
					start = time.Now()
					n, bytes = m.read(b)
					clientT += time.Since(start)
					m.close()
					ds.check(b, "client", n, bytes)
				}
				mb := float64(ds.bytes) * float64(b.N) / 1e6
				b.ReportMetric(mb/scanT.Seconds(), "scanner-MB/s")
				b.ReportMetric(mb/clientT.Seconds(), "client-MB/s")
				b.ReportMetric(scanT.Seconds()/clientT.Seconds(), "client/scanner")
			})
		})
	}
}
