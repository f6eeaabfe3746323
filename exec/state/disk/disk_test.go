package disk_test

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/checkpoint"
	"github.com/hummer-db/hummer/exec/state"
	"github.com/hummer-db/hummer/exec/state/disk"
)

// row is a reference key: an int (or NULL), a double (or NULL), a text (or NULL).
type row struct {
	i    *int64
	f    *float64
	s    *string
	keyB []byte
}

// compareRow orders rows column by column, NULL last, as PostgreSQL's ORDER
// BY ascending does, with -0 = 0 (GROUP BY's equality).
func compareRow(a, b row) int {
	nullLast := func(an, bn bool) (int, bool) {
		switch {
		case an && bn:
			return 0, true
		case an:
			return 1, true
		case bn:
			return -1, true
		}
		return 0, false
	}
	if c, done := nullLast(a.i == nil, b.i == nil); done {
		if c != 0 {
			return c
		}
	} else if c := cmp.Compare(*a.i, *b.i); c != 0 {
		return c
	}
	if c, done := nullLast(a.f == nil, b.f == nil); done {
		if c != 0 {
			return c
		}
	} else if c := cmp.Compare(*a.f, *b.f); c != 0 {
		return c
	}
	if c, done := nullLast(a.s == nil, b.s == nil); done {
		return c
	}
	return strings.Compare(*a.s, *b.s)
}

// TestOrderedKeys checks that ordered keys compare as their rows do, against
// compareRow, over random rows with NULLs, negative numbers, -0 and text with
// zero bytes and common prefixes.
func TestOrderedKeys(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	r := rand.New(rand.NewPCG(1, 2))
	ints := []int64{math.MinInt64, -5, -1, 0, 1, 7, 1 << 40, math.MaxInt64}
	floats := []float64{math.Inf(-1), -2.5, -1e-300, math.Copysign(0, -1), 0, 1e-300, 3, math.Inf(1)}
	strs := []string{"", "\x00", "\x00\x01", "a", "a\x00", "a\x00b", "ab", "b", "\xff"}
	const n = 400
	ib, fb, sb := array.NewInt64Builder(mem), array.NewFloat64Builder(mem), array.NewStringBuilder(mem)
	defer ib.Release()
	defer fb.Release()
	defer sb.Release()
	rows := make([]row, n)
	for i := range rows {
		if r.IntN(6) == 0 {
			ib.AppendNull()
		} else {
			v := ints[r.IntN(len(ints))]
			rows[i].i = &v
			ib.Append(v)
		}
		if r.IntN(6) == 0 {
			fb.AppendNull()
		} else {
			v := floats[r.IntN(len(floats))]
			rows[i].f = &v
			fb.Append(v)
		}
		if r.IntN(6) == 0 {
			sb.AppendNull()
		} else {
			v := strs[r.IntN(len(strs))]
			rows[i].s = &v
			sb.Append(v)
		}
	}
	cols := []arrow.Array{ib.NewArray(), fb.NewArray(), sb.NewArray()}
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	types := []arrow.DataType{arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Float64, arrow.BinaryTypes.String}
	var keys state.RowKeys
	if err := keys.Encode(cols, nil, n); err != nil {
		t.Fatal(err)
	}
	table := state.NewKeyTable()
	defer table.Release()
	gids := make([]uint32, n)
	table.InsertRows(&keys, gids)
	for i := range rows {
		k, null := table.Key(gids[i])
		ord, err := disk.AppendOrdered(nil, k, null, types)
		if err != nil {
			t.Fatal(err)
		}
		rows[i].keyB = ord
	}
	for i := range rows {
		for j := range rows {
			want := compareRow(rows[i], rows[j])
			if got := bytes.Compare(rows[i].keyB, rows[j].keyB); got != want {
				t.Fatalf("rows %d and %d: keys compare %d, rows %d", i, j, got, want)
			}
		}
	}

	// One text column alone is a raw key.
	var raw state.RowKeys
	if err := raw.Encode(cols[2:], nil, n); err != nil {
		t.Fatal(err)
	}
	rt := state.NewKeyTable()
	defer rt.Release()
	rt.InsertRows(&raw, gids)
	for i := range rows {
		for j := range rows {
			ki, ni := rt.Key(gids[i])
			kj, nj := rt.Key(gids[j])
			a, _ := disk.AppendOrdered(nil, ki, ni, types[2:])
			b, _ := disk.AppendOrdered(nil, kj, nj, types[2:])
			want := compareRow(row{s: rows[i].s}, row{s: rows[j].s})
			if got := bytes.Compare(a, b); got != want {
				t.Fatalf("raw rows %d and %d: keys compare %d, rows %d", i, j, got, want)
			}
		}
	}
}

