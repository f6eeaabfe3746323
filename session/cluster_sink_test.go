package session_test

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hummer-db/hummer/connectors"
	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/jobmanager"
	"github.com/hummer-db/hummer/exec/network"
	"github.com/hummer-db/hummer/exec/operators"
	"github.com/hummer-db/hummer/exec/taskmanager"
	"github.com/hummer-db/hummer/exec/vector"
	"github.com/hummer-db/hummer/session"
)

// openClusterEngine opens an engine over dataDir whose JobManager schedules
// on two TaskManagers that, as those of hummer taskmanager processes, have
// no table store: their registry is the connectors' own, whose table sink
// only stages (connectors/table/sink.go). The TaskManagers are in this
// process, joined by network channels. close closes the engine, once; the
// test's cleanup calls it too.
func openClusterEngine(t *testing.T, dataDir string, mem memory.Allocator) (e *session.Engine, close func()) {
	t.Helper()
	jm := jobmanager.New(nil)
	tmReg := exec.NewRegistry()
	operators.Register(tmReg)
	memTables := connectors.Register(tmReg)
	var datas []*network.Server
	for range 2 {
		data, err := network.Listen(network.ServerConfig{Addr: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		datas = append(datas, data)
		jm.AddTaskManager(taskmanager.New(taskmanager.Config{ID: data.Addr().String(), Slots: 2, Registry: tmReg, Alloc: mem, Data: data}))
	}
	reg := exec.NewRegistry()
	operators.Register(reg)
	tables := connectors.Register(reg)
	var err error
	e, err = session.Open(session.Config{DataDir: dataDir, Registry: reg, Validate: connectors.Validate,
		Unbounded: connectors.Unbounded, Upsert: connectors.Upsert, JobManager: jm,
		CheckpointInterval: 50 * time.Millisecond, OnClose: func() {
			tables.Close()
			memTables.Close()
			for _, d := range datas {
				d.Close()
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	close = func() { once.Do(func() { e.Close() }) }
	t.Cleanup(close)
	return e, close
}

// TestStoredTableSinkOnCluster: continuous INSERTs from Kafka into stored
// tables, one keyed (counts upserted by key) and one without a key (every
// record appended), run on TaskManagers without the store: the JobManager's
// process commits what their sinks stage at each checkpoint. The tables
// equal the counts of the records produced, by hand, and hold each record
// once; so they do after the engine (its JobManager) is closed and opened
// again, the jobs resuming from their checkpoints while records keep coming.
// Without checkpoints the INSERT is refused.
func TestStoredTableSinkOnCluster(t *testing.T) {
	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "events"))
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	kaddr := broker.ListenAddrs()[0]
	producer, err := kgo.NewClient(kgo.SeedBrokers(kaddr), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	want := map[string]int64{}
	produced := 0
	produce := func(n int) {
		t.Helper()
		var recs []*kgo.Record
		for range n {
			k := fmt.Sprintf("k%d", produced%7)
			want[k]++
			recs = append(recs, &kgo.Record{Topic: "events", Value: []byte(fmt.Sprintf("%s,%d", k, produced))})
			produced++
		}
		if err := producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) }) // after the engines close (cleanups run last first)
	dataDir := t.TempDir()
	e, closeEngine := openClusterEngine(t, dataDir, mem)
	s := e.NewSession()
	for _, q := range []string{
		fmt.Sprintf("CREATE TABLE events (k TEXT, n BIGINT) ENGINE=kafka CONNECTION='kafka://%s/events?format=csv&group=counter'", kaddr),
		fmt.Sprintf("CREATE TABLE events2 (k TEXT, n BIGINT) ENGINE=kafka CONNECTION='kafka://%s/events?format=csv&group=copier'", kaddr),
		"CREATE TABLE counts (k TEXT, c BIGINT, PRIMARY KEY (k))",
		"CREATE TABLE copy (k TEXT, n BIGINT)",
	} {
		mustRun(t, s, q)
	}
	mustRun(t, s, "SET checkpoint_interval = 0")
	if _, err := run(s, "INSERT INTO counts SELECT k, count(*) FROM events GROUP BY k"); err == nil || !strings.Contains(err.Error(), "checkpoint") {
		t.Fatalf("INSERT into a stored table on a cluster without checkpoints: %v, want refused", err)
	}
	mustRun(t, s, "RESET checkpoint_interval")
	mustRun(t, s, "INSERT INTO counts SELECT k, count(*) FROM events GROUP BY k")
	mustRun(t, s, "INSERT INTO copy SELECT k, n FROM events2")

	// matches reports whether the tables hold the reference: each key's
	// count, and every number once.
	matches := func(s *session.Session) (bool, string) {
		got := map[string]int64{}
		out := mustRun(t, s, "SELECT k, c FROM counts")
		for _, line := range strings.Split(out, "\n") {
			k, c, ok := strings.Cut(line, "|")
			n, err := strconv.ParseInt(c, 10, 64)
			if ok && err == nil {
				got[strings.Trim(k, "'")] = n
			}
		}
		copied := mustRun(t, s, "SELECT count(*), count(DISTINCT n), coalesce(min(n), -1), coalesce(max(n), -1) FROM copy")
		wantCopied := fmt.Sprintf("%d|%d|0|%d", produced, produced, produced-1)
		return maps.Equal(got, want) && copied == wantCopied, fmt.Sprintf("counts %v, want %v; copy (rows, distinct, min, max) %s, want %s", got, want, copied, wantCopied)
	}
	waitMatch := func(s *session.Session, what string) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			ok, why := matches(s)
			if ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %s", what, why)
			}
			time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
		}
	}
	produce(500)
	waitMatch(s, "the first records")
	produce(700)
	closeEngine()
	produce(300) // while no JobManager runs
	e, closeEngine = openClusterEngine(t, dataDir, mem)
	defer closeEngine()
	s = e.NewSession()
	produce(200)
	waitMatch(s, "after the JobManager's restart")
	if n := strings.Count(mustRun(t, s, "SHOW PROCESSLIST"), "running"); n < 2 {
		t.Errorf("%d jobs running after the restart, want the two INSERTs", n)
	}
}

