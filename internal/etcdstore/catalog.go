package etcdstore

import (
	"context"
	"slices"
	"strings"

	"github.com/pkg/errors"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/master"
)

// Catalog is a master.Catalog in etcd: the datasets of a job, each under
// <namespace>/task_queues/<name>/ in the layout of the package doc. A job
// stored before named datasets existed has its keys right under
// <namespace>/task_queues/: that dataset is train (wire.DefaultDataset), and
// stays there; the names that would overlap its keys are reserved
// (wire.CheckDatasetName).
type Catalog struct {
	cfg Config
	sh  *shared
}

// NewCatalog returns the Catalog of cfg's namespace; its stores share
// counters (Stats) and compaction.
func NewCatalog(cfg Config) *Catalog {
	return &Catalog{cfg: cfg.withDefaults(), sh: &shared{}}
}

// Stats returns the counters of every store of the catalog.
func (c *Catalog) Stats() *Stats { return &c.sh.stats }

// MaxNames bounds the names Names reads: far more than a master serves
// (its -max-datasets), so that a polluted prefix is refused, not read.
const MaxNames = 1000

// Store implements master.Catalog: the store of the dataset called name.
func (c *Catalog) Store(ctx context.Context, name string) (master.Store, error) {
	return c.store(ctx, name)
}

func (c *Catalog) store(ctx context.Context, name string) (*Store, error) {
	if err := wire.CheckDatasetName(name); err != nil {
		return nil, errors.Wrap(err, "etcdstore")
	}
	root := rootPrefix(c.cfg.Namespace)
	if name == wire.DefaultDataset {
		resp, err := c.cfg.Client.Get(ctx, root+"meta", clientv3.WithCountOnly())
		if err != nil {
			return nil, errors.Wrapf(err, "etcdstore: read %smeta", root)
		}
		if resp.Count > 0 {
			return newStore(c.cfg, root, c.sh), nil // stored before named datasets
		}
	}
	return newStore(c.cfg, root+name+"/", c.sh), nil
}

// Names implements master.Catalog. It reads one key per dataset: each read
// starts past the keys of the name before.
func (c *Catalog) Names(ctx context.Context) ([]string, error) {
	root := rootPrefix(c.cfg.Namespace)
	end := clientv3.GetPrefixRangeEnd(root)
	var names []string
	for from := root; ; {
		resp, err := c.cfg.Client.Get(ctx, from, clientv3.WithRange(end), clientv3.WithKeysOnly(), clientv3.WithLimit(1))
		if err != nil {
			return nil, errors.Wrapf(err, "etcdstore: list the datasets under %s", root)
		}
		if len(resp.Kvs) == 0 {
			break
		}
		rest := strings.TrimPrefix(string(resp.Kvs[0].Key), root)
		name, _, nested := strings.Cut(rest, "/")
		switch {
		case wire.CheckDatasetName(name) == nil:
			names = append(names, name)
		case !wire.ReservedDatasetName(name):
			return nil, badStatef(string(resp.Kvs[0].Key), "names no dataset")
		case !slices.Contains(names, wire.DefaultDataset):
			names = append(names, wire.DefaultDataset) // stored before named datasets
		}
		if len(names) > MaxNames {
			return nil, badStatef(root, "holds more than %d datasets", MaxNames)
		}
		// The next key past name's: '0' follows '/', and "\x00" follows
		// a key without one.
		if nested {
			from = root + name + "0"
		} else {
			from = root + name + "\x00"
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}
