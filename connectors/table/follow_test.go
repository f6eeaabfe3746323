package table

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/connectors/internal/conntest"
	"github.com/hummer-db/hummer/exec"
)

// A following scan at parallelism 2 reads the pinned version in two shares,
// one a subtask, each before its first barrier; subtask 0 then follows the
// changes, and emits a commit made after the pin (a delete of row 15, an
// insert of 40) only after its barrier went out, so that aligned downstream
// every row of the version comes before any change. A scan restored from
// that barrier's state emits the changes again and no row of the version.
// The expected rows are the ones inserted here.
func TestFollowSplitsVersionBeforeChanges(t *testing.T) {
	s, _ := openStore(t, t.TempDir())
	s.Create("t1")
	var want []string
	for part := 0; part < 3; part++ {
		var items []string
		for i := part*10 + 1; i <= part*10+10; i++ {
			items = append(items, fmt.Sprintf("%d:r", i))
			want = append(want, fmt.Sprintf("%d|r", i))
		}
		insert(t, s, "t1", keyed, items...)
		foldLog(t, s, "t1")
	}
	insert(t, s, "t1", keyed, "31:log", "32:log")
	want = append(want, "31|log", "32|log")
	slices.Sort(want)

	release, err := s.Follow("t1")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	p, err := s.Pin("t1")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release() // as the view's job holds it
	url := p.URL + "&follow=1"
	// A commit after the pin: the change the scans follow.
	ids := scanRowIDs(t, s, "t1")
	tx, _ := s.Begin("t1", keyed)
	tx.Change()
	del := int64s(ids[15])
	if err := tx.Delete(del); err != nil {
		t.Fatal(err)
	}
	del.Release()
	r := rows(t, "40:new")
	if err := tx.Append(r); err != nil {
		t.Fatal(err)
	}
	r.Release()
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	changes := []string{"-15|r", "40|new"}

	reg := exec.NewRegistry()
	RegisterSink(reg, s)
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	open := func(subtask int, lock *sync.Mutex, state []byte) exec.Source {
		t.Helper()
		src, err := reg.NewSource(exec.ConnectorSpec{Connector: ChangesName, URL: url, Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		tc := conntest.TaskContext(t, mem, subtask, 2)
		tc.CheckpointLock = lock
		if err := src.Open(context.Background(), tc); err != nil {
			t.Fatal(err)
		}
		if state != nil {
			if err := src.(exec.Checkpointed).RestoreState(context.Background(), state); err != nil {
				t.Fatal(err)
			}
		}
		return src
	}

	// Subtask 1 emits its share and ends.
	var c1 conntest.Collector
	defer c1.Release()
	src1 := open(1, new(sync.Mutex), nil)
	if err := src1.Run(context.Background(), &c1); err != nil {
		t.Fatal(err)
	}
	src1.Close()

	// Subtask 0 as its task runs it: a checkpoint's barrier goes out under
	// its lock, right after SnapshotState.
	var c0 conntest.Collector
	defer c0.Release()
	lock0 := new(sync.Mutex)
	src0 := open(0, lock0, nil)
	emitted, stop := follow(t, src0, &c0)
	lock0.Lock()
	atBarrier := len(c0.Rows())
	state, err := src0.(exec.Checkpointed).SnapshotState(context.Background(), 1)
	lock0.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	waitRows(t, emitted, &c0, atBarrier+len(changes))
	stop()

	got0 := c0.Rows()
	version := append(slices.Clone(got0[:atBarrier]), c1.Rows()...)
	slices.Sort(version)
	equal(t, "the version, both subtasks before their barriers", version, want...)
	if len(c1.Rows()) == 0 || atBarrier == 0 {
		t.Errorf("subtask 0 emitted %d rows of the version, subtask 1 %d: want both a share", atBarrier, len(c1.Rows()))
	}
	after := slices.Clone(got0[atBarrier:])
	slices.Sort(after)
	equal(t, "subtask 0 after its barrier", after, changes...)

	// Restored from the barrier's state: subtask 1 has nothing left to read,
	// subtask 0 the change after the position.
	var r1 conntest.Collector
	defer r1.Release()
	src1 = open(1, new(sync.Mutex), state)
	if err := src1.Run(context.Background(), &r1); err != nil {
		t.Fatal(err)
	}
	src1.Close()
	if rows := r1.Rows(); len(rows) != 0 {
		t.Errorf("restored subtask 1 emitted %v, want nothing", rows)
	}
	var r0 conntest.Collector
	defer r0.Release()
	src0 = open(0, new(sync.Mutex), state)
	emitted, stop = follow(t, src0, &r0)
	waitRows(t, emitted, &r0, len(changes))
	stop()
	after = r0.Rows()
	slices.Sort(after)
	equal(t, "restored subtask 0", after, changes...)
}

// follow runs src on its own goroutine into c; emitted is signalled at each
// batch, and stop cancels the run, checks it ended with the cancellation and
// closes src.
func follow(t *testing.T, src exec.Source, c *conntest.Collector) (emitted <-chan struct{}, stop func()) {
	t.Helper()
	ch := make(chan struct{}, 1)
	c.OnCollect = func(int) {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx, c) }()
	return ch, func() {
		t.Helper()
		cancel()
		if err := <-done; err != context.Canceled {
			t.Errorf("following scan ended with %v, want its cancellation", err)
		}
		src.Close()
	}
}

// waitRows waits until c holds n rows, failing after a deadline with what it
// holds.
func waitRows(t *testing.T, emitted <-chan struct{}, c *conntest.Collector, n int) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for len(c.Rows()) < n {
		select {
		case <-emitted:
		case <-deadline:
			t.Fatalf("%d rows, want %d: %s", len(c.Rows()), n, strings.Join(c.Rows(), " "))
		}
	}
}
