package file

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/connectors/internal/conntest"
	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/exec/vector"
)

// errCut is how a test's collector fails the batch after its cut.
var errCut = errors.New("cut")

// cutResult is what one run of a source gave up to a checkpoint's snapshot.
type cutResult struct {
	rows  []string // the rows emitted before the snapshot
	state []byte   // the snapshot
}

// cutRun runs subtask i of n of the source c describes, with checkpoints on,
// restored from state unless it is nil, as a job that fails while the source
// emits batch cut+1: the collector takes cut batches and fails the next (cut < 0:
// it takes them all). Then it takes a snapshot as the task's checkpointing
// goroutine would, holding the checkpoint lock: the engine may take one between
// Run's failure and the task's end, so a batch that failed to go out must not be
// covered.
func cutRun(t *testing.T, mem memory.Allocator, c exec.ConnectorSpec, i, n int, state []byte, cut int) cutResult {
	t.Helper()
	ctx := context.Background()
	src, tc := openCheckpointed(t, mem, c, i, n, state)
	defer src.Close()
	out := &cutCollector{cut: cut}
	defer out.Release()
	if err := src.Run(ctx, out); err != nil && !errors.Is(err, errCut) {
		t.Fatalf("Run: %v", err)
	}
	tc.CheckpointLock.Lock()
	defer tc.CheckpointLock.Unlock()
	data, err := src.(exec.Checkpointed).SnapshotState(ctx, 1)
	if err != nil {
		t.Fatalf("SnapshotState: %v", err)
	}
	return cutResult{rows: out.Rows(), state: data}
}

// openCheckpointed opens subtask i of n of c with checkpoints on, restored
// from state unless it is nil.
func openCheckpointed(t *testing.T, mem memory.Allocator, c exec.ConnectorSpec, i, n int, state []byte) (exec.Source, *exec.TaskContext) {
	t.Helper()
	src, err := newSourceFor(c)
	if err != nil {
		t.Fatal(err)
	}
	tc := conntest.TaskContext(t, mem, i, n)
	tc.Checkpointing = true
	tc.CheckpointLock = new(sync.Mutex)
	if err := src.Open(context.Background(), tc); err != nil {
		t.Fatalf("Open: %v", err)
	}
	if state != nil {
		if err := src.(exec.Checkpointed).RestoreState(context.Background(), state); err != nil {
			t.Fatalf("RestoreState(%s): %v", state, err)
		}
	}
	return src, tc
}

// cutCollector keeps the first cut batches and fails the next; with cut < 0
// it keeps all.
type cutCollector struct {
	conntest.Collector
	cut int
}

func (c *cutCollector) Collect(ctx context.Context, b exec.Batch) error {
	if c.cut >= 0 && len(c.Batches) == c.cut {
		return errCut
	}
	return c.Collector.Collect(ctx, b)
}

// resume reads subtask i of n of c as a job that fails and restarts several
// times would: cut after batch k and restored from that snapshot; snapshotted
// again at once, with nothing emitted, which must give the same position;
// restored from that and cut after one more batch; restored again and read to
// the end. It returns the rows emitted before each snapshot, in order.
func resume(t *testing.T, mem memory.Allocator, c exec.ConnectorSpec, i, n, k int) []string {
	t.Helper()
	a := cutRun(t, mem, c, i, n, nil, k)
	b := cutRun(t, mem, c, i, n, a.state, 0)
	if len(b.rows) != 0 || string(b.state) != string(a.state) {
		t.Fatalf("restored from %s, the snapshot before any batch is %s", a.state, b.state)
	}
	cc := cutRun(t, mem, c, i, n, b.state, 1)
	d := cutRun(t, mem, c, i, n, cc.state, -1)
	return slices.Concat(a.rows, cc.rows, d.rows)
}

// checkpointCase is a file and the rows a read of it must give, worked out from
// how it was generated rather than by the source.
type checkpointCase struct {
	name    string
	options string // the URL's query
	schema  types.Schema
	cols    []int
	content string
	want    []string
}

