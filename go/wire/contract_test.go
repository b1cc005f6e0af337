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
		OnePass *int `json:"one_pass"`
		Arg     json.RawMessage
	} `json:"get_task"`
	Limits struct {
		DefaultDataset                 string
		MaxErrorBytes                  int
		MaxTrainerNameBytes            int
		DefaultProgressIntervalSeconds int
		MinProgressIntervalSeconds     int
	}
	Shuffle []struct {
		N     int    `json:"n"`
		Seed  uint64 `json:"seed"`
		Order []int  `json:"order"`
	}
	File      json.RawMessage
	Positions json.RawMessage
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
	}
	if got := readContract(t).Texts; !maps.Equal(got, want) {
		t.Errorf("texts %v, want %v", got, want)
	}
	for text, err := range map[string]error{
		wire.TextNoTask: wire.ErrNoTask, wire.TextAllDone: wire.ErrAllDone, wire.TextNoDataset: wire.ErrNoDataset,
		wire.TextNotServing: wire.ErrNotServing, wire.TextUnauthorized: wire.ErrUnauthorized,
		wire.TextPassOver: wire.ErrPassOver,
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
		if got.Trainer != want.Trainer || got.OnePass != want.OnePass || got.Pass != want.Pass || got.Epoch != 0 {
			t.Errorf("%s: %s decodes to %+v, want %+v", v.Name, v.Arg, got, want)
		}
	}
}

func TestContractLimits(t *testing.T) {
	l := readContract(t).Limits
	if l.DefaultDataset != wire.DefaultDataset || l.MaxErrorBytes != wire.MaxErrorBytes ||
		l.MaxTrainerNameBytes != wire.MaxTrainerNameBytes ||
		time.Duration(l.DefaultProgressIntervalSeconds)*time.Second != wire.DefaultProgressInterval ||
		time.Duration(l.MinProgressIntervalSeconds)*time.Second != wire.MinProgressInterval {
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
