package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
)

// TestKafkaJobsOwnTheirProgress: a Kafka job's progress belongs to that job.
// A view reads a table with group=g to the topic's end and commits there;
// then two ad-hoc COPY jobs over the same table, one after the other, each
// see every row, as each starts at start= (earliest), not where the group's
// other jobs committed. Only start=group resumes from the group: a COPY over
// such a table after the others sees none of the rows they read, and the
// rows produced after.
func TestKafkaJobsOwnTheirProgress(t *testing.T) {
	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "progress"))
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	kaddr := broker.ListenAddrs()[0]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	var lines []string
	produce := func(from, to int) {
		t.Helper()
		w := &kafka.Writer{Addr: kafka.TCP(kaddr), Topic: "progress", Balancer: &kafka.RoundRobin{}, BatchTimeout: time.Millisecond, Transport: tr}
		defer w.Close()
		var msgs []kafka.Message
		for i := from; i < to; i++ {
			l := fmt.Sprintf("line %02d", i)
			lines = append(lines, l)
			msgs = append(msgs, kafka.Message{Value: []byte(l)})
		}
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			t.Fatal(err)
		}
	}
	produce(0, 20)
	// committed sums the offsets group committed in the topic's partitions.
	committed := func(group string) int64 {
		c := &kafka.Client{Addr: kafka.TCP(kaddr), Transport: tr, Timeout: 5 * time.Second}
		res, err := c.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{"progress": {0, 1}}})
		if err != nil {
			t.Fatal(err)
		}
		var sum int64
		for _, p := range res.Topics["progress"] {
			sum += max(p.CommittedOffset, 0)
		}
		return sum
	}

	addr := startTestServer(t)
	conn := connectPgx(t, ctx, addr)
	defer conn.Close(context.Background())
	for _, q := range []string{
		fmt.Sprintf("CREATE TABLE progress (line TEXT) ENGINE=kafka CONNECTION='kafka://%s/progress?group=g'", kaddr),
		fmt.Sprintf("CREATE TABLE resumed (line TEXT) ENGINE=kafka CONNECTION='kafka://%s/progress?group=g&start=group'", kaddr),
		"CREATE VIEW seen AS SELECT count(*) AS n FROM progress",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	waitFor(t, ctx, "the view to count the 20 lines", func() bool {
		var n int64
		return conn.QueryRow(ctx, "SELECT n FROM seen").Scan(&n) == nil && n == 20
	})
	waitFor(t, ctx, "group g to commit the topic's end", func() bool { return committed("g") == 20 })

	for job := 1; job <= 2; job++ {
		if got := copyRows(t, ctx, addr, "COPY (SELECT line FROM progress) TO STDOUT", 20); !slices.Equal(got, lines) {
			t.Errorf("COPY job %d over the table read %q, want the 20 lines", job, got)
		}
	}

	// start=group resumes where the group is: at the end, so only lines
	// produced after the COPY started show. It has started once it has read
	// the group's offsets; produce until a line shows, then check none of the
	// first 20 did.
	var more int
	got := copyRowsWhile(t, ctx, addr, "COPY (SELECT line FROM resumed) TO STDOUT", func(rows int) bool {
		if rows > 0 {
			return false
		}
		produce(20+more, 21+more)
		more++
		time.Sleep(50 * time.Millisecond) // pacing the producer while the COPY runs
		return true
	})
	for _, l := range got {
		if !slices.Contains(lines[20:], l) {
			t.Errorf("a COPY over the start=group table read %q, which its group had read", l)
		}
	}
	if len(got) == 0 {
		t.Error("a COPY over the start=group table read nothing")
	}
	if _, err := conn.Exec(ctx, "DROP VIEW seen"); err != nil {
		t.Fatal(err)
	}
}

// copyRows runs a COPY of a stream until it has sent want rows, cancels it
// (a CancelRequest, 57014) and returns its rows, sorted, each without its
// change kind.
func copyRows(t *testing.T, ctx context.Context, addr, stmt string, want int) []string {
	t.Helper()
	return copyRowsWhile(t, ctx, addr, stmt, func(rows int) bool { return rows < want })
}

// copyRowsWhile runs a COPY of a stream while more(rows so far) holds,
// asking after each piece of data and at least every 50ms (for up to 30s),
// then cancels it and returns its rows, sorted, each without its change kind.
func copyRowsWhile(t *testing.T, ctx context.Context, addr, stmt string, more func(rows int) bool) []string {
	t.Helper()
	cfg := pgxConfig(t, addr)
	cfg.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: 30 * time.Second}
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	copyCtx, stop := context.WithCancel(ctx)
	defer stop()
	var (
		buf  bytes.Buffer
		data = make(chan int, 1)
	)
	done := make(chan error, 1)
	go func() {
		_, err := conn.PgConn().CopyTo(copyCtx, writerFunc(func(p []byte) (int, error) {
			buf.Write(p)
			select { // only the latest count matters
			case <-data:
			default:
			}
			data <- bytes.Count(buf.Bytes(), []byte("\n"))
			return len(p), nil
		}), stmt)
		done <- err
	}()
	rows := 0
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for more(rows) {
		select {
		case rows = <-data:
		case <-tick.C:
		case err := <-done:
			t.Fatalf("%s ended: %v", stmt, err)
		case <-ctx.Done():
			t.Fatalf("%s: timed out with %d rows", stmt, rows)
		}
	}
	stop()
	err = <-done
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "57014" {
		t.Fatalf("cancelled %s: %v, want 57014", stmt, err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
		if l == "" {
			continue
		}
		op, row, _ := strings.Cut(l, "\t")
		if op != "insert" {
			t.Errorf("%s: row %q, want an insert", stmt, l)
		}
		out = append(out, row)
	}
	slices.Sort(out)
	return out
}
