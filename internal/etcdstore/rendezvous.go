package etcdstore

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/pkg/errors"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/rendezvous"
)

// The job's rendezvous runs (master's rendezvous.go) are kept under
// <namespace>/rendezvous/<run ID>, one JSON value each, readable with
// etcdctl:
//
//	{"format": 1, "round": 3, "complete": true,
//	 "config": {"min": 2, "max": 3, "last_call_ms": 10000, "grace_ms": 30000},
//	 "members": {"node-a": {"token": "...", "rank": 0}, "node-d": {"token": "...", "rank": -1, "waiting": true}},
//	 "deadline": "...", "store": "10.0.0.7:29500", "last": {"at": "...", "why": "round 3 complete with 2 nodes: ..."}}
//
// A member's last heartbeat is not kept: a new leader counts each from its
// restore.

type runValue struct {
	Format   int                    `json:"format"`
	Round    int                    `json:"round"`
	Complete bool                   `json:"complete,omitempty"`
	Closed   bool                   `json:"closed,omitempty"`
	Config   runConfigValue         `json:"config"`
	Members  map[string]memberValue `json:"members,omitempty"`
	Deadline time.Time              `json:"deadline,omitzero"`
	Store    string                 `json:"store,omitempty"`
	Last     changeValue            `json:"last"`
}

type runConfigValue struct {
	Min        int   `json:"min"`
	Max        int   `json:"max"`
	LastCallMs int64 `json:"last_call_ms"`
	GraceMs    int64 `json:"grace_ms"`
}

type memberValue struct {
	Token   string `json:"token"`
	Rank    int    `json:"rank"`
	Waiting bool   `json:"waiting,omitempty"`
	Attempt int64  `json:"attempt,omitempty"`
}

type changeValue struct {
	At  time.Time `json:"at"`
	Why string    `json:"why"`
}

func runsPrefix(namespace string) string { return namespace + "/rendezvous/" }

// SaveRun implements master.RendezvousStore: one fenced put.
func (c *Catalog) SaveRun(ctx context.Context, id string, run rendezvous.Run) error {
	v := runValue{Format: Format, Round: run.Round, Complete: run.Complete, Closed: run.Closed, Deadline: run.Deadline, Store: run.Store,
		Config: runConfigValue{Min: run.Config.MinNodes, Max: run.Config.MaxNodes, LastCallMs: run.Config.LastCall.Milliseconds(), GraceMs: run.Config.Grace.Milliseconds()},
		Last:   changeValue{At: run.Last.At, Why: run.Last.Why}, Members: map[string]memberValue{}}
	for name, m := range run.Members {
		v.Members[name] = memberValue{Token: m.Token, Rank: m.Rank, Waiting: m.Waiting, Attempt: m.Attempt}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return errors.Wrap(err, "etcdstore: encode rendezvous run")
	}
	st := newStore(c.cfg, runsPrefix(c.cfg.Namespace), c.sh)
	return st.commitUnits(ctx, [][]clientv3.Op{{clientv3.OpPut(runsPrefix(c.cfg.Namespace)+id, string(b))}})
}

// DeleteRun implements master.RendezvousStore: one fenced delete.
func (c *Catalog) DeleteRun(ctx context.Context, id string) error {
	st := newStore(c.cfg, runsPrefix(c.cfg.Namespace), c.sh)
	return st.commitUnits(ctx, [][]clientv3.Op{{clientv3.OpDelete(runsPrefix(c.cfg.Namespace) + id)}})
}

// LoadRuns implements master.RendezvousStore; a prefix holding more runs
// than a master keeps is refused, not read.
func (c *Catalog) LoadRuns(ctx context.Context) (map[string]rendezvous.Run, error) {
	prefix := runsPrefix(c.cfg.Namespace)
	resp, err := c.cfg.Client.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithLimit(wire.MaxRendezvous+1))
	if err != nil {
		return nil, errors.Wrapf(err, "etcdstore: read %s", prefix)
	}
	if len(resp.Kvs) > wire.MaxRendezvous {
		return nil, badStatef(prefix, "more than %d rendezvous runs stored", wire.MaxRendezvous)
	}
	runs := map[string]rendezvous.Run{}
	for _, kv := range resp.Kvs {
		run, err := decodeRun(kv.Value)
		if err != nil {
			return nil, badState(string(kv.Key), err)
		}
		runs[strings.TrimPrefix(string(kv.Key), prefix)] = run
	}
	return runs, nil
}

func decodeRun(b []byte) (rendezvous.Run, error) {
	var v runValue
	if err := json.Unmarshal(b, &v); err != nil {
		return rendezvous.Run{}, err
	}
	if v.Format > Format {
		return rendezvous.Run{}, errors.Errorf("format %d, newer than this master's %d", v.Format, Format)
	}
	run := rendezvous.Run{Round: v.Round, Complete: v.Complete, Closed: v.Closed, Deadline: v.Deadline, Store: v.Store, Last: rendezvous.Change{At: v.Last.At, Why: v.Last.Why},
		Config:  rendezvous.Config{MinNodes: v.Config.Min, MaxNodes: v.Config.Max, LastCall: time.Duration(v.Config.LastCallMs) * time.Millisecond, Grace: time.Duration(v.Config.GraceMs) * time.Millisecond},
		Members: map[string]rendezvous.Member{}}
	if len(v.Members) > 0 {
		if err := run.Config.Check(); err != nil {
			return rendezvous.Run{}, err
		}
	}
	if v.Round < 0 || len(v.Members) > 2*rendezvous.MaxNodes {
		return rendezvous.Run{}, errors.Errorf("round %d with %d members", v.Round, len(v.Members))
	}
	for name, m := range v.Members {
		if m.Rank < -1 || m.Rank >= len(v.Members) {
			return rendezvous.Run{}, errors.Errorf("member %s: rank %d of %d members", name, m.Rank, len(v.Members))
		}
		run.Members[name] = rendezvous.Member{Token: m.Token, Rank: m.Rank, Waiting: m.Waiting, Attempt: m.Attempt}
	}
	return run, nil
}
