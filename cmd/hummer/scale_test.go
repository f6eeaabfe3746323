package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTaskManagersComeAndGo is what scaling a TaskManager Deployment does to
// a cluster. TaskManagers start as pods do: listening on every interface and
// advertising their (pod) IP. A continuous job runs on the first; a second
// joins and takes part in the next query, whose hash exchange crosses the
// two through the advertised addresses; then the first is stopped as a pod
// is (SIGTERM), and the job fails over to the one that joined after it
// started, from its last checkpoint: every number arrives exactly once.
func TestTaskManagersComeAndGo(t *testing.T) {
	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "nums_in", "nums_out"))
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	addr := broker.ListenAddrs()[0]
	bin := buildHummer(t)
	pgAddr, rpcAddr := freeAddr(t), freeAddr(t)
	jm := startKillable(t, bin, "jobmanager", "--pg-addr", pgAddr, "--rpc-addr", rpcAddr,
		"--data-addr", "127.0.0.1:0", "--data-dir", filepath.Join(t.TempDir(), "jm"))
	pod := func(name string) *killable {
		return startKillable(t, bin, "taskmanager", "--jobmanager", rpcAddr, "--slots", "3",
			"--data-addr", "0.0.0.0:0", "--advertise-addr", "127.0.0.1", "--data-dir", filepath.Join(t.TempDir(), name))
	}
	slots := func(n int) func() bool {
		return func() bool {
			out, err := psqlErr(pgAddr, fmt.Sprintf("SET parallelism = %d;", n))
			return err == nil && !strings.Contains(out, "ERROR")
		}
	}
	first := pod("tm1")
	waitUntil(t, "the first TaskManager", jm.exited, slots(3))

	words := filepath.Join(t.TempDir(), "words.txt")
	var text strings.Builder
	want := map[string]int{}
	for i := range 3000 {
		w := fmt.Sprintf("w%d", i%37)
		want[w]++
		fmt.Fprintln(&text, w)
	}
	if err := os.WriteFile(words, []byte(text.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	psql(t, pgAddr, fmt.Sprintf(`
		CREATE TABLE nums_in (line TEXT) ENGINE=kafka CONNECTION='kafka://%[1]s/nums_in';
		CREATE TABLE nums_out (line TEXT) ENGINE=kafka CONNECTION='kafka://%[1]s/nums_out';
		CREATE TABLE words (w TEXT) ENGINE=file CONNECTION='file://%[2]s';
		SET parallelism = 2;
		INSERT INTO nums_out SELECT line FROM nums_in;`, addr, words))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	producer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	produce := func(from, to int) {
		var recs []*kgo.Record
		for n := from; n < to; n++ {
			recs = append(recs, &kgo.Record{Topic: "nums_in", Value: []byte(strconv.Itoa(n))})
		}
		if err := producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce(0, 1000)
	out := newCommittedReader(t, addr, "nums_out")
	defer out.close()
	nums := map[int]int{}
	read := func(n int) func() bool {
		return func() bool {
			for _, r := range out.poll(t, ctx) {
				v, err := strconv.Atoi(string(r.Value))
				if err != nil {
					t.Fatalf("nums_out value %q", r.Value)
				}
				nums[v]++
			}
			return len(nums) == n
		}
	}
	waitUntil(t, "the first 1000 numbers through the job", jm.exited, read(1000))

	second := pod("tm2")
	waitUntil(t, "the second TaskManager", jm.exited, slots(6))
	// The job holds two of the first's three slots: a query of parallelism 2
	// takes the third and one of the second's, and its exchange crosses them.
	query := "SET parallelism = 2;\nSELECT w, COUNT(*) FROM words GROUP BY w;"
	plan := psql(t, pgAddr, "SET parallelism = 2;\nEXPLAIN ANALYZE SELECT w, COUNT(*) FROM words GROUP BY w;")
	ran := map[string]bool{}
	for _, f := range strings.Fields(plan) {
		if tm, ok := strings.CutPrefix(f, "tm="); ok {
			ran[tm] = true
		}
	}
	for tm := range ran {
		if !strings.HasPrefix(tm, "127.0.0.1:") {
			t.Errorf("TaskManager %s: want its advertised address 127.0.0.1:PORT", tm)
		}
	}
	if len(ran) != 2 {
		t.Errorf("the query after the second TaskManager joined ran on %d TaskManagers, want 2:\n%s", len(ran), plan)
	}
	got := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(psql(t, pgAddr, query)), "\n") {
		w, n, _ := strings.Cut(line, "|")
		got[w], _ = strconv.Atoi(n)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("counts across the two TaskManagers:\n%v\nwant\n%v", got, want)
	}

	// Scaling down deletes a pod: SIGTERM.
	first.cmd.Process.Signal(syscall.SIGTERM)
	<-first.exited
	waitUntil(t, "the job restarted on the second TaskManager", jm.exited, func() bool {
		for _, r := range strings.Split(strings.TrimSpace(psql(t, pgAddr, "SHOW PROCESSLIST")), "\n") {
			if f := strings.Split(r, "|"); len(f) == 21 && f[2] == "running" && f[10] == "1" {
				return true
			}
		}
		return false
	})
	produce(1000, 2000)
	waitUntil(t, "all 2000 numbers through the job", second.exited, read(2000))
	// A duplicate would come in a later committed transaction: give the job
	// two more checkpoints to show one.
	for end := time.Now().Add(2500 * time.Millisecond); time.Now().Before(end); {
		read(2000)()
	}
	for n, c := range nums {
		if c != 1 || n < 0 || n >= 2000 {
			t.Errorf("number %d delivered %d times", n, c)
		}
	}
}

// TestTaskManagerNeedsAdvertisedAddr: a TaskManager listening on every
// interface with no --advertise-addr refuses to start: the others would dial
// 0.0.0.0, which is themselves.
func TestTaskManagerNeedsAdvertisedAddr(t *testing.T) {
	bin := buildHummer(t)
	for _, dataAddr := range []string{"0.0.0.0:0", "[::]:6124", ":6124"} {
		out, err := exec.Command(bin, "taskmanager", "--jobmanager", "127.0.0.1:1", "--data-addr", dataAddr).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "give --advertise-addr") {
			t.Errorf("taskmanager --data-addr %s without --advertise-addr: %v\n%s", dataAddr, err, out)
		}
	}
}
