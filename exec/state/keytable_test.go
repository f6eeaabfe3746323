package state

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/vector"
)

// keyTestKeys returns n random keys that stress the table's comparisons: every
// length from 0 to 40 and a few past 255, NUL bytes (so zero padding alone
// cannot tell "a" from "a\x00"), keys that share their first 8, 15 or 16 bytes
// (a key of 16 bytes whose last byte is a shorter key's length), and repeats.
func keyTestKeys(r *rand.Rand, n int) []string {
	prefix16 := "0123456789abcdef"
	long := strings.Repeat("x", 300)
	keys := []string{"", "\x00", "a", "a\x00", "a\x00\x00", prefix16[:8], prefix16[:8] + "\x00",
		prefix16[:15], prefix16[:15] + "\x0f", prefix16[:15] + "\x10", prefix16[:14] + "\x00", prefix16[:14] + "\x0e",
		prefix16, prefix16 + "\x00", long[:255], long[:256], long[:299] + "y", long}
	for len(keys) < n {
		var k string
		switch r.IntN(4) {
		case 0: // a repeat
			k = keys[r.IntN(len(keys))]
		case 1: // a shared first 8 or 16 bytes
			k = prefix16[:8*(1+r.IntN(2))] + fmt.Sprint(r.IntN(50))
		default:
			b := make([]byte, r.IntN(41))
			for i := range b {
				b[i] = "ab\x00"[r.IntN(3)]
			}
			k = string(b)
		}
		keys = append(keys, k)
	}
	r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	return keys
}

// keyTestRaw returns the raw keys of strs. With tight, the bytes sit in a slice
// without spare capacity, so the table cannot load words past the last key.
func keyTestRaw(strs []string, tight bool) *RowKeys {
	k := &RowKeys{n: len(strs), raw: true, offs: make([]int32, len(strs)+1)}
	var data []byte
	for i, s := range strs {
		data = append(data, s...)
		k.offs[i+1] = int32(len(data))
	}
	if tight {
		data = bytes.Clone(data)
	}
	k.data = data
	return k
}

func TestKeyTableRaw(t *testing.T) {
	for _, tight := range []bool{false, true} {
		t.Run(fmt.Sprintf("tight=%v", tight), func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			tb := NewKeyTable()
			ids := map[string]uint32{}
			var order []string
			// Batches of growing size make the table grow in and between batches.
			for batch := range 12 {
				strs := keyTestKeys(r, 1<<batch)
				gids := make([]uint32, len(strs))
				tb.InsertRows(keyTestRaw(strs, tight), gids)
				for i, s := range strs {
					want, ok := ids[s]
					if !ok {
						want = uint32(len(order))
						ids[s] = want
						order = append(order, s)
					}
					if gids[i] != want {
						t.Fatalf("batch %d: key %q got id %d, want %d", batch, s, gids[i], want)
					}
				}
			}
			if tb.Len() != len(order) {
				t.Fatalf("%d keys, want %d", tb.Len(), len(order))
			}
			for g, s := range order {
				if got := string(tb.key(uint32(g))); got != s {
					t.Fatalf("key %d is %q, want %q", g, got, s)
				}
			}
			probe := append(keyTestKeys(r, 500), "absent", "0123456789abcdef-absent", strings.Repeat("x", 257))
			lids := make([]int32, len(probe))
			tb.LookupRows(keyTestRaw(probe, tight), lids)
			for i, s := range probe {
				want := int32(-1)
				if g, ok := ids[s]; ok {
					want = int32(g)
				}
				if lids[i] != want {
					t.Errorf("lookup %q: %d, want %d", s, lids[i], want)
				}
			}
		})
	}
}

