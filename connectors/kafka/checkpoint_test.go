package kafka

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/hummer-db/hummer/connectors/internal/conntest"
	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/vector"
)

// checkpointing returns the context of subtask 0 of 1 of vertex task in job,
// in a job that takes checkpoints.
func checkpointing(t *testing.T, mem memory.Allocator, job, task string) *exec.TaskContext {
	tc := conntest.TaskContext(t, mem, 0, 1)
	tc.JobID, tc.TaskName, tc.Checkpointing = job, task+"[1/1]", true
	return tc
}

func values(prefix string, from, to int) []string {
	var vs []string
	for i := from; i <= to; i++ {
		vs = append(vs, fmt.Sprintf("%s%d", prefix, i))
	}
	return vs
}

func sorted(rows []string) []string {
	rows = slices.Clone(rows)
	slices.Sort(rows)
	return rows
}

// commitGroup commits offsets (by partition) of topic to group, as a job that
// ran before would have.
func commitGroup(t *testing.T, addr, group, topic string, offsets map[int]int64) {
	t.Helper()
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	c := &kafka.Client{Addr: kafka.TCP(addr), Transport: tr, Timeout: 5 * time.Second}
	req := &kafka.OffsetCommitRequest{GroupID: group, GenerationID: -1, Topics: map[string][]kafka.OffsetCommit{}}
	for p, o := range offsets {
		req.Topics[topic] = append(req.Topics[topic], kafka.OffsetCommit{Partition: p, Offset: o})
	}
	res, err := c.OffsetCommit(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Topics[topic] {
		if p.Error != nil {
			t.Fatal(p.Error)
		}
	}
}

// A source snapshotted between two batches, while its next batch waits for the
// task's emission lock, restores to exactly the records after the batches it
// emitted, whatever its group and start options say.
func TestSourceSnapshotRestore(t *testing.T) {
	addr := cluster(t, "events", 2)
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	produce(t, addr, "events", values("a", 0, 5)...)

	var emit sync.Mutex
	c := exec.ConnectorSpec{Connector: Name, URL: "kafka://" + addr + "/events", Schema: textSchema}
	a := startSourceWith(t, c, checkpointing(t, mem, "j", "source"), nil, &emit)
	waitFor(t, 5*time.Second, "the first 6 rows", func() bool { return a.col.NumRows() == 6 })
	idle, err := a.src.SnapshotState(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}

	// The task holds the emission to snapshot: the source's next batch waits.
	emit.Lock()
	produce(t, addr, "events", values("b", 0, 3)...)
	waitFor(t, 5*time.Second, "the source to emit its next batch", a.src.pos.inFlight)
	state, err := a.src.SnapshotState(ctx, 2)
	emit.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the next 4 rows", func() bool { return a.col.NumRows() == 10 })
	if got, want := sorted(a.stop()), append(values("a", 0, 5), values("b", 0, 3)...); !slices.Equal(got, want) {
		t.Fatalf("first source read %v, want %v", got, want)
	}
	for _, s := range [][]byte{idle, state} {
		var st sourceState
		if err := json.Unmarshal(s, &st); err != nil {
			t.Fatal(err)
		}
		if sum := st.Offsets[0] + st.Offsets[1]; st.Version != 1 || st.Topic != "events" || len(st.Offsets) != 2 || sum != 6 {
			t.Errorf("state %s: want version 1, topic events, and offsets of both partitions covering the 6 rows emitted before the snapshot", s)
		}
	}

	// Restored, the next source reads the batch that waited, and what came
	// after, though its group has committed the topic's end and start=group
	// says to resume from the group.
	produce(t, addr, "events", "c0", "c1")
	commitGroup(t, addr, "g", "events", map[int]int64{0: 6, 1: 6})
	c.URL += "?group=g&start=group"
	b := startSourceWith(t, c, checkpointing(t, mem, "j", "source"), state, &emit)
	waitFor(t, 5*time.Second, "6 rows after the restore", func() bool { return b.col.NumRows() >= 6 })
	if got, want := sorted(b.stop()), append(values("b", 0, 3), "c0", "c1"); !slices.Equal(got, want) {
		t.Errorf("restored source read %v, want %v", got, want)
	}
}

// With checkpoints the group's offsets move only when a checkpoint completes,
// to that checkpoint's positions, and not when the source closes.
func TestSourceCommitsOnCheckpointComplete(t *testing.T) {
	defer func(d time.Duration) { commitInterval = d }(commitInterval)
	commitInterval = time.Millisecond // without checkpoints it would commit at once
	const parts = 2
	addr := cluster(t, "events", parts)
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	c := exec.ConnectorSpec{Connector: Name, URL: "kafka://" + addr + "/events?group=g", Schema: textSchema}
	produce(t, addr, "events", values("e", 1, 6)...)
	r := startSourceWith(t, c, checkpointing(t, mem, "j", "source"), nil, nil)
	snapshot := func(id int64) {
		t.Helper()
		if _, err := r.src.SnapshotState(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	notify := func(id int64, want int64) {
		t.Helper()
		if err := r.src.NotifyCheckpointComplete(ctx, id); err != nil {
			t.Fatal(err)
		}
		if n := committed(t, addr, "g", "events", parts); n != want {
			t.Errorf("after checkpoint %d completed g committed up to %d records, want %d", id, n, want)
		}
	}

	waitFor(t, 5*time.Second, "6 rows", func() bool { return r.col.NumRows() == 6 })
	snapshot(1)
	produce(t, addr, "events", values("e", 7, 10)...)
	waitFor(t, 5*time.Second, "10 rows", func() bool { return r.col.NumRows() == 10 })
	snapshot(2)
	if n := committed(t, addr, "g", "events", parts); n != 0 {
		t.Errorf("g committed up to %d records before any checkpoint completed", n)
	}
	notify(1, 6)
	produce(t, addr, "events", "e11", "e12")
	waitFor(t, 5*time.Second, "12 rows", func() bool { return r.col.NumRows() == 12 })
	notify(3, 10) // covers 2, the latest snapshot before it
	notify(2, 10) // already covered
	r.stop()
	if n := committed(t, addr, "g", "events", parts); n != 10 {
		t.Errorf("after the source closed g committed up to %d records, want the 10 of the last completed checkpoint", n)
	}
}

// txnSink is a sink of a job with checkpoints, driven as its task would.
type txnSink struct {
	t   *testing.T
	mem memory.Allocator
	k   *sink
}

func openTxnSink(t *testing.T, mem memory.Allocator, c exec.ConnectorSpec, job string) *txnSink {
	t.Helper()
	cfg, err := parseConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	k := newSink(cfg)
	if err := k.Open(context.Background(), checkpointing(t, mem, job, "sink")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close(context.Background()) })
	return &txnSink{t: t, mem: mem, k: k}
}

// write writes the rows {"id": i, "name": "r<i>"} for ids, as changes of
// kind op (Insert if none).
func (s *txnSink) write(ids []int, op ...exec.ChangeKind) {
	s.t.Helper()
	var rows []string
	for _, i := range ids {
		rows = append(rows, fmt.Sprintf(`{"id": %d, "name": "r%d"}`, i, i))
	}
	rec := batch(s.t, s.mem, "["+strings.Join(rows, ",")+"]")
	defer rec.Release()
	if err := s.k.ProcessBatch(context.Background(), 0, exec.Batch{Rec: rec, Ops: op}, nil); err != nil {
		s.t.Fatal(err)
	}
}

// checkpoint passes checkpoint id's barrier and returns the sink's state.
func (s *txnSink) checkpoint(id int64) []byte {
	s.t.Helper()
	if err := s.k.ProcessSignal(context.Background(), 0, exec.Signal{Kind: exec.Barrier, Checkpoint: id}, nil); err != nil {
		s.t.Fatal(err)
	}
	st, err := s.k.SnapshotState(context.Background(), id)
	if err != nil {
		s.t.Fatal(err)
	}
	return st
}

func (s *txnSink) complete(id int64) {
	s.t.Helper()
	if err := s.k.NotifyCheckpointComplete(context.Background(), id); err != nil {
		s.t.Fatal(err)
	}
}

// crash stops the sink as a killed process would: its producers go, their
// transactions stay open on the brokers.
func (s *txnSink) crash() {
	for _, slot := range s.k.txn.slots {
		if slot.cl != nil {
			slot.cl.Close()
			slot.cl = nil
		}
	}
	s.k.txn.slots, s.k.txn.cur = nil, nil
}

// endOffsets returns the sum over topic's partitions 0 to parts-1 of their
// end offsets: the last stable offsets, up to which read_committed readers
// read, with committed set, else the high watermarks.
func endOffsets(t *testing.T, addr, topic string, parts int, committed bool) int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	if committed {
		req.IsolationLevel = 1
	}
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for p := range parts {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = int32(p), -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	res, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, rt := range res.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				t.Fatalf("listing offsets of %s partition %d: error code %d", topic, rp.Partition, rp.ErrorCode)
			}
			sum += rp.Offset
		}
	}
	return sum
}

