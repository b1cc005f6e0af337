package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// proc is one child process; its stdout and stderr lines go to a log file
// and to the given handlers.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

func startProc(dir, bin, name string, args []string, onOut, onErr func(string)) (*proc, error) {
	logFile, err := os.OpenFile(filepath.Join(dir, name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	fmt.Fprintf(logFile, "--- started pid %d at %s\n", cmd.Process.Pid, time.Now().Format(time.RFC3339Nano))
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	var mu sync.Mutex
	var wg sync.WaitGroup
	follow := func(r io.Reader, handle func(string)) {
		defer wg.Done()
		lines := bufio.NewScanner(r)
		lines.Buffer(make([]byte, 64<<10), 1<<20)
		for lines.Scan() {
			mu.Lock()
			fmt.Fprintln(logFile, lines.Text())
			mu.Unlock()
			if handle != nil {
				handle(lines.Text())
			}
		}
	}
	wg.Add(2)
	go follow(stdout, onOut)
	go follow(stderr, onErr)
	go func() {
		wg.Wait()
		p.err = cmd.Wait()
		fmt.Fprintf(logFile, "--- exited: %v\n", p.err)
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) signal(sig syscall.Signal) { p.cmd.Process.Signal(sig) }

func (p *proc) kill() {
	p.cmd.Process.Kill()
	<-p.done
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}
