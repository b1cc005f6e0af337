package client

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"github.com/trainmaster/master/go/recordio"
)

// Digest summarises a collection of records independently of their order,
// so that the digests of the trainers that shared a pass add up (Combine) to
// the digest of the whole dataset read in one go.
//
// Sum is the sum, modulo 2^64, over the records of the first 8 bytes, read
// as a big-endian uint64, of SHA-256(uint32 little-endian length ‖ record).
// A sum rather than a XOR, so that a record read twice, or two equal
// records, do not cancel out. The zero Digest is the digest of nothing.
type Digest struct {
	Records int64
	Bytes   int64
	Sum     uint64
}

// Add adds one record.
func (d *Digest) Add(record []byte) {
	h := sha256.New()
	var n [4]byte
	binary.LittleEndian.PutUint32(n[:], uint32(len(record)))
	h.Write(n[:])
	h.Write(record)
	var sum [sha256.Size]byte
	d.Sum += binary.BigEndian.Uint64(h.Sum(sum[:0]))
	d.Records++
	d.Bytes += int64(len(record))
}

// Combine adds every record of o.
func (d *Digest) Combine(o Digest) {
	d.Records += o.Records
	d.Bytes += o.Bytes
	d.Sum += o.Sum
}

// Minus removes every record of o, which d holds: the digest of the
// records [a, b) of a sequence is its suffix from a minus its suffix from b
// (SuffixDigests).
func (d Digest) Minus(o Digest) Digest {
	return Digest{Records: d.Records - o.Records, Bytes: d.Bytes - o.Bytes, Sum: d.Sum - o.Sum}
}

// SuffixDigests reads every record s yields and returns the digest of each
// suffix: d[p] holds records p to the end, d[len(d)-1] none. It closes s.
// It is how a check verifies a consumption of part of a task (resumed from
// its progress, or a piece of it: positions in the task's record order):
// records [a, b) digest to d[a].Minus(d[b]).
func SuffixDigests(s *recordio.Scanner, err error) ([]Digest, error) {
	if err != nil {
		return nil, err
	}
	defer s.Close()
	var each []Digest
	for s.Scan() {
		var d Digest
		d.Add(s.Record())
		each = append(each, d)
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	out := make([]Digest, len(each)+1)
	for p := len(each) - 1; p >= 0; p-- {
		out[p] = out[p+1]
		out[p].Combine(each[p])
	}
	return out, nil
}

// String returns Sum as 16 hexadecimal digits.
func (d Digest) String() string { return fmt.Sprintf("%016x", d.Sum) }

// DigestRecords reads every record s yields and returns their digest; it
// closes s. It is how a check computes what a set of trainers should add up
// to: DigestRecords(recordio.ScanFiles(paths...)).
func DigestRecords(s *recordio.Scanner, err error) (Digest, error) {
	if err != nil {
		return Digest{}, err
	}
	defer s.Close()
	var d Digest
	for s.Scan() {
		d.Add(s.Record())
	}
	return d, s.Err()
}
