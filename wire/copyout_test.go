package wire

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/operators"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/sql"
)

// copyTable is the table of the COPY TO tests, and copyRows its rows, made in
// PostgreSQL 15 as
//
//	create table cw (a bigint, b text, c float8, d bool, e numeric(10,2), f timestamp, g date);
//	insert into cw values
//	 (1, 'plain', 1.5, true, 12.50, '2024-01-02 03:04:05.123', '2024-01-02'),
//	 (-2, E'tab\there\nnl\\back\rcr\x01ctl\bbs\ffeed\vvt', -0.25, false, -0.01, '1999-12-31 23:59:59', '1970-01-01'),
//	 (9000000000, 'has,comma "q" ''s', 1e300, null, 0, null, null),
//	 (null, '\N', 'NaN', null, null, null, '2000-02-29'),
//	 (0, '', 'Infinity', true, 99999999.99, '0001-01-01 00:00:00', null),
//	 (7, ' lead trail ', 1e-5, false, 1, '2024-06-30 12:00:00.000001', '0001-01-01'),
//	 (8, '\.', -1e-300, true, -123456.78, null, null),
//	 (9, 'ünïcødé|;x', 123456789012345, false, 0.5, null, null);
//
// (E'\v' is a plain v in PostgreSQL.)
var copyTable = types.Schema{
	{Name: "a", Type: types.Int64Type}, {Name: "b", Type: types.StringType}, {Name: "c", Type: types.Float64Type},
	{Name: "d", Type: types.BoolType}, {Name: "e", Type: types.DecimalType(10, 2)}, {Name: "f", Type: types.TimestampType},
	{Name: "g", Type: types.DateType},
}

func copyRows() [][]types.Value {
	i, s, f, b := types.IntValue, types.StringValue, types.FloatValue, types.BoolValue
	dec := func(cents int64) types.Value {
		return types.DecimalValue(types.DecimalType(10, 2), decimal128.FromI64(cents))
	}
	ts := func(y, mo, d, h, mi, sec, us int) types.Value {
		return types.TimestampValue(time.Date(y, time.Month(mo), d, h, mi, sec, us*1000, time.UTC).UnixMicro())
	}
	date := func(y, mo, d int) types.Value {
		return types.DateValue(time.Date(y, time.Month(mo), d, 0, 0, 0, 0, time.UTC).UnixMicro())
	}
	null := func(c int) types.Value { return types.NullValue(copyTable[c].Type) }
	inf := math.Inf(1)
	return [][]types.Value{
		{i(1), s("plain"), f(1.5), b(true), dec(1250), ts(2024, 1, 2, 3, 4, 5, 123000), date(2024, 1, 2)},
		{i(-2), s("tab\there\nnl\\back\rcr\x01ctl\bbs\ffeedvvt"), f(-0.25), b(false), dec(-1), ts(1999, 12, 31, 23, 59, 59, 0), date(1970, 1, 1)},
		{i(9000000000), s(`has,comma "q" 's`), f(1e300), null(3), dec(0), null(5), null(6)},
		{null(0), s(`\N`), f(math.NaN()), null(3), null(4), null(5), date(2000, 2, 29)},
		{i(0), s(""), f(inf), b(true), dec(9999999999), ts(1, 1, 1, 0, 0, 0, 0), null(6)},
		{i(7), s(" lead trail "), f(1e-5), b(false), dec(100), ts(2024, 6, 30, 12, 0, 0, 1), date(1, 1, 1)},
		{i(8), s(`\.`), f(-1e-300), b(true), dec(-12345678), null(5), null(6)},
		{i(9), s("ünïcødé|;x"), f(123456789012345), b(false), dec(50), null(5), null(6)},
	}
}

