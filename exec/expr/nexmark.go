package expr

import (
	"bytes"
	"regexp"

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
