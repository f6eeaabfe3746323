package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
)

// TestUpsertTopicAsChangelog: a keyed Kafka table is read as an upsert
// topic, each message the new version of its key's row and a tombstone its
// delete. Continuous aggregations over it count each key's latest row once:
// an update retracts the old row, a delete removes it, on one TaskManager and
// on three (the upsert operator hash-partitioned by the key).
func TestUpsertTopicAsChangelog(t *testing.T) {
	for _, tms := range []int{1, 3} {
		t.Run(fmt.Sprintf("taskmanagers=%d", tms), func(t *testing.T) { runUpsertTopic(t, tms) })
	}
}

func runUpsertTopic(t *testing.T, tms int) {
	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "users"))
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	addr := broker.ListenAddrs()[0]
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Keys go to partitions by murmur2, as a Java producer (and Hummer's
	// upsert sink) puts them: one key's messages stay in order.
	w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: "users", Balancer: kafka.Murmur2Balancer{}, BatchTimeout: time.Millisecond, Transport: tr}
	defer w.Close()
	produce := func(msgs ...[2]string) {
		t.Helper()
		var out []kafka.Message
		for _, m := range msgs {
			km := kafka.Message{Key: []byte(m[0])}
			if m[1] != "" {
				km.Value = []byte(m[1])
			}
			out = append(out, km)
		}
		if err := w.WriteMessages(ctx, out...); err != nil {
			t.Fatal(err)
		}
	}

	srv := startClusterServer(t, tms)
	conn := connectPgx(t, ctx, srv)
	defer conn.Close(context.Background())
	for _, q := range []string{
		fmt.Sprintf("CREATE TABLE users (id BIGINT, team TEXT, score BIGINT, PRIMARY KEY (id)) ENGINE=kafka CONNECTION='kafka://%s/users?format=json'", addr),
		"CREATE VIEW totals AS SELECT COUNT(*) AS n, SUM(score) AS s FROM users",
		"CREATE VIEW teams AS SELECT team, COUNT(*) AS n FROM users GROUP BY team",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	state := func() string {
		var n, s int64
		if err := conn.QueryRow(ctx, "SELECT n, COALESCE(s, 0) FROM totals").Scan(&n, &s); err != nil {
			return err.Error()
		}
		rows, err := conn.Query(ctx, "SELECT team, n FROM teams ORDER BY team")
		if err != nil {
			return err.Error()
		}
		out := fmt.Sprintf("n=%d s=%d", n, s)
		for rows.Next() {
			var team string
			var c int64
			if err := rows.Scan(&team, &c); err != nil {
				return err.Error()
			}
			out += fmt.Sprintf(" %s:%d", team, c)
		}
		rows.Close()
		return out
	}
	wait := func(want string) {
		t.Helper()
		waitFor(t, ctx, want, func() bool { return state() == want })
	}

	produce([2]string{`{"id": 1}`, `{"id": 1, "team": "red", "score": 10}`},
		[2]string{`{"id": 2}`, `{"id": 2, "team": "blue", "score": 20}`},
		[2]string{`{"id": 3}`, `{"id": 3, "team": "red", "score": 30}`})
	wait("n=3 s=60 blue:1 red:2")
	// Id 1 moves to blue with a new score; id 2 is deleted; a tombstone of
	// a key never seen deletes nothing.
	produce([2]string{`{"id": 1}`, `{"id": 1, "team": "blue", "score": 15}`},
		[2]string{`{"id": 2}`, ""},
		[2]string{`{"id": 9}`, ""})
	wait("n=2 s=45 blue:1 red:1")
	// The same row again changes nothing; id 2 comes back.
	produce([2]string{`{"id": 1}`, `{"id": 1, "team": "blue", "score": 15}`},
		[2]string{`{"id": 2}`, `{"id": 2, "team": "red", "score": 1}`})
	wait("n=3 s=46 blue:1 red:2")
	plan := strings.Join(queryStrings(t, ctx, conn, "EXPLAIN SELECT team FROM users"), "\n")
	if !strings.Contains(plan, "upsert by id") || !strings.Contains(plan, "hash[0]") {
		t.Errorf("EXPLAIN shows no upsert operator partitioned by the key:\n%s", plan)
	}
}
