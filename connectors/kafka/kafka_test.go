package kafka

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/hummer-db/hummer/connectors/internal/conntest"
	"github.com/hummer-db/hummer/connectors/spec"
	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/exec/vector"
)

var (
	textSchema = types.Schema{{Name: "line", Type: types.Type{ID: types.String}}}
	rowSchema  = types.Schema{{Name: "id", Type: types.Type{ID: types.Int64}}, {Name: "name", Type: types.Type{ID: types.String}}}
)

// TestMain fails the package if goroutines outlive its tests: every source,
// sink and cluster a test starts must be gone once it has returned.
func TestMain(m *testing.M) {
	before := runtime.NumGoroutine()
	code := m.Run()
	if code == 0 {
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond) // polling a condition with a deadline
		}
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<20)
			fmt.Fprintf(os.Stderr, "%d goroutines leaked:\n%s\n", n-before, buf[:runtime.Stack(buf, true)])
			code = 1
		}
	}
	os.Exit(code)
}

// newCluster starts a one-broker kfake cluster, closed when the test ends.
func newCluster(t *testing.T, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// cluster starts a one-broker kfake cluster with topic of parts partitions and
// returns its address.
func cluster(t *testing.T, topic string, parts int32) string {
	t.Helper()
	return newCluster(t, kfake.SeedTopics(parts, topic)).ListenAddrs()[0]
}

// port returns the port of addr.
func port(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// produce writes values to topic, spread round-robin over its partitions.
func produce(t *testing.T, addr, topic string, values ...string) {
	t.Helper()
	msgs := make([]kafka.Message, len(values))
	for i, v := range values {
		msgs[i] = kafka.Message{Value: []byte(v)}
	}
	produceMessages(t, addr, topic, msgs...)
}

// produceMessages writes msgs to topic, round-robin over its partitions, and
// returns once the broker has stored them (a Writer's default is not to wait
// for its acknowledgement: a source started next could list offsets before
// them, and read them as new).
func produceMessages(t *testing.T, addr, topic string, msgs ...kafka.Message) {
	t.Helper()
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: topic, Balancer: &kafka.RoundRobin{}, BatchTimeout: time.Millisecond, Transport: tr,
		RequiredAcks: kafka.RequireAll}
	defer w.Close()
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
}

// readTopic reads partitions 0 to parts-1 of topic from the start until it has
// want messages (or a deadline passes) and returns them, by partition in offset
// order.
func readTopic(t *testing.T, addr, topic string, parts, want int) [][]kafka.Message {
	t.Helper()
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	c := &kafka.Client{Addr: kafka.TCP(addr), Transport: tr, Timeout: 5 * time.Second}
	got := make([][]kafka.Message, parts)
	offsets := make([]int64, parts)
	n := 0
	for deadline := time.Now().Add(5 * time.Second); n < want; {
		if time.Now().After(deadline) {
			t.Fatalf("read %d messages of %s, want %d: %v", n, topic, want, got)
		}
		for p := range parts {
			res, err := c.Fetch(context.Background(), &kafka.FetchRequest{Topic: topic, Partition: p, Offset: offsets[p], MinBytes: 1, MaxBytes: 1 << 20, MaxWait: 10 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			if res.Error != nil {
				t.Fatal(res.Error)
			}
			msgs, next, err := readRecords(res.Records, topic, p, offsets[p], nil)
			if err != nil {
				t.Fatal(err)
			}
			got[p] = append(got[p], msgs...)
			offsets[p], n = next, n+len(msgs)
		}
	}
	return got
}

// waitFor waits until cond holds, failing the test if it does not within d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond) // polling a condition with a deadline
	}
}

// running is a source subtask running in the background.
type running struct {
	t      *testing.T
	src    *source
	col    *conntest.Collector
	tc     *exec.TaskContext
	cancel context.CancelFunc
	done   chan error // Run's error, then Close's
}

// startSource opens subtask i of parallelism of the source of c and runs it
// until stop.
func startSource(t *testing.T, mem memory.Allocator, c exec.ConnectorSpec, i, parallelism int) *running {
	t.Helper()
	return startSourceWith(t, c, conntest.TaskContext(t, mem, i, parallelism), nil, nil)
}

// startSourceWith opens the source of c in tc, restores state unless it is
// nil, and runs it until stop; emit, unless nil, is the task's checkpoint lock
// (exec.TaskContext.CheckpointLock) the source emits under.
func startSourceWith(t *testing.T, c exec.ConnectorSpec, tc *exec.TaskContext, state []byte, emit *sync.Mutex) *running {
	t.Helper()
	cfg, err := parseConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if emit != nil {
		tc.CheckpointLock = emit
	}
	r := &running{t: t, src: newSource(cfg), col: &conntest.Collector{}, tc: tc, cancel: cancel, done: make(chan error, 2)}
	if err := r.src.Open(ctx, r.tc); err != nil {
		t.Fatal(err)
	}
	if state != nil {
		if err := r.src.RestoreState(ctx, state); err != nil {
			t.Fatal(err)
		}
	}
	go func() {
		r.done <- r.src.Run(ctx, r.col)
		r.done <- r.src.Close()
	}()
	return r
}

// stop cancels the source, checks Run returned context.Canceled and Close
// nil, and returns the rows it emitted.
func (r *running) stop() []string {
	r.t.Helper()
	r.cancel()
	if err := <-r.done; !errors.Is(err, context.Canceled) {
		r.t.Errorf("Run returned %v, want context.Canceled", err)
	}
	if err := <-r.done; err != nil {
		r.t.Errorf("Close: %v", err)
	}
	rows := r.col.Rows()
	r.col.Release()
	return rows
}

// result is what consume's subtasks did between them.
type result struct {
	rows      []string // sorted
	bad, dead int64
}

// consume runs parallelism subtasks of the source of c until they have emitted
// want rows between them (or a deadline passes), stops them and returns what
// they did.
func consume(t *testing.T, mem memory.Allocator, c exec.ConnectorSpec, parallelism, want int) result {
	t.Helper()
	var rs []*running
	for i := range parallelism {
		rs = append(rs, startSource(t, mem, c, i, parallelism))
	}
	total := func() int {
		n := 0
		for _, r := range rs {
			n += r.col.NumRows()
		}
		return n
	}
	deadline := time.Now().Add(8 * time.Second)
	for total() < want && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond) // polling a condition with a deadline
	}
	if n := total(); n < want {
		t.Errorf("got %d rows, want %d", n, want)
	}
	var res result
	for _, r := range rs {
		res.rows = append(res.rows, r.stop()...)
		res.bad += r.tc.Metrics.BadRecords.Load()
		res.dead += r.tc.Metrics.DeadLetters.Load()
	}
	slices.Sort(res.rows)
	return res
}

