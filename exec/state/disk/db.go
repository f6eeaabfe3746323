package disk

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
)

// DefaultMemory is an operator's StateMemory when its TaskManager sets none.
const DefaultMemory = 64 << 20

// Options configures a DB.
type Options struct {
	// Dir is the directory the DB's own directory is made in ("" for the
	// system's temporary directory).
	Dir string
	// Memory bounds the memory of the operator's state (see the package
	// doc): the DB takes half of it, the operator's cache a quarter; 0
	// means DefaultMemory.
	Memory int64
	// Log receives pebble's messages; nil discards them.
	Log *slog.Logger

	// noCompactions turns pebble's background compactions off, so a test
	// can count bytes per checkpoint without racing one (export_test.go).
	noCompactions bool
}

func (o Options) memory() int64 {
	if o.Memory <= 0 {
		return DefaultMemory
	}
	return o.Memory
}

// CacheBytes is the bound of the operator's own cache of keys and values in
// front of the DB: a quarter of Memory.
func (o Options) CacheBytes() int64 { return o.memory() / 4 }

// DB is one operator instance's keyed state on disk: a pebble DB in a
// directory of its own, which Close removes. Keys are AppendOrdered's, values
// the operator's encoding. It is used by one goroutine at a time, but for
// the Finish of its pending checkpoints, which may run on others.
type DB struct {
	opts Options
	db   *pebble.DB
	dir  string
	// run names this run of the DB in the checkpoint store (see the package
	// doc).
	run string
	// lastCheckpoint is closed once the last checkpoint started has
	// finished (nil before the first).
	lastCheckpoint chan struct{}
	// closing is cancelled by Close, which waits for the Finishes running.
	closing   context.Context
	close     context.CancelFunc
	finishing sync.WaitGroup

	mu sync.Mutex
	// shared are the DB's files already in the checkpoint store, by local
	// name; closed says Close began. Lock mu to use them.
	shared map[string]SharedFile
	closed bool
}

// Open makes an empty DB.
func Open(opts Options) (*DB, error) {
	dir, err := os.MkdirTemp(opts.Dir, "hummer-state-")
	if err != nil {
		return nil, fmt.Errorf("disk state: %w", err)
	}
	d, err := openAt(opts, dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return d, nil
}

// openAt opens the DB in dir, which it then owns.
func openAt(opts Options, dir string) (*DB, error) {
	mem := opts.memory()
	cache := pebble.NewCache(mem / 4)
	defer cache.Unref()
	po := &pebble.Options{
		Cache: cache,
		// Checkpoints, not a WAL, make the state durable: after a failure
		// the job restarts from its last checkpoint, never from this
		// directory.
		DisableWAL:                  true,
		MemTableSize:                uint64(max(mem/8, 1<<20)),
		MemTableStopWritesThreshold: 2,
		Logger:                      pebbleLogger{opts.Log},
		DisableAutomaticCompactions: opts.noCompactions,
	}
	// Most keys a GROUP BY over many keys looks up are new: a bloom filter
	// answers those without reading a block.
	for i := range po.Levels {
		po.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	db, err := pebble.Open(dir, po)
	if err != nil {
		return nil, fmt.Errorf("disk state: opening %s: %w", dir, err)
	}
	var run [6]byte
	if _, err := rand.Read(run[:]); err != nil {
		db.Close()
		return nil, err
	}
	d := &DB{opts: opts, db: db, dir: dir, run: hex.EncodeToString(run[:]), shared: map[string]SharedFile{}}
	d.closing, d.close = context.WithCancel(context.Background())
	return d, nil
}

// Close closes the DB and removes its directory; safe to call twice. It
// cancels the uploads of checkpoints still finishing and waits for them.
func (d *DB) Close() error {
	if d == nil || d.db == nil {
		return nil
	}
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	d.close()
	d.finishing.Wait()
	err := d.db.Close()
	d.db = nil
	return errors.Join(err, os.RemoveAll(d.dir))
}

// Get looks up keys, a whole batch of them, and calls found for each one held
// with its index and value; the value is valid only during the call.
func (d *DB) Get(keys [][]byte, found func(i int, val []byte) error) error {
	for i, k := range keys {
		v, closer, err := d.db.Get(k)
		if errors.Is(err, pebble.ErrNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("disk state: %w", err)
		}
		err = found(i, v)
		closer.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// GetSorted is Get through one iterator that visits the keys in their order:
// for many keys scattered over a range, such as a window's groups or the join
// keys of a batch, it reads each block once for the batch where a lookup per
// key pays for finding its tables and blocks again (a window aggregation
// whose cache was emptied ran at a tenth of the speed with Get). Each key is
// a prefix seek (a key is its own prefix under pebble's default comparer),
// so the bloom filters still answer for the tables that lack it, and a seek
// to a greater key than the last moves on from where that one stopped.
// found is called in key order (equal keys in the order given), not in the
// order of keys.
func (d *DB) GetSorted(keys [][]byte, found func(i int, val []byte) error) error {
	if len(keys) == 0 {
		return nil
	}
	order := make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return bytes.Compare(keys[a], keys[b]) })
	hi := append(slices.Clone(keys[order[len(order)-1]]), 0)
	it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: keys[order[0]], UpperBound: hi})
	if err != nil {
		return fmt.Errorf("disk state: %w", err)
	}
	for _, i := range order {
		if !it.SeekPrefixGE(keys[i]) || !bytes.Equal(it.Key(), keys[i]) {
			continue
		}
		v, err := it.ValueAndErr()
		if err == nil {
			err = found(i, v)
		}
		if err != nil {
			it.Close()
			return err
		}
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return fmt.Errorf("disk state: %w", err)
	}
	return nil
}

