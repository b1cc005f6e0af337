// Package proc runs the child processes of the demo and the chaos run: each
// one's stdout and stderr are written to <dir>/<name>.log and handed, line
// by line, to callbacks.
package proc

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/pkg/errors"
)

// Proc is one child process.
type Proc struct {
	Name string
	Log  string // path of its log file
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// Start starts bin with args; onOut and onErr (either may be nil) get each
// line of its stdout and stderr.
func Start(dir, bin, name string, args []string, onOut, onErr func(string)) (*Proc, error) {
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex // one line at a time into the log
	cmd := exec.Command(bin, args...)
	cmd.Stdout = &lineWriter{log: logFile, mu: &mu, handle: onOut}
	cmd.Stderr = &lineWriter{log: logFile, mu: &mu, handle: onErr}
	// A grandchild holding our pipes must not keep Wait from returning.
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, errors.WithMessagef(err, "start %s", name)
	}
	fmt.Fprintf(logFile, "--- started pid %d at %s\n", cmd.Process.Pid, time.Now().Format(time.RFC3339Nano))
	p := &Proc{Name: name, Log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		cmd.Stdout.(*lineWriter).flush()
		cmd.Stderr.(*lineWriter).flush()
		fmt.Fprintf(logFile, "--- exited: %v\n", p.err)
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// Pid returns the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Signal sends sig.
func (p *Proc) Signal(sig syscall.Signal) { p.cmd.Process.Signal(sig) }

// Kill kills the process with SIGKILL and waits for it.
func (p *Proc) Kill() {
	p.cmd.Process.Kill()
	<-p.done
}

// Stop asks the process to stop with SIGTERM, and kills it if it has not
// after grace.
func (p *Proc) Stop(grace time.Duration) {
	p.Signal(syscall.SIGTERM)
	if p.Wait(grace) != nil && !p.Exited() {
		p.Kill()
	}
}

// Wait waits up to limit for the process to exit; it returns its exit error,
// or an error saying it is still running.
func (p *Proc) Wait(limit time.Duration) error {
	select {
	case <-p.done:
		return p.err
	case <-time.After(limit):
		return errors.Errorf("%s still running after %v", p.Name, limit)
	}
}

// Exited reports whether the process has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Err returns the exit error once the process has exited.
func (p *Proc) Err() error {
	<-p.done
	return p.err
}

// lineWriter hands complete lines to handle and copies them to the log.
type lineWriter struct {
	log    io.Writer
	mu     *sync.Mutex
	handle func(string)
	buf    []byte
}

func (w *lineWriter) Write(b []byte) (int, error) {
	w.buf = append(w.buf, b...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(b), nil
		}
		w.line(string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
}

func (w *lineWriter) line(l string) {
	w.mu.Lock()
	fmt.Fprintln(w.log, l)
	w.mu.Unlock()
	if w.handle != nil {
		w.handle(l)
	}
}

// flush hands over a last line without a newline.
func (w *lineWriter) flush() {
	if len(w.buf) > 0 {
		w.line(string(w.buf))
		w.buf = nil
	}
}
