package master

import (
	"fmt"
	"testing"
	"time"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/rendezvous"
)

// BenchmarkRendezvousPoll: the heartbeats of the nodes of a complete
// round of n nodes, each polling every half second as the Python agents
// do (the master answers 2n polls a second), on a clock that moves on by
// that much per poll: the scans for silent nodes, once per grace, count.
func BenchmarkRendezvousPoll(b *testing.B) {
	for _, n := range []int{16, 512, rendezvous.MaxNodes} {
		b.Run(fmt.Sprint("nodes=", n), func(b *testing.B) {
			s, clock := newService(&testing.T{}, Config{Rendezvous: &MemoryRuns{}})
			joins := make([]wire.RendezvousJoin, n)
			for i := range joins {
				joins[i] = rdzvJoin(fmt.Sprint("node-", i))
				joins[i].MinNodes, joins[i].MaxNodes = n, n
				if _, err := s.RendezvousJoin(b.Context(), joins[i]); err != nil {
					b.Fatal(err)
				}
			}
			step := 500 * time.Millisecond / time.Duration(n)
			b.ResetTimer()
			for i := range b.N {
				clock.Advance(step)
				if _, err := s.RendezvousPoll(b.Context(), joins[i%n].RendezvousPoll); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
