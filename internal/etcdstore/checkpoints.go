package etcdstore

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/pkg/errors"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/trainmaster/master/internal/master"
	"github.com/trainmaster/master/internal/taskqueue"
)

// The job's data checkpoints (master's checkpoint.go) are kept under
// <namespace>/checkpoints/<ID, 10 digits>, one JSON value each, readable
// with etcdctl:
//
//	{"format": 1, "id": 3, "name": "restart-0 step-120", "time": "...",
//	 "trainers": 3, "pinned": true,
//	 "datasets": {"train": {"pass": 1, "round": 0, "gen": 0, "tasks": 52,
//	   "records": 9120, "whole": "<base64 bitmap of the tasks wholly
//	   trained, task i at bit i%8 of byte i/8>", "part": {"7": [[0, 312]]}}}}

// MaxCheckpoints bounds the checkpoints LoadCheckpoints reads: the kept
// ones and the pinned ones, far fewer in any job; a prefix holding more
// is refused, not read.
const MaxCheckpoints = 1000

type checkpointValue struct {
	Format   int                   `json:"format"`
	ID       int64                 `json:"id"`
	Name     string                `json:"name"`
	Time     time.Time             `json:"time"`
	Trainers int                   `json:"trainers"`
	Pinned   bool                  `json:"pinned,omitempty"`
	Datasets map[string]pointValue `json:"datasets"`
}

type pointValue struct {
	Pass    int                 `json:"pass"`
	Round   int                 `json:"round,omitempty"`
	Gen     int                 `json:"gen,omitempty"`
	Tasks   int                 `json:"tasks"`
	Records int64               `json:"records"`
	Whole   string              `json:"whole,omitempty"`
	Part    map[string][][2]int `json:"part,omitempty"`
}

func checkpointsPrefix(namespace string) string { return namespace + "/checkpoints/" }

func checkpointKey(namespace string, id int64) string {
	return fmt.Sprintf("%s%010d", checkpointsPrefix(namespace), id)
}

// SaveCheckpoints implements master.CheckpointStore: as few fenced
// transactions as etcd's limits allow put cps, one value each, then
// delete drop.
func (c *Catalog) SaveCheckpoints(ctx context.Context, cps []master.DataCheckpoint, drop []int64) error {
	st := newStore(c.cfg, checkpointsPrefix(c.cfg.Namespace), c.sh)
	var units [][]clientv3.Op
	for _, cp := range cps {
		b, err := json.Marshal(encodeCheckpoint(cp))
		if err != nil {
			return errors.Wrap(err, "etcdstore: encode checkpoint")
		}
		put := clientv3.OpPut(checkpointKey(c.cfg.Namespace, cp.ID), string(b))
		if n := opBytes(put); n > st.maxTxnBytes {
			return errors.Errorf("etcdstore: checkpoint %d %q takes %d bytes, over the %d a transaction may (etcd's --max-request-bytes)", cp.ID, cp.Name, n, st.maxTxnBytes)
		}
		units = append(units, []clientv3.Op{put})
	}
	for _, id := range drop {
		units = append(units, []clientv3.Op{clientv3.OpDelete(checkpointKey(c.cfg.Namespace, id))})
	}
	return st.commitUnits(ctx, units)
}

// LoadCheckpoints implements master.CheckpointStore.
func (c *Catalog) LoadCheckpoints(ctx context.Context) ([]master.DataCheckpoint, error) {
	prefix := checkpointsPrefix(c.cfg.Namespace)
	resp, err := c.cfg.Client.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend), clientv3.WithLimit(MaxCheckpoints+1))
	if err != nil {
		return nil, errors.Wrapf(err, "etcdstore: read %s", prefix)
	}
	if len(resp.Kvs) > MaxCheckpoints {
		return nil, badStatef(prefix, "more than %d checkpoints stored", MaxCheckpoints)
	}
	var cps []master.DataCheckpoint
	for _, kv := range resp.Kvs {
		cp, err := decodeCheckpoint(kv.Value)
		if err != nil {
			return nil, badState(string(kv.Key), err)
		}
		if want := checkpointKey(c.cfg.Namespace, cp.ID); string(kv.Key) != want {
			return nil, badStatef(string(kv.Key), "holds checkpoint %d", cp.ID)
		}
		cps = append(cps, cp)
	}
	return cps, nil
}

