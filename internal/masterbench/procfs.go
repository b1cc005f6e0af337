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

func readMemory(pid int) (Memory, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, err
	}
	return parseStatus(b)
}

// parseStatus reads VmRSS and VmHWM, which the kernel gives in kB.
func parseStatus(b []byte) (Memory, error) {
	var m Memory
	found := 0
	for sc := bufio.NewScanner(bytes.NewReader(b)); sc.Scan(); {
		name, value, ok := strings.Cut(sc.Text(), ":")
		var dst *int64
		switch {
		case !ok:
			continue
		case name == "VmRSS":
			dst = &m.RSS
		case name == "VmHWM":
			dst = &m.Peak
		default:
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return m, errors.WithMessagef(err, "/proc status: %s", name)
		}
		*dst = kb << 10
		found++
	}
	if found != 2 {
		return m, errors.New("/proc status: VmRSS or VmHWM missing")
	}
	return m, nil
}
