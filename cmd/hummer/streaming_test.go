package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
)

// streamingWordCount is the WordCount of these tests, over the Kafka table verses.
const streamingWordCount = `SELECT word, COUNT(*) AS n
	FROM (SELECT unnest(string_split(lower(line), ' ')) AS word FROM verses) AS t
	WHERE word <> '' GROUP BY word`

// TestStreamingWordCount: kjv.txt as lines in a Kafka topic (a kfake broker),
// a continuous WordCount into an upsert topic and into a view. Both converge to
// the counts of a Go word count of the file; lines produced later show up in
// both; the view answers queries at once; DROP VIEW stops its job. Run on one
// TaskManager and on a cluster of three in one process (network channels
// carrying the updates).
func TestStreamingWordCount(t *testing.T) {
	text, err := os.ReadFile("../../data/kjv.txt")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(text), "\n"), "\n")
	want := map[string]int64{}
	for _, line := range lines {
		for _, w := range strings.Split(strings.ToLower(line), " ") {
			if w != "" {
				want[w]++
			}
		}
	}
	if want["the"] != 63911 {
		t.Fatalf("reference count of 'the' is %d, want 63911 (the issue's figure)", want["the"])
	}
	for _, tms := range []int{1, 3} {
		t.Run(fmt.Sprintf("taskmanagers=%d", tms), func(t *testing.T) {
			runStreamingWordCount(t, tms, lines, maps.Clone(want))
		})
	}
}

