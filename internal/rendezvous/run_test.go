package rendezvous

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/pkg/errors"
)

var t0 = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

func at(secs float64) time.Time { return t0.Add(time.Duration(secs * float64(time.Second))) }

var cfg23 = Config{MinNodes: 2, MaxNodes: 3, LastCall: 10 * time.Second, Grace: 30 * time.Second}

func join(t *testing.T, r *Run, secs float64, nodes ...string) {
	t.Helper()
	for _, n := range nodes {
		if err := r.Join(at(secs), n, "token-"+n, 0, cfg23); err != nil {
			t.Fatalf("join %s: %v", n, err)
		}
	}
}

func poll(t *testing.T, r *Run, secs float64, node string) View {
	t.Helper()
	v, err := r.Poll(at(secs), node, "token-"+node)
	if err != nil {
		t.Fatalf("poll %s: %v", node, err)
	}
	return v
}

// ranks returns the rank each node polls at secs, "-" for none.
func ranks(t *testing.T, r *Run, secs float64, nodes ...string) string {
	t.Helper()
	var out []string
	for _, n := range nodes {
		v := poll(t, r, secs, n)
		if v.Rank < 0 {
			out = append(out, "-")
			continue
		}
		out = append(out, fmt.Sprintf("%d/%d", v.Rank, v.World))
	}
	return strings.Join(out, " ")
}

func TestRoundsForm(t *testing.T) {
	t.Run("complete at once with the most nodes, ranked by name", func(t *testing.T) {
		var r Run
		join(t, &r, 0, "c", "a")
		if v := poll(t, &r, 1, "a"); v.Complete || v.Deadline != at(10) {
			t.Fatalf("two of 2:3 nodes: %+v, want the last call to end at 10 s", v)
		}
		join(t, &r, 2, "b")
		if got := ranks(t, &r, 2, "a", "b", "c"); got != "0/3 1/3 2/3" || r.Round != 0 {
			t.Fatalf("ranks %s in round %d", got, r.Round)
		}
	})
	t.Run("complete with the fewest nodes once the last call is over", func(t *testing.T) {
		var r Run
		join(t, &r, 0, "a")
		join(t, &r, 1, "b")
		if got := ranks(t, &r, 10.9, "a", "b"); got != "- -" {
			t.Fatalf("before the last call ends: %s", got)
		}
		if got := ranks(t, &r, 11, "a", "b"); got != "0/2 1/2" {
			t.Fatalf("after it: %s", got)
		}
		if !strings.Contains(r.Last.Why, "round 0 complete with 2 nodes: its last call of 10s is over") {
			t.Errorf("last change %q", r.Last.Why)
		}
	})
	t.Run("a node leaving below the fewest stops the last call", func(t *testing.T) {
		var r Run
		join(t, &r, 0, "a", "b")
		if !r.Tick(at(31)) || len(r.Members) != 0 || !r.Deadline.IsZero() {
			t.Fatalf("both silent past the grace: %+v", r)
		}
	})
}

// TestANewNodeRestartsTheRound: a node joining a complete round that has
// room waits; the round's nodes, seeing it, join again; the round ends
// once the last has left it, and the next has all three.
func TestANewNodeRestartsTheRound(t *testing.T) {
	var r Run
	join(t, &r, 0, "a", "b")
	ranks(t, &r, 10, "a", "b")
	join(t, &r, 20, "d")
	if v := poll(t, &r, 20, "a"); v.Waiting != 1 || !v.Complete {
		t.Fatalf("the round's view: %+v, want 1 node waiting", v)
	}
	join(t, &r, 21, "a")
	if v := poll(t, &r, 21, "a"); !v.Queued || !v.Complete || r.Round != 0 {
		t.Fatalf("a joined again while b is still in round 0: %+v", v)
	}
	join(t, &r, 22, "b")
	if got := ranks(t, &r, 22, "a", "b", "d"); got != "0/3 1/3 2/3" || r.Round != 1 {
		t.Fatalf("round %d: ranks %s", r.Round, got)
	}
}

// TestAFullRoundLeavesANodeOut: a node finding a complete round full is
// not kept waiting (the round's agents would restart for nothing); it
// joins again once the round is over.
func TestAFullRoundLeavesANodeOut(t *testing.T) {
	var r Run
	join(t, &r, 0, "a", "b", "c")
	join(t, &r, 1, "d")
	if v := poll(t, &r, 1, "d"); v.Participant || v.Queued || v.Waiting != 0 {
		t.Fatalf("d's view: %+v", v)
	}
}

