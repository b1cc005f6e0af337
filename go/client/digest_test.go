package client_test

import (
	"context"
	"sync"
	"testing"

	"github.com/trainmaster/master/go/client"
	"github.com/trainmaster/master/go/client/clienttest"
	"github.com/trainmaster/master/go/recordio"
)

func digestOf(records ...string) client.Digest {
	var d client.Digest
	for _, r := range records {
		d.Add([]byte(r))
	}
	return d
}

func TestDigest(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  client.Digest
		want client.Digest
	}{
		// SHA-256 of 00000000 and of 03000000 "abc", first 8 bytes each.
		{"empty record", digestOf(""), client.Digest{Records: 1, Sum: 0xdf3f619804a92fdb}},
		{"abc", digestOf("abc"), client.Digest{Records: 1, Bytes: 3, Sum: 0x3da9865b43fa2ec4}},
		{"sum of both", digestOf("", "abc"), client.Digest{Records: 2, Bytes: 3, Sum: 0x1ce8e7f348a35e9f}},
		{"order does not matter", digestOf("x", "y", "z"), digestOf("z", "x", "y")},
		{"combine", func() client.Digest {
			d := digestOf("x")
			d.Combine(digestOf("y", "z"))
			return d
		}(), digestOf("x", "y", "z")},
		{"the length is hashed", digestOf("ab", "c"), func() client.Digest {
			d := digestOf("ab", "c")
			if d == digestOf("a", "bc") {
				t.Error("records split differently share a digest")
			}
			return d
		}()},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, tc.got, tc.want)
		}
	}
	if d := digestOf("x", "x"); d.Sum == 0 || d == digestOf("x") {
		t.Errorf("a record twice: %+v", d)
	}
	if s := digestOf("", "abc").String(); s != "1ce8e7f348a35e9f" {
		t.Errorf("String: %q", s)
	}
}

// Several trainers share the passes; the digests of what each consumed add
// up, pass by pass, to the digest of the dataset read directly.
func TestTrainersShareTheDataset(t *testing.T) {
	const passes, trainers = 2, 3
	h := setup(t, clienttest.Options{Passes: passes, ChunksPerTask: 2}, dataset{files: 3, records: 40, perChunk: 5}, fast)
	var (
		mu     sync.Mutex
		total  [passes]client.Digest
		counts [trainers]int64
		wg     sync.WaitGroup
	)
	for i := range trainers {
		c := h.c
		if i > 0 {
			c = h.newClient(t, fast)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var task client.Digest // of the task being consumed
			for rec, err := range c.Records(context.Background()) {
				if err != nil {
					t.Error(err)
					return
				}
				task.Add(rec.Data)
				if rec.Last {
					mu.Lock()
					total[rec.Pass].Combine(task)
					counts[i] += task.Records
					mu.Unlock()
					task = client.Digest{}
				}
			}
		}()
	}
	wg.Wait()
	want, err := client.DigestRecords(recordio.ScanFiles(h.paths...))
	if err != nil {
		t.Fatal(err)
	}
	for p, got := range total {
		if got != want {
			t.Errorf("pass %d: trainers' digests add up to %+v, the dataset's is %+v", p, got, want)
		}
	}
	t.Logf("records per trainer: %v", counts)
}

// TestSuffixDigests: the suffixes of a file's records digest each range
// [a, b) as suffix a minus suffix b.
func TestSuffixDigests(t *testing.T) {
	path := t.TempDir() + "/r.recordio"
	records := []string{"a", "bb", "ccc", "dddd", "eeeee"}
	if err := recordio.WriteFile(path, len(records), func(i int) []byte { return []byte(records[i]) }, recordio.WithMaxChunkBytes(4)); err != nil {
		t.Fatal(err)
	}
	suffixes, err := client.SuffixDigests(recordio.ScanFiles(path))
	if err != nil || len(suffixes) != len(records)+1 {
		t.Fatalf("%d suffixes, %v", len(suffixes), err)
	}
	for a := range records {
		for b := a; b <= len(records); b++ {
			if got, want := suffixes[a].Minus(suffixes[b]), digestOf(records[a:b]...); got != want {
				t.Errorf("records [%d, %d): %+v, want %+v", a, b, got, want)
			}
		}
	}
}