// readCommitted reads topic's partitions 0 to parts-1 from the start as a
// read_committed consumer until done says it has enough (or a deadline
// passes), and returns what it read.
func readCommitted(t *testing.T, addr, topic string, parts int, done func([]*kgo.Record) bool) []*kgo.Record {
	t.Helper()
	starts := map[int32]kgo.Offset{}
	for p := range parts {
		starts[int32(p)] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: starts}), kgo.FetchMaxWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	var got []*kgo.Record
	for !done(got) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read_committed reader read %d records of %s and wanted more", len(got), topic)
		}
		for _, e := range fs.Errors() {
			t.Fatalf("read_committed reader: partition %d: %v", e.Partition, e.Err)
		}
		got = append(got, fs.Records()...)
	}
	return got
}

// format returns a record as "key=value", or its value alone when it has no
// key, "<tombstone>" for a null value.
func format(r *kgo.Record) string {
	v := string(r.Value)
	if r.Value == nil {
		v = "<tombstone>"
	}
	if r.Key == nil {
		return v
	}
	return string(r.Key) + "=" + v
}

var markers int

// visible returns, sorted, every record of topic that a read_committed reader
// sees: it writes a marker to each partition and reads until it has seen them
// all, which it can only once no transaction before them is open.
func visible(t *testing.T, addr, topic string, parts int) []string {
	t.Helper()
	markers++
	marker := fmt.Sprintf("<marker %d>", markers)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for p := range parts {
		recs = append(recs, &kgo.Record{Partition: int32(p), Value: []byte(marker)})
	}
	err = cl.ProduceSync(context.Background(), recs...).FirstErr()
	cl.Close()
	if err != nil {
		t.Fatal(err)
	}
	read := readCommitted(t, addr, topic, parts, func(rs []*kgo.Record) bool {
		n := 0
		for _, r := range rs {
			if string(r.Value) == marker {
				n++
			}
		}
		return n == parts
	})
	var got []string
	for _, r := range read {
		if !strings.HasPrefix(string(r.Value), "<marker ") {
			got = append(got, format(r))
		}
	}
	return sorted(got)
}