// TestASilentNodeIsDropped: a node of a complete round whose heartbeats
// stop is dropped after the grace; the others, whose workers fail, join
// again and form the next round without it.
func TestASilentNodeIsDropped(t *testing.T) {
	var r Run
	join(t, &r, 0, "a", "b", "c")
	for secs := 10.0; secs <= 40; secs += 10 {
		poll(t, &r, secs, "a")
		poll(t, &r, secs, "b")
	}
	if v := poll(t, &r, 40, "a"); v.Participants != 2 || !v.Complete {
		t.Fatalf("after c's grace: %+v", v)
	}
	if want := "node c dropped: no heartbeat for 40s (grace 30s)"; r.Last.Why != want {
		t.Errorf("last change %q, want %q", r.Last.Why, want)
	}
	join(t, &r, 41, "a", "b")
	if got := ranks(t, &r, 51, "a", "b"); got != "0/2 1/2" || r.Round != 1 {
		t.Fatalf("round %d: %s", r.Round, got)
	}
}

func TestRefusals(t *testing.T) {
	long := strings.Repeat("n", MaxNameBytes+1)
	cases := []struct {
		name        string
		node, token string
		cfg         Config
		want        error
		wantText    string
	}{
		{"another token while alive", "a", "intruder", cfg23, ErrIdentity, "node a is in the run under another token, seen 5s ago"},
		{"another shape", "x", "t", Config{MinNodes: 1, MaxNodes: 3, LastCall: 10 * time.Second, Grace: 30 * time.Second}, ErrBadJoin, "joins with nodes 1:3"},
		{"min above max", "x", "t", Config{MinNodes: 3, MaxNodes: 2, Grace: time.Second}, ErrBadJoin, "nodes 3:2"},
		{"too many nodes", "x", "t", Config{MinNodes: 1, MaxNodes: MaxNodes + 1, Grace: time.Second}, ErrBadJoin, "max <= 4096"},
		{"no grace", "x", "t", Config{MinNodes: 1, MaxNodes: 2}, ErrBadJoin, "grace 0s"},
		{"a name too long", long, "t", cfg23, ErrBadJoin, "got 257 and 1"},
		{"no token", "x", "", cfg23, ErrBadJoin, "got 1 and 0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var r Run
			join(t, &r, 0, "a")
			err := r.Join(at(5), tc.node, tc.token, 0, tc.cfg)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.wantText) {
				t.Fatalf("error %v, want %v with %q", err, tc.want, tc.wantText)
			}
			if len(r.Members) != 1 {
				t.Errorf("members after a refused join: %v", r.Members)
			}
		})
	}
	t.Run("another token once the node is past its grace", func(t *testing.T) {
		var r Run
		join(t, &r, 0, "a")
		if err := r.Join(at(31), "a", "new", 0, cfg23); err != nil || r.Members["a"].Token != "new" {
			t.Fatalf("error %v, member %+v", err, r.Members["a"])
		}
	})
	t.Run("closed", func(t *testing.T) {
		var r Run
		join(t, &r, 0, "a")
		r.Close(at(1), "the job finished")
		if err := r.Join(at(2), "b", "t", 0, cfg23); !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "the job finished") {
			t.Fatalf("join after close: %v", err)
		}
		if v := poll(t, &r, 2, "a"); !v.Closed {
			t.Errorf("a member's view after close: %+v", v)
		}
	})
	t.Run("a flood of waiting nodes", func(t *testing.T) {
		r := Run{}
		one := Config{MinNodes: 1, MaxNodes: 2, Grace: time.Hour}
		if err := r.Join(t0, "a", "t", 0, one); err != nil {
			t.Fatal(err)
		}
		r.Tick(t0)
		for i := range MaxNodes {
			if err := r.Join(t0, fmt.Sprint("w", i), "t", 0, one); err != nil {
				t.Fatalf("waiting node %d: %v", i, err)
			}
		}
		err := r.Join(t0, "one-more", "t", 0, one)
		if !errors.Is(err, ErrFull) || !strings.Contains(err.Error(), "4096 nodes wait for round 1") {
			t.Fatalf("error %v", err)
		}
	})
}

// TestRankZeroHostsTheRoundsStore: only rank 0 of a complete round
// publishes its store; the others see it; the next round has none until
// its own rank 0 publishes one.
func TestRankZeroHostsTheRoundsStore(t *testing.T) {
	var r Run
	if err := r.Publish(at(0), "a", "token-a", "127.0.0.1:1"); !errors.Is(err, ErrBadJoin) {
		t.Fatalf("a store before any round: %v", err)
	}
	join(t, &r, 0, "a", "b", "c")
	if err := r.Publish(at(1), "b", "token-b", "127.0.0.1:2"); !errors.Is(err, ErrBadJoin) || !strings.Contains(err.Error(), "node b is not rank 0 of a complete round 0") {
		t.Fatalf("rank 1 publishing: %v", err)
	}
	if err := r.Publish(at(1), "a", "token-a", "127.0.0.1:3"); err != nil {
		t.Fatal(err)
	}
	if v := poll(t, &r, 2, "c"); v.Store != "127.0.0.1:3" {
		t.Fatalf("c's view: %+v", v)
	}
	join(t, &r, 3, "a", "b", "c")
	if v := poll(t, &r, 3, "c"); v.Round != 1 || !v.Complete || v.Store != "" {
		t.Fatalf("round 1 before its rank 0 publishes: %+v", v)
	}
}

