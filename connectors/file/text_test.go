package file

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/vector"
)

// crafted are small inputs with the shapes line splitting gets wrong.
var crafted = []string{
	"",
	"\n",
	"\n\n\n",
	"a",
	"a\n",
	"a\nb",
	"a\nb\n",
	"a\r\nb\r\n",
	"a\r\n\r\nb",
	"one\n\ntwo\n\n\nthree\n",
	"\r\n",
	"x\ry\n", // a lone \r inside a line stays
	"trailing cr\r",
	strings.Repeat("ab\n", 50),
	strings.Repeat("a long line that crosses many small blocks\n", 9) + "last",
	"\n" + strings.Repeat("z", 300) + "\n\nq",
}

// TestLineReaderSplits checks that the ranges of subtasks 0..n-1 together return
// every line exactly once and in order, for every n and small read blocks that
// put line ends on every block boundary.
func TestLineReaderSplits(t *testing.T) {
	for _, content := range crafted {
		want := wantLines(content)
		size := int64(len(content))
		maxN := int64(7)
		if size < 20 {
			maxN = size + 2 // more subtasks than bytes
		}
		for n := int64(1); n <= maxN; n++ {
			for _, block := range []int{1, 2, 3, 5, 64, readBlock} {
				var got []string
				for i := range n {
					lr, err := newLineReader(strings.NewReader(content), size, split(size, i, n), split(size, i+1, n), i > 0, block)
					if err != nil {
						t.Fatal(err)
					}
					for {
						line, ok, err := lr.next()
						if err != nil {
							t.Fatal(err)
						}
						if !ok {
							break
						}
						got = append(got, string(line))
					}
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%q n=%d block=%d: %s", content, n, block, firstDiff(got, want))
				}
			}
		}
	}
}

func TestSplit(t *testing.T) {
	for _, size := range []int64{0, 1, 7, 100, 1 << 62, 1<<63 - 1} {
		for n := int64(1); n <= 7; n++ {
			if got := split(size, n, n); got != size {
				t.Errorf("split(%d, %d, %d) = %d", size, n, n, got)
			}
			for i := range n {
				if a, b := split(size, i, n), split(size, i+1, n); a > b || a < 0 {
					t.Errorf("split(%d, ., %d): range %d is [%d, %d)", size, n, i, a, b)
				}
			}
		}
	}
}

// TestText reads crafted files through the source with 1 to 7 subtasks.
func TestText(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	for _, content := range crafted {
		_, url := writeFile(t, content)
		want := wantLines(content)
		for n := 1; n <= 7; n++ {
			got, bad := concat(readAll(t, mem, exec.ConnectorSpec{Connector: Name, URL: url, Schema: lineSchema}, n))
			if !slices.Equal(got, want) || bad != 0 {
				t.Fatalf("%q n=%d: %s, %d bad", content, n, firstDiff(got, want), bad)
			}
		}
	}
}

// TestTextKJV reads the WordCount corpus with 1 to 7 subtasks: every line exactly
// once, in order when the subtasks' outputs are concatenated.
func TestTextKJV(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	path := "../../data/kjv.txt"
	content, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the WordCount corpus is data/kjv.txt in the repository: %v", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	url := "file://" + abs
	want := wantLines(string(content))
	if len(want) != 31102 {
		t.Fatalf("kjv.txt has %d lines, want 31102", len(want))
	}
	for n := 1; n <= 7; n++ {
		res := readAll(t, mem, exec.ConnectorSpec{Connector: Name, URL: url, Schema: lineSchema}, n)
		got, bad := concat(res)
		if !slices.Equal(got, want) || bad != 0 {
			t.Fatalf("n=%d: %s, %d bad", n, firstDiff(got, want), bad)
		}
		for i, r := range res {
			if len(r.rows) == 0 {
				t.Errorf("n=%d: subtask %d read nothing", n, i)
			}
		}
	}
}

// TestTextBatches checks batch boundaries: a batch ends at BatchRows rows or
// before BatchBytes bytes, and a line longer than that is a batch of its own.
func TestTextBatches(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	long := strings.Repeat("y", BatchBytes+10)
	content := strings.Repeat("a\n", BatchRows+1) + long + "\n" + strings.Repeat(strings.Repeat("b", 1000)+"\n", 2000)
	_, url := writeFile(t, content)
	c := exec.ConnectorSpec{Connector: Name, URL: url, Schema: lineSchema}
	src, err := newSourceFor(c)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	out := collect(t, mem, src)
	defer out.Release()
	var sizes []int
	for _, b := range out.Batches {
		sizes = append(sizes, b.NumRows())
	}
	// 4096 a's; 1 a; the long line; then 2000 b-lines of 1001 bytes, cut into
	// batches of about BatchBytes: never more than one line over it, and never
	// a line short of it except the last batch.
	if len(sizes) < 4 || !slices.Equal(sizes[:3], []int{BatchRows, 1, 1}) {
		t.Fatalf("batch sizes %v, want %d, 1, 1 first", sizes, BatchRows)
	}
	total := 0
	for i, n := range sizes[3:] {
		total += n
		last := i == len(sizes)-4
		if n*1001 > BatchBytes+1001 || (!last && n*1001 < BatchBytes-1001) {
			t.Errorf("batch of %d 1001-byte lines for BatchBytes %d", n, BatchBytes)
		}
	}
	if total != 2000 {
		t.Errorf("%d b-lines in batches %v, want 2000", total, sizes[3:])
	}
	if got := out.Rows(); !slices.Equal(got, wantLines(content)) {
		t.Error(firstDiff(got, wantLines(content)))
	}
}

// TestTextBadUTF8 checks that a line that is not UTF-8 is counted and skipped.
func TestTextBadUTF8(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	_, url := writeFile(t, "ok\nbad \xff\xfe\nfine\n")
	got, bad := concat(readAll(t, mem, exec.ConnectorSpec{Connector: Name, URL: url + "?bad_rows=skip", Schema: lineSchema}, 1))
	if want := []string{"ok", "fine"}; !slices.Equal(got, want) || bad != 1 {
		t.Errorf("got %q and %d bad, want %q and 1", got, bad, want)
	}
}

func TestTextRepeatedColumn(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	_, url := writeFile(t, "a\nb\n")
	got, _ := concat(readAll(t, mem, exec.ConnectorSpec{Connector: Name, URL: url, Schema: lineSchema, Columns: []int{0, 0}}, 1))
	if want := []string{"a|a", "b|b"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestTextNoColumns is count(*): batches carry row counts and no columns.
func TestTextNoColumns(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	content := strings.Repeat("line\n", 2*BatchRows+5)
	_, url := writeFile(t, content)
	for n := 1; n <= 3; n++ {
		total := 0
		for _, r := range readAll(t, mem, exec.ConnectorSpec{Connector: Name, URL: url, Schema: lineSchema, Columns: []int{}}, n) {
			for _, row := range r.rows {
				if row != "" {
					t.Fatalf("row %q has columns", row)
				}
			}
			total += len(r.rows)
		}
		if total != 2*BatchRows+5 {
			t.Errorf("n=%d: %d rows, want %d", n, total, 2*BatchRows+5)
		}
	}
}