// The records an epoch writes are invisible to read_committed readers until
// the checkpoint of the barrier that ends it completes, then visible once,
// appended or upserted.
func TestSinkTransactions(t *testing.T) {
	const parts = 2
	for _, tc := range []struct {
		name         string
		query        string
		key          []int
		first, after []string
	}{
		{"append", "?format=csv", nil,
			[]string{"1,r1", "2,r2", "3,r3"},
			[]string{"1,r1", "2,r2", "3,r3", "4,r4", "5,r5"}},
		{"upsert", "?format=json", []int{0},
			[]string{`{"id":1}={"id":1,"name":"r1"}`, `{"id":2}={"id":2,"name":"r2"}`, `{"id":3}={"id":3,"name":"r3"}`},
			[]string{`{"id":1}={"id":1,"name":"r1"}`, `{"id":2}=<tombstone>`, `{"id":2}={"id":2,"name":"r2"}`, `{"id":3}={"id":3,"name":"r3"}`, `{"id":4}={"id":4,"name":"r4"}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := cluster(t, "out", parts)
			mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
			defer mem.AssertSize(t, 0)
			s := openTxnSink(t, mem, exec.ConnectorSpec{Connector: Name, URL: "kafka://" + addr + "/out" + tc.query, Schema: rowSchema, Key: tc.key}, "j")

			s.write([]int{1, 2, 3})
			s.checkpoint(1)
			if written, stable := endOffsets(t, addr, "out", parts, false), endOffsets(t, addr, "out", parts, true); written != 3 || stable != 0 {
				t.Errorf("before checkpoint 1 completed: %d records written, %d readable by read_committed readers; want 3 and 0", written, stable)
			}
			if tc.key == nil {
				s.write([]int{4, 5})
			} else {
				s.write([]int{2, 4}, exec.Delete, exec.Insert)
			}
			s.complete(1)
			// The next epoch's transaction is open: readers see the first
			// epoch's records, and stop there.
			got := readCommitted(t, addr, "out", parts, func(rs []*kgo.Record) bool { return len(rs) >= 3 })
			var first []string
			for _, r := range got {
				first = append(first, format(r))
			}
			if first = sorted(first); !slices.Equal(first, tc.first) {
				t.Errorf("after checkpoint 1 completed, read_committed readers see %q, want %q", first, tc.first)
			}
			s.checkpoint(2)
			s.complete(2)
			if got := visible(t, addr, "out", parts); !slices.Equal(got, tc.after) {
				t.Errorf("after checkpoint 2 completed, read_committed readers see %q, want %q", got, tc.after)
			}
		})
	}
}

// A task that restarts from a checkpoint commits the transactions that
// checkpoint left pending and aborts every later one, so that each record is
// visible once and the records of epochs replayed after the restart never.
func TestSinkTransactionsRestart(t *testing.T) {
	const parts = 2
	addr := cluster(t, "out", parts)
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	c := exec.ConnectorSpec{Connector: Name, URL: "kafka://" + addr + "/out?format=csv", Schema: rowSchema}
	row := func(ids ...int) []string {
		var rows []string
		for _, i := range ids {
			rows = append(rows, fmt.Sprintf("%d,r%d", i, i))
		}
		return rows
	}

	a := openTxnSink(t, mem, c, "j")
	a.write([]int{1})
	a.checkpoint(1)
	a.complete(1)
	a.write([]int{2})
	st2 := a.checkpoint(2) // checkpoint 2 completes, but its notification is lost
	a.write([]int{3})
	a.checkpoint(3) // checkpoint 3 never completes
	a.write([]int{4})
	a.crash()

	// The job restarts from checkpoint 2.
	b := openTxnSink(t, mem, c, "j")
	if err := b.k.RestoreState(context.Background(), st2); err != nil {
		t.Fatal(err)
	}
	if got := visible(t, addr, "out", parts); !slices.Equal(got, row(1, 2)) {
		t.Errorf("after restoring checkpoint 2: read_committed readers see %q, want %q", got, row(1, 2))
	}
	b.write([]int{5})
	b.checkpoint(4)
	b.complete(4)
	b.write([]int{6})
	if err := b.k.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := visible(t, addr, "out", parts); !slices.Equal(got, row(1, 2, 5)) {
		t.Errorf("after the restarted sink closed: read_committed readers see %q, want %q", got, row(1, 2, 5))
	}

	// A task started without state aborts what the same IDs left open, and
	// commits everything when its input ends.
	d := openTxnSink(t, mem, c, "j")
	d.write([]int{7})
	d.checkpoint(5)
	d.write([]int{8})
	if err := d.k.ProcessSignal(context.Background(), 0, exec.Signal{Kind: exec.EndOfStream}, nil); err != nil {
		t.Fatal(err)
	}
	if got := visible(t, addr, "out", parts); !slices.Equal(got, row(1, 2, 5, 7, 8)) {
		t.Errorf("after end of stream: read_committed readers see %q, want %q", got, row(1, 2, 5, 7, 8))
	}
}

// The sink's state lists the transactions awaiting completion.
func TestSinkStateListsPending(t *testing.T) {
	addr := cluster(t, "out", 1)
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	s := openTxnSink(t, mem, exec.ConnectorSpec{Connector: Name, URL: "kafka://" + addr + "/out?format=csv", Schema: rowSchema}, "job-7")
	s.write([]int{1})
	s.checkpoint(1)
	s.write([]int{2})
	var st sinkState
	if err := json.Unmarshal(s.checkpoint(2), &st); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range st.Pending {
		ids = append(ids, fmt.Sprintf("%s@%d", p.TransactionalID, p.Checkpoint))
	}
	want := []string{"hummer-job-7-sink-out-0-0@1", "hummer-job-7-sink-out-0-1@2"}
	if st.Version != 1 || st.Checkpoint != 2 || !slices.Equal(ids, want) {
		t.Errorf("state %+v: want version 1, checkpoint 2 and pending %v", st, want)
	}
	s.complete(2)
	st = sinkState{}
	if err := json.Unmarshal(s.checkpoint(3), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Pending) != 0 {
		t.Errorf("after checkpoint 2 completed, state lists %+v pending", st.Pending)
	}
}