// TestAClosedRunBeginsAnewOnceItsNodesAreGone: a closed run refuses joins
// while a node of it still calls within the grace; once none does, a join
// begins it anew at the next round, in whatever shape the new job asks.
func TestAClosedRunBeginsAnewOnceItsNodesAreGone(t *testing.T) {
	var r Run
	join(t, &r, 0, "a", "b")
	r.Close(at(1), "by node a: the agent shut down")
	poll(t, &r, 20, "b") // b learns of the close
	if r.Over(at(50)) {
		t.Fatal("over while b called 30s ago")
	}
	if err := r.Join(at(50), "c", "t", 0, cfg23); !errors.Is(err, ErrClosed) {
		t.Fatalf("a join while b may still call: %v", err)
	}
	if !r.Over(at(51)) {
		t.Fatal("not over once every node is silent past the grace")
	}
	other := Config{MinNodes: 1, MaxNodes: 1, Grace: time.Minute}
	if err := r.Join(at(51), "c", "t", 0, other); err != nil {
		t.Fatal(err)
	}
	if r.Closed || r.Round != 1 || !r.Complete || len(r.Members) != 1 || r.Config != other {
		t.Fatalf("the run begun anew: %+v", r)
	}
	if notes := r.TakeNotes(); len(notes) != 3 || !strings.Contains(notes[0],
		"begins anew at round 1: it was closed 50s ago (by node a: the agent shut down), and none of its nodes calls any more") {
		t.Errorf("notes %q", notes)
	}
}

// TestAPollOfARunNotDueChangesNothingButItsHeartbeat: in random runs of
// joins, polls, silences and closes, whenever a run is not Due, Tick
// changes nothing; and a node silent past the grace is dropped at the
// first Tick after it, though Tick looks for silent nodes once per grace.
func TestAPollOfARunNotDueChangesNothingButItsHeartbeat(t *testing.T) {
	for seed := range int64(200) {
		rng := rand.New(rand.NewSource(seed))
		cfg := Config{MinNodes: 1 + rng.Intn(3), MaxNodes: 4 + rng.Intn(3), LastCall: time.Duration(rng.Intn(5)) * time.Second, Grace: time.Duration(1+rng.Intn(10)) * time.Second}
		var r Run
		now := t0
		for step := range 300 {
			now = now.Add(time.Duration(rng.Intn(1500)) * time.Millisecond)
			node := fmt.Sprint("n", rng.Intn(8))
			if !r.Due(now) {
				before := r.Clone()
				if r.Tick(now) || r.Last != before.Last || len(r.Members) != len(before.Members) || r.Complete != before.Complete {
					t.Fatalf("seed %d step %d: a run not due changed at its Tick: %+v, was %+v", seed, step, r, before)
				}
			}
			switch op := rng.Intn(10); {
			case op < 3:
				_ = r.Join(now, node, "t", 0, cfg)
			case op < 9:
				_, _ = r.Poll(now, node, "t")
			case r.Round > 2:
				r.Close(now, "done")
			}
			r.Tick(now)
			for name, m := range r.Members {
				if now.Sub(m.Seen) > cfg.Grace && !r.Closed {
					t.Fatalf("seed %d step %d: node %s silent for %v past its grace %v is kept", seed, step, name, now.Sub(m.Seen), cfg.Grace)
				}
			}
			p, w := r.counts()
			r.tally = tally{}
			if p2, w2 := r.counts(); p != p2 || w != w2 {
				t.Fatalf("seed %d step %d: counts %d, %d kept; %d, %d counted", seed, step, p, w, p2, w2)
			}
		}
	}
}

// TestARetriedJoinChangesNothing: a Join the agent retries (its reply
// lost, say to a failover) after its round completed leaves the node in
// the round; the agent's next round, a new attempt, takes it out.
func TestARetriedJoinChangesNothing(t *testing.T) {
	cfg33 := Config{MinNodes: 3, MaxNodes: 3, LastCall: time.Second, Grace: time.Minute}
	var r Run
	for i, n := range []string{"a", "b", "c"} {
		if err := r.Join(at(float64(i)), n, "token-"+n, 1, cfg33); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Join(at(5), "b", "token-b", 1, cfg33); err != nil {
		t.Fatal(err)
	}
	if v := r.View("b"); !v.Complete || !v.Participant || v.World != 3 || r.Members["b"].Seen != at(5) {
		t.Fatalf("after a retried join: %+v, member %+v", v, r.Members["b"])
	}
	if err := r.Join(at(6), "b", "token-b", 2, cfg33); err != nil {
		t.Fatal(err)
	}
	if v := r.View("b"); !v.Queued || v.Participant {
		t.Fatalf("after the agent's next round: %+v", v)
	}
}
