package file

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/connectors/internal/conntest"
	"github.com/hummer-db/hummer/connectors/spec"
	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/operators"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/exec/vector"
)

var lineSchema = types.Schema{{Name: "line", Type: types.StringType}}

// writeFile writes content to a new file and returns its file:// URL.
func writeFile(t *testing.T, content string) (path, url string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "in")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, "file://" + path
}

// subtaskResult is what one subtask of a source emitted.
type subtaskResult struct {
	rows        []string
	bad         int64
	read, total int64 // TaskMetrics.SourceBytes and SourceTotal
}

// readAll runs subtasks 0..n-1 of the source c describes, one after the other, and
// returns what each emitted.
func readAll(t *testing.T, alloc memory.Allocator, c exec.ConnectorSpec, n int) []subtaskResult {
	t.Helper()
	r := exec.NewRegistry()
	operators.Register(r)
	Register(r)
	res := make([]subtaskResult, n)
	for i := range n {
		src, err := r.NewSource(c)
		if err != nil {
			t.Fatalf("NewSource: %v", err)
		}
		tc := conntest.TaskContext(t, alloc, i, n)
		if err := src.Open(context.Background(), tc); err != nil {
			t.Fatalf("Open: %v", err)
		}
		var out conntest.Collector
		if err := src.Run(context.Background(), &out); err != nil {
			t.Fatalf("Run subtask %d/%d: %v", i, n, err)
		}
		if err := src.Close(); err != nil {
			t.Fatal(err)
		}
		if err := src.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		for _, b := range out.Batches {
			if b.NumRows() > BatchRows {
				t.Errorf("batch of %d rows, more than BatchRows", b.NumRows())
			}
		}
		res[i] = subtaskResult{rows: out.Rows(), bad: tc.Metrics.BadRecords.Load(),
			read: tc.Metrics.SourceBytes.Load(), total: tc.Metrics.SourceTotal.Load()}
		out.Release()
	}
	return res
}

// collect runs src as the only subtask and returns what it emitted.
func collect(t *testing.T, alloc memory.Allocator, src exec.Source) *conntest.Collector {
	t.Helper()
	if err := src.Open(context.Background(), conntest.TaskContext(t, alloc, 0, 1)); err != nil {
		t.Fatalf("Open: %v", err)
	}
	out := &conntest.Collector{}
	if err := src.Run(context.Background(), out); err != nil {
		t.Fatalf("Run: %v", err)
	}
	return out
}

// concat returns the rows of every subtask in subtask order.
func concat(res []subtaskResult) (rows []string, bad int64) {
	for _, r := range res {
		rows = append(rows, r.rows...)
		bad += r.bad
	}
	return rows, bad
}

// wantLines splits content as the text format must: on "\n", dropping one "\r"
// before it and the empty string after a final newline.
func wantLines(content string) []string {
	lines := strings.Split(content, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

// firstDiff describes where got and want first differ.
func firstDiff(got, want []string) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("row %d: got %.80q, want %.80q", i, got[i], want[i])
		}
	}
	return fmt.Sprintf("got %d rows, want %d", len(got), len(want))
}

func TestValidate(t *testing.T) {
	two := types.Schema{{Name: "a", Type: types.Int64Type}, {Name: "b", Type: types.StringType}}
	for _, tc := range []struct {
		url    string
		schema types.Schema
		err    string // "" for valid
	}{
		{url: "file:///data/kjv.txt", schema: lineSchema},
		{url: "file://localhost/data/kjv.txt", schema: lineSchema},
		{url: "file:///data/t.csv?format=csv&header=true&delimiter=;", schema: two},
		{url: "file:///data/t.tsv?format=CSV&delimiter=%09", schema: two},
		{url: "file:///data/t.tsv?format=csv&delimiter=tab", schema: two},
		{url: "file:///data/t.json?format=json", schema: two},
		{url: "file:///does/not/exist/yet.txt", schema: lineSchema},
		{url: "http:///data/kjv.txt", schema: lineSchema, err: "scheme must be file"},
		{url: "file://data/kjv.txt", schema: lineSchema, err: "must be absolute"},
		{url: "file:data/kjv.txt", schema: lineSchema, err: "must be absolute"},
		{url: "file://", schema: lineSchema, err: "must be absolute"},
		{url: "file:///a#b", schema: lineSchema, err: "%23"},
		{url: "file:///data/kjv.txt?fromat=csv", schema: lineSchema,
			err: `unknown option "fromat" (valid options: format, header, delimiter, bad_rows, partition_by)`},
		{url: "file:///data/kjv.txt?format=xml", schema: lineSchema, err: `"xml" is not one of text, csv, json`},
		{url: "file:///data/kjv.txt?format=text&format=csv", schema: lineSchema, err: "given 2 times"},
		{url: "file:///data/kjv.txt?header=true", schema: lineSchema, err: "header applies only to format=csv"},
		{url: "file:///d.json?format=json&delimiter=;", schema: two, err: "delimiter applies only to format=csv"},
		{url: "file:///d.csv?format=csv&header=yes", schema: two, err: `"yes" is not a boolean`},
		{url: "file:///d.csv?format=csv&delimiter=;;", schema: two, err: "not one single-byte character"},
		{url: `file:///d.csv?format=csv&delimiter="`, schema: two, err: "cannot be a delimiter"},
		{url: "file:///d.txt", schema: two, err: "exactly one TEXT column"},
		{url: "file:///d.txt", schema: types.Schema{{Name: "n", Type: types.Int64Type}}, err: "exactly one TEXT column"},
		{url: "file:///d.csv?format=csv", schema: types.Schema{{Name: "n", Type: types.NullType}}, err: "cannot read column n of type null"},
		{url: "file:///d.csv?format=csv", schema: nil, err: "at least one column"},
		{url: "file:///d%zz", schema: lineSchema, err: "bad URL"},
	} {
		err := Validate(exec.ConnectorSpec{Connector: Name, URL: tc.url, Schema: tc.schema})
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: unexpected error %v", tc.url, err)
		case tc.err != "" && err == nil:
			t.Errorf("%s: no error, want %q", tc.url, tc.err)
		case tc.err != "" && !strings.Contains(err.Error(), tc.err):
			t.Errorf("%s: error %q, want it to contain %q", tc.url, err, tc.err)
		case tc.err != "" && !errors.Is(err, spec.ErrBadOption):
			t.Errorf("%s: error %q does not wrap ErrBadOption", tc.url, err)
		}
	}
}

