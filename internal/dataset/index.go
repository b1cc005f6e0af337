package dataset

import (
	"runtime"
	"sync"

	"github.com/trainmaster/master/go/recordio"
)

// defaultWorkers is how many files Build indexes at once. Indexing a file is
// an open, a stat, one 20-byte read per chunk and a close: the time goes to
// system calls and, on a network or cold file system, to waiting for them,
// not to CPU. So it pays to run more workers than CPUs (2 per CPU), at least
// 4 even on one CPU for file systems with latency, and no more than 16, which
// keeps the open files and the indexes awaiting their turn few.
func defaultWorkers() int {
	return min(16, max(4, 2*runtime.GOMAXPROCS(0)))
}

// indexFiles indexes files 0 to n-1 with index, by workers (at least 1)
// workers, the calling goroutine being one, and hands each index to use in
// file order, as a
// sequential loop would. It stops at the first file in that order that fails
// and returns its error, whichever worker failed first, so the error does not
// depend on scheduling. At most 2*workers indexes are held awaiting their
// turn, however many files there are, and no goroutine outlives the call.
func indexFiles(n, workers int, index func(file int) (*recordio.Index, error), use func(file int, ix *recordio.Index)) error {
	x := &indexer{files: n, index: index, use: use, ready: make([]indexed, 2*workers)}
	x.room.L = &x.mu
	var wg sync.WaitGroup
	for range workers - 1 {
		wg.Go(x.work)
	}
	x.work()
	wg.Wait()
	return x.err
}

// indexer is the state the workers of indexFiles share. Rather than a
// goroutine collecting results, whichever worker completes the next file in
// order hands it and the ones after it already done to use: with one worker
// this is the sequential loop, with no hand-off between goroutines per file.
type indexer struct {
	files int // how many
	index func(file int) (*recordio.Index, error)
	use   func(file int, ix *recordio.Index)

	mu      sync.Mutex
	room    sync.Cond // signalled when next advances or err is set
	claimed int       // files [0, claimed) are taken by workers
	next    int       // files [0, next) are handed to use
	ready   []indexed // file f in [next, claimed) is at f % len(ready)
	err     error     // the first failure in file order: stops the claims
}

// indexed is the outcome of indexing one file.
type indexed struct {
	ix   *recordio.Index
	err  error
	done bool
}

func (x *indexer) work() {
	for {
		file, ok := x.claim()
		if !ok {
			return
		}
		ix, err := x.index(file)
		x.complete(file, indexed{ix, err, true})
	}
}

// claim takes the next file, waiting while the workers are len(ready) files
// ahead of the next one to hand over; it reports false when there is no file
// left or one has failed.
func (x *indexer) claim() (int, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for x.err == nil && x.claimed < x.files && x.claimed-x.next == len(x.ready) {
		x.room.Wait()
	}
	if x.err != nil || x.claimed == x.files {
		return 0, false
	}
	x.claimed++
	return x.claimed - 1, true
}

// complete records the outcome of file and hands over, in order, every
// outcome now complete from next on, stopping at the first failure.
func (x *indexer) complete(file int, r indexed) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.ready[file%len(x.ready)] = r
	for x.err == nil && x.next < x.claimed {
		slot := &x.ready[x.next%len(x.ready)]
		if !slot.done {
			return
		}
		r := *slot
		*slot = indexed{}
		if r.err != nil {
			x.err = r.err
		} else {
			x.use(x.next, r.ix)
			x.next++
		}
		x.room.Broadcast()
	}
}
