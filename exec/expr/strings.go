package expr

// Text functions. Lengths and positions count characters (UTF-8 code points),
// not bytes, as PostgreSQL does in a UTF-8 database. Rows of pure ASCII, by far
// the common case, skip UTF-8 decoding.

import (
	"bytes"
	"encoding/binary"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

var errNegativeLength = newError(ErrInvalidArgument, "negative substring length not allowed")

// isASCII reports whether b has no byte >= 0x80, eight bytes at a time.
func isASCII(b []byte) bool {
	for len(b) >= 8 {
		w := uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
			uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
		if w&0x8080808080808080 != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// unsafeString views b as a string without copying; the string must not outlive
// the call it is passed to.
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// textArg is a String argument's buffers: a column, or a literal kept as one
// row (see kernelMode), whose row(i) is row 0 for every i.
type textArg struct {
	offs []int32
	data []byte
	m    int // -1 for a column, 0 for a one-row literal
}

func textOf(a arrow.Array) textArg {
	offs, data := stringData(a.(*array.String))
	m := -1
	if a.Len() == 1 {
		m = 0
	}
	return textArg{offs, data, m}
}

// row returns row i's bytes.
func (t textArg) row(i int) []byte {
	i &= t.m
	return t.data[t.offs[i]:t.offs[i+1]]
}

// all returns the bytes of every row.
func (t textArg) all() []byte { return t.data[t.offs[0]:t.offs[len(t.offs)-1]] }

// lowerASCII and upperASCII map each byte to its ASCII lower or upper case,
// leaving other bytes as they are.
var lowerASCII, upperASCII = asciiCaseTables()

func asciiCaseTables() (lower, upper [256]byte) {
	for i := range 256 {
		lower[i], upper[i] = byte(i), byte(i)
		if i >= 'A' && i <= 'Z' {
			lower[i] = byte(i) + 'a' - 'A'
		}
		if i >= 'a' && i <= 'z' {
			upper[i] = byte(i) - 'a' + 'A'
		}
	}
	return lower, upper
}

// evalCaseMap computes lower and upper. When the whole column is ASCII it maps
// the data buffer in one pass and reuses the offsets' shape; otherwise rows map
// rune by rune (Unicode case mapping, as PostgreSQL in a UTF-8 locale).
func evalCaseMap(c *call) (arrow.Array, error) {
	in := textOf(c.args[0])
	table, mapRune := &lowerASCII, unicode.ToLower
	if c.e.Func == "upper" {
		table, mapRune = &upperASCII, unicode.ToUpper
	}
	valid, nulls := validity(c.mem, c.n, c.args[0])
	src := in.all()
	data, d := newValues[uint8](c.mem, len(src))
	if asciiCaseMap(d, src, c.e.Func == "upper") {
		// The strings keep their lengths: the input's offsets serve as they
		// are when they start at 0, as a column's usually do.
		if arg := c.args[0].Data(); arg.Offset() == 0 && in.offs[0] == 0 && arg.Len() == c.n && arg.Buffers()[1] != nil {
			offs := arg.Buffers()[1]
			offs.Retain()
			return finish(arrow.BinaryTypes.String, c.n, nulls, valid, offs, data), nil
		}
		offs, o := newValues[int32](c.mem, c.n+1)
		base := in.offs[0]
		for i, v := range in.offs {
			o[i] = v - base
		}
		return finish(arrow.BinaryTypes.String, c.n, nulls, valid, offs, data), nil
	}
	data.Release()
	sb := newStringBuilder(c.mem, c.n, len(src))
	for i := range c.n {
		s := in.row(i)
		if isASCII(s) {
			for _, ch := range s {
				sb.writeByte(table[ch])
			}
		} else {
			for _, r := range unsafeString(s) {
				sb.writeRune(mapRune(r))
			}
		}
		sb.end()
	}
	sb.valid, sb.nulls = valid, nulls
	return sb.array(), nil
}

// evalLength computes length / char_length (characters) and octet_length (bytes).
func evalLength(c *call) (arrow.Array, error) {
	in := textOf(c.args[0])
	valid, nulls := validity(c.mem, c.n, c.args[0])
	data, out := newValues[int64](c.mem, c.n)
	bytesOnly := c.e.Func == "octet_length" || isASCII(in.all())
	for i := range c.n {
		if bytesOnly {
			out[i] = int64(in.offs[i+1] - in.offs[i])
		} else {
			out[i] = int64(utf8.RuneCount(in.row(i)))
		}
	}
	return finish(arrow.PrimitiveTypes.Int64, c.n, nulls, valid, data), nil
}

// skipChars returns the byte offset in s after n characters (len(s) if s is shorter).
func skipChars(s []byte, n int64) int {
	if n <= 0 {
		return 0
	}
	i := 0
	for ; i < len(s) && n > 0; n-- {
		if s[i] < utf8.RuneSelf {
			i++
		} else {
			_, size := utf8.DecodeRune(s[i:])
			i += size
		}
	}
	return i
}

// charCount returns the number of characters in s.
func charCount(s []byte) int64 {
	if isASCII(s) {
		return int64(len(s))
	}
	return int64(utf8.RuneCount(s))
}

// evalSubstring computes substring(s, start [, count]) as PostgreSQL does: the
// characters at 1-based positions [start, start+count) that exist, so a start
// below 1 eats into the count (substring('hello', 0, 3) = 'he'); a negative
// count is an error.
func evalSubstring(c *call) (arrow.Array, error) {
	in := textOf(c.args[0])
	start := int64Arg(c.args[1])
	var count vals[int64]
	if len(c.args) == 3 {
		count = int64Arg(c.args[2])
	}
	valid, nulls := validity(c.mem, c.n, c.args...)
	sb := newStringBuilder(c.mem, c.n, len(in.all()))
	for i := range c.n {
		if !validAt(valid, i) {
			sb.end()
			continue
		}
		s, from := in.row(i), start.at(i)
		var out []byte
		if count.v == nil {
			out = s[skipChars(s, from-1):]
		} else {
			n := count.at(i)
			if n < 0 {
				sb.release()
				if valid != nil {
					valid.Release()
				}
				return nil, errNegativeLength
			}
			end := from + n
			if end < from { // overflow: to the end
				end = 1<<63 - 1
			}
			if end > 1 {
				b := skipChars(s, max(from, 1)-1)
				out = s[b:]
				out = out[:skipChars(out, end-max(from, 1))]
			}
		}
		sb.write(out)
		sb.end()
	}
	sb.valid, sb.nulls = valid, nulls
	return sb.array(), nil
}

// evalConcat computes concat (NULL arguments count as empty text; never NULL)
// and || (NULL if either side is).
func evalConcat(c *call) (arrow.Array, error) {
	ins := make([]textArg, len(c.args))
	total := 0
	for i, a := range c.args {
		ins[i] = textOf(a)
		total += len(ins[i].all())
	}
	var valid *memory.Buffer
	nulls := 0
	if c.e.Func == "||" {
		valid, nulls = validity(c.mem, c.n, c.args...)
	}
	srcs := make([]source, len(c.args))
	for i, a := range c.args {
		srcs[i] = sourceOf(a)
	}
	sb := newStringBuilder(c.mem, c.n, total)
	for i := range c.n {
		if validAt(valid, i) {
			for k, in := range ins {
				if s := &srcs[k]; s.valid == nil || validBit(s, i) {
					sb.write(in.row(i))
				}
			}
		}
		sb.end()
	}
	sb.valid, sb.nulls = valid, nulls
	return sb.array(), nil
}

// validBit reports whether row i of a source with NULLs is valid.
func validBit(s *source, i int) bool {
	return !s.all && bitIsSet(s.valid, s.voff+i)
}

// evalTrim computes trim/btrim, ltrim and rtrim: characters in the set (default
// a space) are removed from both ends, the start or the end.
func evalTrim(c *call) (arrow.Array, error) {
	in := textOf(c.args[0])
	var set textArg
	if len(c.args) == 2 {
		set = textOf(c.args[1])
	}
	valid, nulls := validity(c.mem, c.n, c.args...)
	left, right := c.e.Func != "rtrim", c.e.Func != "ltrim"
	sb := newStringBuilder(c.mem, c.n, len(in.all()))
	for i := range c.n {
		if validAt(valid, i) {
			s, cut := in.row(i), " "
			if set.offs != nil {
				cut = unsafeString(set.row(i))
			}
			if left {
				s = bytes.TrimLeft(s, cut)
			}
			if right {
				s = bytes.TrimRight(s, cut)
			}
			sb.write(s)
		}
		sb.end()
	}
	sb.valid, sb.nulls = valid, nulls
	return sb.array(), nil
}

// evalReplace computes replace(s, from, to); an empty from leaves s as it is.
func evalReplace(c *call) (arrow.Array, error) {
	in, from, to := textOf(c.args[0]), textOf(c.args[1]), textOf(c.args[2])
	valid, nulls := validity(c.mem, c.n, c.args...)
	sb := newStringBuilder(c.mem, c.n, len(in.all()))
	for i := range c.n {
		if validAt(valid, i) {
			s, f, t := in.row(i), from.row(i), to.row(i)
			if len(f) > 0 {
				for {
					j := bytes.Index(s, f)
					if j < 0 {
						break
					}
					sb.write(s[:j])
					sb.write(t)
					s = s[j+len(f):]
				}
			}
			sb.write(s)
		}
		sb.end()
	}
	sb.valid, sb.nulls = valid, nulls
	return sb.array(), nil
}

// evalStrpos computes strpos(s, sub) and position(sub, s): the 1-based character
// position of the first sub in s, 0 if none, 1 for an empty sub.
func evalStrpos(c *call) (arrow.Array, error) {
	hay, needle := textOf(c.args[0]), textOf(c.args[1])
	if c.e.Func == "position" {
		hay, needle = needle, hay
	}
	valid, nulls := validity(c.mem, c.n, c.args...)
	data, out := newValues[int64](c.mem, c.n)
	for i := range c.n {
		if !validAt(valid, i) {
			continue
		}
		s := hay.row(i)
		if j := bytes.Index(s, needle.row(i)); j >= 0 {
			out[i] = charCount(s[:j]) + 1
		}
	}
	return finish(arrow.PrimitiveTypes.Int64, c.n, nulls, valid, data), nil
}

// evalLeftRight computes left(s, n) and right(s, n): the first or last n
// characters; a negative n means all but the last or first |n|.
func evalLeftRight(c *call) (arrow.Array, error) {
	in := textOf(c.args[0])
	ns := int64Arg(c.args[1])
	isLeft := c.e.Func == "left"
	valid, nulls := validity(c.mem, c.n, c.args...)
	sb := newStringBuilder(c.mem, c.n, len(in.all()))
	for i := range c.n {
		if validAt(valid, i) {
			s, n := in.row(i), ns.at(i)
			total := charCount(s)
			keep := n // characters to keep
			if n < 0 {
				keep = max(total+n, 0)
			}
			keep = min(keep, total)
			if isLeft {
				sb.write(s[:skipChars(s, keep)])
			} else {
				sb.write(s[skipChars(s, total-keep):])
			}
		}
		sb.end()
	}
	sb.valid, sb.nulls = valid, nulls
	return sb.array(), nil
}

// evalSplitPart is split_part(s, delimiter, n), as PostgreSQL's: the n-th
// field of s split at delimiter, counted from the end when n is negative, ""
// past the last; an empty delimiter leaves s whole (field 1 or -1); n = 0 is
// an error.
func evalSplitPart(c *call) (arrow.Array, error) {
	in, delim := textOf(c.args[0]), textOf(c.args[1])
	ns := int64Arg(c.args[2])
	valid, nulls := validity(c.mem, c.n, c.args...)
	sb := newStringBuilder(c.mem, c.n, len(in.all()))
	for i := range c.n {
		if validAt(valid, i) {
			s, d, n := in.row(i), delim.row(i), ns.at(i)
			if n == 0 {
				sb.release()
				if valid != nil {
					valid.Release()
				}
				return nil, newError(ErrInvalidArgument, "field position must not be zero")
			}
			var fields [][]byte
			if len(d) == 0 {
				fields = [][]byte{s}
			} else {
				fields = bytes.Split(s, d)
			}
			k := n - 1
			if n < 0 {
				k = int64(len(fields)) + n
			}
			if k >= 0 && k < int64(len(fields)) {
				sb.write(fields[k])
			}
		}
		sb.end()
	}
	sb.valid, sb.nulls = valid, nulls
	return sb.array(), nil
}

// evalReverse reverses the characters of each row.
func evalReverse(c *call) (arrow.Array, error) {
	in := textOf(c.args[0])
	valid, nulls := validity(c.mem, c.n, c.args[0])
	sb := newStringBuilder(c.mem, c.n, len(in.all()))
	for i := range c.n {
		if validAt(valid, i) {
			s := in.row(i)
			for j := len(s); j > 0; {
				_, size := utf8.DecodeLastRune(s[:j])
				sb.write(s[j-size : j])
				j -= size
			}
		}
		sb.end()
	}
	sb.valid, sb.nulls = valid, nulls
	return sb.array(), nil
}

// asciiCaseMap writes src lower-cased (or upper-cased) into dst, eight bytes at a
// time, and reports true; if src has a byte outside ASCII it stops and reports
// false, leaving dst partly written. For a byte b < 0x80, b+0x3f has its high bit
// set iff b >= 'A', and b+0x25 iff b > 'Z' (no carry can cross into the next
// byte), so the two sums mark the upper-case letters, whose 0x20 bit is then set.
func asciiCaseMap(dst, src []byte, upper bool) bool {
	const hi = 0x8080808080808080
	addA, addZ := uint64(0x3f3f3f3f3f3f3f3f), uint64(0x2525252525252525) // 'A'..'Z'
	if upper {
		addA, addZ = 0x1f1f1f1f1f1f1f1f, 0x0505050505050505 // 'a'..'z'
	}
	i := 0
	for ; i+8 <= len(src); i += 8 {
		w := binary.LittleEndian.Uint64(src[i:])
		if w&hi != 0 {
			return false
		}
		m := ((w + addA) &^ (w + addZ)) & hi
		if upper {
			w &^= m >> 2
		} else {
			w |= m >> 2
		}
		binary.LittleEndian.PutUint64(dst[i:], w)
	}
	table := &lowerASCII
	if upper {
		table = &upperASCII
	}
	for ; i < len(src); i++ {
		if src[i] >= utf8.RuneSelf {
			return false
		}
		dst[i] = table[src[i]]
	}
	return true
}
