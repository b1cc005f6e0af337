package wire_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/trainmaster/master/go/wire"
)

// contract is testdata/contract.json: the vectors python/tests/test_contract.py
// checks the Python client against too. Positions are go/client's to check
// (its contract_test.go).
type contract struct {
	About   string
	Reports map[string]wire.Report
	Texts   map[string]string
	GetTask []struct {
		Name    string
		OnePass *int  `json:"one_pass"`
		Group   []int `json:"group"` // rank, ranks, batch
		Arg     json.RawMessage
	} `json:"get_task"`
	Limits struct {
		DefaultDataset                 string
		MaxErrorBytes                  int
		MaxTrainerNameBytes            int
		DefaultProgressIntervalSeconds int
		MinProgressIntervalSeconds     int
		MaxRanks                       int
		MaxBatchSize                   int
		MaxCheckpointNameBytes         int
		MaxHeld                        int
	}
	Shuffle []struct {
		N     int    `json:"n"`
		Seed  uint64 `json:"seed"`
		Order []int  `json:"order"`
	}
	File       json.RawMessage
	Positions  json.RawMessage
	GroupPlans []struct {
		Records int64
		Ranks   int
		Batch   int
		Batches int
		Shares  []int64
		Sizes   [][]int
	} `json:"group_plans"`
	GroupRefusals []struct {
		Records int64
		Ranks   int
		Batch   int
	} `json:"group_refusals"`
}

func readContract(t *testing.T) contract {
	t.Helper()
	raw, err := os.ReadFile("testdata/contract.json")
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var c contract
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("testdata/contract.json: %v", err)
	}
	return c
}

// TestContractReports: the table names every report code by its name here,
// with its value.
func TestContractReports(t *testing.T) {
	want := map[string]wire.Report{
		"Recorded": wire.Recorded, "AlreadyDone": wire.AlreadyDone, "StalePass": wire.StalePass,
		"Superseded": wire.Superseded, "TooSoon": wire.TooSoon,
	}
	if got := readContract(t).Reports; !maps.Equal(got, want) {
		t.Errorf("reports %v, want %v", got, want)
	}
}

// TestContractTexts: the table holds every error text of the contract, and
// the errors servers wrap carry them.
func TestContractTexts(t *testing.T) {
	want := map[string]string{
		"TextNoTask": wire.TextNoTask, "TextAllDone": wire.TextAllDone, "TextNoDataset": wire.TextNoDataset,
		"TextNotServing": wire.TextNotServing, "TextUnauthorized": wire.TextUnauthorized,
		"TextRoundRunning": wire.TextRoundRunning, "TextPassOver": wire.TextPassOver,
		"TextRankDone": wire.TextRankDone, "TextBadGroup": wire.TextBadGroup, "TextPassTooSmall": wire.TextPassTooSmall,
		"TextUnknownCheckpoint": wire.TextUnknownCheckpoint, "TextCheckpointIncomplete": wire.TextCheckpointIncomplete,
		"TextBadCheckpoint": wire.TextBadCheckpoint,
	}
	if got := readContract(t).Texts; !maps.Equal(got, want) {
		t.Errorf("texts %v, want %v", got, want)
	}
	for text, err := range map[string]error{
		wire.TextNoTask: wire.ErrNoTask, wire.TextAllDone: wire.ErrAllDone, wire.TextNoDataset: wire.ErrNoDataset,
		wire.TextNotServing: wire.ErrNotServing, wire.TextUnauthorized: wire.ErrUnauthorized,
		wire.TextPassOver: wire.ErrPassOver, wire.TextRankDone: wire.ErrRankDone, wire.TextBadGroup: wire.ErrBadGroup,
		wire.TextPassTooSmall: wire.ErrPassTooSmall, wire.TextUnknownCheckpoint: wire.ErrUnknownCheckpoint,
		wire.TextCheckpointIncomplete: wire.ErrCheckpointIncomplete, wire.TextBadCheckpoint: wire.ErrBadCheckpoint,
	} {
		if err.Error() != text || !wire.Is(wire.WithKind(err, os.ErrNotExist), text) {
			t.Errorf("%q: the error carries %q", text, err)
		}
	}
}

