package wire

import (
	"errors"
	"net/rpc"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestIs(t *testing.T) {
	for _, tc := range []struct {
		err  error
		text string
		want bool
	}{
		{rpc.ServerError("no task available"), TextNoTask, true},
		{errors.New("Master.GetTask: all passes done"), TextAllDone, true},
		{errors.New("dataset not reported"), TextNoTask, false},
		{nil, TextNoTask, false},
	} {
		if got := Is(tc.err, tc.text); got != tc.want {
			t.Errorf("Is(%v, %q) = %v", tc.err, tc.text, got)
		}
	}
	if Recorded.String() != "recorded" || Report(9).String() != "unknown report" {
		t.Error("report names")
	}
}

func TestTrainerName(t *testing.T) {
	long := "x" + strings.Repeat("é", MaxTrainerNameBytes) // 2 bytes a rune: byte 128 is inside one
	for _, tc := range []struct{ in, want string }{
		{"", Unnamed},
		{"host-42", "host-42"},
		{"a\nb\x00c\x1b[2J", "a?b?c?[2J"},
		{"bad\xffutf8", "bad?utf8"},
		{long, long[:MaxTrainerNameBytes-1]},
		{strings.Repeat("x", 10000), strings.Repeat("x", MaxTrainerNameBytes)},
	} {
		got := TrainerName(tc.in)
		if got != tc.want {
			t.Errorf("TrainerName(%.40q) = %.40q, want %.40q", tc.in, got, tc.want)
		}
		if len(got) > MaxTrainerNameBytes || !utf8.ValidString(got) {
			t.Errorf("TrainerName(%.40q) = %.40q: over the limit or not UTF-8", tc.in, got)
		}
	}
}