// encodeCopy encodes a batch as sendCopy does: the header, the rows and the
// trailer, one string per CopyData message.
func encodeCopy(t *testing.T, stmt string, schema types.Schema, b exec.Batch, changes bool) []string {
	t.Helper()
	c, ok, err := sql.ParseCopy(stmt)
	if !ok || err != nil {
		t.Fatalf("ParseCopy(%q): %v, %v", stmt, ok, err)
	}
	force := make([]bool, len(schema))
	for i, f := range schema {
		force[i] = c.Options.ForceQuoteAll || slices.Contains(c.Options.ForceQuote, f.Name)
	}
	e := newCopyEncoder(c.Options, changes, force)
	var out []string
	if h := e.header(schema); h != nil {
		out = append(out, string(h))
	}
	if b.Rec != nil {
		e.encodeBatch(b, func(row []byte) { out = append(out, string(row)) })
	}
	if tr := e.trailer(); tr != nil {
		out = append(out, string(tr))
	}
	return out
}

// TestCopyToFormats checks each COPY TO format's bytes against what
// PostgreSQL 15 sent for the same rows: the CopyData messages it sent, one
// string each, captured with pgproto3.
func TestCopyToFormats(t *testing.T) {
	for _, c := range []struct {
		stmt string
		cols string // the columns, by name; "all", or "none" for no rows
		want []string
	}{
		{
			stmt: "copy cw to stdout",
			cols: "all",
			want: []string{
				"1\tplain\t1.5\tt\t12.50\t2024-01-02 03:04:05.123\t2024-01-02\n",
				"-2\ttab\\there\\nnl\\\\back\\rcr\x01ctl\\bbs\\ffeedvvt\t-0.25\tf\t-0.01\t1999-12-31 23:59:59\t1970-01-01\n",
				"9000000000\thas,comma \"q\" 's\t1e+300\t\\N\t0.00\t\\N\t\\N\n",
				"\\N\t\\\\N\tNaN\t\\N\t\\N\t\\N\t2000-02-29\n",
				"0\t\tInfinity\tt\t99999999.99\t0001-01-01 00:00:00\t\\N\n",
				"7\t lead trail \t1e-05\tf\t1.00\t2024-06-30 12:00:00.000001\t0001-01-01\n",
				"8\t\\\\.\t-1e-300\tt\t-123456.78\t\\N\t\\N\n",
				"9\tünïcødé|;x\t123456789012345\tf\t0.50\t\\N\t\\N\n",
			},
		},
		{
			stmt: "copy cw to stdout with (format csv, header)",
			cols: "all",
			want: []string{
				"a,b,c,d,e,f,g\n",
				"1,plain,1.5,t,12.50,2024-01-02 03:04:05.123,2024-01-02\n",
				"-2,\"tab\there\nnl\\back\rcr\x01ctl\bbs\ffeedvvt\",-0.25,f,-0.01,1999-12-31 23:59:59,1970-01-01\n",
				"9000000000,\"has,comma \"\"q\"\" 's\",1e+300,,0.00,,\n",
				",\\N,NaN,,,,2000-02-29\n",
				"0,\"\",Infinity,t,99999999.99,0001-01-01 00:00:00,\n",
				"7, lead trail ,1e-05,f,1.00,2024-06-30 12:00:00.000001,0001-01-01\n",
				"8,\\.,-1e-300,t,-123456.78,,\n",
				"9,ünïcødé|;x,123456789012345,f,0.50,,\n",
			},
		},
		{
			stmt: "copy cw to stdout with (format text, header, delimiter '|', null 'NUL')",
			cols: "all",
			want: []string{
				"a|b|c|d|e|f|g\n",
				"1|plain|1.5|t|12.50|2024-01-02 03:04:05.123|2024-01-02\n",
				"-2|tab\\there\\nnl\\\\back\\rcr\x01ctl\\bbs\\ffeedvvt|-0.25|f|-0.01|1999-12-31 23:59:59|1970-01-01\n",
				"9000000000|has,comma \"q\" 's|1e+300|NUL|0.00|NUL|NUL\n",
				"NUL|\\\\N|NaN|NUL|NUL|NUL|2000-02-29\n",
				"0||Infinity|t|99999999.99|0001-01-01 00:00:00|NUL\n",
				"7| lead trail |1e-05|f|1.00|2024-06-30 12:00:00.000001|0001-01-01\n",
				"8|\\\\.|-1e-300|t|-123456.78|NUL|NUL\n",
				"9|ünïcødé\\|;x|123456789012345|f|0.50|NUL|NUL\n",
			},
		},
		{
			stmt: `copy cw (b, a) to stdout with csv header delimiter ';' quote '''' escape '\' force quote b null 'NULL'`,
			cols: "ba",
			want: []string{
				"b;a\n",
				"'plain';1\n",
				"'tab\there\nnl\\\\back\rcr\x01ctl\bbs\ffeedvvt';-2\n",
				"'has,comma \"q\" \\'s';9000000000\n",
				"'\\\\N';NULL\n",
				"'';0\n",
				"' lead trail ';7\n",
				"'\\\\.';8\n",
				"'ünïcødé|;x';9\n",
			},
		},
		{
			stmt: "copy cw to stdout (format csv, force_quote *)",
			cols: "all",
			want: []string{
				"\"1\",\"plain\",\"1.5\",\"t\",\"12.50\",\"2024-01-02 03:04:05.123\",\"2024-01-02\"\n",
				"\"-2\",\"tab\there\nnl\\back\rcr\x01ctl\bbs\ffeedvvt\",\"-0.25\",\"f\",\"-0.01\",\"1999-12-31 23:59:59\",\"1970-01-01\"\n",
				"\"9000000000\",\"has,comma \"\"q\"\" 's\",\"1e+300\",,\"0.00\",,\n",
				",\"\\N\",\"NaN\",,,,\"2000-02-29\"\n",
				"\"0\",\"\",\"Infinity\",\"t\",\"99999999.99\",\"0001-01-01 00:00:00\",\n",
				"\"7\",\" lead trail \",\"1e-05\",\"f\",\"1.00\",\"2024-06-30 12:00:00.000001\",\"0001-01-01\"\n",
				"\"8\",\"\\.\",\"-1e-300\",\"t\",\"-123456.78\",,\n",
				"\"9\",\"ünïcødé|;x\",\"123456789012345\",\"f\",\"0.50\",,\n",
			},
		},
		{
			stmt: "copy cw to stdout (format binary)",
			cols: "all",
			want: []string{
				"PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\a\x00\x00\x00\b\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x05plain\x00\x00\x00\b?\xf8\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x01\x00\x00\x00\f\x00\x02\x00\x00\x00\x00\x00\x02\x00\f\x13\x88\x00\x00\x00\b\x00\x02\xb0\xec\x85\x17Ӹ\x00\x00\x00\x04\x00\x00\"?",
				"\x00\a\x00\x00\x00\b\xff\xff\xff\xff\xff\xff\xff\xfe\x00\x00\x00\"tab\there\nnl\\back\rcr\x01ctl\bbs\ffeedvvt\x00\x00\x00\b\xbf\xd0\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\n\x00\x01\xff\xff@\x00\x00\x02\x00d\x00\x00\x00\b\xff\xff\xff\xff\xff\xf0\xbd\xc0\x00\x00\x00\x04\xff\xff\xd53",
				"\x00\a\x00\x00\x00\b\x00\x00\x00\x02\x18q\x1a\x00\x00\x00\x00\x10has,comma \"q\" 's\x00\x00\x00\b~7\xe4<\x88\x00u\x9c\xff\xff\xff\xff\x00\x00\x00\b\x00\x00\x00\x00\x00\x00\x00\x02\xff\xff\xff\xff\xff\xff\xff\xff",
				"\x00\a\xff\xff\xff\xff\x00\x00\x00\x02\\N\x00\x00\x00\b\x7f\xf8\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x00\x00\x00\x04\x00\x00\x00;",
				"\x00\a\x00\x00\x00\b\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\b\x7f\xf0\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x01\x00\x00\x00\x0e\x00\x03\x00\x01\x00\x00\x00\x02'\x0f'\x0f&\xac\x00\x00\x00\b\xff\x1f\xe2\xffŜ`\x00\xff\xff\xff\xff",
				"\x00\a\x00\x00\x00\b\x00\x00\x00\x00\x00\x00\x00\a\x00\x00\x00\f lead trail \x00\x00\x00\b>\xe4\xf8\xb5\x88\xe3h\xf1\x00\x00\x00\x01\x00\x00\x00\x00\n\x00\x01\x00\x00\x00\x00\x00\x02\x00\x01\x00\x00\x00\b\x00\x02\xbf\x18\xfd\x1b\xd0\x01\x00\x00\x00\x04\xff\xf4\xdb\xf9",
				"\x00\a\x00\x00\x00\b\x00\x00\x00\x00\x00\x00\x00\b\x00\x00\x00\x02\\.\x00\x00\x00\b\x81\xa5n\x1f\xc2\xf8\xf3Y\x00\x00\x00\x01\x01\x00\x00\x00\x0e\x00\x03\x00\x01@\x00\x00\x02\x00\f\r\x80\x1ex\xff\xff\xff\xff\xff\xff\xff\xff",
				"\x00\a\x00\x00\x00\b\x00\x00\x00\x00\x00\x00\x00\t\x00\x00\x00\x0eünïcødé|;x\x00\x00\x00\bB\xdc\x12!\x83w\xde@\x00\x00\x00\x01\x00\x00\x00\x00\n\x00\x01\xff\xff\x00\x00\x00\x02\x13\x88\xff\xff\xff\xff\xff\xff\xff\xff",
				"\xff\xff",
			},
		},
		{
			stmt: "copy (select b from cw) to stdout csv",
			cols: "b",
			want: []string{
				"plain\n",
				"\"tab\there\nnl\\back\rcr\x01ctl\bbs\ffeedvvt\"\n",
				"\"has,comma \"\"q\"\" 's\"\n",
				"\\N\n",
				"\"\"\n",
				" lead trail \n",
				"\"\\.\"\n",
				"ünïcødé|;x\n",
			},
		},
		{
			stmt: "copy (select * from cw where false) to stdout (format csv, header)",
			cols: "none",
			want: []string{
				"a,b,c,d,e,f,g\n",
			},
		},
	} {
		mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
		var schema types.Schema
		var idx []int
		switch c.cols {
		case "all", "none":
			schema = copyTable
			for i := range copyTable {
				idx = append(idx, i)
			}
		default:
			for _, name := range c.cols {
				i := copyTable.Index(string(name))
				schema, idx = append(schema, copyTable[i]), append(idx, i)
			}
		}
		var rows [][]types.Value
		if c.cols != "none" {
			for _, r := range copyRows() {
				var row []types.Value
				for _, i := range idx {
					row = append(row, r[i])
				}
				rows = append(rows, row)
			}
		}
		var b exec.Batch
		if rows != nil {
			rec, err := operators.ValuesRecord(mem, schema, rows)
			if err != nil {
				t.Fatal(err)
			}
			b.Rec = rec
		}
		got := encodeCopy(t, c.stmt, schema, b, false)
		if b.Rec != nil {
			b.Rec.Release()
		}
		mem.AssertSize(t, 0)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s:\n got %q\nwant %q", c.stmt, got, c.want)
		}
	}
}