func TestSourceText(t *testing.T) {
	addr := cluster(t, "lines", 3)
	var want []string
	for i := range 100 {
		want = append(want, fmt.Sprintf("line %03d", i))
	}
	produce(t, addr, "lines", want...)
	for _, par := range []int{1, 2} {
		t.Run(fmt.Sprint("parallelism=", par), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
			defer mem.AssertSize(t, 0)
			c := exec.ConnectorSpec{Connector: Name, URL: "kafka://" + addr + "/lines", Schema: textSchema}
			got := consume(t, mem, c, par, len(want))
			if !slices.Equal(got.rows, want) || got.bad != 0 {
				t.Errorf("got %d rows (%d bad), want each of %d once:\n%v", len(got.rows), got.bad, len(want), got.rows)
			}
		})
	}
}

func TestSourceStartLatest(t *testing.T) {
	addr := cluster(t, "lines", 2)
	produce(t, addr, "lines", "old 1", "old 2")
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	r := startSource(t, mem, exec.ConnectorSpec{Connector: Name, URL: "kafka://" + addr + "/lines?start=latest", Schema: textSchema}, 0, 1)
	// The source has started reading once it has listed its offsets; what is
	// produced after that is new. Produce until the source sees a record, then
	// check it skipped the old ones.
	waitFor(t, 8*time.Second, "a new record", func() bool {
		if r.col.NumRows() > 0 {
			return true
		}
		produce(t, addr, "lines", "new")
		return false
	})
	for _, row := range r.stop() {
		if row != "new" {
			t.Errorf("start=latest read %q", row)
		}
	}
}

