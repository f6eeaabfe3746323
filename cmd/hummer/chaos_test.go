package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestChaos is exactly-once under failures, across processes: one JobManager
// and three TaskManagers, Kafka input produced while three continuous jobs run
// with checkpoints every second — a WordCount into an upsert topic, the same
// WordCount as a view, and a pass-through of numbered lines into an append
// topic. A TaskManager is killed
// (SIGKILL) every few seconds and started again, several times; then the
// JobManager is killed and started again. In the end the upsert topic holds
// exactly the reference counts, and so does a view over the same WordCount;
// a read_committed reader of the append topic sees every number exactly once;
// and a tumbling window count over event time into an append topic has every
// closed window's row exactly once, with its full count.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos test: seconds of killing processes")
	}
	chaos(t)
}

// TestChaosS3 is TestChaos with the checkpoints in S3: an in-process S3
// server (gofakes3) that the JobManager and every TaskManager reach with
// credentials from the environment, as pods reach a bucket.
func TestChaosS3(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos test: seconds of killing processes")
	}
	endpoint, backend := fakeS3(t, "hummer-checkpoints")
	jmDir := chaos(t, "--checkpoint-store", "s3://hummer-checkpoints/chaos?region=us-east-1&endpoint="+endpoint)
	complete := 0
	for _, k := range s3Keys(t, backend, "hummer-checkpoints", "chaos/") {
		if strings.Contains(k, "/complete/") {
			complete++
		}
	}
	if complete == 0 {
		t.Error("no complete checkpoint under s3://hummer-checkpoints/chaos/")
	}
	if _, err := os.Stat(filepath.Join(jmDir, "checkpoints")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("checkpoints in the data directory as well: %v", err)
	}
}

