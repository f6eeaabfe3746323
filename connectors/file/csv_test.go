package file

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/exec/vector"
)

var csvSchema = types.Schema{
	{Name: "id", Type: types.Int64Type},
	{Name: "name", Type: types.StringType},
	{Name: "price", Type: types.DecimalType(10, 2)},
	{Name: "ok", Type: types.BoolType},
	{Name: "score", Type: types.Float64Type},
	{Name: "ts", Type: types.TimestampType},
}

func TestCSV(t *testing.T) {
	splitSmallCSV(t)
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	for _, tc := range []struct {
		name    string
		options string // after format=csv
		schema  types.Schema
		cols    []int
		content string
		want    []string
		bad     int64
	}{{
		name:   "types",
		schema: csvSchema,
		content: "1,apple,1.005,t,1.5,2024-01-02 03:04:05.123456\n" +
			"-2,pear,-3,FALSE,-0.25,2024-01-02\n" +
			"3,fig,.5,1,1e3,2024-02-29T23:59:59Z\n" +
			" 4 ,kiwi , 7.10 ,0, 2 ,2024-01-02 03:04:05+02:00\n",
		want: []string{
			"1|apple|1.01|true|1.5|2024-01-02T03:04:05.123456",
			"-2|pear|-3|false|-0.25|2024-01-02T00:00:00",
			"3|fig|0.5|true|1000|2024-02-29T23:59:59",
			"4|kiwi |7.1|false|2|2024-01-02T01:04:05",
		},
	}, {
		name:   "quoting",
		schema: types.Schema{{Name: "a", Type: types.StringType}, {Name: "b", Type: types.StringType}},
		content: `"x,y","say ""hi"""` + "\n" +
			`"multi` + "\n" + `line","crlf` + "\r\n" + `inside"` + "\r\n" +
			`"",` + "\n" + // quoted empty is '', unquoted empty is NULL
			`,""` + "\n" +
			`plain,"quoted"` + "\n" +
			"\n" + // empty lines hold no record
			`"a""",b`,
		want: []string{`x,y|say "hi"`, "multi\nline|crlf\ninside", "|NULL", "NULL|", "plain|quoted", `a"|b`},
	}, {
		name:    "header",
		options: "&header=true",
		schema:  types.Schema{{Name: "a", Type: types.Int64Type}, {Name: "b", Type: types.StringType}},
		content: "a,\"b\nwith newline\"\n1,x\n2,y\n",
		want:    []string{"1|x", "2|y"},
	}, {
		name:    "delimiter",
		options: "&delimiter=;",
		schema:  types.Schema{{Name: "a", Type: types.StringType}, {Name: "b", Type: types.StringType}},
		content: "a,1;b\n\"c;d\";e\n",
		want:    []string{"a,1|b", "c;d|e"},
	}, {
		name:    "tab",
		options: "&delimiter=%09",
		schema:  types.Schema{{Name: "a", Type: types.Int64Type}, {Name: "b", Type: types.StringType}},
		content: "1\tx y\n2\t\n",
		want:    []string{"1|x y", "2|NULL"},
	}, {
		name:    "malformed",
		options: "&bad_rows=skip",
		schema:  types.Schema{{Name: "a", Type: types.Int64Type}, {Name: "b", Type: types.DecimalType(3, 1)}},
		content: "1,1.5\n" +
			"2\n" + // too few fields
			"3,1,9\n" + // too many
			"x,1\n" + // not a bigint
			"99999999999999999999,1\n" + // bigint overflow
			"4,100\n" + // out of range for decimal(3,1)
			"5,1.2.3\n" +
			`6,"1"x` + "\n" + // text after the closing quote
			`7,1"2` + "\n" + // a quote in an unquoted field
			"8,-9.9\n" +
			`9,"unterminated` + "\n10,1\n", // the stray quote costs its line only
		want: []string{"1|1.5", "8|-9.9", "10|1"},
		bad:  9,
	}, {
		name:    "projection",
		options: "&bad_rows=skip",
		schema:  csvSchema,
		cols:    []int{4, 0},
		content: "1,apple,not a decimal,t,1.5,2024-01-02\n2,pear,1,f,x,2024-01-02\n3,fig,1,f,2.5\n4,kiwi,1,f,3.5,2024-01-02\n",
		// A record is bad by any of its columns, read or not: row 1's price,
		// row 2's score, row 3's missing field.
		want: []string{"3.5|4"},
		bad:  3,
	}, {
		name:    "no columns",
		options: "&bad_rows=skip",
		schema:  csvSchema[:2],
		cols:    []int{},
		content: "1,a\n2\n3,b\n",
		want:    []string{"", ""},
		bad:     1,
	}, {
		name:    "repeated column",
		schema:  csvSchema[:2],
		cols:    []int{1, 1, 0},
		content: "1,a\n",
		want:    []string{"a|a|1"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			_, url := writeFile(t, tc.content)
			c := exec.ConnectorSpec{Connector: Name, URL: url + "?format=csv" + tc.options, Schema: tc.schema, Columns: tc.cols}
			if err := Validate(c); err != nil {
				t.Fatal(err)
			}
			for n := 1; n <= 3; n++ {
				res := readAll(t, mem, c, n)
				got, bad := concat(res)
				if !slices.Equal(got, tc.want) || bad != tc.bad {
					t.Fatalf("n=%d: got %q with %d bad, want %q with %d bad", n, got, bad, tc.want, tc.bad)
				}
				// With bad_rows=skip subtask 0 reads everything (a quote out
				// of place would move the others' first records).
				for i, r := range res[1:] {
					if len(r.rows) > 0 && strings.Contains(tc.options, "bad_rows=skip") {
						t.Errorf("n=%d: subtask %d read CSV rows; with bad_rows=skip only subtask 0 may", n, i+1)
					}
				}
			}
		})
	}
}