func encodeCheckpoint(cp master.DataCheckpoint) checkpointValue {
	v := checkpointValue{Format: Format, ID: cp.ID, Name: cp.Name, Time: cp.Time.UTC(), Trainers: cp.Trainers, Pinned: cp.Pinned, Datasets: map[string]pointValue{}}
	for name, p := range cp.Datasets {
		pv := pointValue{Pass: p.Trained.Pass, Round: p.Round, Gen: p.Gen, Tasks: p.Tasks, Records: p.Records}
		if len(p.Trained.Whole) > 0 {
			bits := make([]byte, (p.Tasks+7)/8)
			for _, task := range p.Trained.Whole {
				bits[task/8] |= 1 << (task % 8)
			}
			pv.Whole = base64.StdEncoding.EncodeToString(bits)
		}
		for task, runs := range p.Trained.Part {
			if pv.Part == nil {
				pv.Part = map[string][][2]int{}
			}
			for _, r := range runs {
				pv.Part[strconv.Itoa(task)] = append(pv.Part[strconv.Itoa(task)], [2]int{r.From, r.To})
			}
		}
		v.Datasets[name] = pv
	}
	return v
}

// decodeCheckpoint decodes a stored checkpoint; what a master then checks
// against its datasets (taskqueue.Queues.CheckTrained) it does not.
func decodeCheckpoint(b []byte) (master.DataCheckpoint, error) {
	var v checkpointValue
	if err := json.Unmarshal(b, &v); err != nil {
		return master.DataCheckpoint{}, err
	}
	switch {
	case v.Format > Format:
		return master.DataCheckpoint{}, errors.Errorf("format %d, newer than this master's %d", v.Format, Format)
	case v.ID < 1 || v.Trainers < 1:
		return master.DataCheckpoint{}, errors.Errorf("checkpoint %d of %d trainers", v.ID, v.Trainers)
	}
	cp := master.DataCheckpoint{ID: v.ID, Name: v.Name, Time: v.Time, Trainers: v.Trainers, Pinned: v.Pinned, Datasets: map[string]master.DatasetPoint{}}
	for name, pv := range v.Datasets {
		if pv.Tasks < 1 || pv.Tasks > math.MaxInt32 || pv.Pass < 0 || pv.Round < 0 || pv.Gen < 0 {
			return master.DataCheckpoint{}, errors.Errorf("dataset %q: %d tasks, pass %d, round %d, generation %d", name, pv.Tasks, pv.Pass, pv.Round, pv.Gen)
		}
		p := master.DatasetPoint{Round: pv.Round, Gen: pv.Gen, Tasks: pv.Tasks, Records: pv.Records, Trained: taskqueue.Trained{Pass: pv.Pass, Part: map[int][]taskqueue.Interval{}}}
		bits, err := base64.StdEncoding.DecodeString(pv.Whole)
		if err != nil || len(bits) > (pv.Tasks+7)/8 {
			return master.DataCheckpoint{}, errors.Errorf("dataset %q: tasks wholly trained: %d bytes for %d tasks (%v)", name, len(bits), pv.Tasks, err)
		}
		for i, b := range bits {
			for bit := range 8 {
				if b&(1<<bit) != 0 {
					p.Trained.Whole = append(p.Trained.Whole, i*8+bit)
				}
			}
		}
		for key, runs := range pv.Part {
			task, err := strconv.Atoi(key)
			if err != nil {
				return master.DataCheckpoint{}, errors.Errorf("dataset %q: task %q trained in part", name, key)
			}
			for _, r := range runs {
				p.Trained.Part[task] = append(p.Trained.Part[task], taskqueue.Interval{From: r[0], To: r[1]})
			}
		}
		cp.Datasets[name] = p
	}
	return cp, nil
}
