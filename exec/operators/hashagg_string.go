package operators

// string_agg(x, sep [ORDER BY ...]) (also MySQL's GROUP_CONCAT): the values of
// a group joined by a separator. It runs only in the complete phase, as
// DISTINCT aggregates do: a group's values are kept until its result, each
// with its ORDER BY keys normalised (sortkey.go), and sorted then.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec/state"
)

// errRetractStringAgg: taking a value back would mean finding it among its
// group's, which string_agg does not index.
var errRetractStringAgg = errors.New("hash_agg: string_agg over retractions (delete/update) is not supported")

// stringAgg is one string_agg's state: per group, its values in arrival order
// and, with ORDER BY, each value's sort key.
type stringAgg struct {
	col      int
	sep      string
	order    []SortKeySpec
	distinct bool
	groups   [][]aggValue
	bytes    int64
	keys     sortKeys
}

// aggValue is one value of a group and its normalised ORDER BY key.
type aggValue struct {
	key, val []byte
}

func (a *stringAgg) width() int { return 1 }

func (a *stringAgg) memBytes() int64 { return a.bytes + int64(cap(a.groups))*24 }

func (a *stringAgg) update(rec arrow.RecordBatch, gids []uint32, ngroups int, signs []int8) error {
	arr, err := inputColumn(rec, a.col)
	if err != nil {
		return err
	}
	strs, ok := arr.(*array.String)
	if !ok {
		return fmt.Errorf("hash_agg: string_agg of %s", arr.DataType())
	}
	if len(a.order) > 0 {
		if err := a.keys.encode(rec, a.order); err != nil {
			return err
		}
	}
	for len(a.groups) < ngroups {
		a.groups = append(a.groups, nil)
	}
	for i, g := range gids {
		if signs != nil && signs[i] < 0 {
			return errRetractStringAgg
		}
		if strs.IsNull(i) {
			continue
		}
		v := aggValue{val: []byte(strs.Value(i))}
		if len(a.order) > 0 {
			v.key = slices.Clone(a.keys.key(i))
		}
		a.groups[g] = append(a.groups[g], v)
		a.bytes += int64(len(v.key)+len(v.val)) + 48
	}
	return nil
}

// joined is group g's result, or false for a group with no value (NULL).
func (a *stringAgg) joined(g int, buf []byte) ([]byte, bool) {
	if g >= len(a.groups) || len(a.groups[g]) == 0 {
		return buf, false
	}
	vals := a.groups[g]
	if len(a.order) > 0 {
		// Stable: values with equal keys keep the order they came in.
		slices.SortStableFunc(vals, func(x, y aggValue) int { return bytes.Compare(x.key, y.key) })
	}
	var seen map[string]bool
	if a.distinct {
		seen = map[string]bool{}
	}
	first := true
	for _, v := range vals {
		if seen != nil {
			if seen[string(v.val)] {
				continue
			}
			seen[string(v.val)] = true
		}
		if !first {
			buf = append(buf, a.sep...)
		}
		buf = append(buf, v.val...)
		first = false
	}
	return buf, true
}

func (a *stringAgg) result(mem memory.Allocator, sel state.GroupSel, _ []arrow.DataType, dst []arrow.Array) ([]arrow.Array, error) {
	b := array.NewStringBuilder(mem)
	defer b.Release()
	var buf []byte
	for i := range sel.Len() {
		g := sel.At(i)
		var ok bool
		buf, ok = a.joined(g, buf[:0])
		if !ok {
			b.AppendNull()
			continue
		}
		b.BinaryBuilder.Append(buf)
	}
	return append(dst, b.NewArray()), nil
}

// saveState writes each group's values, and their keys with ORDER BY, as
// list columns "values" and "keys" (a group's lists in its arrival order).
func (a *stringAgg) saveState(w *aggStateWriter) error {
	vals := array.NewListBuilder(w.mem, arrow.BinaryTypes.Binary)
	defer vals.Release()
	keys := array.NewListBuilder(w.mem, arrow.BinaryTypes.Binary)
	defer keys.Release()
	vb, kb := vals.ValueBuilder().(*array.BinaryBuilder), keys.ValueBuilder().(*array.BinaryBuilder)
	for g := range w.n {
		vals.Append(true)
		keys.Append(true)
		if g >= len(a.groups) {
			continue
		}
		for _, v := range a.groups[g] {
			vb.Append(v.val)
			kb.Append(v.key)
		}
	}
	w.put("values", vals.NewArray())
	w.put("keys", keys.NewArray())
	return nil
}