// fill writes keys k0..k<n-1> with values v<i>.<gen> in one batch.
func fill(t *testing.T, db *disk.DB, lo, hi, gen int) {
	t.Helper()
	b := db.NewBatch()
	for i := lo; i < hi; i++ {
		if err := b.Set(fmt.Appendf(nil, "k%06d", i), fmt.Appendf(nil, "v%d.%d", i, gen)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
}

// contents returns every key and value of db, in scan order.
func contents(t *testing.T, db *disk.DB) []string {
	t.Helper()
	var out []string
	if err := db.Scan(nil, nil, func(k, v []byte) error {
		out = append(out, string(k)+"="+string(v))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestGetSetScan(t *testing.T) {
	db, err := disk.Open(disk.Options{Dir: t.TempDir(), Memory: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fill(t, db, 0, 100, 0)
	b := db.NewBatch()
	b.Delete([]byte("k000005"))
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	keys := [][]byte{[]byte("k000004"), []byte("k000005"), []byte("nope"), []byte("k000099")}
	var got []string
	if err := db.Get(keys, func(i int, v []byte) error {
		got = append(got, fmt.Sprintf("%d:%s", i, v))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"0:v4.0", "3:v99.0"}; !slices.Equal(got, want) {
		t.Fatalf("Get: %v, want %v", got, want)
	}
	// GetSorted finds the same, the keys out of order, one past the last
	// key held, one repeated and one a prefix of a key held: each with its
	// index, in the keys' order.
	keys = [][]byte{[]byte("k000099"), []byte("nope"), []byte("k000005"), []byte("a"), []byte("k000004"), []byte("k000050"), []byte("k000004"), []byte("k00005")}
	got = nil
	if err := db.GetSorted(keys, func(i int, v []byte) error {
		got = append(got, fmt.Sprintf("%d:%s", i, v))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"4:v4.0", "6:v4.0", "5:v50.0", "0:v99.0"}; !slices.Equal(got, want) {
		t.Fatalf("GetSorted: %v, want %v", got, want)
	}
	all := contents(t, db)
	if len(all) != 99 || !slices.IsSorted(all) || all[0] != "k000000=v0.0" {
		t.Fatalf("Scan: %d entries, first %q, sorted %t", len(all), all[0], slices.IsSorted(all))
	}
}

// TestIncrementalCheckpoints takes checkpoints of a DB that changes a little
// between them, prunes the store as the coordinator does, and restores from
// the newest: each checkpoint uploads only its new files, and pruning keeps
// the files the kept checkpoint still needs. With pebble's compactions on, a
// compaction may rewrite the base file between two checkpoints (then that
// checkpoint uploads it again); with them off, the byte counts are exact.
func TestIncrementalCheckpoints(t *testing.T) {
	t.Run("compactions", func(t *testing.T) { testIncrementalCheckpoints(t, false) })
	t.Run("no-compactions", func(t *testing.T) { testIncrementalCheckpoints(t, true) })
}

func testIncrementalCheckpoints(t *testing.T, noCompactions bool) {
	ctx := context.Background()
	storeDir := t.TempDir()
	store, err := checkpoint.Open(ctx, "file://"+storeDir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	files := store.Files("job", "1.0")
	opts := disk.Options{Dir: t.TempDir(), Memory: 4 << 20}
	if noCompactions {
		opts = disk.WithoutCompactions(opts)
	}
	db, err := disk.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var manifests []*disk.Manifest
	for id := int64(1); id <= 4; id++ {
		if id == 1 {
			fill(t, db, 0, 20000, 0)
		} else {
			// 1% of the keys, a range no other checkpoint touches: L0
			// then holds at most two sublevels, below pebble's compaction
			// trigger (four), so no background compaction rewrites the
			// base file between checkpoints and the test is deterministic.
			fill(t, db, int(id)*200, int(id)*200+200, int(id))
		}
		m, err := db.Checkpoint(ctx, files, id)
		if err != nil {
			t.Fatal(err)
		}
		manifests = append(manifests, m)
		if err := store.Complete(ctx, "job", id); err != nil {
			t.Fatal(err)
		}
		if err := store.Prune(ctx, "job", 1); err != nil {
			t.Fatal(err)
		}
	}
	first, last := manifests[0], manifests[3]
	if first.Uploaded < first.Total || first.Total == 0 {
		t.Fatalf("first checkpoint uploaded %d of %d bytes, want all", first.Uploaded, first.Total)
	}
	// Whatever compactions did, a checkpoint uploads exactly its files that
	// no earlier checkpoint uploaded, and its inline files.
	seen := map[string]bool{}
	for i, m := range manifests {
		want := int64(0)
		for _, f := range m.Shared {
			if !seen[f.Shared] {
				want += f.Size
			}
			seen[f.Shared] = true
		}
		for _, v := range m.Inline {
			want += int64(len(v))
		}
		if m.Uploaded != want {
			t.Fatalf("checkpoint %d uploaded %d bytes, its new files and inline ones are %d", i+1, m.Uploaded, want)
		}
	}
	if noCompactions && last.Uploaded*4 > last.Total {
		t.Fatalf("fourth checkpoint uploaded %d of %d bytes: not incremental", last.Uploaded, last.Total)
	}
	// The bulk of the last checkpoint is files an earlier one uploaded.
	reused := false
	for _, m := range manifests[:3] {
		for _, f := range m.Shared {
			reused = reused || slices.Contains(last.Shared, f)
		}
	}
	if noCompactions && !reused {
		t.Fatalf("last checkpoint reuses no file of an earlier one: %v", last.Shared)
	}
	// Pruned to the newest: checkpoints 1 to 3 are gone, their refs with them.
	if _, err := store.Get(ctx, "job", 1, "x"); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("checkpoint 1 still there: %v", err)
	}
	shared, _ := filepath.Glob(filepath.Join(storeDir, "job", "shared", "1.0", "*.sst")) // not fileblob's .attrs
	if len(shared) != len(last.Shared) {
		t.Fatalf("store keeps %d shared files, the kept checkpoint needs %d: %v", len(shared), len(last.Shared), shared)
	}

	want := contents(t, db)
	restored, err := disk.Restore(ctx, disk.Options{Dir: t.TempDir(), Memory: 4 << 20}, files, last)
	if err != nil {
		t.Fatal(err)
	}
	defer restored.Close()
	if got := contents(t, restored); !slices.Equal(got, want) {
		t.Fatalf("restored %d entries, want %d", len(got), len(want))
	}
	// Its next checkpoint uploads only the files it did not restore (which
	// a compaction may have replaced).
	fill(t, restored, 0, 10, 9)
	m, err := restored.Checkpoint(ctx, files, 5)
	if err != nil {
		t.Fatal(err)
	}
	fresh := m.Total
	for _, f := range m.Shared {
		if slices.Contains(last.Shared, f) {
			fresh -= f.Size
		}
	}
	if m.Uploaded != fresh {
		t.Fatalf("checkpoint after restore uploaded %d bytes, %d of its %d are new", m.Uploaded, fresh, m.Total)
	}
}

// TestRestoreDamaged checks that a shared file that is missing or damaged in
// the store fails the restore with an error naming it.
func TestRestoreDamaged(t *testing.T) {
	ctx := context.Background()
	storeDir := t.TempDir()
	store, err := checkpoint.Open(ctx, "file://"+storeDir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	files := store.Files("job", "1.0")
	db, err := disk.Open(disk.Options{Dir: t.TempDir(), Memory: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fill(t, db, 0, 1000, 0)
	m, err := db.Checkpoint(ctx, files, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Shared) == 0 {
		t.Fatal("no shared files")
	}
	path := filepath.Join(storeDir, "job", "shared", "1.0", m.Shared[0].Shared)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x40
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	opts := disk.Options{Dir: t.TempDir()}
	_, err = disk.Restore(ctx, opts, files, m)
	if !errors.Is(err, disk.ErrDamaged) || !strings.Contains(err.Error(), m.Shared[0].Shared) || !strings.Contains(err.Error(), "CRC") {
		t.Fatalf("restore of a damaged file: %v", err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	_, err = disk.Restore(ctx, opts, files, m)
	if !errors.Is(err, disk.ErrDamaged) || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("restore of a missing file: %v", err)
	}
	if left, _ := os.ReadDir(opts.Dir); len(left) != 0 {
		t.Fatalf("failed restores left %d directories", len(left))
	}
}

// gatedFiles is a checkpoint store's StateFiles whose uploads wait for gate
// to close (when it is set) and then fail with fail (when it is set).
type gatedFiles struct {
	exec.StateFiles
	gate     chan struct{}
	fail     error
	uploads  atomic.Int64
	started  chan struct{} // closed at the first upload
	startOne sync.Once
}

func (g *gatedFiles) Upload(ctx context.Context, name, path string) error {
	g.startOne.Do(func() { close(g.started) })
	if g.gate != nil {
		select {
		case <-g.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if g.fail != nil {
		return g.fail
	}
	g.uploads.Add(1)
	return g.StateFiles.Upload(ctx, name, path)
}

// TestCheckpointFinishesWhileWriting starts a checkpoint, goes on writing
// to the DB while its upload waits, and checks that the checkpoint holds the
// DB as of its start; then that a checkpoint whose upload fails fails alone:
// the next one uploads what it lacked, and restores.
func TestCheckpointFinishesWhileWriting(t *testing.T) {
	ctx := context.Background()
	store, err := checkpoint.Open(ctx, "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	files := &gatedFiles{StateFiles: store.Files("job", "1.0"), gate: make(chan struct{}), started: make(chan struct{})}
	// Without compactions, so that the second checkpoint keeps the first's
	// file (a compaction could rewrite it, and then nothing is shared).
	db, err := disk.Open(disk.WithoutCompactions(disk.Options{Dir: t.TempDir(), Memory: 4 << 20}))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fill(t, db, 0, 5000, 0)
	want := contents(t, db)
	p, err := db.StartCheckpoint(1)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		m   *disk.Manifest
		err error
	}
	done := make(chan result, 1)
	go func() {
		m, err := p.Finish(ctx, files)
		done <- result{m, err}
	}()
	<-files.started // the upload is under way, and waits
	// The DB goes on: every key rewritten and new ones, flushed into new
	// files by a second checkpoint, whose Finish waits for the first's.
	fill(t, db, 0, 8000, 1)
	want2 := contents(t, db)
	p2, err := db.StartCheckpoint(2)
	if err != nil {
		t.Fatal(err)
	}
	done2 := make(chan result, 1)
	go func() {
		m, err := p2.Finish(ctx, files)
		done2 <- result{m, err}
	}()
	select {
	case r := <-done:
		t.Fatalf("checkpoint 1 finished with its upload held: %v", r.err)
	case r := <-done2:
		t.Fatalf("checkpoint 2 finished before checkpoint 1: %v", r.err)
	default:
	}
	close(files.gate)
	var ms []*disk.Manifest
	for i, c := range []struct {
		done chan result
		want []string
	}{{done, want}, {done2, want2}} {
		r := <-c.done
		if r.err != nil {
			t.Fatal(r.err)
		}
		ms = append(ms, r.m)
		restored, err := disk.Restore(ctx, disk.Options{Dir: t.TempDir(), Memory: 4 << 20}, files, r.m)
		if err != nil {
			t.Fatal(err)
		}
		got := contents(t, restored)
		restored.Close()
		if !slices.Equal(got, c.want) {
			t.Fatalf("checkpoint %d restored %d entries (first %q), want the %d at its start", i+1, len(got), got[0], len(c.want))
		}
	}
	// The second uploaded only the files the first did not: it waited.
	fresh := int64(0)
	for _, f := range ms[1].Shared {
		if !slices.Contains(ms[0].Shared, f) {
			fresh += f.Size
		}
	}
	for _, v := range ms[1].Inline {
		fresh += int64(len(v))
	}
	if ms[1].Uploaded != fresh || fresh == ms[1].Total {
		t.Fatalf("checkpoint 2 uploaded %d bytes, its files new since checkpoint 1 are %d of %d", ms[1].Uploaded, fresh, ms[1].Total)
	}
}

// TestCheckpointUploadFails checks that a checkpoint whose upload fails
// returns the error, and that the next checkpoint uploads every file it
// needs that the failed one did not.
func TestCheckpointUploadFails(t *testing.T) {
	ctx := context.Background()
	store, err := checkpoint.Open(ctx, "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	full := errors.New("no space left on device")
	files := &gatedFiles{StateFiles: store.Files("job", "1.0"), fail: full, started: make(chan struct{})}
	db, err := disk.Open(disk.Options{Dir: t.TempDir(), Memory: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fill(t, db, 0, 5000, 0)
	if _, err := db.Checkpoint(ctx, files, 1); !errors.Is(err, full) {
		t.Fatalf("checkpoint with a full store: %v", err)
	}
	files.fail = nil
	fill(t, db, 0, 10, 1)
	m, err := db.Checkpoint(ctx, files, 2)
	if err != nil {
		t.Fatal(err)
	}
	if m.Uploaded < m.Total {
		t.Fatalf("the checkpoint after a failed one uploaded %d of %d bytes, want all", m.Uploaded, m.Total)
	}
	restored, err := disk.Restore(ctx, disk.Options{Dir: t.TempDir(), Memory: 4 << 20}, files, m)
	if err != nil {
		t.Fatal(err)
	}
	defer restored.Close()
	if got, want := contents(t, restored), contents(t, db); !slices.Equal(got, want) {
		t.Fatalf("restored %d entries, want %d", len(got), len(want))
	}
}
