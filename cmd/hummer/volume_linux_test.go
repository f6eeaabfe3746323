package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/jackc/pgx/v5"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/hummer-db/hummer/connectors"
	"github.com/hummer-db/hummer/exec/vector"
	"github.com/hummer-db/hummer/session"
	"github.com/hummer-db/hummer/wire"
)

// mountVolume mounts a tmpfs of size bytes at a new directory, unmounted
// when the test ends: a filesystem other than the temporary directory's, as a
// container's volume is. It needs root, which CI runs as.
func mountVolume(t *testing.T, size int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "volume")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.Itoa(size)); err != nil {
		t.Skipf("mounting a tmpfs (needs root, which CI runs as): %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// startServerIn is startTestServer with its data directory (catalog and
// checkpoints) at dataDir, taking checkpoints every 50ms; stop stops it (and
// is safe to call again).
func startServerIn(t *testing.T, dataDir string) (addr string, stop func()) {
	t.Helper()
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	reg, tables := newRegistry()
	eng, err := session.Open(session.Config{DataDir: dataDir, Registry: reg, Validate: connectors.Validate,
		Unbounded: connectors.Unbounded, Upsert: connectors.Upsert, Slots: 2, Alloc: mem, OnClose: tables.Close,
		CheckpointInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := wire.NewServer(backend{eng}, wire.Options{Users: backend{eng}})
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(ln)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			srv.Close()
			<-done
			eng.Close()
			mem.AssertSize(t, 0)
		})
	}
	t.Cleanup(stop)
	return ln.Addr().String(), stop
}

// jobHealth is what SHOW PROCESSLIST says of a job's checkpoints.
type jobHealth struct {
	state, err, ckFailure string
	restarts, checkpoint  int64
	failed                int64
}

func (h jobHealth) String() string {
	return fmt.Sprintf("state %q, checkpoint %d, failed checkpoints %d (%q), restarts %d, error %q",
		h.state, h.checkpoint, h.failed, h.ckFailure, h.restarts, h.err)
}

// health reads SHOW PROCESSLIST's row of the one job.
func health(t *testing.T, ctx context.Context, conn *pgx.Conn) jobHealth {
	t.Helper()
	rows, err := conn.Query(ctx, "SHOW PROCESSLIST")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var h jobHealth
	n := 0
	for rows.Next() {
		n++
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		by := map[string]any{}
		for i, f := range rows.FieldDescriptions() {
			by[f.Name] = vals[i]
		}
		text := func(k string) string { s, _ := by[k].(string); return s }
		num := func(k string) int64 { v, _ := by[k].(int64); return v }
		h = jobHealth{state: text("state"), err: text("error"), ckFailure: text("checkpoint_failure"),
			restarts: num("restarts"), checkpoint: num("checkpoint"), failed: num("failed_checkpoints")}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("SHOW PROCESSLIST lists %d jobs, want 1", n)
	}
	return h
}

// TestCheckpointsOnAVolume: with the data directory on a filesystem of its
// own (a tmpfs, as a container's volume), a continuous job's checkpoints
// complete. When the volume fills, the failed checkpoints are counted and
// say why, and the job fails over (restarts); once space returns,
// checkpoints complete again. Checkpoints of the past leave no directories
// behind.
func TestCheckpointsOnAVolume(t *testing.T) {
	vol := mountVolume(t, 8<<20)
	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "lines"))
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	kaddr := broker.ListenAddrs()[0]
	srv, stop := startServerIn(t, filepath.Join(vol, "data"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn := connectPgx(t, ctx, srv)
	defer conn.Close(context.Background())
	for _, q := range []string{
		fmt.Sprintf("CREATE TABLE feed (line TEXT) ENGINE=kafka CONNECTION='kafka://%s/lines'", kaddr),
		"CREATE VIEW counts AS SELECT line, COUNT(*) AS n FROM feed GROUP BY line",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	w := &kafka.Writer{Addr: kafka.TCP(kaddr), Topic: "lines", BatchTimeout: time.Millisecond}
	defer w.Close()
	if err := w.WriteMessages(ctx, kafka.Message{Value: []byte("a")}, kafka.Message{Value: []byte("b")}); err != nil {
		t.Fatal(err)
	}
	waitHealth := func(what string, cond func(jobHealth) bool) jobHealth {
		t.Helper()
		deadline := time.Now().Add(45 * time.Second)
		for {
			h := health(t, ctx, conn)
			if cond(h) {
				return h
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %s", what, h)
			}
			time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
		}
	}
	first := waitHealth("checkpoints on the volume", func(h jobHealth) bool { return h.checkpoint >= 3 })
	if first.failed != 0 || first.restarts != 0 {
		t.Errorf("before the volume filled: %s", first)
	}

	// Fill the volume.
	filler := filepath.Join(vol, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	f.Close()
	full := waitHealth("failed checkpoints, and a failover, on a full volume", func(h jobHealth) bool {
		return h.failed >= 3 && h.restarts >= 1 && strings.Contains(h.ckFailure, "no space left on device")
	})
	t.Logf("full: %s", full)

	// Space returns: checkpoints complete again.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	mark := health(t, ctx, conn).checkpoint
	again := waitHealth("checkpoints after space returned", func(h jobHealth) bool {
		return h.checkpoint >= mark+3 && h.state == "running"
	})
	t.Logf("recovered: %s", again)
	var n int64
	if err := conn.QueryRow(ctx, "SELECT n FROM counts WHERE line = 'a'").Scan(&n); err != nil || n != 1 {
		t.Errorf("the view counts 'a' %d times (%v), want 1", n, err)
	}

	// The store keeps the newest few checkpoints and their directories only.
	jobs, err := os.ReadDir(filepath.Join(vol, "data", "checkpoints"))
	if err != nil || len(jobs) != 1 {
		t.Fatalf("checkpoint store: %v, %v", jobs, err)
	}
	// complete/, final/ maybe, the 3 kept and one or two under way, once
	// the checkpoint after the last completed one has pruned the older ones
	// (pruning follows a completion, so it may lag the health the test saw).
	var names []string
	listed := func() bool {
		dirs, err := os.ReadDir(filepath.Join(vol, "data", "checkpoints", jobs[0].Name()))
		if err != nil {
			t.Fatal(err)
		}
		names = names[:0]
		for _, d := range dirs {
			names = append(names, d.Name())
		}
		return len(dirs) <= 7
	}
	pruneCtx, cancelPrune := context.WithTimeout(ctx, 30*time.Second)
	defer cancelPrune()
	for !listed() {
		select {
		case <-pruneCtx.Done():
			t.Fatalf("the job's checkpoint directory holds %d entries: %v", len(names), names)
		case <-time.After(50 * time.Millisecond):
		}
	}

	// The restart under the full disk could not be recorded then; it is
	// once space returns.
	catalogFile := filepath.Join(vol, "data", "catalog.json")
	for deadline := time.Now().Add(30 * time.Second); ; {
		data, err := os.ReadFile(catalogFile)
		if err == nil && strings.Contains(string(data), fmt.Sprintf(`"restarts": %d`, again.restarts)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the catalog never recorded the restart: %s (%v)", data, err)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
	}
	conn.Close(context.Background())
	stop()
	srv, _ = startServerIn(t, filepath.Join(vol, "data"))
	conn = connectPgx(t, ctx, srv)
	resumed := waitHealth("the job resumed after the server restarted", func(h jobHealth) bool {
		return h.state == "running" && h.checkpoint > again.checkpoint
	})
	if resumed.restarts != again.restarts+1 {
		t.Errorf("resumed by a server restart, the job counts %d restarts, want %d", resumed.restarts, again.restarts+1)
	}
}
