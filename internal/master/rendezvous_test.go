package master

import (
	"fmt"
	"maps"
	"net/rpc"
	"net/rpc/jsonrpc"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/trainerport"
)

func rdzvJoin(node string) wire.RendezvousJoin {
	return wire.RendezvousJoin{RendezvousPoll: wire.RendezvousPoll{Run: "job-1", Node: node, Token: "token-" + node},
		MinNodes: 2, MaxNodes: 3, LastCallMs: 10_000, GraceMs: 30_000}
}

// TestRendezvousOverThePort: agents meet at the master over net/rpc (gob,
// and JSON-RPC as the Python agents speak it): a round forms and completes
// after its last call, a new node waits, and the round's nodes join again
// and form the next with it; a new master on the same store continues the
// same round and gives every member a whole grace from its restore.
func TestRendezvousOverThePort(t *testing.T) {
	runs := &MemoryRuns{}
	s, clock := newService(t, Config{Rendezvous: runs})
	p := startPort(t, s, trainerport.Config{})
	gobConn, err := rpc.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer gobConn.Close()
	jsonConn, err := jsonrpc.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer jsonConn.Close()
	conns := map[string]*rpc.Client{"a": gobConn, "b": jsonConn, "c": gobConn}
	call := func(method, node string, args any) wire.RendezvousView {
		t.Helper()
		var v wire.RendezvousView
		if err := conns[node].Call(wire.RendezvousServiceName+"."+method, args, &v); err != nil {
			t.Fatalf("%s of %s: %v", method, node, err)
		}
		return v
	}
	poll := func(node string) wire.RendezvousView {
		t.Helper()
		return call("Poll", node, rdzvJoin(node).RendezvousPoll)
	}
	call("Join", "a", rdzvJoin("a"))
	if v := call("Join", "b", rdzvJoin("b")); v.Complete || v.Participants != 2 || v.Rank != -1 {
		t.Fatalf("b joined: %+v", v)
	}
	clock.Advance(10 * time.Second)
	if v := poll("b"); !v.Complete || v.Rank != 1 || v.World != 2 {
		t.Fatalf("after the last call: %+v", v)
	}
	if v := call("Join", "c", rdzvJoin("c")); !v.Queued || v.Waiting != 1 {
		t.Fatalf("c joined a complete round: %+v", v)
	}

	// A new leader takes over the same store.
	s2, clock2 := newService(t, Config{Rendezvous: runs})
	clock2.Advance(time.Hour) // it takes over an hour after the stored heartbeats...
	if err := s2.Restore(t.Context()); err != nil {
		t.Fatal(err)
	}
	clock2.Advance(25 * time.Second) // ...and every member has its whole grace from then
	p2 := startPort(t, s2, trainerport.Config{})
	for node := range conns {
		c, err := jsonrpc.Dial("tcp", p2.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[node] = c
	}
	if v := poll("a"); !v.Complete || v.Rank != 0 || v.Waiting != 1 || v.Round != 0 {
		t.Fatalf("a at the new leader: %+v", v)
	}
	call("Join", "a", rdzvJoin("a"))
	call("Join", "b", rdzvJoin("b"))
	for i, node := range []string{"a", "b", "c"} {
		if v := poll(node); !v.Complete || v.Round != 1 || v.Rank != i || v.World != 3 {
			t.Fatalf("%s in round 1: %+v", node, v)
		}
	}
	if got := s2.RendezvousRuns()["job-1"].Last.Why; !strings.Contains(got, "round 1 complete with 3 nodes") {
		t.Errorf("last change %q", got)
	}
}

// TestRendezvousRefusals: hostile calls get their stable texts, naming
// what they break, and change nothing.
func TestRendezvousRefusals(t *testing.T) {
	s, _ := newService(t, Config{})
	p := startPort(t, s, trainerport.Config{})
	conn, err := jsonrpc.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var v wire.RendezvousView
	if err := conn.Call("Rendezvous.Join", rdzvJoin("a"), &v); err != nil {
		t.Fatal(err)
	}
	other := rdzvJoin("a")
	other.Token = "stolen"
	huge := rdzvJoin("b")
	huge.Node = strings.Repeat("x", 300)
	shape := rdzvJoin("b")
	shape.MaxNodes = 5
	cases := []struct {
		name string
		join wire.RendezvousJoin
		want string
	}{
		{"another agent's node", other, wire.TextNodeIdentity + ": node a is in the run under another token"},
		{"a node name too long", huge, wire.TextBadRendezvous + ": a node's name and token take 1 to 256 bytes"},
		{"another shape", shape, wire.TextBadRendezvous + ": node b joins with nodes 2:5"},
		{"no run", wire.RendezvousJoin{}, wire.TextBadRendezvous + ": a run ID takes 1 to 128 bytes; got 0"},
	}
	for _, tc := range cases {
		if err := conn.Call("Rendezvous.Join", tc.join, &v); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	for i := range wire.MaxRendezvous - 1 {
		j := rdzvJoin("a")
		j.Run = fmt.Sprint("flood-", i)
		if err := conn.Call("Rendezvous.Join", j, &v); err != nil {
			t.Fatal(err)
		}
	}
	j := rdzvJoin("a")
	j.Run = "one-more"
	if err := conn.Call("Rendezvous.Join", j, &v); err == nil || !strings.HasPrefix(err.Error(), wire.TextRendezvousFull+": the master keeps 16 runs") {
		t.Fatalf("a run past the most: %v", err)
	}
	if n := len(s.RendezvousRuns()["job-1"].Members); n != 1 {
		t.Errorf("members after the refusals: %d", n)
	}
}

// TestRendezvousRunsOverMakeRoom: with the most runs kept, a new run is
// refused while every run is open or has a node still calling; once a
// closed run's nodes are all silent past its grace, the new run takes its
// place, and the store no longer holds it.
func TestRendezvousRunsOverMakeRoom(t *testing.T) {
	runs := &MemoryRuns{}
	s, clock := newService(t, Config{Rendezvous: runs})
	join := func(run string) error {
		j := rdzvJoin("a")
		j.Run = run
		_, err := s.RendezvousJoin(t.Context(), j)
		return err
	}
	for i := range wire.MaxRendezvous {
		if err := join(fmt.Sprint("job-", i)); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Second)
	}
	for _, i := range []int{3, 7} {
		c := wire.RendezvousClose{RendezvousPoll: rdzvJoin("a").RendezvousPoll, Why: "the job finished"}
		c.Run = fmt.Sprint("job-", i)
		if _, err := s.RendezvousClose(t.Context(), c); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Second)
	}
	want := wire.TextRendezvousFull + ": the master keeps 16 runs, the most, none of them over"
	if err := join("job-new"); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("a new run while the closed ones' nodes may call: %v", err)
	}
	clock.Advance(31 * time.Second)
	if err := join("job-new"); err != nil {
		t.Fatal(err)
	}
	stored, err := runs.LoadRuns(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	_, kept3 := stored["job-3"]
	_, kept7 := stored["job-7"]
	if _, ok := stored["job-new"]; !ok || kept3 || !kept7 || len(stored) != wire.MaxRendezvous {
		t.Fatalf("stored runs %v: want job-new in place of job-3, the one closed first", slices.Sorted(maps.Keys(stored)))
	}
	if len(s.RendezvousRuns()) != wire.MaxRendezvous {
		t.Errorf("runs kept: %d", len(s.RendezvousRuns()))
	}
}
