package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestDistributedWordCount starts one `hummer jobmanager` and three `hummer
// taskmanager` processes, then drives WordCount over the King James Bible with
// parallelism 3 through psql: the counts must equal a plain Go word count, and
// the plan must place the tasks on all three TaskManagers. Each has two slots,
// so the hash exchange's network tasks take the slots the job leaves spare
// (SET network_task = 'auto', the default).
func TestDistributedWordCount(t *testing.T) {
	bin := buildHummer(t)
	pgAddr, rpcAddr := freeAddr(t), freeAddr(t)
	jm := startProcess(t, bin, "jobmanager", "--pg-addr", pgAddr, "--rpc-addr", rpcAddr,
		"--data-dir", filepath.Join(t.TempDir(), "jm"))
	for i := 0; i < 3; i++ {
		startProcess(t, bin, "taskmanager", "--jobmanager", rpcAddr, "--slots", "2",
			"--data-dir", filepath.Join(t.TempDir(), fmt.Sprintf("tm%d", i)))
	}
	// Six slots exist once all three TaskManagers have registered.
	waitUntil(t, "three registered TaskManagers", jm, func() bool {
		out, err := psqlErr(pgAddr, "SET parallelism = 6;")
		return err == nil && !strings.Contains(out, "ERROR")
	})

	kjv, _ := filepath.Abs("../../data/kjv.txt")
	text, err := os.ReadFile(kjv)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{}
	for _, line := range strings.Split(strings.TrimSuffix(string(text), "\n"), "\n") {
		for _, w := range strings.Split(strings.ToLower(line), " ") {
			if w != "" {
				want[w]++
			}
		}
	}
	psql(t, pgAddr, fmt.Sprintf("CREATE TABLE docs (line TEXT) ENGINE=file CONNECTION='file://%s'", kjv))
	query := `SELECT word, COUNT(*) AS n
		FROM (SELECT unnest(string_split(lower(line), ' ')) AS word FROM docs) AS t
		WHERE word <> '' GROUP BY word`
	checkCounts(t, psql(t, pgAddr, "SET parallelism = 3;\n"+query+";"), want)

	// The query's job frees its slots just after its client has the result:
	// plan once all six are free again, so that three are spare.
	var plan string
	waitUntil(t, "a plan with the three network tasks in spare slots", jm, func() bool {
		plan = psql(t, pgAddr, "SET parallelism = 3;\nEXPLAIN "+query+";")
		return strings.Contains(plan, "network tasks: own, 3 of 3 in a slot of their own")
	})
	tms := map[string]bool{}
	for _, line := range strings.Split(plan, "\n") {
		if _, after, ok := strings.Cut(line, " on "); ok && strings.Contains(line, "task ") {
			tm, _, _ := strings.Cut(after, "/slot")
			tms[tm] = true
		}
	}
	if len(tms) != 3 {
		t.Errorf("EXPLAIN places tasks on %d TaskManagers, want 3:\n%s", len(tms), plan)
	}
	// The scans' partial counts go to the final counts by hash: three
	// producers, one per TaskManager, each with a spare slot beside it.
	if strings.Count(plan, "network task of ") != 3 || !strings.Contains(plan, "/slot1") {
		t.Errorf("EXPLAIN does not show the hash exchange's three network tasks in slots of their own:\n%s", plan)
	}
	if out := psql(t, pgAddr, "SET parallelism = 3;\nSET network_task = 'fused';\nEXPLAIN "+query+";"); strings.Contains(out, "network task of ") ||
		!strings.Contains(out, "network tasks: fused") {
		t.Errorf("with network_task = 'fused' EXPLAIN still shows network tasks:\n%s", out)
	}

	// EXPLAIN ANALYZE runs the query: every task reports where it ran and what it
	// did, and the hash exchange between TaskManagers sent bytes over the network.
	analyzed := psql(t, pgAddr, "SET parallelism = 3;\nEXPLAIN ANALYZE "+query+";")
	ran := map[string]bool{}
	var rowsIn, netBytes int64
	var busy float64
	for _, line := range strings.Split(analyzed, "\n") {
		if !strings.Contains(line, "tm=") {
			continue
		}
		for _, f := range strings.Fields(line) {
			k, v, _ := strings.Cut(f, "=")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "tm":
				ran[v] = true
			case "rows_in":
				rowsIn += n
			case "net_bytes_out":
				netBytes += n
			case "busy_ms":
				f, _ := strconv.ParseFloat(v, 64)
				busy += f
			}
		}
	}
	if len(ran) != 3 || rowsIn == 0 || netBytes == 0 || busy <= 0 {
		t.Errorf("EXPLAIN ANALYZE: tasks on %d TaskManagers, %d rows in, %d network bytes, %.1f ms busy; want 3 and the rest > 0:\n%s",
			len(ran), rowsIn, netBytes, busy, analyzed)
	}
}
