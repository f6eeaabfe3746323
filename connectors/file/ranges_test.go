package file

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/connectors/internal/conntest"
	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/exec/vector"
)

// TestRangeQueue checks that the pieces of the ranges added cover each range
// exactly, in order, in pieces within the queue's bounds.
func TestRangeQueue(t *testing.T) {
	for _, size := range []int64{0, 1, 1000, 44_000_000, 220_000_000} {
		for n := int64(1); n <= 4; n++ {
			q := newRangeQueue()
			for i := range n {
				q.add(split(size, i, n), split(size, i+1, n))
			}
			next := int64(0) // where the next piece must start
			pieces := 0
			for {
				start, end, ok := q.take()
				if !ok {
					break
				}
				pieces++
				if start != next || end <= start || end > size {
					t.Fatalf("size %d n=%d: piece (%d, %d] after %d", size, n, start, end, next)
				}
				if end-start > q.maxPiece+q.minPiece/2 {
					t.Fatalf("size %d n=%d: piece of %d bytes, over the maximum", size, n, end-start)
				}
				atRangeEnd := false
				for i := range n + 1 {
					atRangeEnd = atRangeEnd || end == split(size, i, n)
				}
				if end-start < q.minPiece && !atRangeEnd {
					t.Fatalf("size %d n=%d: piece (%d, %d] is under the minimum and not a range's last", size, n, start, end)
				}
				next = end
			}
			if next != size {
				t.Fatalf("size %d n=%d: pieces end at %d", size, n, next)
			}
			if size == 220_000_000 && pieces < 50 {
				t.Errorf("size %d n=%d: only %d pieces", size, n, pieces)
			}
		}
	}
}

// sharedRun runs the n subtasks of the source c describes with one
// exec.Colocated, holding a queue with the given piece bounds, and returns the
// rows each emitted and the bad records each counted. concurrent runs them at
// once; otherwise all open first and then run one after another, so the first
// one reads everything. setup, when not nil, adjusts each subtask's
// TaskContext before it opens.
func sharedRun(t *testing.T, mem memory.Allocator, c exec.ConnectorSpec, n int, minP, maxP int64, concurrent bool, setup func(*exec.TaskContext)) []subtaskResult {
	t.Helper()
	colocated := &exec.Colocated{}
	colocated.Value(func() any { return &rangeQueue{minPiece: minP, maxPiece: maxP} })
	srcs := make([]exec.Source, n)
	tcs := make([]*exec.TaskContext, n)
	for i := range n {
		src, err := newSourceFor(c)
		if err != nil {
			t.Fatal(err)
		}
		tc := conntest.TaskContext(t, mem, i, n)
		tc.Colocated = colocated
		if setup != nil {
			setup(tc)
		}
		if err := src.Open(context.Background(), tc); err != nil {
			t.Fatal(err)
		}
		srcs[i], tcs[i] = src, tc
	}
	res := make([]subtaskResult, n)
	errs := make([]error, n)
	run := func(i int) {
		var out conntest.Collector
		errs[i] = srcs[i].Run(context.Background(), &out)
		res[i] = subtaskResult{rows: out.Rows(), bad: tcs[i].Metrics.BadRecords.Load()}
		out.Release()
		srcs[i].Close()
	}
	var wg sync.WaitGroup
	for i := range n {
		if concurrent {
			wg.Go(func() { run(i) })
		} else {
			run(i)
		}
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("subtask %d/%d: %v", i, n, err)
		}
	}
	return res
}

// sortedRows returns every subtask's rows in one sorted list, and the bad records.
func sortedRows(res []subtaskResult) ([]string, int64) {
	rows, bad := concat(res)
	slices.Sort(rows)
	return rows, bad
}

