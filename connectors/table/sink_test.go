package table

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/connectors/internal/conntest"
	"github.com/hummer-db/hummer/exec"
)

// openSink opens the sink of table id for subtask 0 of job "test" under
// checkpoints: the staging sink with store nil, else the sink beside store.
func openSink(t *testing.T, store *Store, id string, c Constraints) *sink {
	t.Helper()
	return openSinkURL(t, store, URL(id), c)
}

// openSinkURL is openSink of the sink writing url.
func openSinkURL(t *testing.T, store *Store, url string, c Constraints) *sink {
	t.Helper()
	f := sinkFactory(store)
	op, err := f(exec.ConnectorSpec{Connector: Name, URL: url, Schema: c.Schema, Key: c.Key})
	if err != nil {
		t.Fatal(err)
	}
	tc := conntest.TaskContext(t, memory.DefaultAllocator, 0, 1)
	tc.Checkpointing = true
	if err := op.Open(context.Background(), tc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { op.Close(context.Background()) })
	return op.(*sink)
}

// feed gives k one batch of changes: "+1:a" inserts (or upserts) key 1 as a,
// "-1:a" deletes it.
func feed(t *testing.T, k *sink, changes ...string) {
	t.Helper()
	var items []string
	var ops []exec.ChangeKind
	for _, c := range changes {
		op := exec.Insert
		if c[0] == '-' {
			op = exec.Delete
		}
		ops = append(ops, op)
		items = append(items, c[1:])
	}
	rec := rows(t, items...)
	defer rec.Release()
	if err := k.ProcessBatch(context.Background(), 0, exec.Batch{Rec: rec, Ops: ops}, nil); err != nil {
		t.Fatal(err)
	}
}