func (a *stringAgg) loadState(r *aggStateReader) error {
	vc, ok := r.col("values")
	kc, ok2 := r.col("keys")
	if !ok || !ok2 {
		return fmt.Errorf("%w: %svalues or keys missing", state.ErrBadState, r.prefix)
	}
	vl, ok := vc.(*array.List)
	kl, ok2 := kc.(*array.List)
	if !ok || !ok2 || vl.Len() != r.n || kl.Len() != r.n {
		return fmt.Errorf("%w: %svalues and keys are not lists of %d groups", state.ErrBadState, r.prefix, r.n)
	}
	vs, ok := vl.ListValues().(*array.Binary)
	ks, ok2 := kl.ListValues().(*array.Binary)
	if !ok || !ok2 {
		return fmt.Errorf("%w: %svalues and keys are not binary lists", state.ErrBadState, r.prefix)
	}
	a.groups = make([][]aggValue, r.n)
	for g := range r.n {
		from, to := vl.ValueOffsets(g)
		kf, kt := kl.ValueOffsets(g)
		if kt-kf != to-from {
			return fmt.Errorf("%w: %sgroup %d has %d values and %d keys", state.ErrBadState, r.prefix, g, to-from, kt-kf)
		}
		for j := from; j < to; j++ {
			v := aggValue{val: slices.Clone(vs.Value(int(j))), key: slices.Clone(ks.Value(int(kf + j - from)))}
			if len(v.key) == 0 {
				v.key = nil
			}
			a.groups[g] = append(a.groups[g], v)
			a.bytes += int64(len(v.key)+len(v.val)) + 48
		}
	}
	return nil
}

// On the disk state backend (hashagg_disk.go) a group's part of its value is
// its values in arrival order: their number, then each one's ORDER BY key
// and value, each a uvarint length and the bytes. A group's values are loaded
// and written whole.

func (a *stringAgg) encodeSlots(gids []uint32, vals [][]byte) {
	for i, g := range gids {
		var vs []aggValue
		if int(g) < len(a.groups) {
			vs = a.groups[g]
		}
		vals[i] = binary.AppendUvarint(vals[i], uint64(len(vs)))
		for _, v := range vs {
			vals[i] = binary.AppendUvarint(vals[i], uint64(len(v.key)))
			vals[i] = append(vals[i], v.key...)
			vals[i] = binary.AppendUvarint(vals[i], uint64(len(v.val)))
			vals[i] = append(vals[i], v.val...)
		}
	}
}

func (a *stringAgg) decodeSlots(gids []uint32, vals [][]byte, ngroups int) error {
	for len(a.groups) < ngroups {
		a.groups = append(a.groups, nil)
	}
	field := func(v *[]byte) ([]byte, error) {
		l, err := readUvarint(v)
		if err != nil {
			return nil, err
		}
		b, err := readBytes(v, int(l))
		if err != nil || len(b) == 0 {
			return nil, err
		}
		return slices.Clone(b), nil
	}
	for i, g := range gids {
		n, err := readUvarint(&vals[i])
		if err != nil {
			return err
		}
		vs := make([]aggValue, 0, n)
		for range n {
			var v aggValue
			if v.key, err = field(&vals[i]); err != nil {
				return err
			}
			if v.val, err = field(&vals[i]); err != nil {
				return err
			}
			vs = append(vs, v)
			a.bytes += int64(len(v.key)+len(v.val)) + 48
		}
		a.groups[g] = vs
	}
	return nil
}

func (a *stringAgg) clearSlots() {
	clear(a.groups)
	a.groups, a.bytes = a.groups[:0], 0
}

// inputType is nil: the values are text, whatever came.
func (a *stringAgg) inputType() arrow.DataType { return nil }

func (a *stringAgg) setInputType(dt arrow.DataType) error {
	return fmt.Errorf("hash_agg: string_agg has no input type to restore, got %s", dt)
}
