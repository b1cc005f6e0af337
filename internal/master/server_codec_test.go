package master

import (
	"context"
	"net/rpc"
	"testing"
	"testing/synctest"
)

// sizedCodec is a codec whose requests are numbered from 0 and whose
// arguments have the given sizes.
type sizedCodec struct {
	sizes []int
	next  int
}

func (f *sizedCodec) ReadRequestHeader(r *rpc.Request) error {
	r.Seq = uint64(f.next)
	return nil
}
func (f *sizedCodec) ReadRequestBody(any) error              { f.next++; return nil }
func (f *sizedCodec) nextBodyBytes() int                     { return f.sizes[f.next] }
func (f *sizedCodec) WriteResponse(*rpc.Response, any) error { return nil }
func (f *sizedCodec) Close() error                           { return nil }

// TestOneLargeArgumentPerConnection: a connection's second large argument
// is not read until the first one's reply is written; small ones are read
// meanwhile, within MaxInflight.
func TestOneLargeArgumentPerConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		life, stop := context.WithCancel(context.Background())
		defer stop()
		large := largeRequestBytes + 1
		c := newLimitedCodec(&sizedCodec{sizes: []int{100, large, 100, large}}, &trainerConn{life: life, stop: stop}, 16)
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
		for range 3 { // small, large, small: none waits
			read()
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
		c.WriteResponse(&rpc.Response{Seq: 0}, nil)
		c.WriteResponse(&rpc.Response{Seq: 2}, nil)
		waiting("after the replies of the small ones")
		c.WriteResponse(&rpc.Response{Seq: 1}, nil)
		if seq := <-done; seq != 3 {
			t.Fatalf("read request %d, want 3", seq)
		}
	})
}