// TestLateRowsTableOnCluster: a window's late rows go to a stored table
// (SET late_rows_table) from TaskManagers without the store, committed by
// the JobManager's process with the job's checkpoints, as the window's rows
// into another stored table are. By hand: the watermark is 2 s behind the
// largest time; a's 12 s brings it to 10 s, closing [0, 10); a's 9 s, produced
// once that window is in the table, is late, and only it.
func TestLateRowsTableOnCluster(t *testing.T) {
	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "clicks"))
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	kaddr := broker.ListenAddrs()[0]
	producer, err := kgo.NewClient(kgo.SeedBrokers(kaddr), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	produce := func(rows ...string) {
		t.Helper()
		var recs []*kgo.Record
		for _, r := range rows {
			recs = append(recs, &kgo.Record{Topic: "clicks", Value: []byte(r)})
		}
		if err := producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) }) // after the engine closes
	e, _ := openClusterEngine(t, t.TempDir(), mem)
	s := e.NewSession()
	for _, q := range []string{
		fmt.Sprintf("CREATE TABLE clicks (k TEXT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '2' SECOND) ENGINE=kafka CONNECTION='kafka://%s/clicks?format=csv'", kaddr),
		"CREATE TABLE wins (k TEXT, window_start TIMESTAMP, n BIGINT)",
		"CREATE TABLE late_clicks (late_watermark TIMESTAMP, k TEXT, ts TIMESTAMP, late_operator TEXT)",
		"SET parallelism = 1",
		"SET late_rows_table = 'late_clicks'",
		"INSERT INTO wins SELECT k, window_start, count(*) FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY k, window_start, window_end",
	} {
		mustRun(t, s, q)
	}
	waitFor := func(query, want string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			got, err := run(s, query)
			if err == nil && got == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %q (%v), want %q", query, got, err, want)
			}
			time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
		}
	}
	produce("a,2024-01-01 00:00:00", "b,2024-01-01 00:00:03", "a,2024-01-01 00:00:08", "a,2024-01-01 00:00:12")
	const windows = "SELECT k, to_char(window_start, 'MI:SS'), n FROM wins ORDER BY 2, 1"
	waitFor(windows, "'a'|'00:00'|2\n'b'|'00:00'|1")
	produce("a,2024-01-01 00:00:09", "c,2024-01-01 00:00:25")
	waitFor(windows, "'a'|'00:00'|2\n'b'|'00:00'|1\n'a'|'00:10'|1")
	const late = "SELECT k, to_char(ts, 'MI:SS'), to_char(late_watermark, 'MI:SS') FROM late_clicks"
	waitFor(late, "'a'|'00:09'|'00:10'")
}
