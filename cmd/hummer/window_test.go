package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
)

// TestWindowsOutOfOrder: a tumbling window count over a Kafka topic whose
// rows come out of order, with a watermark 2 seconds behind the largest time
// seen. A window's rows come out once the watermark passes its end; a row
// that arrives after its window closed is late: dropped, and counted in SHOW
// PROCESSLIST; a row behind the largest time but not behind the watermark
// still counts. The rows are produced in steps, each after the view showed
// the windows the step before closed, so that the watermark each row meets
// is known; the expected rows are Flink's for that, worked by hand.
//
// With the parallelism of the slots (2), the topic's one partition leaves a
// source subtask with nothing to read: it is idle and holds no watermark back.
func TestWindowsOutOfOrder(t *testing.T) {
	for _, par := range []string{"1", "auto"} {
		t.Run("parallelism "+par, func(t *testing.T) { windowsOutOfOrder(t, par) })
	}
}

func windowsOutOfOrder(t *testing.T, parallelism string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	at := func(k string, sec int) string { return fmt.Sprintf("%s,2024-01-01 00:00:%02d", k, sec) }
	// Step 1: the watermark reaches 10 s (12 - 2): [0,10) closes with a's 0
	// and 8 (b's 3 too); a's 7 came after 8 but before the watermark passed.
	broker, produce := txKafka(t, ctx, at("a", 0), at("b", 3), at("a", 8), at("a", 7), at("a", 12))
	addr := startTestServer(t)
	conn := connectPgx(t, ctx, addr)
	defer conn.Close(context.Background())
	exec := func(q string) {
		t.Helper()
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("SET parallelism = " + parallelism)
	exec(fmt.Sprintf("CREATE TABLE clicks (k TEXT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '2' SECOND) ENGINE=kafka CONNECTION='kafka://%s/events?format=csv'", broker))
	exec(`CREATE VIEW w AS SELECT k, window_start, window_end, count(*) AS n
		FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY k, window_start, window_end`)
	exec(`CREATE VIEW s AS SELECT k, SESSION_START(ts, INTERVAL '5' SECOND) AS ss, SESSION_END(ts, INTERVAL '5' SECOND) AS se, count(*) AS n
		FROM clicks GROUP BY k, SESSION(ts, INTERVAL '5' SECOND)`)
	windows := func(want string) {
		t.Helper()
		var got string
		waitUntil(t, "the view to show "+want, nil, func() bool {
			rows, err := conn.Query(ctx, "SELECT k, to_char(window_start, 'MI:SS'), to_char(window_end, 'MI:SS'), n FROM w ORDER BY 2, 1")
			if err != nil {
				return false // the view has not caught up yet
			}
			got = strings.Join(scanLines(t, rows), " | ")
			return got == want
		})
	}
	windows("a 00:00 00:10 3 | b 00:00 00:10 1")
	// Step 2: a's 9 is late ([0,10) closed); b's 11 and c's 25 take the
	// watermark to 23, closing [10,20) with a's 12 and b's 11.
	produce(at("a", 9), at("b", 11), at("c", 25))
	windows("a 00:00 00:10 3 | b 00:00 00:10 1 | a 00:10 00:20 1 | b 00:10 00:20 1")
	// Step 3: a's 19 is late; d's 29 is within the watermark (23 < 29) and
	// 40 takes it to 38, closing [20,30) with c's 25 and d's 29.
	produce(at("a", 19), at("d", 29), "d,2024-01-01 00:00:40")
	windows("a 00:00 00:10 3 | b 00:00 00:10 1 | a 00:10 00:20 1 | b 00:10 00:20 1 | c 00:20 00:30 1 | d 00:20 00:30 1")
	// The session view, its own job: a's rows 7, 8, 9 and 12 are one session
	// (each within 5 s of the last), closed at 23 s; 19 starts another; d's
	// 40 is still open. None is late: each arrives within 5 s of the
	// watermark.
	want := "a 00:00 00:05 1 | a 00:07 00:17 4 | a 00:19 00:24 1 | b 00:03 00:08 1 | b 00:11 00:16 1 | c 00:25 00:30 1 | d 00:29 00:34 1"
	var got string
	waitUntil(t, "the sessions", nil, func() bool {
		rows, err := conn.Query(ctx, "SELECT k, to_char(ss, 'MI:SS'), to_char(se, 'MI:SS'), n FROM s ORDER BY k, ss")
		if err != nil {
			return false
		}
		got = strings.Join(scanLines(t, rows), " | ")
		return got == want
	})
	var late int64
	rows, err := conn.Query(ctx, "SHOW PROCESSLIST")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		for i, f := range rows.FieldDescriptions() {
			switch f.Name {
			case "late_rows":
				late += vals[i].(int64)
			case "watermark":
				// Both jobs have seen 40 s, less the 2 s delay.
				if w, ok := vals[i].(time.Time); !ok || !w.Equal(time.Date(2024, 1, 1, 0, 0, 38, 0, time.UTC)) {
					t.Errorf("a job's watermark is %v, want 00:00:38", vals[i])
				}
			}
		}
	}
	if late != 2 {
		t.Errorf("late_rows %d, want 2 (a's 9 and 19)", late)
	}
}

