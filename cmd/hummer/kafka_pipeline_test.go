package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
)

// TestKafkaPipeline: a continuous job from one Kafka topic to another through
// SQL, against an in-process Kafka-protocol broker. INSERT returns at once; lines
// produced into the input afterwards reach the output, filtered; KILL stops the
// job.
func TestKafkaPipeline(t *testing.T) {
	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "in"), kfake.SeedTopics(1, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	addr := broker.ListenAddrs()[0]

	srv := startTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := connectPgx(t, ctx, srv)
	defer conn.Close(context.Background())
	for _, q := range []string{
		fmt.Sprintf("CREATE TABLE lines_in (line TEXT) ENGINE=kafka CONNECTION='kafka://%s/in'", addr),
		fmt.Sprintf("CREATE TABLE lines_out (line TEXT) ENGINE=kafka CONNECTION='kafka://%s/out'", addr),
		"INSERT INTO lines_out SELECT upper(line) FROM lines_in WHERE line LIKE 'keep%'",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}

	// A plain SELECT over a stream would never answer: it is refused with a hint.
	if _, err := conn.Exec(ctx, "SELECT line FROM lines_in"); err == nil ||
		!strings.Contains(err.Error(), "INSERT INTO") || !strings.Contains(err.Error(), "0A000") {
		t.Errorf("SELECT over a Kafka table: %v, want 0A000 naming INSERT INTO", err)
	}

	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: "in", Balancer: &kafka.RoundRobin{}, BatchTimeout: time.Millisecond, Transport: tr}
	var msgs []kafka.Message
	var want []string
	for i := 0; i < 60; i++ {
		v := fmt.Sprintf("drop %d", i)
		if i%3 == 0 {
			v = fmt.Sprintf("keep %d", i)
			want = append(want, strings.ToUpper(v))
		}
		msgs = append(msgs, kafka.Message{Value: []byte(v)})
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	w.Close()

	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{addr}, Topic: "out", Partition: 0,
		MaxWait: 50 * time.Millisecond, Dialer: &kafka.Dialer{Timeout: 5 * time.Second}})
	defer r.Close()
	var got []string
	readCtx, stop := context.WithTimeout(ctx, 30*time.Second)
	defer stop()
	for len(got) < len(want) {
		m, err := r.ReadMessage(readCtx)
		if err != nil {
			t.Fatalf("read %d of %d lines from the output: %v", len(got), len(want), err)
		}
		got = append(got, string(m.Value))
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("output %v, want %v", got, want)
	}

	// COPY (...) TO STDOUT streams a continuous query's rows as they come, until
	// the client cancels it.
	copyCtx, stopCopy := context.WithCancel(ctx)
	lines := &lineCounter{want: len(want), full: stopCopy}
	_, err = conn.PgConn().CopyTo(copyCtx, lines, "COPY (SELECT line FROM lines_in WHERE line LIKE 'keep%') TO STDOUT")
	stopCopy()
	if lines.n < len(want) {
		t.Fatalf("COPY streamed %d lines, want %d (err %v)", lines.n, len(want), err)
	}
	if !strings.HasPrefix(lines.first, "insert\tkeep ") {
		t.Errorf("COPY line %q, want insert<TAB>keep ...", lines.first)
	}
	conn.Close(context.Background()) // a cancelled COPY may leave the connection unusable to pgx
	conn = connectPgx(t, ctx, srv)
	t.Cleanup(func() { conn.Close(context.Background()) })

	var id int64
	var state string
	if err := conn.QueryRow(ctx, "SHOW PROCESSLIST").Scan(&id, nil, &state, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	if state != "running" {
		t.Errorf("the continuous job is %s, want running", state)
	}
	if _, err := conn.Exec(ctx, fmt.Sprintf("KILL %d", id)); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, "SHOW PROCESSLIST").Scan(nil, nil, &state, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil); err != nil || state != "cancelled" {
		t.Errorf("after KILL the job is %s (%v), want cancelled", state, err)
	}
}

// lineCounter counts the lines written to it and calls full once it has want.
type lineCounter struct {
	want, n int
	first   string
	full    func()
}

func (w *lineCounter) Write(p []byte) (int, error) {
	for _, line := range strings.SplitAfter(string(p), "\n") {
		if line == "" {
			continue
		}
		if w.first == "" {
			w.first = line
		}
		w.n++
	}
	if w.n >= w.want {
		w.full()
	}
	return len(p), nil
}
