package trainerport

import (
	"bytes"
	"encoding/gob"
	"io"
	"net/rpc"
	"reflect"
	"strings"
	"testing"

	"github.com/trainmaster/master/go/wire"
)

// TestTypeLogKeepsTheDefinitions: the frames keep exactly the type
// definitions of the stream they pass on: alone they decode to nothing,
// and a new decoder given them decodes the stream's later values.
func TestTypeLogKeepsTheDefinitions(t *testing.T) {
	var stream bytes.Buffer
	enc := gob.NewEncoder(&stream)
	values := []any{rpc.Request{ServiceMethod: "M.A", Seq: 1}, wire.Task{Index: 3, Blocks: []wire.Block{{Path: "p"}}}, 5,
		rpc.Request{ServiceMethod: "M.B", Seq: 2}, wire.Progress{Done: 2, Trainer: "t"}, []string{"x"}}
	for _, v := range values {
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
	}
	seen := stream.Len()
	later := wire.Progress{Done: 9, Trainer: "u"}
	if err := enc.Encode(later); err != nil {
		t.Fatal(err)
	}
	frames := newGobFrames(newConnReader(bytes.NewReader(stream.Bytes()[:seen])), 1<<20)
	dec := gob.NewDecoder(frames)
	for _, v := range values {
		got := reflect.New(reflect.TypeOf(v))
		if err := dec.Decode(got.Interface()); err != nil || !reflect.DeepEqual(got.Elem().Interface(), v) {
			t.Fatalf("decoded %v, %v; want %v", got.Elem(), err, v)
		}
	}
	kept := frames.types.sent
	if !frames.types.replayable() || len(kept) == 0 {
		t.Fatal("no definitions kept")
	}
	// gob's word for definitions with no value after them
	if err := gob.NewDecoder(bytes.NewReader(kept)).Decode(new(wire.Progress)); err != io.ErrUnexpectedEOF {
		t.Fatalf("the definitions alone decoded to %v, want io.ErrUnexpectedEOF", err)
	}
	var got wire.Progress
	again := gob.NewDecoder(bytes.NewReader(append(bytes.Clone(kept), stream.Bytes()[seen:]...)))
	if err := again.Decode(&got); err != nil || got != later {
		t.Fatalf("a new decoder given the definitions decoded %v, %v; want %v", got, err, later)
	}
}

// TestTypeLogBounded: definitions over maxTypeBytes are not kept, and the
// connection keeps its decoder.
func TestTypeLogBounded(t *testing.T) {
	huge := reflect.StructOf([]reflect.StructField{{Name: "F" + strings.Repeat("x", maxTypeBytes), Type: reflect.TypeFor[int]()}})
	var stream bytes.Buffer
	enc := gob.NewEncoder(&stream)
	if err := enc.Encode(rpc.Request{ServiceMethod: "M.A"}); err != nil {
		t.Fatal(err)
	}
	if err := enc.Encode(reflect.New(huge).Elem().Interface()); err != nil {
		t.Fatal(err)
	}
	frames := newGobFrames(newConnReader(bytes.NewReader(stream.Bytes())), 1<<20)
	dec := gob.NewDecoder(frames)
	if err := dec.Decode(new(rpc.Request)); err != nil {
		t.Fatal(err)
	}
	if !frames.types.replayable() {
		t.Fatal("a small definition was not kept")
	}
	if err := dec.Decode(reflect.New(huge).Interface()); err != nil {
		t.Fatal(err)
	}
	if frames.types.replayable() || frames.types.sent != nil {
		t.Fatalf("%d bytes of definitions kept, over the bound of %d", len(frames.types.sent), maxTypeBytes)
	}
}
