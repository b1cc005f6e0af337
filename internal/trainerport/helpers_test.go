package trainerport_test

import (
	"io"
	"net"
	"sync"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/trainerport"
	"github.com/trainmaster/master/internal/trainerport/porttest"
)

// receiver is what the port's tests serve as the Master: calls that
// answer at once, and a ReportDataset that, with held set, waits until the
// test releases it, for a call in flight as long as a test wants.
type receiver struct {
	held *held
}

// held holds calls until released.
type held struct {
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func newHeld() *held {
	return &held{entered: make(chan struct{}, 1), release: make(chan struct{})}
}

func (h *held) let() { h.once.Do(func() { close(h.release) }) }

func (r *receiver) Status(_ int, reply *wire.Status) error { return nil }

func (r *receiver) ReportDataset(paths []string, reply *int) error {
	if r.held != nil {
		r.held.entered <- struct{}{}
		<-r.held.release
	}
	return nil
}

func (r *receiver) GetTask(finished wire.Task, reply *wire.Task) error { return nil }

func (r *receiver) TaskProgress(p wire.Progress, reply *wire.ProgressReply) error { return nil }

// serving registers r as the Master, with l as its listener.
func serving(r *receiver, l trainerport.Listener) func(*trainerport.Server) error {
	return func(srv *trainerport.Server) error { return srv.Register(wire.ServiceName, r, l) }
}

// startPort serves a receiver with cfg on a new loopback port.
func startPort(t testing.TB, cfg trainerport.Config) *porttest.Port {
	t.Helper()
	return porttest.Start(t, cfg, serving(&receiver{}, nil))
}

// startPortOn serves a receiver with cfg on lis.
func startPortOn(t testing.TB, cfg trainerport.Config, lis net.Listener) *porttest.Port {
	t.Helper()
	return porttest.StartOn(t, cfg, lis, serving(&receiver{}, nil))
}

func quietLog() logrus.FieldLogger {
	log := logrus.New()
	log.SetOutput(io.Discard)
	return log
}
