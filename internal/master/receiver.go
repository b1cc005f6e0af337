package master

import (
	"context"

	"github.com/trainmaster/master/go/wire"
)

// Receiver is a Service's side of the trainer port (internal/trainerport):
// its method set is exactly the wire contract, in net/rpc's shape, to be
// registered under wire.ServiceName. The port answers Master.Authenticate
// itself.
type Receiver struct{ s *Service }

// NewReceiver returns the Receiver of s.
func NewReceiver(s *Service) *Receiver { return &Receiver{s: s} }

func (r *Receiver) ReportDataset(paths []string, reply *int) error {
	return r.s.ReportDataset(context.Background(), paths)
}

// TaskReport is what the master decodes of a task a trainer sends: the
// fields of wire.Task it acts on, without Blocks. gob skips a field the
// receiving type lacks without building it, so blocks a client sends (each
// one byte on the wire, 40 in memory) cost the master nothing.
type TaskReport struct {
	Index, Epoch, Pass int
	Error              string
	Trainer            string
	Dataset            string
	OnePass            bool
	Rank, Ranks, Batch int
	Gen                int
	Ask                int64
}

func (t TaskReport) task() wire.Task {
	return wire.Task{Index: t.Index, Epoch: t.Epoch, Pass: t.Pass, Error: t.Error, Trainer: wire.TrainerName(t.Trainer), Dataset: t.Dataset,
		OnePass: t.OnePass, Rank: t.Rank, Ranks: t.Ranks, Batch: t.Batch, Gen: t.Gen, Ask: t.Ask}
}

// CallerName names the trainer reporting, for the port (wire.Caller).
func (t TaskReport) CallerName() string { return wire.CallerName(t.Trainer) }

var _ wire.Caller = TaskReport{} // the port follows trainers by it

func (r *Receiver) GetTask(finished TaskReport, reply *wire.Task) error {
	next, err := r.s.GetTask(context.Background(), finished.task())
	*reply = next
	return err
}

func (r *Receiver) TaskFinished(task TaskReport, reply *int) error {
	rep, err := r.s.TaskFinished(context.Background(), task.task())
	*reply = int(rep)
	return err
}

func (r *Receiver) TaskFailed(task TaskReport, reply *int) error {
	rep, err := r.s.TaskFailed(context.Background(), task.task())
	*reply = int(rep)
	return err
}

func (r *Receiver) TaskProgress(p wire.Progress, reply *wire.ProgressReply) error {
	p.Trainer = wire.TrainerName(p.Trainer)
	rep, err := r.s.TaskProgress(context.Background(), p)
	*reply = rep
	return err
}

func (r *Receiver) Checkpoint(c wire.Checkpoint, reply *wire.CheckpointReply) error {
	rep, err := r.s.Checkpoint(context.Background(), c)
	*reply = rep
	return err
}

func (r *Receiver) Rewind(rw wire.Rewind, reply *wire.RewindReply) error {
	rep, err := r.s.Rewind(context.Background(), rw)
	*reply = rep
	return err
}

func (r *Receiver) DeclareDataset(d wire.Dataset, reply *int) error {
	return r.s.DeclareDataset(context.Background(), d)
}

func (r *Receiver) StartRound(round wire.Round, reply *int) error {
	cur, err := r.s.StartRound(context.Background(), round)
	*reply = cur
	return err
}

func (r *Receiver) DatasetStatus(name string, reply *wire.Status) error {
	st, err := r.s.DatasetStatus(context.Background(), name)
	*reply = st
	return err
}

func (r *Receiver) Status(_ int, reply *wire.Status) error {
	st, err := r.s.Status(context.Background())
	*reply = st
	return err
}

// Connections tells a Service which trainers are connected, from the
// trainer port's events (it is a trainerport.Listener): a connection
// carrying a trainer's name makes it Connected, and its end Disconnected
// for each name it carried (presence.go).
type Connections struct{ s *Service }

// NewConnections returns the Connections of s.
func NewConnections(s *Service) Connections { return Connections{s: s} }

// ConnOpened: an open connection tells nothing until it carries a name.
func (Connections) ConnOpened(conn uint64, remote string) {}

func (c Connections) ConnCarries(conn uint64, trainer string) { c.s.Connected(trainer) }

func (c Connections) ConnClosed(conn uint64, trainers []string) {
	for _, trainer := range trainers {
		c.s.Disconnected(trainer)
	}
}

// RendezvousReceiver is the rendezvous' side of the trainer port: its
// method set is the wire's rendezvous contract, to be registered under
// wire.RendezvousServiceName.
type RendezvousReceiver struct{ s *Service }

// NewRendezvousReceiver returns the RendezvousReceiver of s.
func NewRendezvousReceiver(s *Service) *RendezvousReceiver { return &RendezvousReceiver{s: s} }

func (r *RendezvousReceiver) Join(j wire.RendezvousJoin, reply *wire.RendezvousView) error {
	v, err := r.s.RendezvousJoin(context.Background(), j)
	*reply = v
	return err
}

func (r *RendezvousReceiver) Poll(p wire.RendezvousPoll, reply *wire.RendezvousView) error {
	v, err := r.s.RendezvousPoll(context.Background(), p)
	*reply = v
	return err
}

func (r *RendezvousReceiver) Publish(p wire.RendezvousPublish, reply *wire.RendezvousView) error {
	v, err := r.s.RendezvousPublish(context.Background(), p)
	*reply = v
	return err
}

func (r *RendezvousReceiver) Close(c wire.RendezvousClose, reply *wire.RendezvousView) error {
	v, err := r.s.RendezvousClose(context.Background(), c)
	*reply = v
	return err
}
