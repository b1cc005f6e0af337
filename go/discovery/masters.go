package discovery

import (
	"context"
	"encoding/json"
	"os"

	"github.com/pkg/errors"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Candidate is what a master writes as the value of its lock key, as JSON:
// who it is and where its HTTP status door listens. Masters reads a value
// that is not such JSON as a bare host name, Host (doc/etcd.md).
type Candidate struct {
	Host string `json:"host"`
	PID  int    `json:"pid,omitempty"`
	// HTTP is the address of the master's status page and metrics
	// (-http-addr, as advertised), empty when it serves none.
	HTTP string `json:"http,omitempty"`
}

// ThisProcess returns the Candidate of the calling process.
func ThisProcess(httpAddr string) Candidate {
	host, err := os.Hostname()
	if err != nil {
		host = "localhost"
	}
	return Candidate{Host: host, PID: os.Getpid(), HTTP: httpAddr}
}

// Value is the lock key's value for c.
func (c Candidate) Value() string {
	b, _ := json.Marshal(c) // strings and an int cannot fail to encode
	return string(b)
}

// Master is one master of a job, as its lock key shows it.
type Master struct {
	Candidate
	Key     string `json:"key"`
	Leading bool   `json:"leading"` // its key has the lowest create revision
}

// Masters returns the masters campaigning for the job's lock, the leader
// first and the standbys in the order they would take over.
func Masters(ctx context.Context, cli *clientv3.Client, namespace string) ([]Master, error) {
	prefix := LockPrefix(namespace)
	resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	if err != nil {
		return nil, errors.WithMessagef(err, "discovery: read the lock keys under %s", prefix)
	}
	masters := make([]Master, 0, len(resp.Kvs))
	for i, kv := range resp.Kvs {
		m := Master{Key: string(kv.Key), Leading: i == 0}
		if json.Unmarshal(kv.Value, &m.Candidate) != nil || m.Host == "" {
			m.Candidate = Candidate{Host: string(kv.Value)}
		}
		masters = append(masters, m)
	}
	return masters, nil
}