// chaos runs the chaos test with more flags for the JobManager, and returns
// the JobManager's data directory.
func chaos(t *testing.T, jmFlags ...string) (jmDir string) {
	text, err := os.ReadFile("../../data/kjv.txt")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(text), "\n"), "\n")[:12000]
	want := map[string]int64{}
	for _, line := range lines {
		for _, w := range strings.Split(strings.ToLower(line), " ") {
			if w != "" {
				want[w]++
			}
		}
	}
	const numbers = 12000

	// A bounded table the numbers are joined with: its file source ends at
	// once, so after a restart the join's build side comes from the join's
	// own checkpointed state, not from the file again.
	labels := filepath.Join(t.TempDir(), "labels.csv")
	var lb strings.Builder
	for n := range numbers {
		fmt.Fprintf(&lb, "%d,L%d\n", n, n)
	}
	if err := os.WriteFile(labels, []byte(lb.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	broker, err := kfake.NewCluster(kfake.NumBrokers(1),
		kfake.SeedTopics(3, "verses", "counts", "nums_in", "nums_out", "labelled", "clicks", "windows"))
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	addr := broker.ListenAddrs()[0]

	bin := buildHummer(t)
	pgAddr, rpcAddr := freeAddr(t), freeAddr(t)
	jmDir = filepath.Join(t.TempDir(), "jm")
	jm := startKillable(t, bin, append([]string{"jobmanager", "--pg-addr", pgAddr, "--rpc-addr", rpcAddr, "--data-dir", jmDir,
		"--checkpoint-interval", "1s"}, jmFlags...)...)
	var tms []*killable
	for i := range 3 {
		tms = append(tms, startKillable(t, bin, "taskmanager", "--jobmanager", rpcAddr, "--slots", "2",
			"--data-dir", filepath.Join(t.TempDir(), fmt.Sprint("tm", i))))
	}
	waitUntil(t, "three registered TaskManagers", jm.exited, func() bool {
		out, err := psqlErr(pgAddr, "SET parallelism = 6;")
		return err == nil && !strings.Contains(out, "ERROR")
	})
	psql(t, pgAddr, fmt.Sprintf(`
		CREATE TABLE verses (line TEXT) ENGINE=kafka CONNECTION='kafka://%[1]s/verses';
		CREATE TABLE counts (word TEXT, n BIGINT, PRIMARY KEY (word)) ENGINE=kafka CONNECTION='kafka://%[1]s/counts?format=json';
		CREATE TABLE nums_in (line TEXT) ENGINE=kafka CONNECTION='kafka://%[1]s/nums_in';
		CREATE TABLE nums_out (line TEXT) ENGINE=kafka CONNECTION='kafka://%[1]s/nums_out';
		CREATE TABLE labels (num TEXT, label TEXT) ENGINE=file CONNECTION='file://%[2]s?format=csv';
		CREATE TABLE labelled (label TEXT) ENGINE=kafka CONNECTION='kafka://%[1]s/labelled';
		CREATE TABLE clicks (n BIGINT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) ENGINE=kafka CONNECTION='kafka://%[1]s/clicks?format=csv';
		CREATE TABLE windows (window_start TIMESTAMP, n BIGINT) ENGINE=kafka CONNECTION='kafka://%[1]s/windows?format=json';
		SET parallelism = 2;
		INSERT INTO counts SELECT word, COUNT(*) FROM (SELECT unnest(string_split(lower(line), ' ')) AS word FROM verses) AS t WHERE word <> '' GROUP BY word;
		INSERT INTO nums_out SELECT line FROM nums_in;
		INSERT INTO labelled SELECT l.label FROM nums_in AS n JOIN labels AS l ON n.line = l.num;
		INSERT INTO windows SELECT window_start, count(*) FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '1' SECOND)) GROUP BY window_start, window_end;
		CREATE VIEW wc AS SELECT word, COUNT(*) AS n FROM (SELECT unnest(string_split(lower(line), ' ')) AS word FROM verses) AS t WHERE word <> '' GROUP BY word;`, addr, labels))

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	producer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	// The clicks go to the partitions in turn, number n to partition n % 3,
	// so that each partition's times run to the end: a partition whose
	// records stopped early would hold the watermark back there.
	clicks, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer clicks.Close()
	// Input arrives over ~20s while processes are killed.
	produced := make(chan error, 1)
	go func() {
		const steps = 100
		for i := range steps {
			var recs []*kgo.Record
			for _, l := range lines[i*len(lines)/steps : (i+1)*len(lines)/steps] {
				recs = append(recs, &kgo.Record{Topic: "verses", Value: []byte(l)})
			}
			var clickRecs []*kgo.Record
			for n := i * numbers / steps; n < (i+1)*numbers/steps; n++ {
				recs = append(recs, &kgo.Record{Topic: "nums_in", Value: []byte(strconv.Itoa(n))})
				// Number n happens at 10 ms times n: 100 in each second.
				at := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(n) * 10 * time.Millisecond)
				clickRecs = append(clickRecs, &kgo.Record{Topic: "clicks", Partition: int32(n % 3), Value: []byte(fmt.Sprintf("%d,%s", n, at.Format("2006-01-02 15:04:05.000")))})
			}
			if err := clicks.ProduceSync(ctx, clickRecs...).FirstErr(); err != nil {
				produced <- err
				return
			}
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

	// Kill a TaskManager every 5s and start it again, four times; then the
	// JobManager.
	for i := range 4 {
		select {
		case <-time.After(5 * time.Second):
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
		tm := tms[i%3]
		tm.kill(t)
		t.Logf("killed TaskManager %d", i%3)
		tm.start(t)
	}
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	// Every job had tasks on killed TaskManagers: each restarted.
	waitUntil(t, "every job restarted from checkpoints", jm.exited, func() bool {
		rows := strings.Split(strings.TrimSpace(psql(t, pgAddr, "SHOW PROCESSLIST")), "\n")
		restarted := 0
		for _, r := range rows {
			f := strings.Split(r, "|")
			if len(f) == 21 && f[2] == "running" && f[10] != "0" {
				restarted++
			}
		}
		return restarted == 5
	})
	t.Logf("jobs before killing the JobManager:\n%s", psql(t, pgAddr, "SHOW PROCESSLIST"))
	jm.kill(t)
	t.Log("killed the JobManager")
	jm.start(t)

	out := newCommittedReader(t, addr, "counts", "nums_out", "labelled", "windows")
	defer out.close()
	counts := map[string]int64{}
	nums := map[int]int{}
	labelled := map[int]int{}
	// The windows closed: those of seconds 0 to 117, each once. The
	// watermark is the least of the partitions', each a second behind its
	// last number's time (119.97 s, .98, .99): 118.97 s leaves [118, 119) open.
	const closedWindows = 118
	windows := map[string]int{}
	windowCounts := map[string]int64{}
	converged := func() bool {
		for _, r := range out.poll(t, ctx) {
			switch r.Topic {
			case "counts":
				var key struct{ Word string }
				if err := json.Unmarshal(r.Key, &key); err != nil {
					t.Fatalf("counts key %q: %v", r.Key, err)
				}
				if r.Value == nil {
					delete(counts, key.Word)
					continue
				}
				var row struct{ N int64 }
				if err := json.Unmarshal(r.Value, &row); err != nil {
					t.Fatalf("counts value %q: %v", r.Value, err)
				}
				counts[key.Word] = row.N
			case "nums_out":
				n, err := strconv.Atoi(string(r.Value))
				if err != nil {
					t.Fatalf("nums_out value %q", r.Value)
				}
				nums[n]++
			case "windows":
				var row struct {
					WindowStart string `json:"window_start"`
					N           int64  `json:"n"`
				}
				if err := json.Unmarshal(r.Value, &row); err != nil {
					t.Fatalf("windows value %q: %v", r.Value, err)
				}
				windows[row.WindowStart]++
				windowCounts[row.WindowStart] = row.N
			case "labelled":
				n, err := strconv.Atoi(strings.TrimPrefix(string(r.Value), "L"))
				if err != nil || !strings.HasPrefix(string(r.Value), "L") {
					t.Fatalf("labelled value %q", r.Value)
				}
				labelled[n]++
			}
		}
		return len(nums) == numbers && len(labelled) == numbers && maps.Equal(counts, want) && len(windows) == closedWindows
	}
	deadline := time.Now().Add(2 * time.Minute)
	for !converged() {
		if time.Now().After(deadline) {
			missing := 0
			for n := range numbers {
				if nums[n] == 0 {
					missing++
				}
			}
			diff := 0
			for w, n := range want {
				if counts[w] != n {
					diff++
				}
			}
			t.Fatalf("after the chaos: %d numbers missing, %d of %d labels missing, %d words with a wrong count (of %d), %d of %d windows\n%s",
				missing, numbers-len(labelled), numbers, diff, len(want), len(windows), closedWindows, psql(t, pgAddr, "SHOW PROCESSLIST"))
		}
	}
	// A duplicate would be a later committed transaction: give the jobs two more
	// checkpoints to show one.
	for end := time.Now().Add(2500 * time.Millisecond); time.Now().Before(end); {
		converged()
	}
	for n, c := range nums {
		if c != 1 {
			t.Errorf("number %d delivered %d times", n, c)
		}
	}
	for n, c := range labelled {
		if c != 1 || n < 0 || n >= numbers {
			t.Errorf("label L%d delivered %d times", n, c)
		}
	}
	if !maps.Equal(counts, want) {
		t.Error("the upsert topic changed away from the reference counts")
	}
	for w, c := range windows {
		if c != 1 || windowCounts[w] != 100 {
			t.Errorf("window %s delivered %d times, its count %d, want once with 100", w, c, windowCounts[w])
		}
	}
	// The view, kept inside its job and checkpointed with it, holds the same.
	view := map[string]int64{}
	waitUntil(t, "the view to hold the reference counts", jm.exited, func() bool {
		clear(view)
		out, err := psqlErr(pgAddr, "SELECT word, n FROM wc;")
		if err != nil {
			return false
		}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			w, n, ok := strings.Cut(line, "|")
			c, err := strconv.ParseInt(n, 10, 64)
			if !ok || err != nil {
				return false
			}
			view[w] = c
		}
		return maps.Equal(view, want)
	})
	jobs := psql(t, pgAddr, "SHOW PROCESSLIST")
	t.Logf("jobs after the chaos:\n%s", jobs)
	return jmDir
}

// killable is a process a test kills with SIGKILL and starts again with the
// same arguments.
type killable struct {
	bin    string
	args   []string
	env    []string // added to the test's environment
	cmd    *exec.Cmd
	exited chan struct{}
	logs   *syncBuffer
}

func startKillable(t *testing.T, bin string, args ...string) *killable {
	t.Helper()
	return startKillableEnv(t, bin, nil, args...)
}

// startKillableEnv is startKillable with env added to the process's
// environment.
func startKillableEnv(t *testing.T, bin string, env []string, args ...string) *killable {
	t.Helper()
	k := &killable{bin: bin, args: args, env: env, logs: &syncBuffer{}}
	k.start(t)
	t.Cleanup(func() {
		k.cmd.Process.Signal(os.Interrupt)
		select {
		case <-k.exited:
		case <-time.After(10 * time.Second):
			k.cmd.Process.Kill()
			<-k.exited
		}
		if t.Failed() {
			t.Logf("%s log:\n%s", strings.Join(args[:1], " "), k.logs.String())
		}
	})
	return k
}

func (k *killable) start(t *testing.T) {
	t.Helper()
	k.cmd = exec.Command(k.bin, k.args...)
	k.cmd.Env = append(os.Environ(), k.env...)
	k.cmd.Stderr = k.logs
	if err := k.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	k.exited = make(chan struct{})
	cmd, exited := k.cmd, k.exited
	go func() {
		cmd.Wait()
		close(exited)
	}()
}

func (k *killable) kill(t *testing.T) {
	t.Helper()
	k.cmd.Process.Kill()
	<-k.exited
	fmt.Fprintf(k.logs, "---- killed ----\n")
}

// committedReader reads topics from their start as a read_committed consumer:
// only records of committed transactions (and non-transactional ones).
type committedReader struct{ c *kgo.Client }

func newCommittedReader(t *testing.T, addr string, topics ...string) *committedReader {
	t.Helper()
	c, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topics...),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	return &committedReader{c: c}
}

// poll returns what arrived since the last poll (waiting at most ~100ms).
func (r *committedReader) poll(t *testing.T, ctx context.Context) []*kgo.Record {
	t.Helper()
	pollCtx, stop := context.WithTimeout(ctx, 200*time.Millisecond)
	defer stop()
	fs := r.c.PollFetches(pollCtx)
	var recs []*kgo.Record
	fs.EachError(func(topic string, p int32, err error) {
		if pollCtx.Err() == nil {
			t.Logf("fetching %s/%d: %v", topic, p, err)
		}
	})
	fs.EachRecord(func(rec *kgo.Record) { recs = append(recs, rec) })
	return recs
}

func (r *committedReader) close() { r.c.Close() }
