package expr

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec/types"
)

// Casts of the PostgreSQL types the engine holds as one of its own
// (types.Type.OID): between a held type and the type holding it a value stays
// as it is (name to text, regclass to bigint, timestamptz to timestamp in
// UTC), except where PostgreSQL's input or output function differs: bytea
// reads and prints its hex format, timestamptz text its zone.

// castHeld converts a from one of the held types, or to one, when that needs
// more than castArray's conversion of the holding types; ok is false when it
// does not.
func castHeld(a arrow.Array, from, to types.Type, mem memory.Allocator) (out arrow.Array, ok bool, err error) {
	if narrow(to) && from != to {
		held, err := castArray(a, from, to.Base(), mem)
		if err != nil {
			return nil, true, err
		}
		defer held.Release()
		out, err = narrowTo(held, to, mem)
		if errors.Is(err, ErrOutOfRange) && from.ID == types.String && to.ID == types.Int64 {
			err = rangeOfText(a, held, to) // int4in's message names the text
		}
		return out, true, err
	}
	switch {
	case to.OID == types.OIDBytea && from.ID == types.String && from.OID != types.OIDBytea:
		out, err = mapText(a, mem, func(dst, s []byte) ([]byte, error) { return appendByteaInput(dst, s) })
		return out, true, err
	case from.OID == types.OIDBytea && to.ID == types.String && to.OID != types.OIDBytea:
		out, err = mapText(a, mem, func(dst, s []byte) ([]byte, error) { return types.AppendBytea(dst, string(s)), nil })
		return out, true, err
	case to.OID == types.OIDInterval && from.ID == types.String && from.OID != types.OIDInterval:
		out, err = mapText(a, mem, intervalText)
		return out, true, err
	case to.OID == types.OIDTimestamptz && from.ID == types.String:
		out, err = parseTimestamps(a, mem, ParseTimestampTZ)
		return out, true, err
	case from.Base() == to.Base():
		a.Retain()
		return a, true, nil
	}
	return nil, false, nil
}

// narrow reports whether a cast to t checks its values: to a smallint,
// integer, oid, real, character varying(n) or character.
func narrow(t types.Type) bool {
	return t.Narrow() && !(t.OID == types.OIDVarchar && t.Len == 0)
}

// narrowTo returns a, an array of to's holding type, as values of to, or
// fails as PostgreSQL's assignment to to does (NarrowInt, NarrowFloat,
// NarrowText).
func narrowTo(a arrow.Array, to types.Type, mem memory.Allocator) (arrow.Array, error) {
	if lo, hi, ok := to.IntRange(); ok {
		vs, wrap := int64Values(a), false
		if inRange(vs, lo, hi) { // the common case, in one tight loop
			a.Retain()
			return a, nil
		}
		for i, v := range vs {
			if !a.IsValid(i) {
				continue
			}
			held, err := NarrowInt(to, v)
			if err != nil {
				return nil, err
			}
			wrap = wrap || held != v
		}
		if !wrap {
			a.Retain()
			return a, nil
		}
		n := a.Len()
		valid, nulls := validity(mem, n, a)
		data, out := newValues[int64](mem, n)
		for i, v := range vs {
			out[i], _ = NarrowInt(to, v)
		}
		return finish(types.Int64Type.Arrow(), n, nulls, valid, data), nil
	}
	if to.OID == types.OIDFloat4 {
		n := a.Len()
		valid, nulls := validity(mem, n, a)
		data, out := newValues[float64](mem, n)
		for i, v := range a.(*array.Float64).Float64Values() {
			if !validAt(valid, i) {
				continue
			}
			f, err := NarrowFloat(to, v)
			if err != nil {
				data.Release()
				if valid != nil {
					valid.Release()
				}
				return nil, err
			}
			out[i] = f
		}
		return finish(types.Float64Type.Arrow(), n, nulls, valid, data), nil
	}
	return mapText(a, mem, func(dst, s []byte) ([]byte, error) {
		s, err := NarrowText(to, s)
		return append(dst, s...), err
	})
}

// inRange reports whether every value of vs (NULLs' slots too) is in
// [lo, hi].
func inRange(vs []int64, lo, hi int64) bool {
	ok := true
	for _, v := range vs {
		ok = ok && v >= lo && v <= hi
	}
	return ok
}

// NarrowInt returns v as a value of the integer type t (a smallint,
// integer or oid), or PostgreSQL's error for v out of t's range (22003).
// An oid takes what fits an integer too, a negative one as PostgreSQL's
// cast from integer reads it: -1 is 4294967295.
func NarrowInt(t types.Type, v int64) (int64, error) {
	lo, hi, ok := t.IntRange()
	if t.OID == types.OIDOid && v < 0 && v >= math.MinInt32 {
		return v + 1<<32, nil
	}
	if ok && (v < lo || v > hi) {
		what := map[uint32]string{types.OIDInt2: "smallint", types.OIDInt4: "integer", types.OIDOid: "OID"}[t.OID]
		return 0, newError(ErrOutOfRange, "%s out of range", what)
	}
	return v, nil
}

// NarrowFloat returns v as a value of t: rounded to a float4's precision
// for a real, or the error of a finite v too large or too small (but not
// 0) for one (22003).
func NarrowFloat(t types.Type, v float64) (float64, error) {
	if t.OID != types.OIDFloat4 {
		return v, nil
	}
	f := float32(v)
	switch {
	case math.IsInf(float64(f), 0) && !math.IsInf(v, 0):
		return 0, errFloatOver
	case f == 0 && v != 0:
		return 0, errFloatUnder
	}
	return float64(f), nil
}

