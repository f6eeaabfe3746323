// Package disk is the disk state backend: keyed state larger than memory,
// kept in a pebble LSM (github.com/cockroachdb/pebble/v2) per operator
// instance, and incremental checkpoints of it.
//
// # Design
//
// Operators keep the values of their keys (an aggregate's accumulators, a
// view's counts) in columns indexed by a dense id that exec/state's Keyed
// gives each key, and their hot loops run over those columns a batch at a
// time. The disk backend keeps that shape and bounds it: the dense ids are the
// slots of a bounded cache, and pebble holds every key's values beyond it.
// Operators that use it: a streaming GROUP BY (hash_agg, one value per
// group), a stream join (stream_join, one value per side and join key listing
// the key's rows), Top-N (one value per partition) and a window aggregation
// (window_agg, one value per window and group, keyed by the window's end
// first so that closing windows is a range scan and a range deletion), a
// view (one value per distinct row, its count), and session windows, Top-N
// and joins per window (their operators' files say how).
//
//   - The cache is the operator's ordinary in-memory state (a KeyTable and its
//     columns), bounded in bytes. A batch whose keys are all cached runs
//     exactly the memory backend's loops: no pebble call, no per-row
//     interface. For the keys a batch brings that are not cached, the operator
//     asks DB.Get for the whole batch of them at once and decodes each value
//     found into its new slot (a key pebble lacks starts from zero).
//   - When the cache outgrows its bound, the operator writes the values of the
//     slots changed since they were loaded back to pebble in one batch
//     (deleting keys left with nothing, such as a group whose rows were all
//     retracted) and empties the cache: a write-back cache emptied whole, so
//     that slots keep being dense ids and no column needs compacting. Keys that
//     stay hot come back from pebble's memtable or block cache.
//   - A value is the slot's columns encoded one after another, each column's
//     part written by the code that owns the column (the aggregate), a batch
//     of slots at a time. Types that are one per column (a sum's input type,
//     a decimal's scale) are not in every value but in the operator's
//     checkpoint header.
//   - Keys in pebble are encoded order-preserving (AppendOrdered): a key
//     column's order is its bytes' order, NULL last as in PostgreSQL's
//     ascending order, so that a prefix's keys are a range: a window
//     aggregation's keys start with the window's end, and it emits a window
//     by scanning its range and drops the windows a watermark closed with one
//     range deletion up to it.
//
// Memory: with StateMemory M for an operator, pebble's block cache takes M/4,
// its memtables at most M/4 (two of M/8), and the operator's cache M/4; the
// last quarter is headroom for the garbage the Go collector lets build up
// before it runs (with the cache at M/2, a 10-million-key GROUP BY at 256MiB
// peaked at 560 MiB of RSS; at M/4, 354 MiB). Write-backs go in chunks of a
// few thousand groups, whose buffers are reused. The TaskManager gives each
// slot its share of --state-memory.
//
// # Checkpoints
//
// At a checkpoint the operator writes its changed slots back, and
// StartCheckpoint, on the task's goroutine, flushes the memtable and takes a
// pebble checkpoint (hard links) of the DB; Finish then uploads it on another
// goroutine while the task goes on (the checkpoints of a DB finish one at a
// time, in order), and the task acknowledges the checkpoint once it is done.
// Its SST and blob files are immutable and named by a number the DB never
// reuses, so each is uploaded to the checkpoint store once, under a name
// unique to this run of the DB (a restored DB is a new run: two restores from
// one checkpoint must not write the same name); the checkpoint's small files
// (MANIFEST, OPTIONS) go inline in the operator's state blob with the list of
// shared files, each with its size and CRC-32C. The checkpoint records the
// shared files it needs (StateFiles.Refer) before uploading them, and the
// store's pruning deletes a shared file only when the checkpoints it deletes
// referred to it and none it keeps does: reference counting, recounted at
// each prune from the refs, which a crash cannot leave off by one.
//
// Restore downloads the checkpoint's files into a fresh directory, checks each
// one's size and checksum (a damaged or missing file is a clear error naming
// it, before pebble opens anything), and opens the DB there.
//
// Rescaling a disk-backed job to another parallelism from a checkpoint is not
// supported: each subtask's DB holds the keys its subtask was sent, and
// splitting them would need the key groups Flink assigns; keys are hashed,
// not range-partitioned, here.
//
// It may import exec and exec/state.
package disk
