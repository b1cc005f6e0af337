package masterbench

import (
	"context"
	"fmt"
	"strings"

	"github.com/pkg/errors"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// bareValue is the size of the put in a bare fenced transaction.
var bareValue = strings.Repeat("x", 64)

// bareTxns measures fenced transactions with nothing around them: compare
// a lock key's create revision, put 64 bytes; each worker writes its own
// key. It deletes its keys afterwards.
func bareTxns(ctx context.Context, cli *clientv3.Client, prefix string, workers int, w window) (loadResult, error) {
	lock := prefix + "/lock"
	put, err := cli.Put(ctx, lock, "masterbench")
	if err != nil {
		return loadResult{}, errors.Wrapf(err, "put %s", lock)
	}
	defer cli.Delete(context.WithoutCancel(ctx), prefix+"/", clientv3.WithPrefix())
	fence := clientv3.Compare(clientv3.CreateRevision(lock), "=", put.Header.Revision)
	return runLoad(ctx, workers, w, func(worker int) (bool, error) {
		key := fmt.Sprintf("%s/w%03d", prefix, worker)
		resp, err := cli.Txn(ctx).If(fence).Then(clientv3.OpPut(key, bareValue)).Commit()
		if err != nil {
			return false, errors.Wrap(err, "bare fenced txn")
		}
		if !resp.Succeeded {
			return false, errors.Errorf("bare fenced txn: the fence on %s failed", lock)
		}
		return true, nil
	})
}
