package expr

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"

	"github.com/hummer-db/hummer/exec/types"
)

// Functions of Flink SQL the Nexmark suite's queries call:
//
//	regexp_extract(s, pattern[, group])  the text of group (0: the whole match) of
//	                                     pattern's first match in s; NULL without one
//	                                     (Go's regular expressions: RE2)
//	count_char(s, c)                     how many times the character c is in s (the
//	                                     suite's CountChar function, q14)
//	proctime()                           processing time: the wall clock when the row
//	                                     is computed, to the millisecond (TIMESTAMP(3)),
//	                                     never folded as a constant (Volatile)
//	split_index(s, sep, i)               field i, from 0, of s split at each sep;
//	                                     NULL for a negative i, one past the last
//	                                     field, or an empty s (Flink's SPLIT_INDEX,
//	                                     q22; split_part counts from 1 and gives '')

// evalRegexpExtract is regexp_extract.
func evalRegexpExtract(c *call) (arrow.Array, error) {
	in, pat := textOf(c.args[0]), textOf(c.args[1])
	var group vals[int64]
	if len(c.args) > 2 {
		group = int64Arg(c.args[2])
	}
	valid, _ := validity(c.mem, c.n, c.args...)
	sb := newStringBuilder(c.mem, c.n, len(in.all()))
	out := newBitmap(c.mem, c.n)
	var re *regexp.Regexp
	last := ""
	for i := range c.n {
		if validAt(valid, i) {
			if p := string(pat.row(i)); re == nil || p != last {
				var err error
				if re, err = regexp.Compile(p); err != nil {
					sb.release()
					releaseBuffer(valid)
					out.Release()
					return nil, newError(ErrInvalidArgument, "invalid regular expression: %v", err)
				}
				last = p
			}
			g := int64(0)
			if len(c.args) > 2 {
				g = group.at(i)
			}
			if m := re.FindSubmatchIndex(in.row(i)); m != nil && g >= 0 && int(2*g+1) < len(m) && m[2*g] >= 0 {
				sb.write(in.row(i)[m[2*g]:m[2*g+1]])
				bitutil.SetBit(out.Bytes(), i)
			}
		}
		sb.end()
	}
	releaseBuffer(valid)
	sb.valid, sb.nulls = out, c.n-bitutil.CountSetBits(out.Bytes(), 0, c.n)
	return sb.array(), nil
}

// evalCountChar is count_char.
func evalCountChar(c *call) (arrow.Array, error) {
	in, ch := textOf(c.args[0]), textOf(c.args[1])
	valid, nulls := validity(c.mem, c.n, c.args...)
	data, out := newValues[int64](c.mem, c.n)
	for i := range c.n {
		if validAt(valid, i) {
			if sep := ch.row(i); len(sep) > 0 {
				out[i] = int64(bytes.Count(in.row(i), sep))
			}
		}
	}
	return finish(arrow.PrimitiveTypes.Int64, c.n, nulls, valid, data), nil
}

// evalProctime is proctime(): every row the current time.
func evalProctime(c *call) (arrow.Array, error) {
	now := time.Now().UnixMilli() * 1000
	data, out := newValues[int64](c.mem, c.n)
	for i := range out {
		out[i] = now
	}
	return finish(types.TimestampType.Arrow(), c.n, 0, nil, data), nil
}

// evalSplitIndex is split_index.
func evalSplitIndex(c *call) (arrow.Array, error) {
	in, sep := textOf(c.args[0]), textOf(c.args[1])
	idx := int64Arg(c.args[2])
	valid, _ := validity(c.mem, c.n, c.args...)
	sb := newStringBuilder(c.mem, c.n, len(in.all()))
	out := newBitmap(c.mem, c.n)
	for i := range c.n {
		if validAt(valid, i) {
			if f, ok := splitField(in.row(i), sep.row(i), idx.at(i)); ok {
				sb.write(f)
				bitutil.SetBit(out.Bytes(), i)
			}
		}
		sb.end()
	}
	releaseBuffer(valid)
	sb.valid, sb.nulls = out, c.n-bitutil.CountSetBits(out.Bytes(), 0, c.n)
	return sb.array(), nil
}

// splitField returns field k (from 0) of s split at every sep, adjacent
// separators making empty fields, as Flink's splitByWholeSeparatorPreserveAllTokens
// does (an empty sep: at each whitespace byte); ok is false when there is no
// such field.
func splitField(s, sep []byte, k int64) ([]byte, bool) {
	if k < 0 || len(s) == 0 {
		return nil, false
	}
	for ; ; k-- {
		var i, n int
		if len(sep) == 0 {
			i, n = bytes.IndexAny(s, " \t\n\r\f\v"), 1
		} else {
			i, n = bytes.Index(s, sep), len(sep)
		}
		if i < 0 {
			return s, k == 0
		}
		if k == 0 {
			return s[:i], true
		}
		s = s[i+n:]
	}
}

// resolveRegexpExtract types regexp_extract(s, pattern[, group]).
func resolveRegexpExtract(args []types.Type) (Signature, bool) {
	switch {
	case len(args) == 2 && accepts(types.StringType, args[0]) && accepts(types.StringType, args[1]):
		return Signature{Args: []types.Type{types.StringType, types.StringType}, Result: types.StringType}, true
	case len(args) == 3 && accepts(types.StringType, args[0]) && accepts(types.StringType, args[1]) && accepts(types.Int64Type, args[2]):
		return Signature{Args: []types.Type{types.StringType, types.StringType, types.Int64Type}, Result: types.StringType}, true
	}
	return Signature{}, false
}

// javaDateFormat formats t by a Java SimpleDateFormat pattern, as Flink's
// DATE_FORMAT does: yyyy yy MM M dd d HH H hh h mm m ss s SSS a, 'quoted'
// text (” a quote); other letters and characters as they are.
func javaDateFormat(t time.Time, pattern string) string {
	var b strings.Builder
	num := func(v, width int) {
		s := strconv.Itoa(v)
		for len(s) < width {
			s = "0" + s
		}
		b.WriteString(s)
	}
	for i := 0; i < len(pattern); {
		c := pattern[i]
		if c == '\'' {
			// Quoted text, '' a quote inside or out.
			j := i + 1
			if j < len(pattern) && pattern[j] == '\'' {
				b.WriteByte('\'')
				i = j + 1
				continue
			}
			for j < len(pattern) {
				if pattern[j] == '\'' {
					if j+1 < len(pattern) && pattern[j+1] == '\'' {
						b.WriteByte('\'')
						j += 2
						continue
					}
					break
				}
				b.WriteByte(pattern[j])
				j++
			}
			i = j + 1
			continue
		}
		n := 1
		for i+n < len(pattern) && pattern[i+n] == c {
			n++
		}
		h12 := t.Hour() % 12
		if h12 == 0 {
			h12 = 12
		}
		switch c {
		case 'y':
			if n == 2 {
				num(t.Year()%100, 2)
			} else {
				num(t.Year(), n)
			}
		case 'M':
			num(int(t.Month()), n)
		case 'd':
			num(t.Day(), n)
		case 'H':
			num(t.Hour(), n)
		case 'h':
			num(h12, n)
		case 'm':
			num(t.Minute(), n)
		case 's':
			num(t.Second(), n)
		case 'S':
			num(t.Nanosecond()/1e6, 3)
		case 'a':
			if t.Hour() < 12 {
				b.WriteString("AM")
			} else {
				b.WriteString("PM")
			}
		default:
			b.WriteString(pattern[i : i+n])
		}
		i += n
	}
	return b.String()
}
