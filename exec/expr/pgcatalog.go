package expr

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec/types"
)

// The functions PostgreSQL's clients call about the system catalog that need
// nothing but their arguments: regular-expression matches (the ~ operator),
// the text form of arrays (Hummer holds the catalog's arrays as that text),
// and format_type.

// evalRegexpLike is regexp_like(s, pattern[, flags]): whether pattern
// matches somewhere in s, PostgreSQL's s ~ pattern.
func evalRegexpLike(c *call) (arrow.Array, error) {
	in, pat := textOf(c.args[0]), textOf(c.args[1])
	var flags textArg
	hasFlags := len(c.args) > 2
	if hasFlags {
		flags = textOf(c.args[2])
	}
	valid, nulls := validity(c.mem, c.n, c.args...)
	out := newBitmap(c.mem, c.n)
	ob := out.Bytes()
	var (
		lastPat, lastFlags string
		re                 *regexp.Regexp
	)
	for i := range c.n {
		if !validAt(valid, i) {
			continue
		}
		p, f := string(pat.row(i)), ""
		if hasFlags {
			f = string(flags.row(i))
		}
		if re == nil || p != lastPat || f != lastFlags {
			var err error
			if re, _, err = compileRegexp(p, f); err != nil {
				out.Release()
				releaseBuffer(valid)
				return nil, err
			}
			lastPat, lastFlags = p, f
		}
		if re.Match(in.row(i)) {
			bitutil.SetBit(ob, i)
		}
	}
	return finish(arrow.FixedWidthTypes.Boolean, c.n, nulls, valid, out), nil
}

// evalArrayElement is array_element(x): x as an element of an array's text
// form, double-quoted (with \ before " and \) when it is empty or holds a
// blank, a brace, a comma, a quote or a backslash. NULL stays NULL, so that
// GROUP_CONCAT leaves it out: the dialect layer's array_agg is the array of
// a group's values that are not NULL (PostgreSQL's keeps NULLs; the outer
// join a correlated ARRAY(subquery) is decorrelated into must not add one).
func evalArrayElement(c *call) (arrow.Array, error) {
	in := textOf(c.args[0])
	valid, nulls := validity(c.mem, c.n, c.args[0])
	sb := newStringBuilder(c.mem, c.n, len(in.all())+2*c.n)
	for i := range c.n {
		if validAt(valid, i) {
			sb.write([]byte(quoteArrayElement(string(in.row(i)))))
		}
		sb.end()
	}
	sb.valid, sb.nulls = valid, nulls
	return sb.array(), nil
}

func quoteArrayElement(s string) string {
	if s != "" && !strings.EqualFold(s, "null") && !strings.ContainsAny(s, " \t\n\r\f\v{},\"\\") {
		return s
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(s) + `"`
}

// parseArray splits an array's text form ({a,"b c",NULL}) into its
// elements, nil standing for NULL; a value that is not an array's text form
// is one element. Nested arrays are not read apart.
func parseArray(s string) []*string {
	s = strings.TrimSpace(s)
	if es, ok := parseVector(s); ok {
		return es
	}
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' {
		return []*string{&s}
	}
	body := s[1 : len(s)-1]
	var out []*string
	for i := 0; i < len(body); {
		for i < len(body) && body[i] == ' ' {
			i++
		}
		var b strings.Builder
		quoted := i < len(body) && body[i] == '"'
		if quoted {
			i++
			for i < len(body) && body[i] != '"' {
				if body[i] == '\\' && i+1 < len(body) {
					i++
				}
				b.WriteByte(body[i])
				i++
			}
			i++ // the closing quote
			for i < len(body) && body[i] != ',' {
				i++
			}
		} else {
			for i < len(body) && body[i] != ',' {
				b.WriteByte(body[i])
				i++
			}
		}
		i++ // the comma
		v := b.String()
		if !quoted {
			v = strings.TrimSpace(v)
			if strings.EqualFold(v, "null") {
				out = append(out, nil)
				continue
			}
		}
		out = append(out, &v)
	}
	return out
}