func TestKeyTableNulls(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	b := array.NewStringBuilder(mem)
	b.AppendValues([]string{"a", "", "b", "", "a", ""}, []bool{true, false, true, true, true, false})
	col := b.NewArray()
	b.Release()
	defer col.Release()
	var k RowKeys
	if err := k.Encode([]arrow.Array{col}, nil, col.Len()); err != nil {
		t.Fatal(err)
	}
	tb := NewKeyTable()
	gids := make([]uint32, col.Len())
	tb.InsertRows(&k, gids)
	// NULL rows share one id, apart from the empty string's.
	if want := []uint32{0, 1, 2, 3, 0, 1}; fmt.Sprint(gids) != fmt.Sprint(want) {
		t.Fatalf("gids %v, want %v", gids, want)
	}
	ids := make([]int32, col.Len())
	tb.LookupRows(&k, ids)
	if want := []int32{0, -1, 2, 3, 0, -1}; fmt.Sprint(ids) != fmt.Sprint(want) {
		t.Errorf("lookup %v, want %v", ids, want)
	}
	kc, err := tb.DecodeKeys(mem, []arrow.DataType{arrow.BinaryTypes.String}, GroupRange(0, tb.Len()))
	if err != nil {
		t.Fatal(err)
	}
	defer vector.ReleaseArrays(kc)
	if got := fmt.Sprint(kc[0]); got != `["a" (null) "b" ""]` {
		t.Errorf("keys %s", got)
	}
}

// TestKeyTableCompacted: a table compacted to some of its keys (the NULL
// key among them) holds those, with ids in the order asked, decodes them as
// the original did, finds them, and lacks the others.
func TestKeyTableCompacted(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	strs := keyTestKeys(rand.New(rand.NewPCG(3, 4)), 500)
	b := array.NewStringBuilder(mem)
	for i, s := range strs {
		if i%50 == 7 {
			b.AppendNull()
		} else {
			b.Append(s)
		}
	}
	col := b.NewArray()
	b.Release()
	defer col.Release()
	var k RowKeys
	if err := k.Encode([]arrow.Array{col}, nil, col.Len()); err != nil {
		t.Fatal(err)
	}
	tb := NewKeyTable()
	defer tb.Release()
	gids := make([]uint32, col.Len())
	tb.InsertRows(&k, gids)
	var keep []uint32
	for g := tb.Len() - 1; g >= 0; g -= 2 { // every other key, backwards
		keep = append(keep, uint32(g))
	}
	c := tb.Compacted(keep)
	defer c.Release()
	types := []arrow.DataType{arrow.BinaryTypes.String}
	want, err := tb.DecodeKeys(mem, types, GroupIDs(keep))
	if err != nil {
		t.Fatal(err)
	}
	defer vector.ReleaseArrays(want)
	got, err := c.DecodeKeys(mem, types, GroupRange(0, c.Len()))
	if err != nil {
		t.Fatal(err)
	}
	defer vector.ReleaseArrays(got)
	if c.Len() != len(keep) || !array.Equal(got[0], want[0]) {
		t.Fatalf("compacted keys %v, want %v", got[0], want[0])
	}
	ids := make([]int32, col.Len())
	c.FindRows(&k, ids)
	at := map[uint32]int32{}
	for i, g := range keep {
		at[g] = int32(i)
	}
	for i, g := range gids {
		want, ok := at[g]
		if !ok {
			want = -1
		}
		if ids[i] != want {
			t.Fatalf("row %d (%q, key %d): compacted id %d, want %d", i, strs[i], g, ids[i], want)
		}
	}
}