func checkpointCases() []checkpointCase {
	rng := rand.New(rand.NewPCG(1, 2))
	word := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = "abcdefghij klmnopqrstuvwxyz"[rng.IntN(27)]
		}
		return string(b)
	}

	// Text: lines of 0 to 200 bytes, some ending in "\r\n", some not UTF-8 (bad),
	// a few longer than a batch, and a last line without "\n".
	var text strings.Builder
	for i := range 4000 {
		switch {
		case i%997 == 500:
			text.WriteString(word(BatchBytes + 100))
		case i%331 == 7:
			text.WriteString("bad \xff\xfe")
		default:
			text.WriteString(word(rng.IntN(200)))
		}
		if i%13 == 0 {
			text.WriteByte('\r')
		}
		text.WriteByte('\n')
	}
	text.WriteString("no newline")
	var textWant, countWant []string
	for _, l := range wantLines(text.String()) {
		if utf8.ValidString(l) {
			textWant = append(textWant, l)
			countWant = append(countWant, "") // count(*) counts the good lines, as SELECT line reads them
		}
	}

	// CSV: a header, then records whose names may be quoted and hold the
	// delimiter, quotes, "\n" and "\r\n"; blank lines; records with a field too
	// many (bad).
	var csv strings.Builder
	var csvWant []string
	csv.WriteString("id,name\n")
	for i := range 12000 { // several batches of csvBatchBytes
		name := word(1 + rng.IntN(120))
		switch {
		case i%211 == 3:
			fmt.Fprintf(&csv, "%d,%s,extra\n", i, name)
			continue
		case i%17 == 0:
			csv.WriteString("\n")
		}
		switch i % 5 {
		case 0:
			fmt.Fprintf(&csv, "%d,\"%s\n%s\"\n", i, name, name)
			csvWant = append(csvWant, fmt.Sprintf("%d|%s\n%s", i, name, name))
		case 1:
			fmt.Fprintf(&csv, "%d,\"%s\r\n,\"\"%s\"\"\"\r\n", i, name, name)
			csvWant = append(csvWant, fmt.Sprintf("%d|%s\n,\"%s\"", i, name, name))
		default:
			fmt.Fprintf(&csv, "%d,%s\n", i, name)
			csvWant = append(csvWant, fmt.Sprintf("%d|%s", i, name))
		}
	}

	// JSON: one object a line, some ending in "\r\n"; blank lines; lines that
	// are not JSON (bad).
	var js strings.Builder
	var jsWant []string
	for i := range 4000 {
		name := word(rng.IntN(120))
		switch {
		case i%97 == 5:
			js.WriteString("not json\n")
			continue
		case i%23 == 0:
			js.WriteString("  \n")
		}
		fmt.Fprintf(&js, `{"id": %d, "name": %q}`, i, name)
		if i%7 == 0 {
			js.WriteByte('\r')
		}
		js.WriteByte('\n')
		jsWant = append(jsWant, fmt.Sprintf("%d|%s", i, name))
	}

	idName := types.Schema{{Name: "id", Type: types.Int64Type}, {Name: "name", Type: types.StringType}}
	return []checkpointCase{
		{name: "text", options: "?bad_rows=skip", schema: lineSchema, content: text.String(), want: textWant},
		{name: "text count", options: "?bad_rows=skip", schema: lineSchema, cols: []int{}, content: text.String(), want: countWant},
		{name: "csv", options: "?format=csv&header=true&bad_rows=skip", schema: idName, content: csv.String(), want: csvWant},
		{name: "json", options: "?format=json&bad_rows=skip", schema: idName, content: js.String(), want: jsWant},
	}
}