func runStreamingWordCount(t *testing.T, tms int, lines []string, want map[string]int64) {
	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "lines"), kfake.SeedTopics(2, "wc_out"))
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	addr := broker.ListenAddrs()[0]
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: "lines", Balancer: &kafka.RoundRobin{},
		BatchTimeout: time.Millisecond, BatchSize: 5000, Transport: tr}
	defer w.Close()
	produce := func(lines ...string) {
		t.Helper()
		msgs := make([]kafka.Message, len(lines))
		for i, l := range lines {
			msgs[i] = kafka.Message{Value: []byte(l)}
		}
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			t.Fatal(err)
		}
	}
	produce(lines...)

	srv := startClusterServer(t, tms)
	conn := connectPgx(t, ctx, srv)
	defer conn.Close(context.Background())
	exec := func(q string) {
		t.Helper()
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(fmt.Sprintf("CREATE TABLE verses (line TEXT) ENGINE=kafka CONNECTION='kafka://%s/lines'", addr))
	exec(fmt.Sprintf("CREATE TABLE wc_out (word TEXT, n BIGINT, PRIMARY KEY (word)) ENGINE=kafka CONNECTION='kafka://%s/wc_out?format=json'", addr))
	exec(fmt.Sprintf("CREATE TABLE wc_append (word TEXT, n BIGINT) ENGINE=kafka CONNECTION='kafka://%s/wc_out?format=json'", addr))

	// Updates into an append-only table are refused when the job is submitted.
	if _, err := conn.Exec(ctx, "INSERT INTO wc_append "+streamingWordCount); err == nil ||
		!strings.Contains(err.Error(), "append-only") || !strings.Contains(err.Error(), "0A000") {
		t.Errorf("INSERT of updates into an append-only table: %v, want 0A000 naming append-only", err)
	}
	exec("INSERT INTO wc_out " + streamingWordCount)
	exec("CREATE VIEW wc AS " + streamingWordCount)

	// The view converges to the reference counts.
	viewCounts := func() map[string]int64 {
		rows, err := conn.Query(ctx, "SELECT word, n FROM wc")
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int64{}
		for rows.Next() {
			var word string
			var n int64
			if err := rows.Scan(&word, &n); err != nil {
				t.Fatal(err)
			}
			if _, dup := got[word]; dup {
				t.Errorf("view holds %q twice", word)
			}
			got[word] = n
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return got
	}
	waitFor(t, ctx, "the view to hold the reference counts", func() bool { return maps.Equal(viewCounts(), want) })
	var the int64
	if err := conn.QueryRow(ctx, "SELECT n FROM wc WHERE word = 'the'").Scan(&the); err != nil || the != 63911 {
		t.Errorf("SELECT n FROM wc WHERE word = 'the': %d, %v; want 63911", the, err)
	}
	var top string
	if err := conn.QueryRow(ctx, "SELECT word FROM wc ORDER BY n DESC LIMIT 1").Scan(&top); err != nil || top != "the" {
		t.Errorf("most frequent word in the view: %q, %v; want the", top, err)
	}

	// The upsert topic converges too: the last value of each key, tombstones
	// deleting.
	topic := &upsertTopic{r: newCommittedReader(t, addr, "wc_out"), rows: map[string]int64{}}
	defer topic.r.close()
	waitFor(t, ctx, "the upsert topic to hold the reference counts", func() bool {
		topic.poll(t, ctx)
		return maps.Equal(topic.rows, want)
	})

	// COPY streams a continuous aggregation's changes: folded, they give its
	// result. It runs on a connection of its own, which its cancel ends.
	copied := make(chan map[string]string, 1)
	copyCtx, stopCopy := context.WithCancel(ctx)
	defer stopCopy()
	copyConn := connectPgx(t, ctx, srv)
	defer copyConn.Close(context.Background())
	go func() {
		view := map[string]string{} // word -> count, from the change lines
		var rest []byte
		var bad string
		_, err := copyConn.PgConn().CopyTo(copyCtx, copyWriter(func(p []byte) (int, error) {
			rest = append(rest, p...)
			for {
				i := strings.IndexByte(string(rest), '\n')
				if i < 0 {
					break
				}
				f := strings.Split(string(rest[:i]), "\t")
				rest = rest[i+1:]
				switch {
				case len(f) != 3:
					bad = fmt.Sprintf("COPY line %q", f)
				case f[0] == "insert" || f[0] == "update_after":
					view[f[1]] = f[2]
				case (f[0] == "delete" || f[0] == "update_before") && view[f[1]] == f[2]:
					delete(view, f[1])
				default:
					bad = fmt.Sprintf("COPY line %q does not follow %v", f, view)
				}
				if bad == "" && view["zyzzyva"] == "3" {
					stopCopy()
				}
			}
			return len(p), nil
		}), "COPY (SELECT word, COUNT(*) AS n FROM (SELECT unnest(string_split(lower(line), ' ')) AS word FROM verses) AS t WHERE word LIKE 'zyzz%' GROUP BY word) TO STDOUT")
		if bad != "" {
			view["error"] = bad
		} else if copyCtx.Err() == nil {
			view["error"] = fmt.Sprint("COPY ended: ", err)
		}
		copied <- view
	}()

	// Lines produced now show up in all three.
	start := time.Now()
	produce("zyzzyva Zyzzyva", "the zyzzyva")
	want["zyzzyva"] = 3
	want["the"]++
	waitFor(t, ctx, "new lines in the view", func() bool { return maps.Equal(viewCounts(), want) })
	t.Logf("new lines reached the view after %s", time.Since(start))
	waitFor(t, ctx, "new lines in the upsert topic", func() bool {
		topic.poll(t, ctx)
		return maps.Equal(topic.rows, want)
	})
	t.Logf("new lines reached the upsert topic after %s", time.Since(start))
	select {
	case view := <-copied:
		if len(view) != 1 || view["zyzzyva"] != "3" {
			t.Errorf("COPY's changes fold into %v, want zyzzyva 3", view)
		}
	case <-ctx.Done():
		t.Fatal("COPY never showed zyzzyva 3")
	}

	// The view's job is listed; DROP VIEW stops it, and the view is gone.
	if !jobListed(t, ctx, conn, "CREATE VIEW wc") {
		t.Error("SHOW PROCESSLIST does not list the view's job")
	}
	exec("DROP VIEW wc")
	if jobListed(t, ctx, conn, "CREATE VIEW wc") {
		t.Error("after DROP VIEW, its job is still running")
	}
	if _, err := conn.Exec(ctx, "SELECT * FROM wc"); err == nil || !strings.Contains(err.Error(), "42P01") {
		t.Errorf("SELECT from a dropped view: %v, want 42P01", err)
	}
}

// jobListed reports whether SHOW PROCESSLIST lists a running job whose
// statement starts with prefix.
func jobListed(t *testing.T, ctx context.Context, conn *pgx.Conn, prefix string) bool {
	t.Helper()
	rows, err := conn.Query(ctx, "SHOW PROCESSLIST")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	found := false
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		stmt, _ := vals[1].(string)
		state, _ := vals[2].(string)
		if strings.HasPrefix(stmt, prefix) && state == "running" {
			found = true
		}
	}
	return found
}

// waitFor polls cond until it holds or ctx ends.
func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-tick.C:
		}
	}
}

// upsertTopic folds an upsert topic, read committed, into its current rows:
// the JSON key's "word" to the JSON value's "n", a tombstone removing the key.
type upsertTopic struct {
	r    *committedReader
	rows map[string]int64
}

func (u *upsertTopic) poll(t *testing.T, ctx context.Context) {
	t.Helper()
	for _, m := range u.r.poll(t, ctx) {
		var key struct{ Word string }
		if err := json.Unmarshal(m.Key, &key); err != nil {
			t.Fatalf("key %q: %v", m.Key, err)
		}
		if m.Value == nil {
			delete(u.rows, key.Word)
			continue
		}
		var row struct {
			Word string
			N    int64
		}
		if err := json.Unmarshal(m.Value, &row); err != nil {
			t.Fatalf("value %q: %v", m.Value, err)
		}
		if row.Word != key.Word {
			t.Fatalf("key %q with value %q", m.Key, m.Value)
		}
		u.rows[key.Word] = row.N
	}
}

// copyWriter is an io.Writer calling a function, for pgconn's CopyTo.
type copyWriter func(p []byte) (int, error)

func (f copyWriter) Write(p []byte) (int, error) { return f(p) }
