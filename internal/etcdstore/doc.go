// Package etcdstore keeps the master's queues in etcd, fenced by the
// master's lock: every write is one transaction conditioned on the leader's
// key still having the create revision it had when the master won. A write
// rejected by that condition returns an error wrapping master.ErrLeadershipLost
// and is never retried.
//
// The layout under <namespace>/task_queues/ is meant to be read by people
// (etcdctl get --prefix) as well as by the master:
//
//	meta              JSON: format version, patterns, counts, chunks per task
//	pass              JSON: {"pass":N}; N = passes once all are done
//	files/NNNNNN      JSON array of file paths, up to 1,000 or 256 KiB per page
//	chunks/NNNNNN     gzip of 24 bytes per chunk (offset, file, index,
//	                  records; little-endian), up to 16,384 chunks per page
//	tasks/NNNNNNNNNN  JSON entry of a task touched in its pass: queue, epoch,
//	                  timeouts, todo order, dispatch time and deadline, error
//
// The static part (meta, files, chunks) is written once when the dataset is
// accepted, meta last: a dataset without meta does not exist. Afterwards a
// change writes only the entries of the tasks it touched (about 150 bytes
// each) and, when a pass ends, the pass key: the bytes written per change do
// not depend on the dataset's size, and a pass change rewrites no task
// (entries of an older pass mean "untouched in this pass"). No value is over
// 512 KiB, and no transaction has more than 120 operations.
//
// The store compacts etcd's history itself (see Config.CompactEvery), so
// etcd's space stays bounded over a long job.
package etcdstore