// Batch is writes to a DB that apply together when committed.
type Batch struct{ b *pebble.Batch }

// NewBatch starts a batch of writes.
func (d *DB) NewBatch() *Batch { return &Batch{b: d.db.NewBatch()} }

// Set writes key's value; both are copied.
func (b *Batch) Set(key, val []byte) error { return b.b.Set(key, val, nil) }

// Delete removes key.
func (b *Batch) Delete(key []byte) error { return b.b.Delete(key, nil) }

// DeleteRange removes the keys in [lo, hi) (nil lo: from the first); the
// bounds are copied.
func (b *Batch) DeleteRange(lo, hi []byte) error {
	if lo == nil {
		// From the least key there is, not from the empty one: pebble's
		// range-deletion spans starting at the empty key came back from
		// its seeks ending before the key sought (its invariant checks,
		// on under -race, caught it: TestWindowAggDisk).
		lo = []byte{0}
	}
	return b.b.DeleteRange(lo, hi, nil)
}

// Commit applies the batch (not synced: checkpoints make state durable) and
// releases it.
func (b *Batch) Commit() error {
	err := b.b.Commit(pebble.NoSync)
	return errors.Join(err, b.b.Close())
}

// Scan calls fn for every key in [lo, hi) in key order (nil bounds: open),
// the slices valid only during the call. A window aggregation emits a window
// that left its cache with it; tests check the order here.
func (d *DB) Scan(lo, hi []byte, fn func(key, val []byte) error) error {
	it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return fmt.Errorf("disk state: %w", err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err == nil {
			err = fn(it.Key(), v)
		}
		if err != nil {
			it.Close()
			return err
		}
	}
	return errors.Join(it.Error(), it.Close())
}

// DiskBytes returns the size of the DB's files on disk.
func (d *DB) DiskBytes() int64 { return int64(d.db.Metrics().DiskSpaceUsage()) }

// pebbleLogger passes pebble's messages to the task's log: information at
// debug level, errors as warnings; a fatal one panics, as pebble expects, and
// the task's recover fails the task.
type pebbleLogger struct{ log *slog.Logger }

func (l pebbleLogger) Infof(format string, args ...any) {
	if l.log != nil {
		l.log.Debug("pebble: " + fmt.Sprintf(format, args...))
	}
}

func (l pebbleLogger) Errorf(format string, args ...any) {
	if l.log != nil {
		l.log.Warn("pebble: " + fmt.Sprintf(format, args...))
	}
}

func (l pebbleLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("pebble: "+format, args...))
}
