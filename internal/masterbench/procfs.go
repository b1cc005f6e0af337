package masterbench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/pkg/errors"
)

// Memory is a process's resident memory, from /proc/PID/status.
type Memory struct {
	RSS  int64 `json:"rss_bytes"`  // now (VmRSS)
	Peak int64 `json:"peak_bytes"` // the most it ever held (VmHWM)
}

// Process is a process's memory, threads and open file descriptors.
type Process struct {
	Memory
	Threads int `json:"threads"`
	FDs     int `json:"fds"`
}

func readMemory(pid int) (Memory, error) {
	p, err := readStatus(pid)
	return p.Memory, err
}

// readProcess reads the memory and threads of pid, and counts its open
// descriptors.
func readProcess(pid int) (Process, error) {
	p, err := readStatus(pid)
	if err != nil {
		return p, err
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	p.FDs = len(fds)
	return p, errors.Wrap(err, "open descriptors")
}

func readStatus(pid int) (Process, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Process{}, err
	}
	return parseStatus(b)
}

// parseStatus reads VmRSS and VmHWM, which the kernel gives in kB, and
// Threads.
func parseStatus(b []byte) (Process, error) {
	var p Process
	found := 0
	for sc := bufio.NewScanner(bytes.NewReader(b)); sc.Scan(); {
		name, value, ok := strings.Cut(sc.Text(), ":")
		value = strings.TrimSpace(value)
		var err error
		switch {
		case !ok:
			continue
		case name == "VmRSS":
			p.RSS, err = parseKB(value)
			found++
		case name == "VmHWM":
			p.Peak, err = parseKB(value)
			found++
		case name == "Threads":
			p.Threads, err = strconv.Atoi(value)
		}
		if err != nil {
			return p, errors.WithMessagef(err, "/proc status: %s", name)
		}
	}
	if found != 2 {
		return p, errors.New("/proc status: VmRSS or VmHWM missing")
	}
	return p, nil
}

func parseKB(value string) (int64, error) {
	kb, err := strconv.ParseInt(strings.TrimSuffix(value, " kB"), 10, 64)
	return kb << 10, err
}
