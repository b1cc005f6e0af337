package taskqueue

import (
	"time"

	"github.com/trainmaster/master/go/wire"
)

// Groups of ranks (wire's group.go). The ranks of a group step together,
// so each is handed a fixed share of the pass, wire.Group.Share, instead
// of whatever it can take: DispatchRank hands a rank tasks from the head
// of Todo until its share is out, cutting the task that would overflow
// the share at the share's end; the rest becomes a piece at the front of
// Todo, for the next rank that asks (the group's tail).
//
// What a rank was handed is derived from the entries, never counted
// beside them: every Pending or Done entry of a rank (Entry.Rank, stored
// with it) counts its whole length for that rank. So a new master knows
// the shares from the stored entries alone. An entry that goes back to
// Todo (a lost trainer's, a failure's) is no rank's until dispatched
// again; the rank that takes it next counts it wholly, even the records
// an earlier dispatch reported trained (documented: that only happens
// when a rank dies, which ends a DDP group's step anyway).
//
// A pass is trained by one group or by trainers outside any: the first
// ranked dispatch of a pass sets its group, and while the pass has ranked
// entries a rank of another group, or a trainer outside it, is refused
// wire.ErrBadGroup. A ranked dispatch has no deadline: a rank trains at
// the group's pace, which no other trainer's average predicts; a rank
// that dies is found by its connections closing (Release).
//
// Memory: one map entry per ranked entry of the pass, one per rank.

// ranked is what the queues keep of a ranked entry.
type ranked struct {
	rank    int
	records int64 // its length, counted for its rank
}

// ranks owns Entry.Rank and Entry.Group. Invariants: of has exactly the
// Pending and Done entries of the pass with a group; handed[r] is the sum
// of the records of of's entries of rank r; group is their group, zero
// when of is empty.
type ranks struct {
	tasks   int // the dataset's; entries past them are pieces
	records func(task int) int64
	of      map[int]ranked
	handed  map[int]int64
	group   wire.Group
	settled int // Done entries a rewind made (epoch 0): trained before the group
}

func newRanks(tasks int, records func(task int) int64) ranks {
	return ranks{tasks: tasks, records: records, of: map[int]ranked{}, handed: map[int]int64{}}
}

// countsForRank reports whether an entry counts for its rank.
func countsForRank(e *Entry) bool {
	return e.Group.Ranks > 0 && (e.Queue == Pending || e.Queue == Done)
}

// apply moves an entry's records from its old rank to its new one.
func (r *ranks) apply(task int, old, e *Entry) {
	if old.Queue == Done && old.Epoch == 0 {
		r.settled--
	}
	if e.Queue == Done && e.Epoch == 0 {
		r.settled++
	}
	if old, ok := r.of[task]; ok {
		if r.handed[old.rank] -= old.records; r.handed[old.rank] == 0 {
			delete(r.handed, old.rank)
		}
		delete(r.of, task)
	}
	if countsForRank(e) {
		n := r.length(task, e)
		r.of[task] = ranked{rank: e.Rank, records: n}
		r.handed[e.Rank] += n
		r.group = e.Group
	}
	if len(r.of) == 0 {
		r.group = wire.Group{}
	}
}

// fill sets a ranked entry's rank and group.
func (r *ranks) fill(task int, e *Entry) {
	if rk, ok := r.of[task]; ok {
		e.Rank, e.Group = rk.rank, r.group
	}
}

// startPass forgets the pass's group: the next may have another.
func (r *ranks) startPass() {
	clear(r.of)
	clear(r.handed)
	r.group = wire.Group{}
	r.settled = 0
}

// length is the number of records a task's entry covers, from its fields
// alone (an entry untouched in the pass has no Of: a task is its own).
func (r *ranks) length(task int, e *Entry) int64 {
	if e.To > 0 {
		return int64(e.To - e.From)
	}
	of := e.Of
	if task < r.tasks {
		of = task
	}
	return r.records(of) - int64(e.From)
}

// PassRecords returns the records of the current pass a group's ranks
// share: every task's, or in the pass a rewind went back to, those not
// trained then (checkpoint.go).
func (q *Queues) PassRecords() int64 {
	if g := q.generation; g.Gen > 0 && g.Pass == q.pass {
		return g.Left
	}
	if q.passRecords == 0 {
		for task := range q.tasks {
			q.passRecords += q.records(task)
		}
	}
	return q.passRecords
}

// Group returns the group training the current pass, and false when no
// rank holds or finished a task of it.
func (q *Queues) Group() (wire.Group, bool) { return q.ranks.group, q.ranks.group.Ranks > 0 }

// Handed returns the records of the current pass handed to rank so far:
// its pending and done entries'.
func (q *Queues) Handed(rank int) int64 { return q.ranks.handed[rank] }

// RankCut says where DispatchRank cut the task it handed out at the
// share's end: the task keeps its records up to At, Piece has the rest.
type RankCut struct {
	Task, At, Piece int
}