// TestCheckpointResume checks that a subtask restored from a checkpoint goes on
// exactly where the checkpoint was taken: for text (also without columns), CSV
// with a header and quoted newlines, and JSON, each with bad records and blank
// lines, with 1 and 3 subtasks, the rows emitted before each snapshot and after
// each restore are all the file's rows once and in order, for cuts after 0 to
// all batches.
func TestCheckpointResume(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	for _, tc := range checkpointCases() {
		t.Run(tc.name, func(t *testing.T) {
			_, url := writeFile(t, tc.content)
			c := exec.ConnectorSpec{Connector: Name, URL: url + tc.options, Schema: tc.schema, Columns: tc.cols}
			for _, n := range []int{1, 3} {
				// A run to the end says how many batches each subtask emits.
				batches := make([]int, n)
				for i := range n {
					batches[i] = countBatches(t, mem, c, i, n)
				}
				if n == 1 && batches[0] < 4 {
					t.Fatalf("the file makes %d batches; the test wants several", batches[0])
				}
				for k := 0; k <= slices.Max(batches); k++ {
					var got []string
					for i := range n {
						got = append(got, resume(t, mem, c, i, n, min(k, batches[i]))...)
					}
					if !slices.Equal(got, tc.want) {
						t.Fatalf("n=%d, cut after batch %d: %s", n, k, firstDiff(got, tc.want))
					}
				}
			}
		})
	}
}

// countBatches returns the number of batches subtask i of n of c emits.
func countBatches(t *testing.T, mem memory.Allocator, c exec.ConnectorSpec, i, n int) int {
	t.Helper()
	src, _ := openCheckpointed(t, mem, c, i, n, nil)
	defer src.Close()
	var out conntest.Collector
	defer out.Release()
	if err := src.Run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	return len(out.Batches)
}

// TestCheckpointConcurrentSnapshots takes snapshots as the task does, from
// another goroutine holding the checkpoint lock, while Run emits, wherever they
// fall: each must cover exactly the batches emitted when it was taken, so that
// restoring it gives the rest of the rows. Run it with -race.
func TestCheckpointConcurrentSnapshots(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	for _, tc := range checkpointCases() {
		t.Run(tc.name, func(t *testing.T) {
			_, url := writeFile(t, tc.content)
			c := exec.ConnectorSpec{Connector: Name, URL: url + tc.options, Schema: tc.schema, Columns: tc.cols}
			for _, n := range []int{1, 3} {
				var all []string
				for i := range n {
					all = append(all, concurrentSnapshots(t, mem, c, i, n)...)
				}
				if !slices.Equal(all, tc.want) {
					t.Fatalf("n=%d: %s", n, firstDiff(all, tc.want))
				}
			}
		})
	}
}

// concurrentSnapshots runs subtask i of n of c while another goroutine takes
// snapshots until it ends, checks that each, restored, gives the rows emitted
// after it, and returns the rows of the run.
func concurrentSnapshots(t *testing.T, mem memory.Allocator, c exec.ConnectorSpec, i, n int) []string {
	t.Helper()
	ctx := context.Background()
	src, tc := openCheckpointed(t, mem, c, i, n, nil)
	defer src.Close()
	var out conntest.Collector
	defer out.Release()
	// rowsAt maps each snapshot to the rows emitted when it was taken.
	rowsAt := map[string]int{}
	var snapErr error
	ran := make(chan struct{})
	snapshotting := make(chan struct{})
	go func() {
		defer close(snapshotting)
		for {
			tc.CheckpointLock.Lock()
			data, err := src.(exec.Checkpointed).SnapshotState(ctx, 1)
			rows := out.NumRows()
			tc.CheckpointLock.Unlock()
			if err != nil {
				snapErr = err
				return
			}
			if prev, ok := rowsAt[string(data)]; ok && prev != rows {
				snapErr = fmt.Errorf("snapshot %s taken after %d rows and after %d", data, prev, rows)
				return
			}
			rowsAt[string(data)] = rows
			select {
			case <-ran:
				return
			default:
				runtime.Gosched()
			}
		}
	}()
	err := src.Run(ctx, &out)
	close(ran)
	<-snapshotting
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if snapErr != nil {
		t.Fatal(snapErr)
	}
	all := out.Rows()
	t.Logf("subtask %d/%d: %d batches, snapshots at %d positions", i, n, len(out.Batches), len(rowsAt))
	for state, rows := range rowsAt {
		if rest := cutRun(t, mem, c, i, n, []byte(state), -1).rows; !slices.Equal(slices.Concat(all[:rows], rest), all) {
			t.Fatalf("snapshot %s after %d of %d rows, restored: %s", state, rows, len(all), firstDiff(rest, all[rows:]))
		}
	}
	return all
}

