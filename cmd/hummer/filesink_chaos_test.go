package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestFileSinkChaos is the file sink's exactly once under failures, across
// processes: a JobManager and two TaskManagers run a continuous job with
// checkpoints every second, numbers from a Kafka topic into a directory
// table partitioned by the number mod 4, while a TaskManager is killed
// (SIGKILL) and started again, three times. In the end the committed files,
// read with encoding/csv, hold every number exactly once, each in its
// partition's directory.
func TestFileSinkChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos test: seconds of killing processes")
	}
	const numbers = 6000
	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "nums"))
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	addr := broker.ListenAddrs()[0]
	out := filepath.Join(t.TempDir(), "nums")

	bin := buildHummer(t)
	pgAddr, rpcAddr := freeAddr(t), freeAddr(t)
	jm := startKillable(t, bin, "jobmanager", "--pg-addr", pgAddr, "--rpc-addr", rpcAddr,
		"--data-dir", filepath.Join(t.TempDir(), "jm"), "--checkpoint-interval", "1s")
	var tms []*killable
	for i := range 2 {
		tms = append(tms, startKillable(t, bin, "taskmanager", "--jobmanager", rpcAddr, "--slots", "2",
			"--data-dir", filepath.Join(t.TempDir(), fmt.Sprint("tm", i))))
	}
	waitUntil(t, "two registered TaskManagers", jm.exited, func() bool {
		out, err := psqlErr(pgAddr, "SET parallelism = 4;")
		return err == nil && !strings.Contains(out, "ERROR")
	})
	psql(t, pgAddr, fmt.Sprintf(`
		CREATE TABLE nums (n BIGINT) ENGINE=kafka CONNECTION='kafka://%s/nums?format=csv';
		CREATE TABLE nums_files (n BIGINT, p BIGINT) ENGINE=file CONNECTION='file://%s/?format=csv&partition_by=p';
		SET parallelism = 2;
		INSERT INTO nums_files SELECT n, mod(n, 4) FROM nums;`, addr, out))

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	producer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	// The numbers arrive over ~12s while TaskManagers are killed.
	produced := make(chan error, 1)
	go func() {
		const steps = 60
		for i := range steps {
			var recs []*kgo.Record
			for n := i * numbers / steps; n < (i+1)*numbers/steps; n++ {
				recs = append(recs, &kgo.Record{Topic: "nums", Value: []byte(strconv.Itoa(n))})
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
	for i := range 3 {
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

	// count reads the committed files: how often each number is there; a
	// number in the wrong partition fails the test.
	count := func() map[int]int {
		seen := map[int]int{}
		err := filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".") {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			recs, err := csv.NewReader(strings.NewReader(string(data))).ReadAll()
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			for _, r := range recs {
				n, err := strconv.Atoi(r[0])
				if err != nil || len(r) != 2 || r[1] != strconv.Itoa(n%4) || filepath.Base(filepath.Dir(p)) != "p="+r[1] {
					t.Fatalf("%s: record %q", p, r)
				}
				seen[n]++
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return seen
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
	var seen map[int]int
	waitUntilLong(t, "every number committed", 2*time.Minute, jm.exited, func() bool {
		seen = count()
		return len(seen) >= numbers
	})
	// A duplicate would come with a later commit: give the job two more
	// checkpoints to show one.
	last, restored := checkpoint()
	if !restored {
		t.Errorf("the job did not restart from a checkpoint: the kills missed it\n%s", psql(t, pgAddr, "SHOW PROCESSLIST"))
	}
	waitUntilLong(t, "two more checkpoints", time.Minute, jm.exited, func() bool {
		c, _ := checkpoint()
		return c >= last+2
	})
	seen = count()
	for n := range numbers {
		if seen[n] != 1 {
			t.Errorf("number %d committed %d times", n, seen[n])
		}
	}
	if len(seen) != numbers {
		t.Errorf("%d distinct numbers committed, want %d", len(seen), numbers)
	}
	t.Logf("jobs after the chaos:\n%s", psql(t, pgAddr, "SHOW PROCESSLIST"))
}

// waitUntilLong is waitUntil with its own deadline.
func waitUntilLong(t *testing.T, what string, limit time.Duration, exited <-chan struct{}, ready func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !ready() {
		select {
		case <-exited:
			t.Fatalf("the process exited before %s", what)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %s", what, limit)
		}
	}
}
