package trainerport

import (
	"context"
	"net/rpc"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/pkg/errors"

	"github.com/trainmaster/master/go/wire"
)

// sizedCodec is a codec whose arguments have the given sizes and whose
// client numbers every call 7, as a hostile one may.
type sizedCodec struct {
	sizes   []int
	next    int
	replied []uint64 // the numbers the replies went out with
}

func (f *sizedCodec) ReadRequestHeader(r *rpc.Request) error {
	r.Seq = 7
	return nil
}
func (f *sizedCodec) ReadRequestBody(any) error { f.next++; return nil }
func (f *sizedCodec) nextBodyBytes() int        { return f.sizes[f.next] }
func (f *sizedCodec) WriteResponse(r *rpc.Response, _ any) error {
	f.replied = append(f.replied, r.Seq)
	return nil
}
func (f *sizedCodec) Close() error { return nil }

// TestOneLargeArgumentPerConnection: a connection's second large argument
// is not read until the first one's reply is written; small ones are read
// meanwhile, within MaxInflight. The replies of the small calls, which
// carry the same client number as the large one, do not free its slot,
// and every reply goes out with the client's number.
func TestOneLargeArgumentPerConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		life, stop := context.WithCancel(context.Background())
		defer stop()
		large := largeRequestBytes + 1
		inner := &sizedCodec{sizes: []int{100, large, 100, large}}
		c := newLimitedCodec(inner, &trainerConn{sv: &Server{}, life: life, stop: stop}, 16)
		read := func() uint64 {
			var r rpc.Request
			if err := c.ReadRequestHeader(&r); err != nil {
				t.Error(err)
			}
			if err := c.ReadRequestBody(nil); err != nil {
				t.Error(err)
			}
			return r.Seq
		}
		var seqs []uint64
		for range 3 { // small, large, small: none waits
			seqs = append(seqs, read())
		}
		done := make(chan uint64, 1)
		go func() { done <- read() }()
		waiting := func(after string) {
			synctest.Wait()
			select {
			case seq := <-done:
				t.Fatalf("request %d read %s, while the first large one awaits its reply", seq, after)
			default:
			}
		}
		waiting("at once")
		c.WriteResponse(&rpc.Response{Seq: seqs[0]}, nil)
		c.WriteResponse(&rpc.Response{Seq: seqs[2]}, nil)
		waiting("after the replies of the small ones")
		c.WriteResponse(&rpc.Response{Seq: seqs[1]}, nil)
		if seq := <-done; slices.Contains(seqs, seq) {
			t.Fatalf("the fourth request was numbered %d, as an earlier one (%v)", seq, seqs)
		}
		if !slices.Equal(inner.replied, []uint64{7, 7, 7}) {
			t.Fatalf("replies went out numbered %v, want the client's 7 each", inner.replied)
		}
	})
}

// failingBody is a codec whose arguments cannot be read: err each.
type failingBody struct {
	sizedCodec
	err error
}

func (f *failingBody) ReadRequestBody(any) error { return f.err }

// TestAnArgumentCutByAStopIsNotServing: a call whose argument cannot be
// read because the connection was stopped (the read deadline Close sets)
// is answered "master is not serving", which a client retries at the
// leader; on a connection not stopped, the read's own error stands.
func TestAnArgumentCutByAStopIsNotServing(t *testing.T) {
	for _, tc := range []struct {
		name    string
		stopped bool
		err     error
		want    string // the answer's text begins so
	}{
		{"stopped, the deadline", true, os.ErrDeadlineExceeded, wire.TextNotServing + ": the connection was stopped while the call's argument was read: "},
		{"stopped, the end", true, errors.New("unexpected EOF"), wire.TextNotServing + ": "},
		{"serving", false, os.ErrDeadlineExceeded, os.ErrDeadlineExceeded.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			life, stop := context.WithCancel(context.Background())
			defer stop()
			c := newLimitedCodec(&failingBody{sizedCodec: sizedCodec{sizes: []int{8}}, err: tc.err}, &trainerConn{sv: &Server{}, life: life, stop: stop}, 4)
			if err := c.ReadRequestHeader(new(rpc.Request)); err != nil {
				t.Fatal(err)
			}
			if tc.stopped {
				stop()
			}
			err := c.ReadRequestBody(new(int))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("answered %v, want %q...", err, tc.want)
			}
			if !errors.Is(err, tc.err) {
				t.Fatalf("answered %v, which lost its cause %v", err, tc.err)
			}
		})
	}
}