// evalArrayToString is array_to_string(array, sep[, null]): the elements
// joined by sep, NULLs left out (or written as null when given).
func evalArrayToString(c *call) (arrow.Array, error) {
	in, sep := textOf(c.args[0]), textOf(c.args[1])
	var nullText textArg
	hasNull := len(c.args) > 2
	if hasNull {
		nullText = textOf(c.args[2])
	}
	valid, nulls := validity(c.mem, c.n, c.args[0], c.args[1])
	sb := newStringBuilder(c.mem, c.n, len(in.all()))
	for i := range c.n {
		if validAt(valid, i) {
			first := true
			for _, e := range parseArray(string(in.row(i))) {
				if e == nil && (!hasNull || c.args[2].IsNull(i)) {
					continue
				}
				if !first {
					sb.write(sep.row(i))
				}
				first = false
				if e == nil {
					sb.write(nullText.row(i))
				} else {
					sb.write([]byte(*e))
				}
			}
		}
		sb.end()
	}
	sb.valid, sb.nulls = valid, nulls
	return sb.array(), nil
}

// evalArrayUpper is array_upper(array, 1) and array_length(array, 1): the
// number of elements (arrays start at 1), NULL for an empty array or
// another dimension.
func evalArrayUpper(c *call) (arrow.Array, error) {
	in, dim := textOf(c.args[0]), int64Arg(c.args[1])
	valid, nulls := validity(c.mem, c.n, c.args...)
	data, out := newValues[int64](c.mem, c.n)
	for i := range c.n {
		if !validAt(valid, i) {
			continue
		}
		n := len(parseArray(string(in.row(i))))
		v, vector := vectorOf(string(in.row(i))) // pgjdbc.go
		if vector {
			n = len(v)
		}
		if dim.at(i) != 1 || n == 0 {
			if valid == nil {
				valid = newBitmap(c.mem, c.n)
				bitutil.SetBitsTo(valid.Bytes(), 0, int64(c.n), true)
			}
			bitutil.ClearBit(valid.Bytes(), i)
			nulls++
			continue
		}
		out[i] = int64(n)
		if vector && c.e.Func == "array_upper" {
			out[i]-- // a vector's subscripts start at 0
		}
	}
	return finish(arrow.PrimitiveTypes.Int64, c.n, nulls, valid, data), nil
}

// pgTypeNames are format_type's names of the types the system catalog lists
// (pg_type's rows), by oid; an array type is its element's name and [].
var pgTypeNames = map[int64]string{
	16: "boolean", 17: "bytea", 18: `"char"`, 19: "name", 20: "bigint", 21: "smallint", 22: "int2vector",
	23: "integer", 24: "regproc", 25: "text", 26: "oid", 28: "xid", 30: "oidvector", 194: "pg_node_tree",
	700: "real", 701: "double precision", 1033: "aclitem", 1042: "bpchar", 1043: "character varying", 1082: "date",
	1114: "timestamp without time zone", 1184: "timestamp with time zone", 1186: "interval", 1700: "numeric",
	2205: "regclass", 2206: "regtype", 4089: "regnamespace",
}

// PgArrayTypes maps each array type's oid to its element's.
var PgArrayTypes = map[int64]int64{
	1000: 16, 1001: 17, 1002: 18, 1003: 19, 1016: 20, 1005: 21, 1006: 22, 1007: 23, 1008: 24, 1009: 25,
	1028: 26, 1011: 28, 1013: 30, 1021: 700, 1022: 701, 1034: 1033, 1014: 1042, 1015: 1043, 1182: 1082, 1115: 1114,
	1185: 1184, 1231: 1700, 2210: 2205, 2211: 2206, 4090: 4089,
}

// FormatType is PostgreSQL's format_type(oid, typmod): the SQL name of the
// type, with numeric's precision and scale and the character types' length
// from typmod (-1: none); "???"
// for an oid it does not know.
func FormatType(oid, typmod int64) string {
	if elem, ok := PgArrayTypes[oid]; ok {
		return FormatType(elem, typmod) + "[]"
	}
	name, ok := pgTypeNames[oid]
	if !ok {
		return "???"
	}
	if oid == 1700 && typmod >= 4 {
		m := typmod - 4
		return "numeric(" + strconv.FormatInt(m>>16, 10) + "," + strconv.FormatInt(m&0xffff, 10) + ")"
	}
	if oid == 1043 && typmod >= 4 {
		return "character varying(" + strconv.FormatInt(typmod-4, 10) + ")"
	}
	if oid == 1042 && typmod >= 4 {
		return "character(" + strconv.FormatInt(typmod-4, 10) + ")"
	}
	if (oid == 1114 || oid == 1184) && typmod >= 0 {
		// timestamp(2) with time zone: the precision after the first word.
		return "timestamp(" + strconv.FormatInt(typmod, 10) + ")" + strings.TrimPrefix(name, "timestamp")
	}
	return name
}

