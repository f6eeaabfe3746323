package operators

// count(DISTINCT x), sum/avg(DISTINCT x) and min/max over retractions on the
// disk state backend (hashagg_disk.go). Each keeps a group's distinct values
// with a reference count in a table of (group id, value) pairs; in a disk
// state value a group's part is its pairs, so that a group leaves the cache
// and comes back with its values: the number of values held, then each one's
// reference count (a varint) and its key as RowKeys encodes the value (a
// uvarint length, then the bytes, without the group id). A group's values
// are loaded and written whole, as a Top-N partition's rows are: a group of
// very many values costs that much at each load.

import (
	"encoding/binary"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/hummer-db/hummer/exec/state"
	"github.com/hummer-db/hummer/exec/vector"
)

// readUvarint reads a uvarint from the front of *v.
func readUvarint(v *[]byte) (uint64, error) {
	x, n := binary.Uvarint(*v)
	if n <= 0 {
		return 0, errShortValue
	}
	*v = (*v)[n:]
	return x, nil
}

// pairIndex lists the pairs held (a reference count above zero) of each
// group: those of group g are order[starts[g]:starts[g+1]].
type pairIndex struct {
	starts []int32
	order  []uint32
}

// pairGroup is the group id a pair's key starts with.
func (a *countDistinctAgg) pairGroup(p uint32) uint32 {
	k, _ := a.pairs.Key(p)
	return binary.LittleEndian.Uint32(k)
}

// index returns the pairs of each group, built once between two changes of
// the pairs (a write-back encodes its groups in chunks).
func (a *countDistinctAgg) index() *pairIndex {
	if a.byGroup != nil {
		return a.byGroup
	}
	ix := &pairIndex{starts: make([]int32, len(a.counts)+1)}
	n := 0
	if a.pairs != nil {
		n = a.pairs.Len()
	}
	for p := range n {
		if a.refs[p] > 0 {
			ix.starts[a.pairGroup(uint32(p))+1]++
		}
	}
	for g := 1; g < len(ix.starts); g++ {
		ix.starts[g] += ix.starts[g-1]
	}
	ix.order = make([]uint32, ix.starts[len(ix.starts)-1])
	next := append([]int32(nil), ix.starts...)
	for p := range n {
		if a.refs[p] > 0 {
			g := a.pairGroup(uint32(p))
			ix.order[next[g]] = uint32(p)
			next[g]++
		}
	}
	a.byGroup = ix
	return ix
}

func (a *countDistinctAgg) encodeSlots(gids []uint32, vals [][]byte) {
	ix := a.index()
	for i, g := range gids {
		var ps []uint32
		if int(g)+1 < len(ix.starts) {
			ps = ix.order[ix.starts[g]:ix.starts[g+1]]
		}
		vals[i] = binary.AppendUvarint(vals[i], uint64(len(ps)))
		for _, p := range ps {
			k, _ := a.pairs.Key(p)
			vals[i] = binary.AppendVarint(vals[i], a.refs[p])
			vals[i] = binary.AppendUvarint(vals[i], uint64(len(k)-4))
			vals[i] = append(vals[i], k[4:]...)
		}
	}
}

func (a *countDistinctAgg) decodeSlots(gids []uint32, vals [][]byte, ngroups int) error {
	a.counts = vector.GrowZero(a.counts, ngroups)
	if len(gids) > 0 {
		a.byGroup = nil
	}
	var key []byte
	for i, g := range gids {
		n, err := readUvarint(&vals[i])
		if err != nil {
			return err
		}
		for range n {
			ref, err := readVarint(&vals[i])
			if err != nil {
				return err
			}
			l, err := readUvarint(&vals[i])
			if err != nil {
				return err
			}
			v, err := readBytes(&vals[i], int(l))
			if err != nil {
				return err
			}
			key = append(binary.LittleEndian.AppendUint32(key[:0], g), v...)
			p := a.table().InsertKey(key)
			a.refs = vector.GrowZero(a.refs, a.pairs.Len())
			a.refs[p] = ref
		}
		a.counts[g] = int64(n)
	}
	return nil
}

func (a *countDistinctAgg) clearSlots() {
	if a.pairs != nil {
		a.pairs.Release()
		a.pairs = nil
	}
	a.refs, a.counts, a.byGroup = a.refs[:0], a.counts[:0], nil
}

func (a *countDistinctAgg) inputType() arrow.DataType { return a.dt }

func (a *countDistinctAgg) setInputType(dt arrow.DataType) error {
	if _, err := state.KeyWidth(dt); err != nil {
		return err
	}
	a.dt = dt
	return nil
}

// distinctAgg's part: its values, then its inner aggregate's.
func (a *distinctAgg) encodeSlots(gids []uint32, vals [][]byte) {
	a.seen.encodeSlots(gids, vals)
	a.inner.encodeSlots(gids, vals)
}

func (a *distinctAgg) decodeSlots(gids []uint32, vals [][]byte, ngroups int) error {
	if err := a.seen.decodeSlots(gids, vals, ngroups); err != nil {
		return err
	}
	return a.inner.decodeSlots(gids, vals, ngroups)
}

func (a *distinctAgg) clearSlots() {
	a.seen.clearSlots()
	a.inner.clearSlots()
}

func (a *distinctAgg) inputType() arrow.DataType { return a.seen.inputType() }

func (a *distinctAgg) setInputType(dt arrow.DataType) error {
	if err := a.seen.setInputType(dt); err != nil {
		return err
	}
	return a.inner.setInputType(dt)
}

// minMaxRetractAgg's part: its values, its extreme, and a byte saying the
// extreme is stale (to be folded again from the values before results are
// read). The extreme goes whole, not found again from the values: those are
// keys, where -0 is 0, and the group's rows out must be retracted as they
// went out.
func (a *minMaxRetractAgg) encodeSlots(gids []uint32, vals [][]byte) {
	a.vals.encodeSlots(gids, vals)
	a.mm.encodeSlots(gids, vals)
	for i, g := range gids {
		stale := byte(0)
		if int(g) < len(a.stale) && a.stale[g] {
			stale = 1
		}
		vals[i] = append(vals[i], stale)
	}
}

func (a *minMaxRetractAgg) decodeSlots(gids []uint32, vals [][]byte, ngroups int) error {
	if err := a.vals.decodeSlots(gids, vals, ngroups); err != nil {
		return err
	}
	if err := a.mm.decodeSlots(gids, vals, ngroups); err != nil {
		return err
	}
	a.stale = vector.GrowZero(a.stale, ngroups)
	for i, g := range gids {
		b, err := readBytes(&vals[i], 1)
		if err != nil {
			return err
		}
		if b[0] == 1 && !a.stale[g] {
			a.stale[g] = true
			a.nstale++
		}
	}
	return nil
}

func (a *minMaxRetractAgg) clearSlots() {
	a.vals.clearSlots()
	a.mm.clearSlots()
	a.stale, a.nstale = a.stale[:0], 0
}

func (a *minMaxRetractAgg) inputType() arrow.DataType { return a.vals.inputType() }

func (a *minMaxRetractAgg) setInputType(dt arrow.DataType) error {
	if err := a.vals.setInputType(dt); err != nil {
		return err
	}
	return a.mm.setInputType(dt)
}
