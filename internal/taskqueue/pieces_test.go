package taskqueue

import "testing"

// TestPiecesApply: a task has bounds once it is split, a piece always;
// what an entry covers follows from them.
func TestPiecesApply(t *testing.T) {
	for _, tc := range []struct {
		name        string
		task        int // of 3 tasks of 100 records
		split       bool
		e           Entry
		want        *span // nil: none kept
		end, length int64
	}{
		{"a whole task", 1, false, Entry{Queue: Pending, Of: 1}, nil, 100, 100},
		{"a task split", 1, false, Entry{Queue: Pending, Of: 1, To: 26}, &span{of: 1, to: 26}, 26, 26},
		{"a split task, still", 1, true, Entry{Queue: Done, Of: 1, To: 26}, &span{of: 1, to: 26}, 26, 26},
		{"a split task, whole again", 1, true, Entry{Queue: Todo, Of: 1}, nil, 100, 100},
		{"a piece", 3, false, Entry{Queue: Pending, Of: 1, From: 26, To: 100, Progress: 26}, &span{of: 1, from: 26, to: 100}, 100, 74},
		{"a piece split", 3, false, Entry{Queue: Pending, Of: 1, From: 26, To: 60}, &span{of: 1, from: 26, to: 60}, 60, 34},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPieces(3, hundredRecords)
			if tc.split {
				p.apply(1, &Entry{}, &Entry{Of: 1, To: 26})
			}
			p.apply(tc.task, &Entry{}, &tc.e)
			got, ok := p.spans[tc.task]
			if ok != (tc.want != nil) || ok && got != *tc.want || len(p.spans) > 1 {
				t.Fatalf("spans %v, want %+v", p.spans, tc.want)
			}
			if p.end(tc.task) != tc.end || p.length(tc.task) != tc.length {
				t.Fatalf("end %d, length %d; want %d, %d", p.end(tc.task), p.length(tc.task), tc.end, tc.length)
			}
			var e Entry
			p.fill(tc.task, &e)
			if e.Of != tc.e.Of || e.From != tc.e.From || e.To != tc.e.To {
				t.Fatalf("filled bounds %d %d %d, want %d %d %d", e.Of, e.From, e.To, tc.e.Of, tc.e.From, tc.e.To)
			}
			p.relieved = MaxPieces(3)
			if !p.full() {
				t.Fatal("not full at MaxPieces reliefs")
			}
			p.startPass()
			if len(p.spans) != 0 || p.relieved != 0 || p.full() {
				t.Fatalf("a new pass keeps %v, %d reliefs", p.spans, p.relieved)
			}
		})
	}
}