// TestCopyToEscapes checks the text format's control characters and a
// control character as the delimiter, and csv's quoting of \. alone on a
// line, in the header too, against PostgreSQL 15's bytes for
//
//	copy (select 'a'||chr(11)||'b'||chr(31)||chr(127)||chr(1) as x, 'y' as "a b", 'z' as "q""x")
//	  to stdout with (delimiter E'\x01', header)
//	copy (select 'a' as "\.") to stdout with (format csv, header)
func TestCopyToEscapes(t *testing.T) {
	str := func(names ...string) types.Schema {
		var s types.Schema
		for _, n := range names {
			s = append(s, types.Field{Name: n, Type: types.StringType})
		}
		return s
	}
	for _, c := range []struct {
		stmt   string
		schema types.Schema
		row    []string
		want   []string
	}{
		{`COPY (SELECT 1) TO STDOUT WITH (DELIMITER E'\x01', HEADER)`, str("x", "a b", `q"x`), []string{"a\vb\x1f\x7f\x01", "y", "z"},
			[]string{"x\x01a b\x01q\"x\n", "a\\vb\x1f\x7f\\\x01\x01y\x01z\n"}},
		{`COPY (SELECT 1) TO STDOUT WITH (FORMAT csv, HEADER)`, str(`\.`), []string{"a"}, []string{"\"\\.\"\n", "a\n"}},
	} {
		mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
		var row []types.Value
		for _, v := range c.row {
			row = append(row, types.StringValue(v))
		}
		rec, err := operators.ValuesRecord(mem, c.schema, [][]types.Value{row})
		if err != nil {
			t.Fatal(err)
		}
		got := encodeCopy(t, c.stmt, c.schema, exec.Batch{Rec: rec}, false)
		rec.Release()
		mem.AssertSize(t, 0)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s:\n got %q\nwant %q", c.stmt, got, c.want)
		}
	}
}