func TestSourceJSONBadRecords(t *testing.T) {
	// One partition, so the records arrive in order and both bad ones are
	// counted by the time the last good one is emitted.
	addr := cluster(t, "rows", 1)
	produce(t, addr, "rows", `{"id": 1, "name": "a"}`, `{"id": 2`, `{"ID": 3}`, `{"id": "x"}`, `{"id": 4, "name": "d", "extra": true}`)
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	c := exec.ConnectorSpec{Connector: Name, URL: "kafka://" + addr + "/rows?format=json", Schema: rowSchema}
	got := consume(t, mem, c, 1, 3)
	want := []string{"1|a", "3|NULL", "4|d"}
	if !slices.Equal(got.rows, want) {
		t.Errorf("rows = %v, want %v", got.rows, want)
	}
	if got.bad != 2 || got.dead != 0 {
		t.Errorf("bad records = %d, dead letters = %d; want 2 and 0 (no dead_letter option)", got.bad, got.dead)
	}
}

func TestSinkRoundTrip(t *testing.T) {
	for _, format := range []string{FormatJSON, FormatCSV} {
		t.Run(format, func(t *testing.T) {
			topic := "out-" + format
			addr := cluster(t, topic, 3)
			mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
			defer mem.AssertSize(t, 0)
			c := exec.ConnectorSpec{Connector: Name, URL: "kafka://" + addr + "/" + topic + "?format=" + format, Schema: rowSchema}
			k := openSink(t, mem, c)
			ctx := context.Background()
			rec := batch(t, mem, `[{"id": 1, "name": "a,\"b\""}, {"id": 2, "name": ""}, {"id": null, "name": null}]`)
			defer rec.Release()
			if err := k.ProcessBatch(ctx, 0, exec.Batch{Rec: rec}, nil); err != nil {
				t.Fatal(err)
			}
			err := k.ProcessBatch(ctx, 0, exec.Batch{Rec: rec, Ops: []exec.ChangeKind{exec.Insert, exec.Delete, exec.Insert}}, nil)
			if err == nil || !strings.Contains(err.Error(), "append-only sink got a retraction") {
				t.Errorf("retraction: err = %v", err)
			}
			if err := k.Close(ctx); err != nil {
				t.Fatal(err)
			}
			got := consume(t, mem, c, 1, 3)
			want := []string{`1|a,"b"`, "2|", "NULL|NULL"}
			if !slices.Equal(got.rows, want) || got.bad != 0 {
				t.Errorf("read back %q (%d bad), want %q", got.rows, got.bad, want)
			}
		})
	}
}

// openSink opens the sink of c, closed when the test ends.
func openSink(t *testing.T, mem memory.Allocator, c exec.ConnectorSpec) *sink {
	t.Helper()
	cfg, err := parseConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	k := newSink(cfg)
	if err := k.Open(context.Background(), conntest.TaskContext(t, mem, 0, 1)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close(context.Background()) })
	return k
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		url    string
		schema types.Schema
		key    []int
		want   string // "" for valid
	}{
		{"kafka://h:9092,h2:9092/t", textSchema, nil, ""},
		{"kafka://h:9092/t?format=json&group=g&start=LATEST", rowSchema, nil, ""},
		{"kafka://h:9092/t?format=csv", rowSchema, nil, ""},
		{"kafka://h:9092/t?format=json", rowSchema, []int{0}, ""},
		{"kafka://h:9092/t?format=json&dead_letter=t.bad_1-x", rowSchema, []int{1, 0}, ""},
		{"kafka:///t", textSchema, nil, "no brokers"},
		{"kafka://h/t", textSchema, nil, "needs a port"},
		{"kafka://h:9092/", textSchema, nil, "one topic name"},
		{"kafka://h:9092", textSchema, nil, "one topic name"},
		{"kafka://h:9092/t%20x", textSchema, nil, `topic "t x" may hold only`},
		{"file://h:9092/t", textSchema, nil, "scheme must be kafka"},
		{"kafka://h:9092/t?format=xml", textSchema, nil, `"xml" is not one of text, json, csv`},
		{"kafka://h:9092/t?start=now", textSchema, nil, `"now" is not one of earliest, latest, group`},
		{"kafka://h:9092/t?group=g&start=Group", textSchema, nil, ""},
		{"kafka://h:9092/t?start=group", textSchema, nil, "option start: start=group resumes from the group option's committed offsets and needs group=G"},
		{"kafka://h:9092/t?format=text", rowSchema, nil, "exactly one TEXT column"},
		{"kafka://h:9092/t?partition=1", textSchema, nil, `unknown option "partition" (valid options: format, group, start, idle_timeout, dead_letter)`},
		{"kafka://h:9092/t?group=", textSchema, nil, "option group: the consumer group name is empty"},
		{"kafka://h:9092/t?format=csv", rowSchema, []int{0}, "option format: a table with a PRIMARY KEY is an upsert topic"},
		{"kafka://h:9092/t", textSchema, []int{0}, "needs format=json, not text"},
		{"kafka://h:9092/t?format=json", rowSchema, []int{2}, "PRIMARY KEY column 2 out of range for 2 columns"},
		{"kafka://h:9092/t?format=json", rowSchema, []int{0, 0}, "PRIMARY KEY names column id twice"},
		{"kafka://h:9092/t?dead_letter=", textSchema, nil, `option dead_letter: topic "" is empty`},
		{"kafka://h:9092/t?dead_letter=a*b", textSchema, nil, `option dead_letter: topic "a*b" may hold only`},
		{"kafka://h:9092/t?dead_letter=t", textSchema, nil, "option dead_letter: the dead-letter topic cannot be the topic read"},
	} {
		err := Validate(exec.ConnectorSpec{Connector: Name, URL: tc.url, Schema: tc.schema, Key: tc.key})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s key %v: %v", tc.url, tc.key, err)
		case tc.want != "" && (err == nil || !errors.Is(err, spec.ErrBadOption) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s key %v: err = %v, want one with %q", tc.url, tc.key, err, tc.want)
		}
	}
}