// evalFormatType is format_type(oid, typmod); a NULL typmod is -1.
func evalFormatType(c *call) (arrow.Array, error) {
	oids, mods := int64Arg(c.args[0]), int64Arg(c.args[1])
	valid, nulls := validity(c.mem, c.n, c.args[0])
	sb := newStringBuilder(c.mem, c.n, 16*c.n)
	for i := range c.n {
		if validAt(valid, i) {
			mod := int64(-1)
			if !c.args[1].IsNull(i) {
				mod = mods.at(i)
			}
			sb.write([]byte(FormatType(oids.at(i), mod)))
		}
		sb.end()
	}
	sb.valid, sb.nulls = valid, nulls
	return sb.array(), nil
}

// evalQuoteIdent is quote_ident(s): s double-quoted (its quotes doubled)
// unless it is a lower-case identifier PostgreSQL reads as itself.
func evalQuoteIdent(c *call) (arrow.Array, error) {
	in := textOf(c.args[0])
	valid, nulls := validity(c.mem, c.n, c.args[0])
	sb := newStringBuilder(c.mem, c.n, len(in.all())+2*c.n)
	for i := range c.n {
		if validAt(valid, i) {
			sb.write([]byte(QuoteIdent(string(in.row(i)))))
		}
		sb.end()
	}
	sb.valid, sb.nulls = valid, nulls
	return sb.array(), nil
}

// QuoteIdent quotes s as an SQL identifier where PostgreSQL's quote_ident
// would: unless it is lower-case letters, digits and underscores, not
// starting with a digit, and not a reserved word.
func QuoteIdent(s string) string {
	plain := s != "" && !(s[0] >= '0' && s[0] <= '9') && !reservedWords[s]
	for i := 0; i < len(s) && plain; i++ {
		c := s[i]
		plain = c == '_' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
	}
	if plain {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// reservedWords are PostgreSQL's reserved key words (its keyword list's
// RESERVED_KEYWORD entries), which quote_ident quotes.
var reservedWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`all analyse analyze and any array as asc asymmetric both case cast
		check collate column constraint create current_catalog current_date current_role current_time
		current_timestamp current_user default deferrable desc distinct do else end except false fetch
		for foreign from grant group having in initially intersect into lateral leading limit localtime
		localtimestamp not null offset on only or order placing primary references returning select
		session_user some symmetric system_user table then to trailing true union unique user using
		variadic when where window with`) {
		m[w] = true
	}
	return m
}()

// PgSizePretty is PostgreSQL's pg_size_pretty(bigint): bytes below 10 kB,
// then kB, MB, GB, TB and PB, each rounded half away from zero.
func PgSizePretty(size int64) string {
	const limit = 10 * 1024
	const limit2 = limit*2 - 1
	abs := func(x int64) int64 {
		if x < 0 {
			return -x
		}
		return x
	}
	if abs(size) < limit {
		return strconv.FormatInt(size, 10) + " bytes"
	}
	halfRounded := func(x int64) int64 {
		if x < 0 {
			return (x - 1) / 2
		}
		return (x + 1) / 2
	}
	size >>= 9 // one bit more than kB, for the rounding
	for _, unit := range []string{"kB", "MB", "GB", "TB"} {
		if abs(size) < limit2 {
			return strconv.FormatInt(halfRounded(size), 10) + " " + unit
		}
		size >>= 10
	}
	return strconv.FormatInt(halfRounded(size), 10) + " PB"
}

func evalPgSizePretty(c *call) (arrow.Array, error) {
	in := int64Arg(c.args[0])
	valid, nulls := validity(c.mem, c.n, c.args[0])
	sb := newStringBuilder(c.mem, c.n, 10*c.n)
	for i := range c.n {
		if validAt(valid, i) {
			sb.write([]byte(PgSizePretty(in.at(i))))
		}
		sb.end()
	}
	sb.valid, sb.nulls = valid, nulls
	return sb.array(), nil
}

// evalArrayPosition is array_position(array, x): the position (from 1) of
// the first element equal to x, compared as text, or NULL.
func evalArrayPosition(c *call) (arrow.Array, error) {
	arr, x := textOf(c.args[0]), textOf(c.args[1])
	valid, nulls := validity(c.mem, c.n, c.args...)
	data, out := newValues[int64](c.mem, c.n)
	for i := range c.n {
		if !validAt(valid, i) {
			continue
		}
		want := string(x.row(i))
		found := false
		for k, e := range parseArray(string(arr.row(i))) {
			if e != nil && *e == want {
				out[i], found = int64(k+1), true
				break
			}
		}
		if !found {
			if valid == nil {
				valid = newBitmap(c.mem, c.n)
				bitutil.SetBitsTo(valid.Bytes(), 0, int64(c.n), true)
			}
			bitutil.ClearBit(valid.Bytes(), i)
			nulls++
		}
	}
	return finish(arrow.PrimitiveTypes.Int64, c.n, nulls, valid, data), nil
}

