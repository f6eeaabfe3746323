package main

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKafkaIntoStoredTableCluster: continuous jobs from Kafka into tables
// Hummer stores, on a cluster of processes (one hummer jobmanager, two hummer
// taskmanager), whose TaskManagers have no table store: their sinks stage
// each checkpoint's changes, which the JobManager commits
// (connectors/table/sink.go). One job upserts each key's count into a table
// keyed by it; the other appends every record to a table without a key. A
// TaskManager is killed with -9 while records arrive, more records arrive
// while it is down, and it is started again, four times over, then the
// JobManager once. In the end the keyed table holds every key once with the
// count of the records produced for it (counted here as they are produced),
// and the other table every record exactly once; two checkpoints later it
// still does.
func TestKafkaIntoStoredTableCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos test: killing processes")
	}
	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "events"))
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	kaddr := broker.ListenAddrs()[0]
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	producer, err := kgo.NewClient(kgo.SeedBrokers(kaddr), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	// want and produced are the reference: each key's count, and the
	// records produced, numbered from 0.
	want := map[string]int64{}
	produced := 0
	produce := func(n int) {
		var recs []*kgo.Record
		for range n {
			k := fmt.Sprintf("k%02d", produced*7%13)
			want[k]++
			recs = append(recs, &kgo.Record{Topic: "events", Value: []byte(fmt.Sprintf("%s,%d", k, produced))})
			produced++
		}
		if err := producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			panic(err) // t.Fatal is for the test's goroutine
		}
	}

	bin := buildHummer(t)
	pgAddr, rpcAddr := freeAddr(t), freeAddr(t)
	jm := startKillable(t, bin, "jobmanager", "--pg-addr", pgAddr, "--rpc-addr", rpcAddr,
		"--data-dir", filepath.Join(t.TempDir(), "jm"), "--checkpoint-interval", "300ms")
	var tms []*killable
	for i := range 2 {
		tms = append(tms, startKillable(t, bin, "taskmanager", "--jobmanager", rpcAddr, "--slots", "2",
			"--data-dir", filepath.Join(t.TempDir(), fmt.Sprint("tm", i))))
	}
	waitUntil(t, "two registered TaskManagers", jm.exited, func() bool {
		out, err := psqlErr(pgAddr, "SET parallelism = 4;")
		return err == nil && !strings.Contains(out, "ERROR")
	})
	conn := connectWhenUp(t, ctx, jm, pgAddr)
	defer func() { conn.Close(context.Background()) }()
	for _, q := range []string{
		fmt.Sprintf("CREATE TABLE events (k TEXT, n BIGINT) ENGINE=kafka CONNECTION='kafka://%s/events?format=csv&group=counter'", kaddr),
		fmt.Sprintf("CREATE TABLE events2 (k TEXT, n BIGINT) ENGINE=kafka CONNECTION='kafka://%s/events?format=csv&group=copier'", kaddr),
		"CREATE TABLE counts (k TEXT, c BIGINT, PRIMARY KEY (k))",
		// The same records appended to a table without a key: one
		// committed twice, or lost, shows.
		"CREATE TABLE seen (k TEXT, n BIGINT)",
		"SET parallelism = 2",
		"INSERT INTO counts SELECT k, count(*) FROM events GROUP BY k",
		"INSERT INTO seen SELECT k, n FROM events2",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}

	// jobs returns the restarts and the newest checkpoint of the running
	// jobs, and how many run.
	jobs := func(c *pgx.Conn) (restarts, checkpoint int64, running int) {
		rows, err := c.Query(ctx, "SHOW PROCESSLIST")
		if err != nil {
			return 0, 0, 0
		}
		defer rows.Close()
		for rows.Next() {
			fields := map[string]string{}
			for i, v := range rows.RawValues() {
				fields[string(rows.FieldDescriptions()[i].Name)] = string(v)
			}
			if fields["state"] != "running" {
				continue
			}
			running++
			r, _ := strconv.ParseInt(fields["restarts"], 10, 64)
			c, _ := strconv.ParseInt(fields["checkpoint"], 10, 64)
			restarts += r
			checkpoint = max(checkpoint, c)
		}
		return restarts, checkpoint, running
	}
	seenRows := func(c *pgx.Conn) int64 {
		var n int64
		if err := c.QueryRow(ctx, "SELECT count(*) FROM seen").Scan(&n); err != nil {
			return -1
		}
		return n
	}
	// state describes the tables against the reference; ok when they
	// equal it.
	state := func(c *pgx.Conn) (ok bool, why string) {
		got := map[string]int64{}
		rows, err := c.Query(ctx, "SELECT k, c FROM counts")
		if err != nil {
			return false, err.Error()
		}
		for rows.Next() {
			var k string
			var n int64
			if err := rows.Scan(&k, &n); err != nil {
				rows.Close()
				return false, err.Error()
			}
			if _, dup := got[k]; dup {
				rows.Close()
				return false, fmt.Sprintf("key %s twice in counts", k)
			}
			got[k] = n
		}
		rows.Close()
		var total, distinct, lo, hi int64
		if err := c.QueryRow(ctx, "SELECT count(*), count(DISTINCT n), coalesce(min(n), -1), coalesce(max(n), -1) FROM seen").Scan(&total, &distinct, &lo, &hi); err != nil {
			return false, err.Error()
		}
		why = fmt.Sprintf("counts %v, want %v; seen has %d rows, %d distinct, from %d to %d, want each of 0 to %d once",
			got, want, total, distinct, lo, hi, produced-1)
		return maps.Equal(got, want) && total == int64(produced) && distinct == total && lo == 0 && hi == int64(produced-1), why
	}
	waitState := func(c *pgx.Conn, what string) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for {
			ok, why := state(c)
			if ok {
				return
			}
			select {
			case <-jm.exited:
				t.Fatalf("the JobManager exited before %s", what)
			case <-time.After(50 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %s\n%s", what, why, rowsText(ctx, c, "SHOW PROCESSLIST"))
			}
		}
	}

	produce(300)
	waitState(conn, "the first records in the tables")
	// Records keep arriving while TaskManagers are killed: 40 every 10ms,
	// from another goroutine, which keeps the reference until it stops.
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			produce(40)
		}
	}()
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-stopped
	}()
	for round := range 4 {
		restarts, _, _ := jobs(conn)
		// Killed while records are on their way: some committed, others
		// staged in the sinks or not read yet.
		before := seenRows(conn)
		waitUntil(t, "more records committed", jm.exited, func() bool { return seenRows(conn) > before+500 })
		tm := tms[round%2]
		t.Logf("round %d: killing TaskManager %d with %d records in seen", round, round%2, seenRows(conn))
		tm.kill(t)
		tm.start(t)
		waitUntil(t, "the jobs restarted", jm.exited, func() bool {
			r, _, running := jobs(conn)
			return r > restarts && running == 2
		})
	}
	close(stop)
	<-stopped
	waitState(conn, "after the TaskManagers' kills")

	// The JobManager, which commits, killed too while records arrive.
	before := seenRows(conn)
	produce(2000)
	waitUntil(t, "some of the records committed", jm.exited, func() bool { return seenRows(conn) > before })
	conn.Close(context.Background())
	jm.kill(t)
	t.Log("killed the JobManager")
	produce(300)
	jm.start(t)
	conn = connectWhenUp(t, ctx, jm, pgAddr)
	waitState(conn, "after the JobManager's kill")
	// A commit twice would show at a later checkpoint.
	_, last, _ := jobs(conn)
	waitUntil(t, "two more checkpoints", jm.exited, func() bool {
		_, c, _ := jobs(conn)
		return c >= last+2
	})
	if ok, why := state(conn); !ok {
		t.Fatalf("two checkpoints after it held the reference: %s", why)
	}
	t.Logf("jobs at the end:\n%s", rowsText(ctx, conn, "SHOW PROCESSLIST"))
}
