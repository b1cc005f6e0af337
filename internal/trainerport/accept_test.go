package trainerport

import (
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/pkg/errors"
)

// TestAcceptErrorsThatPass sorts accept errors into those to wait out and
// those that end serving.
func TestAcceptErrorsThatPass(t *testing.T) {
	opErr := func(err error) error { return &net.OpError{Op: "accept", Net: "tcp", Err: err} }
	for _, tc := range []struct {
		err   error
		temps bool
	}{
		{opErr(os.NewSyscallError("accept4", syscall.EMFILE)), true},
		{opErr(os.NewSyscallError("accept4", syscall.ENFILE)), true},
		{opErr(os.NewSyscallError("accept4", syscall.ECONNABORTED)), true},
		{opErr(os.NewSyscallError("accept4", syscall.ENOBUFS)), true},
		{opErr(os.ErrDeadlineExceeded), true},
		{opErr(os.NewSyscallError("accept4", syscall.EBADF)), false},
		{opErr(os.NewSyscallError("accept4", syscall.EINVAL)), false},
		{opErr(net.ErrClosed), false},
		{errors.New("device gone"), false},
	} {
		if got := temporaryAcceptError(tc.err); got != tc.temps {
			t.Errorf("%v: passes %v, want %v", tc.err, got, tc.temps)
		}
	}
}