// TestSharedRanges reads crafted files and the WordCount corpus through
// subtasks sharing their ranges, with pieces down to one byte so that piece
// boundaries fall on every position of a line: every line is read exactly once.
func TestSharedRanges(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	for _, content := range crafted {
		_, url := writeFile(t, content)
		want := wantLines(content)
		slices.Sort(want)
		for n := 2; n <= 4; n++ {
			for _, bounds := range [][2]int64{{1, 1}, {1, 3}, {2, 7}, {minPiece, maxPiece}} {
				for _, concurrent := range []bool{true, false} {
					res := sharedRun(t, mem, exec.ConnectorSpec{Connector: Name, URL: url, Schema: lineSchema}, n, bounds[0], bounds[1], concurrent, nil)
					got, bad := sortedRows(res)
					if !slices.Equal(got, want) || bad != 0 {
						t.Fatalf("%q n=%d pieces %v concurrent=%v: %s, %d bad", content, n, bounds, concurrent, firstDiff(got, want), bad)
					}
					if !concurrent {
						for i, r := range res[1:] {
							if len(r.rows) != 0 {
								t.Fatalf("%q n=%d: subtask %d read %d rows after subtask 0 emptied the queue", content, n, i+1, len(r.rows))
							}
						}
					}
				}
			}
		}
	}

	abs, err := filepath.Abs("../../data/kjv.txt")
	if err != nil {
		t.Fatal(err)
	}
	content, err := os.ReadFile(abs)
	if err != nil {
		t.Fatal(err)
	}
	want := wantLines(string(content))
	slices.Sort(want)
	for _, bounds := range [][2]int64{{1 << 10, 8 << 10}, {minPiece, maxPiece}} {
		res := sharedRun(t, mem, exec.ConnectorSpec{Connector: Name, URL: "file://" + abs, Schema: lineSchema}, 3, bounds[0], bounds[1], true, nil)
		if got, bad := sortedRows(res); !slices.Equal(got, want) || bad != 0 {
			t.Fatalf("kjv.txt, pieces %v: %s, %d bad", bounds, firstDiff(got, want), bad)
		}
	}
}

// TestSharedRangesBadRecords checks that subtasks reading pieces count every bad
// record once and log the right line numbers: a piece's numbers start after the
// lines before it in the file.
func TestSharedRangesBadRecords(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	var sb strings.Builder
	bad := map[int]bool{}
	var wantRows []string
	for i := 1; i <= 2000; i++ {
		if i%100 == 0 {
			sb.WriteString("oops\n")
			bad[i] = true
		} else {
			fmt.Fprintf(&sb, `{"n": %d}`+"\n", i)
			wantRows = append(wantRows, fmt.Sprint(i))
		}
	}
	slices.Sort(wantRows)
	_, url := writeFile(t, sb.String())
	c := exec.ConnectorSpec{Connector: Name, URL: url + "?format=json&bad_rows=skip", Schema: types.Schema{{Name: "n", Type: types.Int64Type}}}
	const n = 2
	logs := []*strings.Builder{{}, {}}
	res := sharedRun(t, mem, c, n, 100, 700, true, func(tc *exec.TaskContext) {
		tc.Log = slog.New(slog.NewTextHandler(logs[tc.Subtask], nil))
	})
	got, nbad := sortedRows(res)
	if !slices.Equal(got, wantRows) || nbad != 20 {
		t.Fatalf("%s, %d bad records, want 20", firstDiff(got, wantRows), nbad)
	}
	logged := 0
	for _, l := range logs {
		for _, line := range strings.Split(l.String(), "\n") {
			if _, rest, ok := strings.Cut(line, " line="); ok {
				var no int
				fmt.Sscan(rest, &no)
				if !bad[no] {
					t.Errorf("logged line %d, which is not a bad one: %s", no, line)
				}
				logged++
			}
		}
	}
	if logged < maxLoggedBadRecords {
		t.Errorf("%d bad records logged, want at least %d", logged, maxLoggedBadRecords)
	}
}

// TestSharedRangesNotWithCheckpoints checks that subtasks of a job that takes
// checkpoints read their own ranges, even with a Colocated: a checkpoint holds
// a position in the subtask's range. The subtasks run one after another, so
// the first would read everything if they shared.
func TestSharedRangesNotWithCheckpoints(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	content := strings.Repeat("some line of text\n", 1000)
	_, url := writeFile(t, content)
	c := exec.ConnectorSpec{Connector: Name, URL: url, Schema: lineSchema}
	const n = 3
	own := readAll(t, mem, c, n)
	res := sharedRun(t, mem, c, n, minPiece, maxPiece, false, func(tc *exec.TaskContext) {
		tc.Checkpointing = true
		tc.CheckpointLock = new(sync.Mutex)
	})
	for i := range n {
		if len(res[i].rows) != len(own[i].rows) {
			t.Errorf("subtask %d read %d rows, its range has %d", i, len(res[i].rows), len(own[i].rows))
		}
	}
}