// TestKeyTableEncoded checks keys of several columns, which the table sees as
// encoded byte strings of 10 to 40-odd bytes.
func TestKeyTableEncoded(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	r := rand.New(rand.NewPCG(3, 4))
	tb := NewKeyTable()
	ids := map[string]uint32{}
	types := []arrow.DataType{arrow.PrimitiveTypes.Int64, arrow.BinaryTypes.String}
	for range 20 {
		n := 1 + r.IntN(3000)
		ib := array.NewInt64Builder(mem)
		sb := array.NewStringBuilder(mem)
		for range n {
			if r.IntN(10) == 0 {
				ib.AppendNull()
			} else {
				ib.Append(int64(r.IntN(100)))
			}
			sb.Append(strings.Repeat("s", r.IntN(30)))
		}
		cols := []arrow.Array{ib.NewArray(), sb.NewArray()}
		ib.Release()
		sb.Release()
		var k RowKeys
		if err := k.Encode(cols, nil, n); err != nil {
			t.Fatal(err)
		}
		gids := make([]uint32, n)
		tb.InsertRows(&k, gids)
		for i := range n {
			key := fmt.Sprint(cols[0].(*array.Int64).IsNull(i), cols[0].(*array.Int64).Value(i), cols[1].(*array.String).Value(i))
			want, ok := ids[key]
			if !ok {
				want = uint32(len(ids))
				ids[key] = want
			}
			if gids[i] != want {
				t.Fatalf("row %d (%s): id %d, want %d", i, key, gids[i], want)
			}
		}
		vector.ReleaseArrays(cols)
	}
	kc, err := tb.DecodeKeys(mem, types, GroupRange(0, tb.Len()))
	if err != nil {
		t.Fatal(err)
	}
	defer vector.ReleaseArrays(kc)
	for g := range tb.Len() {
		key := fmt.Sprint(kc[0].IsNull(g), kc[0].(*array.Int64).Value(g), kc[1].(*array.String).Value(g))
		if ids[key] != uint32(g) {
			t.Fatalf("key %d decodes to %s, which has id %d", g, key, ids[key])
		}
	}
}

// TestKeyTableCollisions gives keys that the slot's tag and first word cannot
// tell apart one hash, so that only the rest of the comparison separates them:
// the second word, the length kept in it, and the arena.
func TestKeyTableCollisions(t *testing.T) {
	long := strings.Repeat("x", 300)
	keys := []string{"a", "b", "a\x00", "a\x00\x00\x00\x00\x00\x00\x00\x00", "a\x00\x00\x00\x00\x00\x00\x00\x00\x00",
		"0123456789abcdef", "0123456789abcdeg", "1123456789abcdef", "0123456789abcdef1", "0123456789abcdef2",
		"0123456789abcde", "0123456789abcde\x0f", "0123456789abcde\x10", "0123456789abcd\x00", "0123456789abcd\x0e", "0123456789abcd",
		"zyxwvutsrqponml\x0f", "zyxwvutsrqponml", // the longer first: probing for the shorter meets it
		long[:256], long[:300], long[:299] + "y", long[:255] + "y"}
	tb := NewKeyTable()
	for pass := range 2 {
		for i, k := range keys {
			_, w0, w1 := vector.HashKey([]byte(k), tb.seed)
			if g := tb.findOrInsertHashed([]byte(k), 42, w0, w1); g != uint32(i) {
				t.Fatalf("pass %d: %q got id %d, want %d", pass, k, g, i)
			}
		}
	}
}