// TestCheckpointRestorePositions restores crafted positions: a subtask reads on
// from the line at the offset, and an offset past its range's end leaves it
// nothing to read.
func TestCheckpointRestorePositions(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	// Lines start at 0, 2, 5 and 9 of 14 bytes; with 2 subtasks the range of
	// subtask 0 ends at 7 and that of subtask 1 starts with the line at 9.
	path, url := writeFile(t, "a\nbb\nccc\ndddd\n")
	c := exec.ConnectorSpec{Connector: Name, URL: url, Schema: lineSchema}
	for _, tc := range []struct {
		subtask int
		offset  int64
		want    []string
	}{
		{subtask: 0, offset: 0, want: []string{"a", "bb", "ccc"}},
		{subtask: 0, offset: 2, want: []string{"bb", "ccc"}},
		{subtask: 0, offset: 5, want: []string{"ccc"}},
		{subtask: 0, offset: 9},
		{subtask: 1, offset: 9, want: []string{"dddd"}},
		{subtask: 1, offset: 14},
	} {
		state := fmt.Appendf(nil, `{"version":1,"path":%q,"offset":%d}`, path, tc.offset)
		r := cutRun(t, mem, c, tc.subtask, 2, state, -1)
		if !slices.Equal(r.rows, tc.want) {
			t.Errorf("subtask %d from offset %d: got %q, want %q", tc.subtask, tc.offset, r.rows, tc.want)
		}
	}
}

// TestCheckpointRestoreErrors checks that a state that cannot be this
// subtask's is rejected with an error naming the file, and that a subtask with
// nothing to read checks the state but ignores its position.
func TestCheckpointRestoreErrors(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	path, url := writeFile(t, "a\nbb\nccc\ndddd\n")
	state := func(version int, path string, offset int64) string {
		return fmt.Sprintf(`{"version":%d,"path":%q,"offset":%d}`, version, path, offset)
	}
	for _, tc := range []struct {
		options string
		subtask int
		state   string
		err     string // "" for none
	}{
		{state: "not json", err: "invalid character"},
		{state: `{"version":1,"path":"` + path + `","offset":"3"}`, err: "cannot unmarshal"},
		{state: state(2, path, 0), err: "state version 2, this release reads version 1"},
		{state: state(1, "/elsewhere", 0), err: "the state is of file /elsewhere"},
		{state: state(1, path, -1), err: "offset -1 is before this subtask's range, which starts at 0"},
		{subtask: 1, state: state(1, path, 5), err: "offset 5 is before this subtask's range, which starts at 9"},
		{state: state(1, path, 15), err: "offset 15 is past the end of the file (14 bytes)"},
		{state: state(1, path, 3), err: "offset 3 does not start a line"},
		{subtask: 1, state: state(1, path, 14)},
		// With checkpoints CSV subtasks but the first read nothing (see Open).
		{options: "?format=csv", subtask: 1, state: state(1, path, 3)},
		{options: "?format=csv", subtask: 1, state: state(3, path, 0), err: "state version 3"},
	} {
		src, err := newSourceFor(exec.ConnectorSpec{Connector: Name, URL: url + tc.options, Schema: lineSchema})
		if err != nil {
			t.Fatal(err)
		}
		ctx := conntest.TaskContext(t, mem, tc.subtask, 2)
		ctx.Checkpointing = true // only jobs with checkpoints restore
		if err := src.Open(context.Background(), ctx); err != nil {
			t.Fatal(err)
		}
		err = src.(exec.Checkpointed).RestoreState(context.Background(), []byte(tc.state))
		src.Close()
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s (subtask %d): %v", tc.state, tc.subtask, err)
		case tc.err != "" && err == nil:
			t.Errorf("%s (subtask %d): no error, want %q", tc.state, tc.subtask, tc.err)
		case tc.err != "" && (!strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "file "+path)):
			t.Errorf("%s (subtask %d): error %q, want it to contain %q and name the file", tc.state, tc.subtask, err, tc.err)
		}
	}
}