// evalArrayGet is array_get(array, i), PostgreSQL's array[i]: the element
// at position i (from 1) of the array's text form, NULL outside it.
func evalArrayGet(c *call) (arrow.Array, error) {
	arr, idx := textOf(c.args[0]), int64Arg(c.args[1])
	valid, nulls := validity(c.mem, c.n, c.args...)
	sb := newStringBuilder(c.mem, c.n, len(arr.all()))
	var out *memory.Buffer
	for i := range c.n {
		if validAt(valid, i) {
			es, k := parseArray(string(arr.row(i))), idx.at(i)
			if v, ok := vectorOf(string(arr.row(i))); ok {
				es, k = v, k+1 // a vector's subscripts start at 0 (pgjdbc.go)
			}
			if k >= 1 && k <= int64(len(es)) && es[k-1] != nil {
				sb.write([]byte(*es[k-1]))
			} else {
				if out == nil {
					out = newBitmap(c.mem, c.n)
					if valid != nil {
						copy(out.Bytes(), valid.Bytes())
					} else {
						bitutil.SetBitsTo(out.Bytes(), 0, int64(c.n), true)
					}
				}
				bitutil.ClearBit(out.Bytes(), i)
			}
		}
		sb.end()
	}
	if out != nil {
		releaseBuffer(valid)
		valid, nulls = out, c.n-bitutil.CountSetBits(out.Bytes(), 0, c.n)
	}
	sb.valid, sb.nulls = valid, nulls
	return sb.array(), nil
}

// evalArrayBuild is array_build(a, ...), PostgreSQL's ARRAY[a, ...]: the
// text form of the array of its arguments (as text), NULLs as NULL.
func evalArrayBuild(c *call) (arrow.Array, error) {
	args := make([]textArg, len(c.args))
	size := 2
	for j, a := range c.args {
		args[j] = textOf(a)
		size += len(args[j].all()) + 3
	}
	sb := newStringBuilder(c.mem, c.n, size)
	for i := range c.n {
		sb.write([]byte("{"))
		for j := range c.args {
			if j > 0 {
				sb.write([]byte(","))
			}
			if c.args[j].IsNull(i) {
				sb.write([]byte("NULL"))
			} else {
				sb.write([]byte(quoteArrayElement(string(args[j].row(i)))))
			}
		}
		sb.write([]byte("}"))
		sb.end()
	}
	return sb.array(), nil
}

// evalTimestampTZ is $timestamptz(text): timestamp with time zone text read
// as the instant it names, in UTC (Hummer's timestamps).
func evalTimestampTZ(c *call) (arrow.Array, error) {
	in := textOf(c.args[0])
	valid, nulls := validity(c.mem, c.n, c.args[0])
	data, out := newValues[int64](c.mem, c.n)
	for i := range c.n {
		if !validAt(valid, i) {
			continue
		}
		v, err := ParseTimestampTZ(in.row(i))
		if err != nil {
			releaseBuffer(data)
			releaseBuffer(valid)
			return nil, err
		}
		out[i] = v
	}
	return finish(types.TimestampType.Arrow(), c.n, nulls, valid, data), nil
}

// evalArrayRemove is array_remove(array, x): the array without its elements
// equal to x (compared as text; NULL x removes the NULLs), NULL for a NULL
// array.
func evalArrayRemove(c *call) (arrow.Array, error) {
	arr, x := textOf(c.args[0]), textOf(c.args[1])
	valid, nulls := validity(c.mem, c.n, c.args[0])
	sb := newStringBuilder(c.mem, c.n, len(arr.all()))
	var buf []byte
	for i := range c.n {
		if validAt(valid, i) {
			removeNull := c.args[1].IsNull(i)
			want := string(x.row(i))
			buf = append(buf[:0], '{')
			first := true
			for _, e := range parseArray(string(arr.row(i))) {
				if e == nil && removeNull || e != nil && !removeNull && *e == want {
					continue
				}
				if !first {
					buf = append(buf, ',')
				}
				first = false
				if e == nil {
					buf = append(buf, "NULL"...)
				} else {
					buf = append(buf, quoteArrayElement(*e)...)
				}
			}
			sb.write(append(buf, '}'))
		}
		sb.end()
	}
	sb.valid, sb.nulls = valid, nulls
	return sb.array(), nil
}