// scanLines returns each row of rows as its values joined by spaces.
func scanLines(t *testing.T, rows pgx.Rows) []string {
	t.Helper()
	defer rows.Close()
	var lines []string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.TrimSpace(fmt.Sprintln(vals...)))
	}
	return lines
}

// TestKafkaPartitionWatermarks: a Kafka table's watermark is the least of
// its partitions', each the largest time of its own records less the delay,
// so one partition running ahead does not make another's rows late; with
// idle_timeout, a silent partition stops holding it back. SHOW PROCESSLIST
// gives that watermark and its lag behind the wall clock; EXPLAIN says the
// source keeps it, per partition.
func TestKafkaPartitionWatermarks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "events"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(broker.Close)
	tr := &kafka.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	// The message key names the partition.
	w := &kafka.Writer{Addr: kafka.TCP(broker.ListenAddrs()[0]), Topic: "events", BatchTimeout: time.Millisecond, Transport: tr,
		Balancer: kafka.BalancerFunc(func(m kafka.Message, _ ...int) int { return int(m.Key[0] - '0') })}
	t.Cleanup(func() { w.Close() })
	produce := func(partition byte, k string, sec int) {
		t.Helper()
		v := fmt.Sprintf("%s,2024-01-01 00:00:%02d", k, sec)
		if err := w.WriteMessages(ctx, kafka.Message{Key: []byte{'0' + partition}, Value: []byte(v)}); err != nil {
			t.Fatal(err)
		}
	}
	// Partition 0 runs to 30 s; partition 1 has one record, at 5 s.
	produce(0, "a", 1)
	produce(0, "a", 15)
	produce(0, "a", 30)
	produce(1, "b", 5)

	addr := startTestServer(t)
	conn := connectPgx(t, ctx, addr)
	defer conn.Close(context.Background())
	exec := func(q string) {
		t.Helper()
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("SET parallelism = 1") // one subtask reads both partitions
	addr0 := broker.ListenAddrs()[0]
	for _, c := range []struct{ table, idle string }{{"held", "0s"}, {"idling", "300ms"}} {
		exec(fmt.Sprintf("CREATE TABLE %s (k TEXT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '2' SECOND) ENGINE=kafka CONNECTION='kafka://%s/events?format=csv&idle_timeout=%s'", c.table, addr0, c.idle))
		exec(fmt.Sprintf(`CREATE VIEW %s_w AS SELECT k, window_start, count(*) AS n
			FROM TABLE(TUMBLE(TABLE %s, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY k, window_start, window_end`, c.table, c.table))
	}
	view := func(v string) string {
		rows, err := conn.Query(ctx, "SELECT k, to_char(window_start, 'MI:SS'), n FROM "+v+" ORDER BY 2, 1")
		if err != nil {
			return "" // not caught up yet
		}
		return strings.Join(scanLines(t, rows), " | ")
	}
	// jobWatermarkLag is the watermark SHOW PROCESSLIST gives the job whose
	// statement mentions table, how many rows its sources read, and its
	// watermark_lag_s.
	jobWatermarkLag := func(table string) (wm any, in int64, lag any) {
		rows, err := conn.Query(ctx, "SHOW PROCESSLIST")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			var stmt string
			for i, f := range rows.FieldDescriptions() {
				switch f.Name {
				case "statement":
					stmt = vals[i].(string)
				case "watermark":
					wm = vals[i]
				case "rows_in":
					in = vals[i].(int64)
				case "watermark_lag_s":
					lag = vals[i]
				}
			}
			if strings.Contains(stmt, "TABLE "+table+",") {
				return wm, in, lag
			}
		}
		t.Fatalf("no job over %s", table)
		return nil, 0, nil
	}
	jobWatermark := func(table string) (wm any, in int64) {
		wm, in, _ = jobWatermarkLag(table)
		return wm, in
	}
	// With idle_timeout, both partitions go idle once read (the watermark
	// stays at 3 s: idleness moves no time on) ...
	waitUntil(t, "the idling table's partitions to be idle", nil, func() bool {
		wm, in := jobWatermark("idling")
		return in == 4 && wm == nil
	})
	// ... and a record of partition 0 alone then takes it to 30 s: partition
	// 1, silent, no longer holds it back. [0,10) and [10,20) close.
	produce(0, "a", 32)
	waitUntil(t, "the idling table's windows up to 20 s", nil, func() bool { return view("idling_w") == "a 00:00 1 | b 00:00 1 | a 00:10 1" })
	// Without, the watermark is partition 1's, 3 s: no window closes until
	// partition 1 reaches 12 s (watermark 10 s), and then [0,10) alone.
	if got := view("held_w"); got != "" {
		t.Errorf("the held table's windows %q before partition 1 went on, want none", got)
	}
	produce(1, "b", 12)
	var got string
	waitUntil(t, "the held table's first window", nil, func() bool { got = view("held_w"); return got != "" })
	if got != "a 00:00 1 | b 00:00 1" {
		t.Errorf("the held table's windows %q, want [0,10) alone", got)
	}
	// Its watermark is partition 1's largest time, 12 s, less the 2 s
	// delay (partition 0's is 30 s), and watermark_lag_s is the wall clock
	// less that: between the clock read before SHOW PROCESSLIST and after.
	want := time.Date(2024, 1, 1, 0, 0, 10, 0, time.UTC)
	waitUntil(t, "the held job's watermark at 10 s", nil, func() bool {
		wm, _ := jobWatermark("held")
		w, ok := wm.(time.Time)
		return ok && w.Equal(want)
	})
	before := time.Now()
	_, _, lag := jobWatermarkLag("held")
	after := time.Now()
	lagS, ok := lag.(float64)
	lo, hi := before.Sub(want).Seconds(), after.Sub(want).Seconds()
	if !ok || lagS < lo-1e-3 || lagS > hi+1e-3 {
		t.Errorf("the held job's watermark_lag_s is %v, want the wall clock less its watermark %s: between %.3f and %.3f", lag, want, lo, hi)
	}
	// EXPLAIN says where a Kafka table's watermark comes from: the source,
	// per partition.
	rows, err := conn.Query(ctx, "EXPLAIN SELECT * FROM held")
	if err != nil {
		t.Fatal(err)
	}
	if plan := strings.Join(scanLines(t, rows), "\n"); !strings.Contains(plan, "watermark ts - 2s (per partition, in the source)") {
		t.Errorf("EXPLAIN of a Kafka table with a watermark:\n%s\nwant its watermark per partition, in the source", plan)
	}
}
