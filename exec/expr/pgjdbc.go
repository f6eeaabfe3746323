package expr

// The functions pgjdbc's DatabaseMetaData needs beyond the catalog's
// (pgcatalog.go): the bit operators over bigint (indoption & 1), and what
// information_schema._pg_expandarray is made of over the text forms of
// arrays: '{1,2}' (int2[]) and int2vector's '1 2'. Hummer has no record
// type; _pg_expandarray's record (x, n) is held as its text form, '(1,1)',
// which record_field reads (sql/bind_pgjdbc.go).

import (
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"

	"github.com/hummer-db/hummer/exec/types"
)

func init() {
	for name, r := range map[string]resolver{
		"&": fixed(types.Int64Type, types.Int64Type, types.Int64Type), "|": fixed(types.Int64Type, types.Int64Type, types.Int64Type),
		"<<": fixed(types.Int64Type, types.Int64Type, types.Int64Type), ">>": fixed(types.Int64Type, types.Int64Type, types.Int64Type),
		"$vector_count": fixed(types.Int64Type, types.StringType),
		"$vector_elem":  fixed(types.StringType, types.StringType, types.Int64Type),
		"$record_field": fixed(types.StringType, types.StringType, types.Int64Type),
	} {
		catalog[name] = r
	}
}

// pgjdbcKernelFor is kernelFor for this file's functions.
func pgjdbcKernelFor(name string) (kernel, kernelMode) {
	switch name {
	case "&", "|", "<<", ">>":
		return evalBitOp, rowsArgs
	case "$vector_count":
		return evalVectorCount, rowsArgs
	case "$vector_elem", "$record_field":
		return evalVectorElem, rowsArgs
	}
	return nil, rowsArgs
}

// evalBitOp is PostgreSQL's integer &, |, << and >>.
func evalBitOp(c *call) (arrow.Array, error) {
	a, b := int64Arg(c.args[0]), int64Arg(c.args[1])
	valid, nulls := validity(c.mem, c.n, c.args...)
	data, out := newValues[int64](c.mem, c.n)
	for i := range c.n {
		if !validAt(valid, i) {
			continue
		}
		x, y := a.at(i), b.at(i)
		switch c.e.Func {
		case "&":
			out[i] = x & y
		case "|":
			out[i] = x | y
		case "<<":
			out[i] = x << (uint64(y) & 63) // PostgreSQL shifts by y mod 64, as the CPU does
		case ">>":
			out[i] = x >> (uint64(y) & 63)
		}
	}
	return finish(arrow.PrimitiveTypes.Int64, c.n, nulls, valid, data), nil
}

// vectorElems splits an array's text form into its elements in order
// (NULL as nil): '{a,b}', or a vector's (int2vector, oidvector) '1 2'; any
// other text is one element, as parseArray has it.
func vectorElems(s string) []*string {
	if v, ok := vectorOf(s); ok {
		return v
	}
	return parseArray(s)
}

// vectorOf returns the elements of a vector's text form, int2vector's or
// oidvector's '1 2' (integers apart by blanks), whose subscripts start at
// 0; ok is false for any other text (an array's '{1,2}', from 1).
func vectorOf(s string) ([]*string, bool) {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return nil, false
	}
	out := make([]*string, len(fields))
	for i, f := range fields {
		if _, err := strconv.ParseInt(f, 10, 64); err != nil {
			return nil, false
		}
		out[i] = &fields[i]
	}
	return out, true
}

// recordFields splits a record's text form, '(1,1)', into its fields, an
// empty one as NULL (nil). Hummer's records hold no quoted fields.
func recordFields(s string) []*string {
	t := strings.TrimSpace(s)
	if len(t) < 2 || t[0] != '(' || t[len(t)-1] != ')' {
		return nil
	}
	var out []*string
	for _, f := range strings.Split(t[1:len(t)-1], ",") {
		if f == "" {
			out = append(out, nil)
			continue
		}
		out = append(out, &f)
	}
	return out
}

// evalVectorCount is $vector_count(array): how many elements it has.
func evalVectorCount(c *call) (arrow.Array, error) {
	in := textOf(c.args[0])
	valid, nulls := validity(c.mem, c.n, c.args...)
	data, out := newValues[int64](c.mem, c.n)
	for i := range c.n {
		if validAt(valid, i) {
			out[i] = int64(len(vectorElems(string(in.row(i)))))
		}
	}
	return finish(arrow.PrimitiveTypes.Int64, c.n, nulls, valid, data), nil
}

// evalVectorElem is $vector_elem(array, k), the k-th element (from 1, in
// order, whatever the array's lower bound), and $record_field(record, k),
// the k-th field; NULL past the end.
func evalVectorElem(c *call) (arrow.Array, error) {
	in, idx := textOf(c.args[0]), int64Arg(c.args[1])
	split := vectorElems
	if c.e.Func == "$record_field" {
		split = recordFields
	}
	valid, _ := validity(c.mem, c.n, c.args...)
	sb := newStringBuilder(c.mem, c.n, len(in.all()))
	out := newBitmap(c.mem, c.n)
	for i := range c.n {
		if validAt(valid, i) {
			es := split(string(in.row(i)))
			if k := idx.at(i); k >= 1 && k <= int64(len(es)) && es[k-1] != nil {
				sb.writeString(*es[k-1])
				bitutil.SetBit(out.Bytes(), i)
			}
		}
		sb.end()
	}
	releaseBuffer(valid)
	sb.valid, sb.nulls = out, c.n-bitutil.CountSetBits(out.Bytes(), 0, c.n)
	return sb.array(), nil
}