func batch(t *testing.T, mem memory.Allocator, rows string) arrow.RecordBatch {
	t.Helper()
	rec, _, err := array.RecordFromJSON(mem, rowSchema.Arrow(), strings.NewReader(rows))
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestReadRecordsGivesPagesBack checks that reading a fetch response gives its
// buffer pages back to kafka-go's pool: if it did not, every fetch would
// allocate a fresh 64 KiB page, and a continuous query polling often would
// spend its time collecting them.
func TestReadRecordsGivesPagesBack(t *testing.T) {
	const topic = "pages"
	addr := cluster(t, topic, 1)
	produce(t, addr, topic, "one", "two", "three")
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	c := &kafka.Client{Addr: kafka.TCP(addr), Transport: tr, Timeout: 5 * time.Second}
	var got []kafka.Message
	fetch := func() {
		res, err := c.Fetch(context.Background(), &kafka.FetchRequest{Topic: topic, Partition: 0, MinBytes: 1, MaxBytes: 1 << 20, MaxWait: 10 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if res.Error != nil {
			t.Fatal(res.Error)
		}
		if got, _, err = readRecords(res.Records, topic, 0, 0, got[:0]); err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 || string(got[2].Value) != "three" {
			t.Fatalf("fetched %v, want the 3 records produced", got)
		}
	}
	fetch() // the connection and the pool's first pages
	const fetches = 200
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range fetches {
		fetch()
	}
	runtime.ReadMemStats(&after)
	// A page is 64 KiB; what else a fetch allocates here, broker included, is about 4 KiB.
	if per := (after.TotalAlloc - before.TotalAlloc) / fetches; per > 32<<10 {
		t.Errorf("a fetch allocated %d bytes: its pages did not go back to the pool", per)
	}
}

// TestSourceLag: a source that has read every record of its partitions
// reports a consumer lag of 0 for each of them.
func TestSourceLag(t *testing.T) {
	addr := cluster(t, "lines", 2)
	var lines []string
	for i := range 50 {
		lines = append(lines, fmt.Sprint("line ", i))
	}
	produce(t, addr, "lines", lines...)
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	r := startSource(t, mem, exec.ConnectorSpec{Connector: Name, URL: "kafka://" + addr + "/lines", Schema: textSchema}, 0, 1)
	waitFor(t, 8*time.Second, "every record, and both partitions' lag at 0", func() bool {
		lags := r.tc.Metrics.Lags()
		return r.col.NumRows() == len(lines) && len(lags) == 2 && lags[0] == 0 && lags[1] == 0
	})
	r.stop()
}