// DispatchRank hands rank of group g the next task of its share of the
// current pass, for a GetTask that carried the finish f, as Dispatch does
// for a trainer outside a group; cut is non-nil when the task handed was
// cut at the share's end. A rank that was handed its whole share is
// answered wire.ErrRankDone; a group that disagrees with the pass's, or a
// pass too small for it, wire.ErrBadGroup and wire.ErrPassTooSmall.
func (q *Queues) DispatchRank(now time.Time, trainer string, f Finished, rank int, g wire.Group) (task, epoch int, ch Change, cut *RankCut, err error) {
	if q.pass == q.end() {
		return 0, 0, Change{}, nil, ErrAllDone
	}
	if err := q.checkGroup(trainer, rank, g); err != nil {
		return 0, 0, Change{}, nil, err
	}
	need := g.Share(q.PassRecords(), rank) - q.ranks.handed[rank]
	if need <= 0 {
		return 0, 0, Change{}, nil, kindf(wire.ErrRankDone, "rank %d was handed its %d records of pass %d", rank, q.ranks.handed[rank], q.pass)
	}
	i, ok := q.nextFor(trainer, now)
	if !ok {
		q.compactTodo()
		return 0, 0, Change{}, nil, ErrNoTask
	}
	task = q.todo[i].task
	e := q.entry(task)
	cuts := 0
	if e.Progress > e.From {
		cuts++
	}
	if q.pieces.end(task)-int64(max(e.From, e.Progress)) > need {
		cuts++
	}
	if q.pieces.relieved+cuts > MaxPieces(q.tasks) {
		return 0, 0, Change{}, nil, kindf(wire.ErrPassTooSmall, "pass %d has had its %d pieces: task %d cannot be cut for rank %d's share", q.pass, MaxPieces(q.tasks), task, rank)
	}
	if e.Progress > e.From {
		task, e, ch = q.settle(task, e)
	}
	if q.pieces.end(task)-int64(e.From) > need {
		at := e.From + int(need)
		piece, cutCh := q.cutRest(task, &e, at)
		ch = ch.Merge(cutCh)
		cut = &RankCut{Task: task, At: at, Piece: piece}
	}
	e.Queue, e.Epoch, e.Trainer, e.For = Pending, e.Epoch+1, trainer, f
	if !tracked(trainer) {
		e.Trainer, e.For = "", Finished{}
	}
	e.Rank, e.Group = rank, g
	e.Dispatched, e.Deadline = now, time.Time{}
	ch = ch.Merge(q.change(task, e))
	q.progress.dispatched(task)
	q.compactTodo()
	return task, e.Epoch, ch, cut, nil
}

// cutRest cuts the records of the Todo entry e of task from at to its end
// off as a new piece, at the front of Todo, and sets e's end to at (its
// caller changes e). It returns the piece and its change.
func (q *Queues) cutRest(task int, e *Entry, at int) (int, Change) {
	end := int(q.pieces.end(task))
	if task < q.tasks {
		e.Of = task // an entry untouched in the pass has none
	}
	e.To = at
	piece := len(q.entries)
	q.grow(piece)
	ch := q.change(piece, Entry{Pass: q.pass, Queue: Todo, Seq: q.nextFront, Progress: at, Of: e.Of, From: at, To: end})
	q.nextFront--
	q.pieces.relieved++
	return piece, ch
}

// settle hands over the Todo entry e of task, trained in part by a
// dispatch taken back (its Progress): its trained records become an entry
// of their own, Done and no rank's (epoch 0, as a rewind's), and the rest
// a piece, which it returns with its entry, so that a rank's share counts
// exactly the records it is handed.
func (q *Queues) settle(task int, e Entry) (int, Entry, Change) {
	piece, ch := q.cutRest(task, &e, e.Progress)
	ch = ch.Merge(q.change(task, Entry{Pass: q.pass, Queue: Done, Of: e.Of, From: e.From, To: e.To}))
	return piece, q.entry(piece), ch
}

// checkGroup refuses a rank whose group is out of bounds, disagrees with
// the pass's, or cannot even its batches over the pass, a rank without a
// name (its tasks have no deadline: only a named trainer's are taken back
// when it is lost), and a group in a pass that trainers outside any group
// train.
func (q *Queues) checkGroup(trainer string, rank int, g wire.Group) error {
	if err := g.CheckRank(rank); err != nil {
		return err
	}
	if !tracked(trainer) {
		return kindf(wire.ErrBadGroup, "rank %d sends no trainer name: a rank's tasks have no deadline, and only a named trainer's are taken back when it is lost", rank)
	}
	if err := g.CheckPass(q.PassRecords()); err != nil {
		return err
	}
	if g.Ranks > q.tasks+1 {
		return kindf(wire.ErrPassTooSmall, "%d tasks in the pass, %d ranks: the shares' ends cut up to %d tasks, and a pass holds at most %d pieces; cut the dataset into more tasks", q.tasks, g.Ranks, g.Ranks-1, MaxPieces(q.tasks))
	}
	if cur, ok := q.Group(); ok && cur != g {
		return kindf(wire.ErrBadGroup, "rank %d asks as a group of %v; pass %d is trained by a group of %v", rank, g, q.pass, cur)
	}
	if taken := q.counts[Pending] + q.counts[Done] - q.ranks.settled; taken > 0 && len(q.ranks.of) == 0 {
		return kindf(wire.ErrBadGroup, "rank %d of a group of %v asks in pass %d, whose %d tasks taken so far are trained outside any group", rank, g, q.pass, taken)
	}
	return nil
}

// checkOutside refuses a trainer outside any group while a group trains
// the pass.
func (q *Queues) checkOutside(trainer string) error {
	if g, ok := q.Group(); ok {
		return kindf(wire.ErrBadGroup, "trainer %s asks outside any group; pass %d is trained by a group of %v", wire.TrainerName(trainer), q.pass, g)
	}
	return nil
}
