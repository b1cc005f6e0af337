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
//	                  records; little-endian), 16,384 chunks per page (the
//	                  last page fewer)
//	tasks/NNNNNNNNNN  JSON entry of a task touched in its pass: queue, epoch,
//	                  timeouts, todo order, dispatch time and deadline, error
//
// # Writes
//
// The static part (meta, files, chunks) is written once when the dataset is
// accepted: SaveDataset first checks that the meta and every page fit a
// transaction, and refuses a dataset that does not with an error wrapping
// master.ErrDatasetTooLarge, having written nothing. Its first transaction
// deletes everything under the prefix (an earlier dataset's state, or what
// a save that failed half way left), the pages follow, and the meta comes
// last, with the pass: a dataset without meta does not exist.
//
// Afterwards a change writes only the entries of the tasks it touched
// (about 150 bytes each) and, when a pass ends, the pass key: the bytes
// written per change do not depend on the dataset's size, and a pass
// change rewrites no task (entries of an older pass mean "untouched in this
// pass"). A change too large for one transaction is written in several,
// its entries in order; the pass key goes in the transaction of the last
// entry of the pass it ends, and entries of later passes in that
// transaction or after it, so that no entry of a pass is durable while the
// stored pass is older.
//
// Limits, under etcd's defaults of 128 operations a transaction
// (--max-txn-ops) and 1.5 MiB a request (--max-request-bytes,
// Config.MaxRequestBytes):
//
//	operations a transaction      Config.MaxTxnOps less 8: 120 at
//	                              etcd's default (DetectMaxTxnOps)
//	keys and values a transaction two thirds of MaxRequestBytes: 1 MiB
//	meta                          the same (its patterns are most of it)
//	file page                     256 KiB, or half a transaction if less;
//	                              a longer path is a page of its own
//	chunk page                    16,384 chunks: at most 384 KiB before gzip
//	failure reason of an entry    64 KiB, or a quarter of a transaction if
//	                              less (the queues cut them to 1 KiB)
//
// # Reads
//
// Load reads the meta, the pages the meta counts (never others) and the
// pass at one revision, and checks them against each other: chunks per
// task at least 1, tasks = ceil(chunks / chunks per task), as many files
// and chunks as the meta says, every chunk's file among them, records the
// sum of the chunks'. The entries, at that revision too, are read as
// Snapshot.Entries is ranged over: ranges of 2,048 tasks (entriesPerRead),
// up to 4 (readers) in flight ahead of the one being yielded, 512 keys a
// request, so that the memory they take does not grow with the number of
// tasks. Each entry is checked (taskqueue.CheckRecord), and a key under
// tasks/ that names no task of the dataset is refused. Whatever does not
// decode or agree is refused with an error wrapping ErrFormat that names
// the key and keeps its cause.
//
// The store compacts etcd's history itself (see Config.CompactEvery), so
// etcd's space stays bounded over a long job.
package etcdstore