// TestKeyTableFindShort checks that keys of up to 15 bytes already in the table
// take findShort's fast path when the buffer has room to load them as words.
func TestKeyTableFindShort(t *testing.T) {
	var strs []string
	for _, s := range keyTestKeys(rand.New(rand.NewPCG(5, 6)), 2000) {
		if len(s) <= 15 {
			strs = append(strs, s)
		}
	}
	tb := NewKeyTable()
	k := keyTestRaw(strs, false)
	k.data = append(k.data, make([]byte, 16)...)[:len(k.data)]
	gids := make([]uint32, len(strs))
	tb.InsertRows(k, gids)
	got := make([]uint32, len(strs))
	if i, _, _, _, _ := tb.findShort(k.data[:cap(k.data)], k.offs, got, 0); i != len(strs) {
		t.Fatalf("findShort stopped at row %d (%q), want %d", i, strs[i], len(strs))
	}
	if fmt.Sprint(got) != fmt.Sprint(gids) {
		t.Errorf("findShort ids differ from insertRows'")
	}

	// A key in the home slot of another, with its tag and first word, is not it.
	tb = NewKeyTable()
	a, b := "01234567a", "01234567b"
	ha, _, _ := vector.HashKey([]byte(a), tb.seed)
	_, w0, w1 := vector.HashKey([]byte(b), tb.seed)
	tb.findOrInsertHashed([]byte(b), ha, w0, w1)
	k = keyTestRaw([]string{a}, false)
	k.data = append(k.data, make([]byte, 16)...)[:len(k.data)]
	i, p, h, w0, w1 := tb.findShort(k.data[:cap(k.data)], k.offs, got[:1], 0)
	if i != 0 {
		t.Fatalf("findShort took %q for %q", b, a)
	}
	// It stops at the new key with its hash, its words and the empty slot
	// probing for it ends at.
	wh, ww0, ww1 := vector.HashKey([]byte(a), tb.seed)
	if want := tb.probe([]byte(a), wh, ww0, ww1); p != want || tb.slots[p] != 0 || p == ha&tb.mask || h != wh || w0 != ww0 || w1 != ww1 {
		t.Errorf("findShort gave slot %d, hash %x, words %x %x for the new key; want the empty slot %d after the home slot %d, hash %x, words %x %x",
			p, h, w0, w1, want, ha&tb.mask, wh, ww0, ww1)
	}
	// A key it cannot load as words gives no slot.
	long := keyTestRaw([]string{"a key longer than sixteen bytes"}, false)
	if i, p, _, _, _ := tb.findShort(long.data[:cap(long.data)], long.offs, got[:1], 0); i != 0 || p != noSlot {
		t.Errorf("findShort on a long key: row %d, slot %d; want 0, noSlot", i, p)
	}
}

// BenchmarkKeyTableInsert adds the 58,733 distinct words of the King James
// Bible (lower-cased, split on ' ') to an empty table, in batches of 4096: the
// cost of a new key, which a partial aggregate pays for its whole vocabulary
// and the final one for its share. Reserved, the table has room for them all
// from the start, as a final aggregate's has for its first batch.
func BenchmarkKeyTableInsert(b *testing.B) {
	b.Run("growing", func(b *testing.B) { benchmarkKeyTableInsert(b, false) })
	b.Run("reserved", func(b *testing.B) { benchmarkKeyTableInsert(b, true) })
}

func benchmarkKeyTableInsert(b *testing.B, reserved bool) {
	raw, err := os.ReadFile("../../data/kjv.txt")
	if err != nil {
		b.Fatalf("corpus: %v", err)
	}
	seen := map[string]bool{}
	var words []string
	for line := range strings.SplitSeq(strings.ToLower(string(raw)), "\n") {
		for w := range strings.SplitSeq(line, " ") {
			if w != "" && !seen[w] {
				seen[w] = true
				words = append(words, w)
			}
		}
	}
	var batches []arrow.Array
	for lo := 0; lo < len(words); lo += 4096 {
		sb := array.NewStringBuilder(memory.DefaultAllocator)
		sb.AppendValues(words[lo:min(lo+4096, len(words))], nil)
		batches = append(batches, sb.NewArray())
		sb.Release()
	}
	defer vector.ReleaseArrays(batches)
	var k RowKeys
	gids := make([]uint32, 4096)
	for b.Loop() {
		t := NewKeyTable()
		if reserved {
			t.Reserve(len(words), 0)
		}
		for _, s := range batches {
			if err := k.Encode([]arrow.Array{s}, nil, s.Len()); err != nil {
				b.Fatal(err)
			}
			t.InsertRows(&k, gids)
		}
		if t.Len() != len(words) {
			b.Fatalf("%d keys, want %d", t.Len(), len(words))
		}
		t.Release()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(words)), "ns/key")
}

