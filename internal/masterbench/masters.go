package masterbench

import (
	"context"
	"fmt"
	"net/rpc"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pkg/errors"

	"github.com/trainmaster/master/go/discovery"
	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/proc"
)

// masters starts master processes of one job.
type masters struct {
	cfg   Config
	dir   string
	ns    string
	door  bool // each master opens its HTTP side door on a loopback port
	procs []*proc.Proc
}

func newMasters(cfg Config, dir, ns string, door bool) *masters {
	return &masters{cfg: cfg, dir: dir, ns: ns, door: door}
}

// doorLine is the line a master logs once its side door is open, with the
// status page's URL.
var doorLine = regexp.MustCompile(`msg="status page, [^"]*" .*url="?([^" ]+)`)

// start starts a master; onLog, if not nil, gets each line it logs.
func (m *masters) start(onLog func(string)) (*proc.Proc, error) {
	args := []string{
		"-endpoints", strings.Join(m.cfg.Endpoints, ","), "-namespace", m.ns, "-addr", "127.0.0.1:0",
		"-chunks-per-task", fmt.Sprint(m.cfg.ChunksPerTask), "-passes", fmt.Sprint(1 << 30), "-log-level", "info",
	}
	name := fmt.Sprintf("master-%d", len(m.procs))
	if m.door {
		args = append(args, "-http-addr", "127.0.0.1:0")
		name = fmt.Sprintf("master-door-%d", len(m.procs)) // beside the other job's logs
	}
	p, err := proc.Start(m.dir, m.cfg.Master, name, append(args, m.cfg.MasterArgs...), nil, onLog)
	if err != nil {
		return nil, err
	}
	m.procs = append(m.procs, p)
	return p, nil
}

// startLeader starts a master and waits until it publishes its address
// and, with the door, has logged its status page's URL (else ""); onLog,
// if not nil, gets each line it logs.
func (m *masters) startLeader(ctx context.Context, onLog func(string)) (p *proc.Proc, addr, doorURL string, err error) {
	urls := make(chan string, 1)
	p, err = m.start(func(line string) {
		if u := doorLine.FindStringSubmatch(line); u != nil {
			select {
			case urls <- u[1]:
			default:
			}
		}
		if onLog != nil {
			onLog(line)
		}
	})
	if err != nil {
		return nil, "", "", err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if addr, err = discovery.NewResolver(m.cfg.Client, m.ns).Resolve(ctx); err != nil {
		return nil, "", "", errors.Wrapf(err, "the master did not publish its address (log: %s)", p.Log)
	}
	if !m.door {
		return p, addr, "", nil
	}
	select {
	case doorURL = <-urls:
		return p, addr, doorURL, nil
	case <-ctx.Done():
		return nil, "", "", errors.Errorf("the master did not open its side door (log: %s)", p.Log)
	}
}

// failover starts a standby, stops the leader with SIGTERM (it resigns)
// and times until the standby answers with the dataset restored. It
// returns that time and the new leader's memory.
func (m *masters) failover(ctx context.Context, leader *proc.Proc, oldAddr string) (time.Duration, Memory, error) {
	campaigning := make(chan struct{})
	var once sync.Once
	standby, err := m.start(func(line string) {
		if strings.Contains(line, "standing by: campaigning") {
			once.Do(func() { close(campaigning) })
		}
	})
	if err != nil {
		return 0, Memory{}, err
	}
	select {
	case <-campaigning:
	case <-time.After(time.Minute):
		return 0, Memory{}, errors.Errorf("the standby did not campaign within a minute (log: %s)", standby.Log)
	}
	start := time.Now()
	leader.Signal(syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	resolver := discovery.NewResolver(m.cfg.Client, m.ns)
	for {
		if addr, err := resolver.Resolve(ctx); err == nil && addr != oldAddr && restored(addr) {
			took := time.Since(start)
			mem, err := readMemory(standby.Pid())
			return took, mem, err
		}
		select {
		case <-ctx.Done():
			return 0, Memory{}, errors.Errorf("the standby did not take over within a minute (log: %s)", standby.Log)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// restored reports whether the master at addr serves the reported dataset.
func restored(addr string) bool {
	c, err := rpc.Dial("tcp", addr)
	if err != nil {
		return false
	}
	defer c.Close()
	var st wire.Status
	return c.Call(wire.ServiceName+".Status", 0, &st) == nil && st.DatasetReported
}

func (m *masters) stopAll() {
	for _, p := range m.procs {
		p.Stop(5 * time.Second)
	}
}
