package operators

// The per-group state of hash_agg's aggregates as bytes, for the disk state
// backend (hashagg_disk.go): each aggregate encodes and decodes its columns'
// entries of a batch of groups, appending to (or reading from the front of)
// one value per group. Types that are one per aggregate (a sum's input type)
// are not in the values: inputType and setInputType carry them in the
// operator's checkpoint.

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/hummer-db/hummer/exec/vector"
)

var errShortValue = fmt.Errorf("hash_agg: disk state value too short")

// readVarint reads a varint from the front of *v.
func readVarint(v *[]byte) (int64, error) {
	x, n := binary.Varint(*v)
	if n <= 0 {
		return 0, errShortValue
	}
	*v = (*v)[n:]
	return x, nil
}

// readBytes reads n bytes from the front of *v.
func readBytes(v *[]byte, n int) ([]byte, error) {
	if len(*v) < n {
		return nil, errShortValue
	}
	b := (*v)[:n]
	*v = (*v)[n:]
	return b, nil
}

func appendDecimal(dst []byte, d decimal128.Num) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, d.LowBits())
	return binary.LittleEndian.AppendUint64(dst, uint64(d.HighBits()))
}

func readDecimal(v *[]byte) (decimal128.Num, error) {
	b, err := readBytes(v, 16)
	if err != nil {
		return decimal128.Num{}, err
	}
	return decimal128.New(int64(binary.LittleEndian.Uint64(b[8:])), binary.LittleEndian.Uint64(b)), nil
}

func encodeInt64s(xs []int64, gids []uint32, vals [][]byte) {
	for i, g := range gids {
		vals[i] = binary.AppendVarint(vals[i], xs[g])
	}
}

func decodeInt64s(xs []int64, gids []uint32, vals [][]byte) error {
	for i, g := range gids {
		x, err := readVarint(&vals[i])
		if err != nil {
			return err
		}
		xs[g] = x
	}
	return nil
}

func (a *countAgg) encodeSlots(gids []uint32, vals [][]byte) { encodeInt64s(a.counts, gids, vals) }

func (a *countAgg) decodeSlots(gids []uint32, vals [][]byte, ngroups int) error {
	a.counts = vector.PoolInt64.GrowZero(a.counts, ngroups)
	return decodeInt64s(a.counts, gids, vals)
}

func (a *countAgg) clearSlots()                          { a.counts = a.counts[:0] }
func (a *countAgg) inputType() arrow.DataType            { return nil }
func (a *countAgg) setInputType(dt arrow.DataType) error { return nil }

// encode appends the accumulator of each group: its non-NULL count, then its
// sum by kind (a bigint's with a flag byte and, when set, its decimal spill).
func (a *numAcc) encode(gids []uint32, vals [][]byte) {
	encodeInt64s(a.nn, gids, vals)
	for i, g := range gids {
		v := vals[i]
		switch a.kind {
		case arrow.INT64:
			v = binary.AppendVarint(v, a.ints[g])
			if a.spill != nil && a.spill[g] != (decimal128.Num{}) {
				v = appendDecimal(append(v, 1), a.spill[g])
			} else {
				v = append(v, 0)
			}
		case arrow.FLOAT64:
			v = binary.LittleEndian.AppendUint64(v, math.Float64bits(a.floats[g]))
		case arrow.DECIMAL128:
			v = appendDecimal(v, a.decs[g])
		}
		vals[i] = v
	}
}

