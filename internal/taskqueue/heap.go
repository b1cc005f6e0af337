package taskqueue

import "slices"

// deadlineItem is a pending dispatch's deadline; items of dispatches that
// have ended are skipped when they come up.
type deadlineItem struct {
	at    int64 // Unix nanoseconds
	task  int
	epoch int
}

// deadlineHeap is a min-heap of deadlines, for container/heap.
type deadlineHeap []deadlineItem

func (h deadlineHeap) Len() int           { return len(h) }
func (h deadlineHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h deadlineHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *deadlineHeap) Push(x any)        { *h = append(*h, x.(deadlineItem)) }
func (h *deadlineHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}

func sortTodo(items []todoItem) {
	slices.SortFunc(items, func(a, b todoItem) int {
		switch {
		case a.seq < b.seq:
			return -1
		case a.seq > b.seq:
			return 1
		}
		return 0
	})
}
