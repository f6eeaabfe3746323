package wire

import (
	"bytes"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec/types"
)

// tableCases are results with the output psql 15 printed for them when a
// PostgreSQL 15 server returned the same values. Cases without want are only
// compared with psql's output through this package's server (TestFormatTableMatchesPsql).
var tableCases = []struct {
	schema types.Schema
	rows   [][]any
	want   string
}{
	{
		schema: types.Schema{{Name: "a", Type: types.Int64Type}, {Name: "bbbb", Type: types.StringType},
			{Name: "ccccccc", Type: types.Float64Type}, {Name: "d", Type: types.StringType}},
		rows: [][]any{{int64(1), "xx", 2.5, nil}},
		want: " a | bbbb | ccccccc | d \n" +
			"---+------+---------+---\n" +
			" 1 | xx   |     2.5 | \n" +
			"(1 row)\n\n",
	},
	{
		schema: types.Schema{{Name: "bbbb", Type: types.StringType}, {Name: "a", Type: types.Int64Type}},
		rows:   [][]any{{"xx", int64(1)}},
		want: " bbbb | a \n" +
			"------+---\n" +
			" xx   | 1\n" +
			"(1 row)\n\n",
	},
	{
		schema: types.Schema{{Name: "x", Type: types.StringType}, {Name: "y", Type: types.Int64Type}},
		rows:   [][]any{{"a\nbb", int64(1)}},
		want: " x  | y \n" +
			"----+---\n" +
			" a +| 1\n" +
			" bb | \n" +
			"(1 row)\n\n",
	},
	{
		schema: types.Schema{{Name: "y", Type: types.Int64Type}, {Name: "x", Type: types.StringType}},
		rows:   [][]any{{int64(1), "a\nbb"}},
		want: " y | x  \n" +
			"---+----\n" +
			" 1 | a +\n" +
			"   | bb\n" +
			"(1 row)\n\n",
	},
	{
		schema: types.Schema{},
		rows:   [][]any{{}},
		want:   "--\n(1 row)\n\n",
	},
	{
		schema: types.Schema{{Name: "?column?", Type: types.Int64Type}},
		want: " ?column? \n" +
			"----------\n" +
			"(0 rows)\n\n",
	},
	{
		schema: types.Schema{{Name: "r", Type: types.StringType}, {Name: "c", Type: types.StringType},
			{Name: "j", Type: types.StringType}, {Name: "comb", Type: types.StringType}, {Name: "h\nl", Type: types.StringType}},
		rows: [][]any{{"a\rb", "a\x01b", "日本", "e\u0301", "x"}},
		want: "  r   |   c    |  j   | comb | h+\n" +
			"      |        |      |      | l \n" +
			"------+--------+------+------+---\n" +
			" a\\rb | a\\x01b | 日本 | e\u0301    | x\n" +
			"(1 row)\n\n",
	},
	{
		schema: types.Schema{{Name: "s", Type: types.StringType}, {Name: "t", Type: types.StringType}},
		rows:   [][]any{{"a\tb", "x"}},
		want: "     s     | t \n" +
			"-----------+---\n" +
			" a       b | x\n" +
			"(1 row)\n\n",
	},
	{
		schema: types.Schema{{Name: "n", Type: types.Int64Type}, {Name: "flag", Type: types.BoolType},
			{Name: "f", Type: types.Float64Type}, {Name: "long text column", Type: types.StringType}},
		rows: [][]any{
			{int64(1), true, 1e20, "one"},
			{int64(-12345), false, nil, "two\nlines"},
			{nil, nil, 0.5, ""},
			{int64(7), true, -1.5e-07, "last\nthree\nlines"},
			{int64(8), false, 3.0, nil},
		},
	},
	{
		schema: types.Schema{{Name: "multi\nline\nheader", Type: types.StringType}, {Name: "n", Type: types.Int64Type}},
		rows:   [][]any{{"v", int64(3)}, {"w\nx", nil}},
	},
}

func TestFormatTable(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	for k, tc := range tableCases {
		if tc.want == "" {
			continue
		}
		batches := buildBatches(mem, tc.schema, tc.rows)
		var buf bytes.Buffer
		if err := FormatTable(&buf, tc.schema, batches, nil); err != nil {
			t.Fatal(err)
		}
		for _, b := range batches {
			b.Release()
		}
		if got := buf.String(); got != tc.want {
			t.Errorf("case %d:\n got:\n%s\nwant:\n%s", k, got, tc.want)
		}
	}
}