// TestCopyToChanges checks a continuous COPY's rows: the change kind first,
// in the op column, in each format. (PostgreSQL has no continuous COPY; the
// values are encoded as those of a text column.)
func TestCopyToChanges(t *testing.T) {
	schema := types.Schema{{Name: "word", Type: types.StringType}, {Name: "n", Type: types.Int64Type}}
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rec, err := operators.ValuesRecord(mem, schema, [][]types.Value{
		{types.StringValue("a"), types.IntValue(1)},
		{types.StringValue("a"), types.IntValue(1)},
		{types.StringValue("a"), types.IntValue(2)},
		{types.StringValue("a b"), types.NullValue(types.Int64Type)},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	b := exec.Batch{Rec: rec, Ops: []exec.ChangeKind{exec.Insert, exec.UpdateBefore, exec.UpdateAfter, exec.Delete}}
	for _, c := range []struct {
		stmt string
		want []string
	}{
		{"COPY (SELECT 1) TO STDOUT", []string{"insert\ta\t1\n", "update_before\ta\t1\n", "update_after\ta\t2\n", "delete\ta b\t\\N\n"}},
		{"COPY (SELECT 1) TO STDOUT WITH (FORMAT csv, HEADER)", []string{"op,word,n\n", "insert,a,1\n", "update_before,a,1\n", "update_after,a,2\n", "delete,a b,\n"}},
		{"COPY (SELECT 1) TO STDOUT WITH (FORMAT csv, FORCE_QUOTE *)", []string{`"insert","a","1"` + "\n", `"update_before","a","1"` + "\n", `"update_after","a","2"` + "\n", `"delete","a b",` + "\n"}},
		{"COPY (SELECT 1) TO STDOUT WITH (FORMAT binary)", []string{
			"PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00" + "\x00\x03" + "\x00\x00\x00\x06insert" + "\x00\x00\x00\x01a" + "\x00\x00\x00\x08\x00\x00\x00\x00\x00\x00\x00\x01",
			"\x00\x03" + "\x00\x00\x00\x0dupdate_before" + "\x00\x00\x00\x01a" + "\x00\x00\x00\x08\x00\x00\x00\x00\x00\x00\x00\x01",
			"\x00\x03" + "\x00\x00\x00\x0cupdate_after" + "\x00\x00\x00\x01a" + "\x00\x00\x00\x08\x00\x00\x00\x00\x00\x00\x00\x02",
			"\x00\x03" + "\x00\x00\x00\x06delete" + "\x00\x00\x00\x03a b" + "\xff\xff\xff\xff",
			"\xff\xff",
		}},
	} {
		if got := encodeCopy(t, c.stmt, schema, b, true); !slices.Equal(got, c.want) {
			t.Errorf("%s:\n got %q\nwant %q", c.stmt, got, c.want)
		}
	}
}
