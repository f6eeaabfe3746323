package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestStreamJoinChaos is a stream-stream join's exactly once under failures,
// across processes: a JobManager and two TaskManagers run a continuous INNER
// JOIN of two Kafka topics (orders and payments, both without end) into an
// append topic, with checkpoints every second, while a TaskManager is killed
// (SIGKILL) and started again, four times. Every order has two payments, one
// produced well before the order and one well after it, so that each side's
// keyed state holds rows across checkpoints and restores. In the end a
// read_committed reader of the output sees every (order, payment) pair exactly
// once, and nothing else.
func TestStreamJoinChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos test: seconds of killing processes")
	}
	// blocks of ids; step s produces the early payments of block s, the
	// orders of block s-10 and the late payments of block s-20: 200 ms apart,
	// so an order waits 2 s in state for its late payment, and an early
	// payment 2 s for its order.
	const blocks, perBlock, lag = 60, 50, 10
	const ids = blocks * perBlock
	want := map[string]bool{}
	for id := range ids {
		want[fmt.Sprintf("%d,item%d,%d", id, id, 10*id+1)] = true // early
		want[fmt.Sprintf("%d,item%d,%d", id, id, 10*id+2)] = true // late
	}

	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "orders", "payments", "paid"))
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	addr := broker.ListenAddrs()[0]

	bin := buildHummer(t)
	pgAddr, rpcAddr := freeAddr(t), freeAddr(t)
	jm := startKillable(t, bin, "jobmanager", "--pg-addr", pgAddr, "--rpc-addr", rpcAddr,
		"--data-dir", filepath.Join(t.TempDir(), "jm"), "--checkpoint-interval", "1s")
	var tms []*killable
	for i := range 2 {
		tms = append(tms, startKillable(t, bin, "taskmanager", "--jobmanager", rpcAddr, "--slots", "3",
			"--data-dir", filepath.Join(t.TempDir(), fmt.Sprint("tm", i))))
	}
	waitUntil(t, "two registered TaskManagers", jm.exited, func() bool {
		out, err := psqlErr(pgAddr, "SET parallelism = 6;")
		return err == nil && !strings.Contains(out, "ERROR")
	})
	psql(t, pgAddr, fmt.Sprintf(`
		CREATE TABLE orders (id BIGINT, item TEXT) ENGINE=kafka CONNECTION='kafka://%[1]s/orders?format=csv';
		CREATE TABLE payments (id BIGINT, amount BIGINT) ENGINE=kafka CONNECTION='kafka://%[1]s/payments?format=csv';
		CREATE TABLE paid (id BIGINT, item TEXT, amount BIGINT) ENGINE=kafka CONNECTION='kafka://%[1]s/paid?format=csv';
		SET parallelism = 2;
		INSERT INTO paid SELECT o.id, o.item, p.amount FROM orders AS o JOIN payments AS p ON o.id = p.id;`, addr))
	if plan := psql(t, pgAddr, "EXPLAIN SELECT o.id, o.item, p.amount FROM orders AS o JOIN payments AS p ON o.id = p.id;"); !strings.Contains(plan, "stream_join") {
		t.Fatalf("the join of two topics is no stream_join:\n%s", plan)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	producer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	produced := make(chan error, 1)
	go func() {
		for s := range blocks + 2*lag {
			var recs []*kgo.Record
			block := func(b int, rec func(id int) *kgo.Record) {
				if b >= 0 && b < blocks {
					for id := b * perBlock; id < (b+1)*perBlock; id++ {
						recs = append(recs, rec(id))
					}
				}
			}
			block(s, func(id int) *kgo.Record {
				return &kgo.Record{Topic: "payments", Value: fmt.Appendf(nil, "%d,%d", id, 10*id+1)}
			})
			block(s-lag, func(id int) *kgo.Record {
				return &kgo.Record{Topic: "orders", Value: fmt.Appendf(nil, "%d,item%d", id, id)}
			})
			block(s-2*lag, func(id int) *kgo.Record {
				return &kgo.Record{Topic: "payments", Value: fmt.Appendf(nil, "%d,%d", id, 10*id+2)}
			})
			if err := producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				produced <- err
				return
			}
			select {
			case <-time.After(200 * time.Millisecond):
			case <-ctx.Done():
				produced <- ctx.Err()
				return
			}
		}
		produced <- nil
	}()
	for i := range 4 {
		select {
		case <-time.After(3 * time.Second):
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
		tm := tms[i%2]
		tm.kill(t)
		t.Logf("killed TaskManager %d", i%2)
		tm.start(t)
	}
	if err := <-produced; err != nil {
		t.Fatal(err)
	}

	// checkpoint returns the job's last completed checkpoint, and whether it
	// runs restored from one (restarts and restored_from not 0).
	checkpoint := func() (int64, bool) {
		for _, r := range strings.Split(strings.TrimSpace(psql(t, pgAddr, "SHOW PROCESSLIST")), "\n") {
			if f := strings.Split(r, "|"); len(f) == 21 && f[2] == "running" {
				c, _ := strconv.ParseInt(f[11], 10, 64)
				return c, f[10] != "0" && f[12] != "0"
			}
		}
		return 0, false
	}
	out := newCommittedReader(t, addr, "paid")
	defer out.close()
	seen := map[string]int{}
	read := func() {
		for _, r := range out.poll(t, ctx) {
			seen[string(r.Value)]++
		}
	}
	waitUntilLong(t, "every pair committed", 2*time.Minute, jm.exited, func() bool {
		read()
		return len(seen) >= len(want)
	})
	last, restored := checkpoint()
	if !restored {
		t.Errorf("the job did not restart from a checkpoint: the kills missed it\n%s", psql(t, pgAddr, "SHOW PROCESSLIST"))
	}
	// A duplicate would come with a later commit: give the job two more
	// checkpoints to show one.
	waitUntilLong(t, "two more checkpoints", time.Minute, jm.exited, func() bool {
		read()
		c, _ := checkpoint()
		return c >= last+2
	})
	read()
	for row, n := range seen {
		if !want[row] {
			t.Errorf("row %q is no pair of an order and its payment", row)
		} else if n != 1 {
			t.Errorf("row %q committed %d times", row, n)
		}
	}
	missing := 0
	for row := range want {
		if seen[row] == 0 {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d pairs missing", missing, len(want))
	}
	t.Logf("jobs after the chaos:\n%s", psql(t, pgAddr, "SHOW PROCESSLIST"))
}
