package wire

import (
	"errors"
	"net/rpc"
	"testing"
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
