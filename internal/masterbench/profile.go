package masterbench

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"time"

	"github.com/trainmaster/master/internal/proc"
)

// ProfileEnv names, in a master's environment, the directory where it
// writes a CPU profile from each SIGUSR1 to the next SIGUSR2 (see
// ProfileOnSignals). With Config.Profile the bench sets it for the masters
// it starts and signals them around each measured window.
const ProfileEnv = "TRAINMASTER_BENCH_PROFILE_DIR"

// ProfileOnSignals makes this process write a CPU profile from each
// SIGUSR1 to the next SIGUSR2, the nth into profilePath(dir, pid, n), when
// the environment names a directory in ProfileEnv; else it does nothing
// (and the signals keep their default action). The master binary calls it
// at start-up.
func ProfileOnSignals() {
	dir := os.Getenv(ProfileEnv)
	if dir == "" || profileStart == 0 {
		return
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, profileStart, profileStop)
	go func() {
		var f *os.File
		n := 0
		for sig := range sigs {
			switch {
			case sig == profileStart && f == nil:
				n++
				var err error
				if f, err = os.Create(profilePath(dir, os.Getpid(), n)); err != nil {
					fmt.Fprintf(os.Stderr, "cpu profile: %v\n", err)
					continue
				}
				if err := pprof.StartCPUProfile(f); err != nil {
					fmt.Fprintf(os.Stderr, "cpu profile: %v\n", err)
					f.Close()
					f = nil
				}
			case sig == profileStop && f != nil:
				pprof.StopCPUProfile()
				f.Close()
				f = nil
			}
		}
	}()
}

func profilePath(dir string, pid, n int) string {
	return filepath.Join(dir, fmt.Sprintf("master-%d-%d.pprof", pid, n))
}

// profiler signals one master to profile the measured windows.
type profiler struct {
	dir string
	p   *proc.Proc
	n   int // profiles asked for
}

// profile has the master profile from from until until (or until ctx
// ends), and returns the profile's path; "" if ctx ended before from.
func (pr *profiler) profile(ctx context.Context, from, until time.Time) string {
	if !sleepUntil(ctx, from) {
		return ""
	}
	pr.n++
	pr.p.Signal(profileStart)
	sleepUntil(ctx, until)
	pr.p.Signal(profileStop)
	return profilePath(pr.dir, pr.p.Pid(), pr.n)
}

// sleepUntil waits until t; false if ctx ended first, or had ended when
// it was called even if t had passed.
func sleepUntil(ctx context.Context, t time.Time) bool {
	if ctx.Err() != nil {
		return false
	}
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}