// TestKeyTableReserve checks that after reserve(n) adding n keys moves none of
// the table's arrays, and that every key is found.
func TestKeyTableReserve(t *testing.T) {
	tb := NewKeyTable()
	for i := range 100 {
		tb.findOrInsert(fmt.Appendf(nil, "before %d", i))
	}
	const n = 20000
	keys := make([][]byte, n)
	size := 0
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "reserved key %d", i)
		size += len(keys[i])
	}
	tb.Reserve(n, size)
	slots, words, offs, arena := &tb.slots[0], &tb.words[:1][0], &tb.offs[0], &tb.arena[:1][0]
	for i, k := range keys {
		if g := tb.findOrInsert(k); g != uint32(100+i) {
			t.Fatalf("key %d got id %d", i, g)
		}
	}
	if &tb.slots[0] != slots || &tb.words[0] != words || &tb.offs[0] != offs || &tb.arena[0] != arena {
		t.Error("adding the reserved keys moved the table's arrays")
	}
	for i := range 100 {
		if g := tb.find(fmt.Appendf(nil, "before %d", i)); g != int32(i) {
			t.Fatalf("key %d of before found as %d", i, g)
		}
	}
	for i, k := range keys {
		if g := tb.find(k); g != int32(100+i) {
			t.Fatalf("key %q found as %d", k, g)
		}
	}
	tb.Release()
}

// TestKeyTableRelease builds key tables one after another, each released
// before the next, with the pool poisoning what it takes back: a table built
// from reused (poisoned) arrays must find every key it holds, and no other.
func TestKeyTableRelease(t *testing.T) {
	for round := range 4 {
		tb := NewKeyTable()
		n := 5000 * (round + 1)
		for i := range n {
			if g := tb.findOrInsert(fmt.Appendf(nil, "key %d of round %d", i, round)); g != uint32(i) {
				t.Fatalf("round %d: key %d got id %d", round, i, g)
			}
		}
		for i := range n {
			if g := tb.find(fmt.Appendf(nil, "key %d of round %d", i, round)); g != int32(i) {
				t.Fatalf("round %d: key %d found as %d", round, i, g)
			}
			if got, want := string(tb.key(uint32(i))), fmt.Sprintf("key %d of round %d", i, round); got != want {
				t.Fatalf("round %d: key %d is %q", round, i, got)
			}
		}
		if g := tb.find(fmt.Appendf(nil, "key 0 of round %d", round+1)); g != -1 {
			t.Fatalf("round %d: found a key of the next round as %d", round, g)
		}
		tb.Release()
	}
}

// TestKeyTableReset checks that a reset table, generic or integer, holds no
// key (the NULL key neither) and gives the keys added afterwards ids from 0,
// finding each and no key of before.
func TestKeyTableReset(t *testing.T) {
	enc := func(v int64) []byte {
		var k RowKeys
		b := array.NewInt64Builder(memory.DefaultAllocator)
		defer b.Release()
		if v < 0 {
			b.AppendNull()
		} else {
			b.Append(v)
		}
		a := b.NewArray()
		defer a.Release()
		if err := k.Encode([]arrow.Array{a}, nil, 1); err != nil {
			t.Fatal(err)
		}
		return append([]byte(nil), k.data[k.offs[0]:k.offs[1]]...)
	}
	for name, tb := range map[string]*KeyTable{"generic": NewKeyTable(), "integer": NewIntKeyTable()} {
		for i := range int64(5000) {
			tb.findOrInsert(enc(i - 1)) // -1: NULL
		}
		tb.Reset()
		if tb.Len() != 0 {
			t.Fatalf("%s: %d keys after Reset", name, tb.Len())
		}
		for i := range int64(5000) {
			if g := tb.find(enc(i - 1)); g != -1 {
				t.Fatalf("%s: key %d found as %d after Reset", name, i-1, g)
			}
		}
		for i := range int64(3000) {
			if g := tb.findOrInsert(enc(10000 + i)); g != uint32(i) {
				t.Fatalf("%s: new key %d got id %d", name, i, g)
			}
		}
		if g := tb.findOrInsert(enc(-1)); g != 3000 {
			t.Fatalf("%s: NULL got id %d, want 3000", name, g)
		}
		for i := range int64(3000) {
			if g := tb.find(enc(10000 + i)); g != int32(i) {
				t.Fatalf("%s: new key %d found as %d", name, i, g)
			}
		}
		tb.Release()
	}
}