// TestCSVLarge crosses batch boundaries with multi-line records, read by 1 to
// 8 subtasks: each finds its first record by the quotes before its range,
// and together they read every record once, in order.
func TestCSVLarge(t *testing.T) {
	splitSmallCSV(t)
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	var sb strings.Builder
	var want []string
	for i := range 3*BatchRows + 7 {
		s := strings.Repeat("v", i%5)
		sb.WriteString(fmtRow(i, s))
		want = append(want, fmtWant(i, s))
	}
	_, url := writeFile(t, sb.String())
	c := exec.ConnectorSpec{Connector: Name, URL: url + "?format=csv",
		Schema: types.Schema{{Name: "a", Type: types.Int64Type}, {Name: "b", Type: types.StringType}}}
	for n := 1; n <= 8; n++ {
		got, bad := concat(readAll(t, mem, c, n))
		if !slices.Equal(got, want) || bad != 0 {
			t.Fatalf("n=%d: %s, %d bad", n, firstDiff(got, want), bad)
		}
	}
}

func fmtRow(i int, s string) string {
	if i%3 == 0 {
		return strconv.Itoa(i) + ",\"" + s + "\n" + s + "\"\n"
	}
	if i%7 == 1 {
		return strconv.Itoa(i) + ",\"" + s + "\"\"\n,\"\"\"\n"
	}
	return strconv.Itoa(i) + "," + s + "\n"
}

func fmtWant(i int, s string) string {
	if i%3 == 0 {
		return strconv.Itoa(i) + "|" + s + "\n" + s
	}
	if i%7 == 1 {
		return strconv.Itoa(i) + "|" + s + "\"\n,\""
	}
	if s == "" {
		return strconv.Itoa(i) + "|NULL"
	}
	return strconv.Itoa(i) + "|" + s
}

// splitSmallCSV has the test's CSV files shared by their subtasks, however small.
func splitSmallCSV(t *testing.T) {
	old := csvSplitMin
	csvSplitMin = 0
	t.Cleanup(func() { csvSplitMin = old })
}