// NarrowText returns s as a value of the character type t: longer than
// t's length is an error (22001) unless what is past it is blanks, which
// go; a character(n) loses its trailing blanks (see types.OIDBpchar). The
// result shares s's bytes.
func NarrowText(t types.Type, s []byte) ([]byte, error) {
	if t.Len > 0 && len(s) > int(t.Len) && utf8.RuneCount(s) > int(t.Len) {
		cut := 0
		for range t.Len {
			_, size := utf8.DecodeRune(s[cut:])
			cut += size
		}
		if len(bytes.TrimRight(s[cut:], " ")) > 0 {
			return nil, newError(ErrTooLong, "value too long for type %s", t)
		}
		s = s[:cut]
	}
	if t.OID == types.OIDBpchar {
		s = bytes.TrimRight(s, " ")
	}
	return s, nil
}

// rangeOfText is the error of the first row of text whose integer held is
// out of to's range, as PostgreSQL's input function reports it.
func rangeOfText(text, held arrow.Array, to types.Type) error {
	for i, v := range int64Values(held) {
		if _, err := NarrowInt(to, v); err != nil && held.IsValid(i) {
			return newError(ErrOutOfRange, "value \"%s\" is out of range for type %s", textOf(text).row(i), to)
		}
	}
	return nil
}

// appendHeldText appends row i of a held type's array in PostgreSQL's text
// output; ok is false for the types whose text is their holding type's.
func appendHeldText(dst []byte, a arrow.Array, t types.Type, i int) ([]byte, bool) {
	switch t.OID {
	case types.OIDTimestamptz:
		return types.AppendTimestamptz(dst, int64Values(a)[i]), true
	case types.OIDBytea:
		return types.AppendBytea(dst, string(textOf(a).row(i))), true
	case types.OIDFloat4:
		return types.AppendFloat4(dst, a.(*array.Float64).Value(i)), true
	}
	return dst, false
}

// mapText returns the text array of f applied to each non-NULL row of the
// text array a.
func mapText(a arrow.Array, mem memory.Allocator, f func(dst, s []byte) ([]byte, error)) (arrow.Array, error) {
	n := a.Len()
	valid, nulls := validity(mem, n, a)
	in := textOf(a)
	sb := newStringBuilder(mem, n, len(in.data))
	var buf []byte
	for i := range n {
		if validAt(valid, i) {
			var err error
			if buf, err = f(buf[:0], in.row(i)); err != nil {
				sb.release()
				if valid != nil {
					valid.Release()
				}
				return nil, err
			}
			sb.write(buf)
		}
		sb.end()
	}
	sb.valid, sb.nulls = valid, nulls
	return sb.array(), nil
}

// parseTimestamps returns the timestamps parse reads from each non-NULL row of
// the text array a.
func parseTimestamps(a arrow.Array, mem memory.Allocator, parse func([]byte) (int64, error)) (arrow.Array, error) {
	n := a.Len()
	valid, nulls := validity(mem, n, a)
	in := textOf(a)
	data, out := newValues[int64](mem, n)
	for i := range n {
		if !validAt(valid, i) {
			continue
		}
		v, err := parse(in.row(i))
		if err != nil {
			data.Release()
			if valid != nil {
				valid.Release()
			}
			return nil, err
		}
		out[i] = v
	}
	return finish(types.TimestampType.Arrow(), n, nulls, valid, data), nil
}

// appendByteaInput appends the bytes bytea's input function reads from s:
// the hex format (\x then pairs of hex digits, blanks between pairs allowed)
// or the escape format (bytes as they are, \\ for a backslash, \ooo in octal).
func appendByteaInput(dst, s []byte) ([]byte, error) {
	if len(s) >= 2 && s[0] == '\\' && s[1] == 'x' {
		for i := 2; i < len(s); {
			if c := s[i]; c == ' ' || c == '\t' || c == '\n' || c == '\r' {
				i++
				continue
			}
			if i+1 >= len(s) {
				return nil, newError(ErrInvalidCast, "invalid hexadecimal data: odd number of digits")
			}
			var b [1]byte
			if _, err := hex.Decode(b[:], s[i:i+2]); err != nil {
				bad := s[i]
				if isHex(bad) {
					bad = s[i+1]
				}
				return nil, newError(ErrInvalidCast, "invalid hexadecimal digit: \"%c\"", bad)
			}
			dst = append(dst, b[0])
			i += 2
		}
		return dst, nil
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			dst = append(dst, c)
			continue
		}
		switch {
		case i+1 < len(s) && s[i+1] == '\\':
			dst = append(dst, '\\')
			i++
		case i+3 < len(s) && isOctal(s[i+1]) && s[i+1] <= '3' && isOctal(s[i+2]) && isOctal(s[i+3]):
			dst = append(dst, (s[i+1]-'0')<<6|(s[i+2]-'0')<<3|(s[i+3]-'0'))
			i += 3
		default:
			return nil, newError(ErrInvalidCast, "invalid input syntax for type bytea")
		}
	}
	return dst, nil
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isOctal(c byte) bool { return '0' <= c && c <= '7' }