// TestContractGetTask: the GetTask arguments of the table decode to a
// Task asking for a task of the pass they name, or of any pass.
func TestContractGetTask(t *testing.T) {
	vectors := readContract(t).GetTask
	if len(vectors) == 0 {
		t.Fatal("no get_task vectors")
	}
	for _, v := range vectors {
		var got wire.Task
		if err := json.Unmarshal(v.Arg, &got); err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		want := wire.Task{Trainer: "gpu7-4242"}
		if v.OnePass != nil {
			want.OnePass, want.Pass = true, *v.OnePass
		}
		if v.Group != nil {
			want.Rank, want.Ranks, want.Batch = v.Group[0], v.Group[1], v.Group[2]
		}
		if got.Trainer != want.Trainer || got.OnePass != want.OnePass || got.Pass != want.Pass || got.Epoch != 0 ||
			got.Rank != want.Rank || got.Ranks != want.Ranks || got.Batch != want.Batch {
			t.Errorf("%s: %s decodes to %+v, want %+v", v.Name, v.Arg, got, want)
		}
	}
}

func TestContractLimits(t *testing.T) {
	l := readContract(t).Limits
	if l.DefaultDataset != wire.DefaultDataset || l.MaxErrorBytes != wire.MaxErrorBytes ||
		l.MaxTrainerNameBytes != wire.MaxTrainerNameBytes ||
		time.Duration(l.DefaultProgressIntervalSeconds)*time.Second != wire.DefaultProgressInterval ||
		time.Duration(l.MinProgressIntervalSeconds)*time.Second != wire.MinProgressInterval ||
		l.MaxRanks != wire.MaxRanks || l.MaxBatchSize != wire.MaxBatchSize ||
		l.MaxCheckpointNameBytes != wire.MaxCheckpointNameBytes || l.MaxHeld != wire.MaxHeld {
		t.Errorf("limits %+v", l)
	}
}

func TestContractShuffle(t *testing.T) {
	vectors := readContract(t).Shuffle
	if len(vectors) == 0 {
		t.Fatal("no shuffle vectors")
	}
	for _, v := range vectors {
		if got := wire.Shuffle(v.N, v.Seed); !slices.Equal(got, v.Order) {
			t.Errorf("Shuffle(%d, %d) = %v, want %v", v.N, v.Seed, got, v.Order)
		}
	}
}

// TestContractGroupPlans: every rank's share and batch sizes, and the
// passes refused, as both clients compute them.
func TestContractGroupPlans(t *testing.T) {
	c := readContract(t)
	if len(c.GroupPlans) == 0 || len(c.GroupRefusals) == 0 {
		t.Fatal("no group vectors")
	}
	for _, v := range c.GroupPlans {
		g := wire.Group{Ranks: v.Ranks, Batch: v.Batch}
		if err := g.CheckPass(v.Records); err != nil {
			t.Errorf("%d records, %v: %v", v.Records, g, err)
		}
		if k := g.Batches(v.Records); k != v.Batches {
			t.Errorf("%d records, %v: %d batches, want %d", v.Records, g, k, v.Batches)
		}
		var total int64
		for rank := range v.Ranks {
			share := g.Share(v.Records, rank)
			total += share
			sizes := wire.BatchSizes(share, v.Batches, v.Batch)
			if share != v.Shares[rank] || !slices.Equal(sizes, v.Sizes[rank]) {
				t.Errorf("%d records, %v, rank %d: share %d sizes %v, want %d %v", v.Records, g, rank, share, sizes, v.Shares[rank], v.Sizes[rank])
			}
		}
		if total != v.Records {
			t.Errorf("%d records, %v: shares add up to %d", v.Records, g, total)
		}
	}
	for _, v := range c.GroupRefusals {
		g := wire.Group{Ranks: v.Ranks, Batch: v.Batch}
		if err := g.CheckPass(v.Records); !wire.Is(err, wire.TextPassTooSmall) {
			t.Errorf("%d records, %v: %v, want %q", v.Records, g, err, wire.TextPassTooSmall)
		}
	}
}