// TestCSVBorrow checks the fast path against parse, the reference reader of
// RFC 4180: over random lines of delimiters, quotes, doubled quotes and
// non-ASCII text, a line borrow takes has parse's fields, quoting and ASCII-ness,
// and every line without a doubled quote or an unclosed one is taken.
func TestCSVBorrow(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	pieces := []string{",", ",", "a", "bc", "12345678", "é", `"`, `""`, `"x,y"`, " "}
	taken := 0
	for range 20000 {
		var b strings.Builder
		for range r.IntN(12) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		line := []byte(b.String())
		var fast csvRecord
		ok := fast.borrow(line, ',')
		if strings.Count(string(line), `"`)%2 == 1 {
			// A quote left open: parse would read the next line.
			if ok {
				t.Fatalf("%q: borrowed a line with an unclosed quote", line)
			}
			continue
		}
		if !ok {
			continue
		}
		taken++
		p := &csvParser{delim: ','}
		err := p.parse(line)
		slow := p.rec
		if err != nil {
			t.Fatalf("%q: borrowed a line parse refuses: %v", line, err)
		}
		slow.data = slow.buf
		if fast.numFields() != slow.numFields() {
			t.Fatalf("%q: %d fields, parse has %d", line, fast.numFields(), slow.numFields())
		}
		for i := range fast.numFields() {
			f, q := fast.field(i)
			g, h := slow.field(i)
			if string(f) != string(g) || q != h {
				t.Fatalf("%q: field %d is %q quoted=%v, parse has %q quoted=%v", line, i, f, q, g, h)
			}
		}
		if want := !strings.ContainsRune(string(line), 'é'); fast.ascii != want {
			t.Fatalf("%q: ascii=%v", line, fast.ascii)
		}
	}
	if taken < 5000 {
		t.Fatalf("only %d lines taken by borrow: a test that cannot tell", taken)
	}
}

// TestCSVBlockSplit checks the block's splitter against borrow: over random
// lines of delimiters, quotes, doubled quotes and non-ASCII text, split takes
// exactly the lines borrow takes that have the block's number of fields,
// with borrow's fields, NULLs and ASCII-ness, and leaves the block as it was
// for the others, whose rows before stay intact.
func TestCSVBlockSplit(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	pieces := []string{",", ",", "a", "bc", "12345678", "é", `"`, `""`, `"x,y"`, `"é"`, " ", "0123456789abcdef"}
	const columns = 3
	schema := make(types.Schema, columns)
	for c := range schema {
		schema[c] = types.Field{Name: strconv.Itoa(c), Type: types.StringType}
	}
	blk := newCSVBlock(schema, []int{0, 1, 2}, ',')
	var want [][]string // what the block must hold: each row's fields, "NULL" for NULL
	taken := 0
	for range 60000 {
		var b strings.Builder
		for range r.IntN(10) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		line := []byte(b.String())
		ascii, ok := blk.split(line)
		var ref csvRecord
		wantOK := ref.borrow(line, ',') && ref.numFields() == columns
		if ok != wantOK {
			t.Fatalf("%q: taken=%v, want %v", line, ok, wantOK)
		}
		if ok {
			taken++
			if ascii != ref.ascii {
				t.Fatalf("%q: ascii=%v", line, ascii)
			}
			row := make([]string, columns)
			for c := range row {
				f, q := ref.field(c)
				row[c] = string(f)
				if len(f) == 0 && !q {
					row[c] = "NULL"
				}
			}
			want = append(want, row)
			// The rows the block holds are want's; undo needs their count.
			blk.line = append(blk.line, 0)
		}
		for c := range columns {
			if len(blk.fields[c]) != len(want) {
				t.Fatalf("%q: column %d holds %d rows, want %d", line, c, len(blk.fields[c]), len(want))
			}
		}
	}
	for i, row := range want {
		for c := range columns {
			got := string(blk.fields[c][i])
			if blk.fields[c][i] == nil {
				got = "NULL"
			}
			if got != row[c] {
				t.Fatalf("row %d column %d: %q, want %q", i, c, got, row[c])
			}
		}
	}
	if taken < 1000 {
		t.Fatalf("only %d lines taken: a test that cannot tell", taken)
	}
}