func TestMissingFile(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	for _, tc := range []struct {
		path     string
		notExist bool
	}{
		{path: filepath.Join(dir, "missing.txt"), notExist: true},
		{path: dir}, // a directory
	} {
		src, err := newSourceFor(exec.ConnectorSpec{Connector: Name, URL: "file://" + tc.path, Schema: lineSchema})
		if err != nil {
			t.Fatal(err)
		}
		err = src.Open(context.Background(), conntest.TaskContext(t, mem, 0, 1))
		if err == nil {
			t.Fatalf("%s: Open succeeded", tc.path)
		}
		if !errors.Is(err, exec.ErrBadInput) || !strings.Contains(err.Error(), tc.path) {
			t.Errorf("%s: error %q: want ErrBadInput naming the path", tc.path, err)
		}
		if errors.Is(err, os.ErrNotExist) != tc.notExist {
			t.Errorf("%s: errors.Is(%q, os.ErrNotExist) = %v", tc.path, err, !tc.notExist)
		}
		if err := src.Close(); err != nil {
			t.Errorf("Close after a failed Open: %v", err)
		}
	}
}

func newSourceFor(c exec.ConnectorSpec) (exec.Source, error) {
	r := exec.NewRegistry()
	operators.Register(r)
	Register(r)
	return r.NewSource(c)
}

// TestCancel checks that Run stops between batches once ctx is cancelled.
func TestCancel(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	_, url := writeFile(t, strings.Repeat("x\n", 10*BatchRows))
	src, err := newSourceFor(exec.ConnectorSpec{Connector: Name, URL: url, Schema: lineSchema})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := src.Open(ctx, conntest.TaskContext(t, mem, 0, 1)); err != nil {
		t.Fatal(err)
	}
	out := conntest.Collector{OnCollect: func(int) { cancel() }}
	defer out.Release()
	if err := src.Run(ctx, &out); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v, want context.Canceled", err)
	}
	if n := len(out.Batches); n != 1 {
		t.Errorf("%d batches after cancelling on the first", n)
	}
}

// CheckFile refuses a table over a file that is not there to read, with
// PostgreSQL's SQLSTATE and wording (COPY FROM a missing file says the same).
func TestCheckFile(t *testing.T) {
	dir := t.TempDir()
	present := filepath.Join(dir, "present.txt")
	if err := os.WriteFile(present, []byte("a line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, code, msg string
	}{
		{present, "", ""},
		{filepath.Join(dir, "missing.txt"), "58P01", fmt.Sprintf(`could not open file "%s/missing.txt" for reading: No such file or directory`, dir)},
		{dir, "42809", fmt.Sprintf(`"%s" is not a regular file: a file table reads one file (end the path with / for a directory of part files)`, dir)},
	} {
		err := CheckFile(exec.ConnectorSpec{Connector: Name, URL: "file://" + tc.path, Schema: lineSchema})
		if tc.code == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.path, err)
			}
			continue
		}
		var se interface{ SQLState() string }
		if !errors.As(err, &se) || se.SQLState() != tc.code || err.Error() != tc.msg || !errors.Is(err, exec.ErrBadInput) {
			t.Errorf("%s: %v, want %s %q", tc.path, err, tc.code, tc.msg)
		}
	}
	if err := CheckFile(exec.ConnectorSpec{Connector: Name, URL: "file://" + present + "?format=xml", Schema: lineSchema}); !errors.Is(err, spec.ErrBadOption) {
		t.Errorf("a bad option: %v, want ErrBadOption", err)
	}
}

// TestSourceProgressBytes: the subtasks' totals add up to the file's size,
// and having read it all they count at least as many bytes read (a subtask
// reads a little past its range to finish its last line).
func TestSourceProgressBytes(t *testing.T) {
	var b strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&b, "line %d of the file\n", i)
	}
	content := b.String()
	_, url := writeFile(t, content)
	for _, n := range []int{1, 3} {
		var read, total int64
		for _, r := range readAll(t, memory.DefaultAllocator, exec.ConnectorSpec{Connector: Name, URL: url, Schema: lineSchema}, n) {
			read += r.read
			total += r.total
		}
		if total != int64(len(content)) || read < total {
			t.Errorf("%d subtasks: read %d bytes of a total of %d, want a total of the file's %d and all of it read", n, read, total, len(content))
		}
	}
}