func (a *numAcc) decode(gids []uint32, vals [][]byte, ngroups int) error {
	a.grow(ngroups)
	if err := decodeInt64s(a.nn, gids, vals); err != nil {
		return err
	}
	for i, g := range gids {
		var err error
		switch a.kind {
		case arrow.INT64:
			if a.ints[g], err = readVarint(&vals[i]); err != nil {
				return err
			}
			var flag []byte
			if flag, err = readBytes(&vals[i], 1); err != nil {
				return err
			}
			if flag[0] == 1 {
				if a.spill == nil {
					a.spill = make([]decimal128.Num, len(a.ints), cap(a.ints))
				}
				a.spill[g], err = readDecimal(&vals[i])
			} else if a.spill != nil {
				a.spill[g] = decimal128.Num{}
			}
		case arrow.FLOAT64:
			var b []byte
			if b, err = readBytes(&vals[i], 8); err == nil {
				a.floats[g] = math.Float64frombits(binary.LittleEndian.Uint64(b))
			}
		case arrow.DECIMAL128:
			a.decs[g], err = readDecimal(&vals[i])
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (a *numAcc) clear() {
	a.nn, a.ints, a.floats, a.decs = a.nn[:0], a.ints[:0], a.floats[:0], a.decs[:0]
	if a.spill != nil {
		a.spill = a.spill[:0]
	}
}

func (a *numAcc) inputType() arrow.DataType {
	switch a.kind {
	case arrow.INT64:
		return arrow.PrimitiveTypes.Int64
	case arrow.FLOAT64:
		return arrow.PrimitiveTypes.Float64
	case arrow.DECIMAL128:
		return &arrow.Decimal128Type{Precision: 38, Scale: a.scale}
	}
	return nil
}

func (a *numAcc) setInputType(dt arrow.DataType) error {
	switch dt.ID() {
	case arrow.INT64, arrow.FLOAT64:
	case arrow.DECIMAL128:
		a.scale = dt.(*arrow.Decimal128Type).Scale
	default:
		return fmt.Errorf("hash_agg: a sum of %s", dt)
	}
	a.kind = dt.ID()
	return nil
}

func (a *sumAgg) encodeSlots(gids []uint32, vals [][]byte) { a.acc.encode(gids, vals) }

func (a *sumAgg) decodeSlots(gids []uint32, vals [][]byte, ngroups int) error {
	return a.acc.decode(gids, vals, ngroups)
}

func (a *sumAgg) clearSlots()                          { a.acc.clear() }
func (a *sumAgg) inputType() arrow.DataType            { return a.acc.inputType() }
func (a *sumAgg) setInputType(dt arrow.DataType) error { return a.acc.setInputType(dt) }

func (a *avgAgg) encodeSlots(gids []uint32, vals [][]byte) {
	a.acc.encode(gids, vals)
	if a.countCol >= 0 {
		encodeInt64s(a.counts, gids, vals)
	}
}

func (a *avgAgg) decodeSlots(gids []uint32, vals [][]byte, ngroups int) error {
	if err := a.acc.decode(gids, vals, ngroups); err != nil {
		return err
	}
	if a.countCol < 0 {
		return nil
	}
	a.counts = vector.GrowZero(a.counts, ngroups)
	return decodeInt64s(a.counts, gids, vals)
}

func (a *avgAgg) clearSlots() {
	a.acc.clear()
	a.counts = a.counts[:0]
}

func (a *avgAgg) inputType() arrow.DataType            { return a.acc.inputType() }
func (a *avgAgg) setInputType(dt arrow.DataType) error { return a.acc.setInputType(dt) }

// encodeSlots appends a byte saying whether the group has a value, then the
// value by kind (text as a length and its bytes).
func (a *minMaxAgg) encodeSlots(gids []uint32, vals [][]byte) {
	for i, g := range gids {
		v := vals[i]
		if len(a.has) <= int(g) || !a.has[g] {
			vals[i] = append(v, 0)
			continue
		}
		v = append(v, 1)
		switch a.kind {
		case arrow.INT64, arrow.TIMESTAMP:
			v = binary.AppendVarint(v, a.ints[g])
		case arrow.FLOAT64:
			v = binary.LittleEndian.AppendUint64(v, math.Float64bits(a.floats[g]))
		case arrow.DECIMAL128:
			v = appendDecimal(v, a.decs[g])
		case arrow.BOOL:
			b := byte(0)
			if a.bools[g] {
				b = 1
			}
			v = append(v, b)
		case arrow.STRING:
			v = binary.AppendUvarint(v, uint64(len(a.strs[g])))
			v = append(v, a.strs[g]...)
		}
		vals[i] = v
	}
}

func (a *minMaxAgg) decodeSlots(gids []uint32, vals [][]byte, ngroups int) error {
	a.grow(ngroups)
	for i, g := range gids {
		flag, err := readBytes(&vals[i], 1)
		if err != nil {
			return err
		}
		a.has[g] = flag[0] == 1
		if !a.has[g] {
			continue
		}
		switch a.kind {
		case arrow.INT64, arrow.TIMESTAMP:
			a.ints[g], err = readVarint(&vals[i])
		case arrow.FLOAT64:
			var b []byte
			if b, err = readBytes(&vals[i], 8); err == nil {
				a.floats[g] = math.Float64frombits(binary.LittleEndian.Uint64(b))
			}
		case arrow.DECIMAL128:
			a.decs[g], err = readDecimal(&vals[i])
		case arrow.BOOL:
			var b []byte
			if b, err = readBytes(&vals[i], 1); err == nil {
				a.bools[g] = b[0] == 1
			}
		case arrow.STRING:
			n, k := binary.Uvarint(vals[i])
			if k <= 0 {
				return errShortValue
			}
			vals[i] = vals[i][k:]
			var b []byte
			if b, err = readBytes(&vals[i], int(n)); err == nil {
				a.strs[g] = append([]byte(nil), b...)
				a.strBytes += int64(cap(a.strs[g]))
			}
		default:
			err = fmt.Errorf("hash_agg: disk state: a min/max value of %v", a.dt)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (a *minMaxAgg) clearSlots() {
	a.has, a.ints, a.floats, a.decs, a.bools = a.has[:0], a.ints[:0], a.floats[:0], a.decs[:0], a.bools[:0]
	clear(a.strs)
	a.strs, a.strBytes = a.strs[:0], 0
}

func (a *minMaxAgg) inputType() arrow.DataType { return a.dt }

func (a *minMaxAgg) setInputType(dt arrow.DataType) error {
	switch dt.ID() {
	case arrow.INT64, arrow.TIMESTAMP, arrow.FLOAT64, arrow.DECIMAL128, arrow.BOOL, arrow.STRING, arrow.NULL:
	default:
		return fmt.Errorf("hash_agg: min/max of %s", dt)
	}
	a.kind, a.dt = dt.ID(), dt
	return nil
}
