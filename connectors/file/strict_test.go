package file

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/connectors/internal/conntest"
	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/exec/vector"
)

// runErr runs the one subtask of the source c describes and returns its rows
// and Run's error.
func runErr(t *testing.T, alloc memory.Allocator, c exec.ConnectorSpec, change func()) ([]string, int64, error) {
	t.Helper()
	src, err := newSourceFor(c)
	if err != nil {
		t.Fatal(err)
	}
	tc := conntest.TaskContext(t, alloc, 0, 1)
	if err := src.Open(context.Background(), tc); err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer src.Close()
	if change != nil {
		change()
	}
	var out conntest.Collector
	err = src.Run(context.Background(), &out)
	rows := out.Rows()
	out.Release()
	return rows, tc.Metrics.BadRecords.Load(), err
}

// TestRowsByAllColumns: a row is good or bad by all its columns, whichever a
// query reads: COUNT(*), COUNT(name), COUNT(score) and SELECT * see the same
// one row of the three (the second's score and the third's name are bad).
// By default a bad row fails the read, naming the file, its line and the
// fault; with bad_rows=skip it is counted and the first is described.
func TestRowsByAllColumns(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	path, url := writeFile(t, "1,a,1.5\n2,b,oops\n3,\xff,3.5\n")
	schema := types.Schema{{Name: "id", Type: types.Int64Type}, {Name: "name", Type: types.StringType}, {Name: "score", Type: types.Float64Type}}
	for _, cols := range [][]int{{}, {1}, {2}, {0, 1, 2}} {
		c := exec.ConnectorSpec{Connector: Name, URL: url + "?format=csv&bad_rows=skip", Schema: schema, Columns: cols}
		rows, bad, err := runErr(t, mem, c, nil)
		if err != nil || len(rows) != 1 || bad != 2 {
			t.Errorf("columns %v with bad_rows=skip: rows %q, %d bad, %v; want 1 row and 2 bad", cols, rows, bad, err)
		}
		c.URL = url + "?format=csv"
		_, _, err = runErr(t, mem, c, nil)
		if !errors.Is(err, exec.ErrBadInput) || !strings.Contains(err.Error(), path+", line 2: column score: invalid double \"oops\"") {
			t.Errorf("columns %v: %v, want the read to fail at line 2's score", cols, err)
		}
	}
	// The first skipped row is described for the client.
	src, err := newSourceFor(exec.ConnectorSpec{Connector: Name, URL: url + "?format=csv&bad_rows=skip", Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	tc := conntest.TaskContext(t, mem, 0, 1)
	out := &conntest.Collector{}
	if err := src.Open(context.Background(), tc); err != nil {
		t.Fatal(err)
	}
	if err := src.Run(context.Background(), out); err != nil {
		t.Fatal(err)
	}
	out.Release()
	src.Close()
	if got, want := tc.Metrics.FirstBadRecord(), "file "+path+", line 2: column score: invalid double \"oops\""; got != want {
		t.Errorf("first bad record %q, want %q", got, want)
	}
}

// TestBadRowsFailByFormat: by default a bad line of a text or JSON file fails
// the read too; a JSON null or a non-object is a bad row.
func TestBadRowsFailByFormat(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	for _, c := range []struct {
		options, content string
		schema           types.Schema
		want             string
	}{
		{"", "ok\nalso ok\nnot \xff ok\n", lineSchema, "line 3: invalid UTF-8"},
		{"?format=json", `{"n": 1}` + "\nnull\n", types.Schema{{Name: "n", Type: types.Int64Type}}, `line 2: not a JSON object: "null"`},
		{"?format=json", `{"n": 1}` + "\n[1]\n", types.Schema{{Name: "n", Type: types.Int64Type}}, `line 2: not a JSON object: "[1]"`},
	} {
		_, url := writeFile(t, c.content)
		for _, cols := range [][]int{nil, {}} {
			_, _, err := runErr(t, mem, exec.ConnectorSpec{Connector: Name, URL: url + c.options, Schema: c.schema, Columns: cols}, nil)
			if !errors.Is(err, exec.ErrBadInput) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%q columns %v: %v, want %q", c.content, cols, err, c.want)
			}
		}
	}
}

// TestUnterminatedQuote: a quote that never closes makes its record bad and
// takes only its own line with it, not the rest of the file; by default it
// fails the read naming the line it opened on.
func TestUnterminatedQuote(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	var sb strings.Builder
	for i := 1; i <= 1000; i++ {
		if i == 501 {
			fmt.Fprintf(&sb, "%d,\"stray quote\n", i)
			continue
		}
		fmt.Fprintf(&sb, "%d,x\n", i)
	}
	path, url := writeFile(t, sb.String())
	schema := types.Schema{{Name: "id", Type: types.Int64Type}, {Name: "s", Type: types.StringType}}
	rows, bad, err := runErr(t, mem, exec.ConnectorSpec{Connector: Name, URL: url + "?format=csv&bad_rows=skip", Schema: schema}, nil)
	if err != nil || len(rows) != 999 || bad != 1 || slices.Contains(rows, "501|x") {
		t.Errorf("bad_rows=skip: %d rows, %d bad, %v; want 999 rows and 1 bad", len(rows), bad, err)
	}
	_, _, err = runErr(t, mem, exec.ConnectorSpec{Connector: Name, URL: url + "?format=csv", Schema: schema}, nil)
	if !errors.Is(err, exec.ErrBadInput) || !strings.Contains(err.Error(), path+", line 501: unterminated quoted field") {
		t.Errorf("default: %v, want the read to fail at line 501", err)
	}
	// A quoted field that runs on over maxQuotedBytes is taken to be
	// unterminated, however far the file goes on.
	var long strings.Builder
	long.WriteString("1,\"")
	for long.Len() < maxQuotedBytes+1000 {
		long.WriteString("a line of a field that never ends\n")
	}
	long.WriteString("\"\n2,y\n")
	_, url = writeFile(t, long.String())
	rows, bad, err = runErr(t, mem, exec.ConnectorSpec{Connector: Name, URL: url + "?format=csv&bad_rows=skip", Schema: schema}, nil)
	// Read on from its second line, the field's lines are records of a
	// field too few, and its closing quote opens one that never closes.
	if err != nil || !slices.Equal(rows, []string{"2|y"}) || bad < 2 {
		t.Errorf("a quoted field of over %d bytes: rows %q, %d bad, %v; want 2|y alone", maxQuotedBytes, rows, bad, err)
	}
}

// TestFileChangedWhileRead: a file truncated, appended to or replaced while a
// query reads it fails the read rather than give a part of it as the answer.
func TestFileChangedWhileRead(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	content := strings.Repeat("a line of text\n", 100000)
	for name, change := range map[string]func(path string){
		"truncated": func(path string) {
			if err := os.Truncate(path, int64(len(content)/2)); err != nil {
				t.Fatal(err)
			}
		},
		"appended": func(path string) {
			f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString("one more\n")
			f.Close()
		},
		"replaced": func(path string) {
			if err := os.WriteFile(path+".new", []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(path+".new", path); err != nil {
				t.Fatal(err)
			}
		},
	} {
		path, url := writeFile(t, content)
		c := exec.ConnectorSpec{Connector: Name, URL: url, Schema: lineSchema}
		_, _, err := runErr(t, mem, c, func() { change(path) })
		if !errors.Is(err, exec.ErrBadInput) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "while it was read") {
			t.Errorf("%s: %v, want the read to fail", name, err)
		}
	}
	// Unchanged, it reads whole.
	_, url := writeFile(t, content)
	rows, _, err := runErr(t, mem, exec.ConnectorSpec{Connector: Name, URL: url, Schema: lineSchema}, nil)
	if err != nil || len(rows) != 100000 {
		t.Errorf("unchanged: %d rows, %v", len(rows), err)
	}
}

// TestBadFieldInBlock: records are parsed a block at a time (csvBlock), and a
// bad field in the middle of a block costs its own record only: the records
// before and after it in the block are kept, in the file's order, whichever
// columns the query reads; by default the read fails at the first bad line.
// Which lines are bad is set by construction below: a bad BIGINT, invalid
// UTF-8, an impossible date, a bad decimal, a record with two bad fields
// and ones of too few and too many fields; a quoted field with a doubled quote (read by the
// row path, between two blocks) and a non-ASCII name are good.
func TestBadFieldInBlock(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	bad := map[int]string{
		1000: "12x,a,2024-01-01,1.00",
		1001: "1001,caf\xff,2024-01-01,1.00",
		1002: "1002,a,2024-02-30,1.00",
		1003: "1003,a,2024-01-01,abc",
		1004: "x,a,2024-01-01,y",
		2001: "2001,a",
		2002: "2002,a,2024-01-01,1.00,",
	}
	good := map[int][2]string{
		2000: {`2000,"quoted ""x""",2024-01-01,1.00`, `2000|quoted "x"`},
		3000: {"3000,é,2024-01-01,1.00", "3000|é"},
	}
	var sb strings.Builder
	var want []string
	for i := 1; i <= 5000; i++ {
		if line, ok := bad[i]; ok {
			sb.WriteString(line + "\n")
			continue
		}
		if g, ok := good[i]; ok {
			sb.WriteString(g[0] + "\n")
			want = append(want, g[1])
			continue
		}
		fmt.Fprintf(&sb, "%d,n%d,2024-01-%02d,%d.%02d\n", i, i%7, 1+i%28, i%1000, i%100)
		want = append(want, fmt.Sprintf("%d|n%d", i, i%7))
	}
	path, url := writeFile(t, sb.String())
	schema := types.Schema{{Name: "id", Type: types.Int64Type}, {Name: "name", Type: types.StringType},
		{Name: "day", Type: types.DateType}, {Name: "price", Type: types.DecimalType(6, 2)}}
	for _, cols := range [][]int{{0, 1}, {}, {3}, {0, 1, 2, 3}} {
		c := exec.ConnectorSpec{Connector: Name, URL: url + "?format=csv&bad_rows=skip", Schema: schema, Columns: cols}
		rows, nbad, err := runErr(t, mem, c, nil)
		if err != nil || len(rows) != len(want) || nbad != int64(len(bad)) {
			t.Errorf("columns %v with bad_rows=skip: %d rows, %d bad, %v; want %d rows and %d bad", cols, len(rows), nbad, err, len(want), len(bad))
		}
		if len(cols) == 2 && !slices.Equal(rows, want) {
			t.Errorf("columns %v: %s", cols, firstDiff(rows, want))
		}
		c.URL = url + "?format=csv"
		_, _, err = runErr(t, mem, c, nil)
		if !errors.Is(err, exec.ErrBadInput) || !strings.Contains(err.Error(), path+`, line 1000: column id: invalid bigint "12x"`) {
			t.Errorf("columns %v: %v, want the read to fail at line 1000's id", cols, err)
		}
	}
}