func snapshot(t *testing.T, k *sink, checkpoint int64) []byte {
	t.Helper()
	data, err := k.SnapshotState(context.Background(), checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// The staging sink (a TaskManager without the store) and the commit of its
// states by the process with the store, as the JobManager commits them: a
// checkpoint that failed leaves its changes to the next state, a state
// committed twice or committed after a later one changes nothing, and the
// final state is committed once.
func TestStagedSinkCommits(t *testing.T) {
	store, err := openStore(t, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"kv", "log"} {
		if err := store.Create(id); err != nil {
			t.Fatal(err)
		}
	}
	appendOnly := Constraints{Table: "log", Schema: schema}
	kv := openSink(t, nil, "kv", keyed)
	log := openSink(t, nil, "log", appendOnly)
	name := sinkName("", "test", 0)
	commit := func(id string, c Constraints, data []byte) {
		t.Helper()
		if err := store.CommitStaged(id, c, name, data); err != nil {
			t.Fatal(err)
		}
	}
	both := func(changes ...string) {
		t.Helper()
		feed(t, kv, changes...)
		var inserts []string
		for _, c := range changes {
			if c[0] == '+' {
				inserts = append(inserts, c)
			}
		}
		feed(t, log, inserts...)
	}

	both("+1:a", "+2:b")
	kv1, log1 := snapshot(t, kv, 1), snapshot(t, log, 1)
	// Checkpoint 1 fails: nobody commits it, nor tells the sinks.
	both("+1:a2", "-2:b", "+3:c")
	kv2, log2 := snapshot(t, kv, 2), snapshot(t, log, 2)
	commit("kv", keyed, kv2)
	commit("log", appendOnly, log2)
	equal(t, "kv after checkpoint 2", scan(t, store, "kv", 1), "1|a2", "3|c")
	equal(t, "log after checkpoint 2", scan(t, store, "log", 1), "1|a", "1|a2", "2|b", "3|c")
	// A commit replayed (a JobManager restarted before it recorded it), and
	// the failed checkpoint's state, committed late: nothing changes.
	commit("kv", keyed, kv2)
	commit("log", appendOnly, log2)
	commit("kv", keyed, kv1)
	commit("log", appendOnly, log1)
	equal(t, "kv after commits again", scan(t, store, "kv", 1), "1|a2", "3|c")
	equal(t, "log after commits again", scan(t, store, "log", 1), "1|a", "1|a2", "2|b", "3|c")

	// Told checkpoint 2 is complete, the sinks drop what it held.
	for _, k := range []*sink{kv, log} {
		if err := k.NotifyCheckpointComplete(context.Background(), 2); err != nil {
			t.Fatal(err)
		}
	}
	both("+4:d", "-3:c")
	kv3, log3 := snapshot(t, kv, 3), snapshot(t, log, 3)
	if _, ivs, err := decodeChanges(kv3); err != nil || len(ivs) != 1 || ivs[0].checkpoint != 3 {
		t.Fatalf("state of checkpoint 3: %d intervals, %v; want only its own", len(ivs), err)
	}
	commit("kv", keyed, kv3)
	commit("log", appendOnly, log3)
	equal(t, "kv after checkpoint 3", scan(t, store, "kv", 1), "1|a2", "4|d")
	equal(t, "log after checkpoint 3", scan(t, store, "log", 1), "1|a", "1|a2", "2|b", "3|c", "4|d")

	// The input ends after more changes: the final state holds them, and
	// is committed once.
	both("+5:e", "+1:a3")
	for _, k := range []*sink{kv, log} {
		if err := k.ProcessSignal(context.Background(), 0, exec.Signal{Kind: exec.EndOfStream}, nil); err != nil {
			t.Fatal(err)
		}
	}
	kvEnd, logEnd := snapshot(t, kv, 0), snapshot(t, log, 0)
	for range 2 {
		commit("kv", keyed, kvEnd)
		commit("log", appendOnly, logEnd)
	}
	commit("kv", keyed, kv3)
	equal(t, "kv at the end", scan(t, store, "kv", 1), "1|a3", "4|d", "5|e")
	equal(t, "log at the end", scan(t, store, "log", 1), "1|a", "1|a2", "1|a3", "2|b", "3|c", "4|d", "5|e")
}

// The sink beside the store commits on completion; restored from a
// checkpoint whose completion it never heard, it commits that state's
// intervals, the failed checkpoint's among them, once.
func TestSinkBesideStoreRestores(t *testing.T) {
	store, err := openStore(t, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Create("kv"); err != nil {
		t.Fatal(err)
	}
	k := openSink(t, store, "kv", keyed)
	feed(t, k, "+1:a")
	snapshot(t, k, 1)
	if err := k.NotifyCheckpointComplete(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	equal(t, "after checkpoint 1", scan(t, store, "kv", 1), "1|a")
	feed(t, k, "+2:b")
	snapshot(t, k, 2) // checkpoint 2 fails
	feed(t, k, "+3:c", "-1:a")
	data := snapshot(t, k, 3) // complete, but the process dies before it hears
	equal(t, "before the restore", scan(t, store, "kv", 1), "1|a")
	for range 2 {
		restored := openSink(t, store, "kv", keyed)
		if err := restored.RestoreState(context.Background(), data); err != nil {
			t.Fatal(err)
		}
		equal(t, "after the restore", scan(t, store, "kv", 1), "2|b", "3|c")
	}
}

// A job that takes the id of an earlier one (ids of jobs that ended before
// a restart are given anew) writes under a run of its own (SinkURL): the
// checkpoints the table recorded for the earlier job's sink do not swallow
// its commits.
func TestSinkRunsOfOneJobID(t *testing.T) {
	store, err := openStore(t, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Create("kv"); err != nil {
		t.Fatal(err)
	}
	earlier := openSinkURL(t, store, SinkURL("kv", "run1"), keyed)
	feed(t, earlier, "+1:a")
	snapshot(t, earlier, 7)
	if err := earlier.NotifyCheckpointComplete(context.Background(), 7); err != nil {
		t.Fatal(err)
	}
	later := openSinkURL(t, store, SinkURL("kv", "run2"), keyed) // job "test" again
	feed(t, later, "+2:b")
	snapshot(t, later, 1)
	if err := later.NotifyCheckpointComplete(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	equal(t, "after both jobs' commits", scan(t, store, "kv", 1), "1|a", "2|b")
	if later.name == earlier.name {
		t.Errorf("both sinks named %s", later.name)
	}
}
