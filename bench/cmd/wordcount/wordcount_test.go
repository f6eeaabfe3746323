package main

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hummer-db/hummer/bench/counts"
	"github.com/hummer-db/hummer/bench/latency"
)

func TestProcReadsOwnProcess(t *testing.T) {
	pid := os.Getpid()
	if _, err := procCPU(pid); err != nil {
		t.Fatal(err)
	}
	rss, peak, err := procMem(pid)
	if err != nil {
		t.Fatal(err)
	}
	if rss <= 0 || peak < rss {
		t.Errorf("rss %d, peak %d", rss, peak)
	}
	if _, err := readCPUTimes(); err != nil {
		t.Fatal(err)
	}
}

func TestSummariseAndGoals(t *testing.T) {
	r := &report{Reps: 3, Inputs: []inputReport{{Copies: 10, Bytes: 100e6}}}
	for _, n := range []string{nameHummer2, nameHummer1, nameUpper, nameLonger, nameDuckDB, nameMawk, nameGo} {
		r.Contenders = append(r.Contenders, contenderReport{Name: n})
	}
	add := func(name string, walls ...float64) {
		for i, w := range walls {
			r.Runs = append(r.Runs, runReport{Contender: name, Copies: 10, Rep: i + 1, WallS: w, CPUS: 2 * w, PeakRSSMiB: 100})
		}
	}
	add(nameHummer2, 0.5, 0.4, 9) // median 0.5: an outlier does not count
	add(nameHummer1, 1, 1, 1)
	add(nameUpper, 0.55, 0.55, 0.55)
	add(nameLonger, 0.7, 0.7, 0.7)
	add(nameDuckDB, 1, 1, 1)
	add(nameGo, 0.25, 0.25, 0.25)
	r.Runs = append(r.Runs, runReport{Contender: nameMawk, Copies: 10, Error: "boom"})
	r.summarise()

	if h := r.row(nameHummer2, 10); h.MBPerS != 200 || h.VsDuckDB != 2 || h.VsGo != 0.5 {
		t.Errorf("hummer row %+v", h)
	}
	if m := r.row(nameMawk, 10); m.Runs != 0 || m.MBPerS != 0 {
		t.Errorf("a failed run was summarised: %+v", m)
	}
	want := map[string]bool{
		"Hummer p=2 throughput / DuckDB's":           true,  // 2 >= 1.5
		"Hummer p=2 throughput / the Go counter's":   false, // 0.5 < 0.8
		"Hummer p=2 peak RSS / DuckDB's":             true,  // equal
		"Hummer throughput, parallelism 2 / 1":       true,  // 2 >= 1.8
		"hummer upper(word) time / plain query's":    true,  // 1.1
		"hummer length(word)>3 time / plain query's": false, // 1.4
	}
	for _, g := range r.Goals {
		if w, ok := want[g.Name]; !ok || w != g.Pass {
			t.Errorf("goal %q: pass %v (value %.2f)", g.Name, g.Pass, g.Value)
		}
	}
	r.Machine.Scaling = &scaling{Memory: [2]float64{1.18, 1.5}, Cache: [2]float64{1.96, 1.99}, Arithmetic: [2]float64{1.97, 1.98}}
	md := r.readme("results", nil)
	for _, s := range []string{"![", "| hummer p=2 | 10 x kjv (100 MB) | 200.0 |", "| mawk | 10 x kjv (100 MB) | failed |", "0.500 ❌",
		"out of every cache 1.18 and 1.50, copying within a core's caches 1.96 and 1.99, multiplying in registers 1.97 and 1.98."} {
		if !strings.Contains(md, s) {
			t.Errorf("README lacks %q", s)
		}
	}
	if strings.Index(md, "![") > strings.Index(md, "| contender |") {
		t.Error("the plot must come before the table")
	}
}

func TestParseAnalysis(t *testing.T) {
	out := `StreamGraph
   #0 Source: source docs [file] (line) (parallelism=3)
 ExecutionGraph
   task 0.0 source -> project -> unnest -> filter -> hash_agg[1/3] on 127.0.0.1:42087/slot0 tm=127.0.0.1:42087 rows_in=9524 rows_out=22502 net_bytes_out=286206
   task 0.1 source -> project -> unnest -> filter -> hash_agg[2/3] on 127.0.0.1:41179/slot0 tm=127.0.0.1:41179 rows_in=10918 rows_out=26693 net_bytes_out=344062
   task 1.0 hash_agg -> result[1/3] on 127.0.0.1:42087/slot0 tm=127.0.0.1:42087 rows_in=25201 rows_out=0 net_bytes_out=0
   V0 -> V1 input=0 hash[0]: 9 channel(s), 6 over the network`
	a, err := parseAnalysis(strings.Split(out, "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if a.Tasks != 3 || len(a.TaskManagers) != 2 || a.RowsIn != 9524+10918+25201 || a.NetBytesOut != 286206+344062 ||
		a.Channels != "V0 -> V1 input=0 hash[0]: 9 channel(s), 6 over the network" {
		t.Errorf("%+v", a)
	}
	if _, err := parseAnalysis([]string{"StreamGraph"}); err == nil {
		t.Error("no tasks: want an error")
	}
}

func TestDistributedSummary(t *testing.T) {
	r := &report{Reps: 3, Inputs: []inputReport{{Copies: 10, Bytes: 100e6}, {Copies: 50, Bytes: 500e6}}}
	d := &distributedReport{Parallelism: 3, TaskManagers: 3, Modes: distModes()}
	r.Distributed = d
	add := func(mode string, copies int, walls ...float64) {
		for i, w := range walls {
			d.Runs = append(d.Runs, runReport{Contender: mode, Copies: copies, Rep: i + 1, WallS: w, CPUS: w, PeakRSSMiB: 50, RSSBeforeMiB: 40})
		}
	}
	add(modeLocal, 10, 1, 1, 5)
	add(modeCluster, 10, 1.25, 1.25, 0.1) // 0.8 of local's throughput
	add(modeLocal, 50, 5, 5, 5)
	add(modeCluster, 50, 5.5, 5, 5) // equal medians
	d.Analyses = []analysisReport{{Mode: modeCluster, Copies: 10, analysis: analysis{Tasks: 6, NetBytesOut: 2e6, TaskManagers: []string{"a", "b", "c"}}}}
	r.summarise()
	if len(r.Goals) != 0 {
		t.Errorf("goals of a suite that did not run: %+v", r.Goals)
	}
	if c := d.row(modeCluster, 10); c.MBPerS != 80 || c.VsLocal != 0.8 || c.NetBytes != 2e6 {
		t.Errorf("cluster row %+v", c)
	}
	want := map[int]bool{10: false, 50: true}
	if len(d.Goals) != 2 {
		t.Fatalf("goals %+v", d.Goals)
	}
	for _, g := range d.Goals {
		if g.Pass != want[g.Copies] {
			t.Errorf("goal %+v", g)
		}
	}
	md := r.readme("results", nil)
	for _, s := range []string{"| 3 TaskManagers | 10 x kjv (100 MB) | 80.0 | 1.250 | 1.25 | 50.0 | 2.0 | 0.80 |", "0.800 ❌ | 1.000 ✅ |", "has 0 cores"} {
		if !strings.Contains(md, s) {
			t.Errorf("README lacks %q:\n%s", s, md)
		}
	}
}

func TestReadmeTakesLatencySection(t *testing.T) {
	r := &report{Reps: 1}
	lat := &latency.Report{Setup: latency.Setup{Rates: []int{1000}, Rounds: 1, Query: latency.Query}}
	md := r.readme("results", lat)
	if !strings.Contains(md, "## Latency") || strings.Index(md, "## Latency") > strings.Index(md, "## What runs") {
		t.Errorf("the latency section is missing or after the WordCount details:\n%s", md)
	}
	if md := r.readme("results", nil); strings.Contains(md, "## Latency") {
		t.Error("a latency section without latency results")
	}
}

func TestDigestRows(t *testing.T) {
	want := map[string]int64{"the": 64203, "lord": 7964, "": 1, "in the beginning": 3}
	var raw []byte
	var ends []int
	for w, n := range want {
		raw = append(raw, w...)
		ends = append(ends, len(raw))
		raw = strconv.AppendInt(raw, n, 10)
		ends = append(ends, len(raw))
	}
	var d counts.Digest
	if err := digestRows(raw, ends, &d); err != nil {
		t.Fatal(err)
	}
	if d != counts.Of(want) {
		t.Errorf("digest %v, want %v", d, counts.Of(want))
	}
	for _, bad := range []struct {
		raw  string
		ends []int
	}{
		{"the", []int{3}},       // half a row
		{"the", []int{3, -1}},   // a NULL count
		{"the12x", []int{3, 6}}, // not a number
		{"12", []int{-1, 2}},    // a NULL word
	} {
		if err := digestRows([]byte(bad.raw), bad.ends, &counts.Digest{}); err == nil {
			t.Errorf("%q %v: no error", bad.raw, bad.ends)
		}
	}
}

// TestRunOrderBalanced checks the Williams design: over a full cycle of
// repetitions each repetition runs every contender once, each contender runs
// first equally often, and each runs right after every other one equally often.
func TestRunOrderBalanced(t *testing.T) {
	for n := 1; n <= 9; n++ {
		cycle := orderCycle(n)
		times := cycle / n
		first := make([]int, n)
		after := make([][]int, n) // after[a][b]: runs of b right after a
		for a := range after {
			after[a] = make([]int, n)
		}
		for r := range cycle {
			order := runOrder(n, r)
			seen := make([]bool, n)
			for _, c := range order {
				if seen[c] {
					t.Fatalf("n=%d rep %d: %v runs contender %d twice", n, r, order, c)
				}
				seen[c] = true
			}
			first[order[0]]++
			for j := 1; j < n; j++ {
				after[order[j-1]][order[j]]++
			}
		}
		for c := range n {
			if first[c] != times {
				t.Errorf("n=%d: contender %d first in %d repetitions of %d, want %d", n, c, first[c], cycle, times)
			}
			for b := range n {
				if b != c && after[c][b] != times {
					t.Errorf("n=%d: contender %d right after %d %d times, want %d", n, b, c, after[c][b], times)
				}
			}
		}
	}
}

// TestPerRepRatios checks that the ratios pair the runs of one repetition and
// input, and skip a repetition where either run failed.
func TestPerRepRatios(t *testing.T) {
	runs := []runReport{
		{Contender: "slow", Copies: 10, Rep: 1, WallS: 2},
		{Contender: "fast", Copies: 10, Rep: 1, WallS: 1},
		{Contender: "slow", Copies: 10, Rep: 2, WallS: 3},
		{Contender: "fast", Copies: 10, Rep: 2, WallS: 2},
		{Contender: "slow", Copies: 10, Rep: 3, WallS: 9},
		{Contender: "fast", Copies: 10, Rep: 3, WallS: 1, Error: "boom"},
		{Contender: "slow", Copies: 50, Rep: 1, WallS: 7},
		{Contender: "fast", Copies: 50, Rep: 1, WallS: 1},
		{Contender: "other", Copies: 10, Rep: 1, WallS: 5},
	}
	got := perRepRatios(runs, "slow", "fast", 10)
	if want := []float64{1.5, 2}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestGroupByInput checks the group-by input against a count of its own:
// every key once, and the sum of the values.
func TestGroupByInput(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.csv")
	const n = 12345
	size, groups, sum, err := writeGroupByInput(path, n)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var total int64
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		k, v, ok := strings.Cut(line, ",")
		x, err := strconv.Atoi(v)
		if !ok || err != nil || seen[k] {
			t.Fatalf("line %q: a duplicate or malformed row", line)
		}
		seen[k] = true
		total += int64(x)
	}
	if len(seen) != n || groups != n || sum != total || size != int64(len(b)) {
		t.Errorf("%d keys, reported %d groups; sum %d, reported %d; size %d, reported %d", len(seen), groups, total, sum, len(b), size)
	}
}

// TestNexmarkEvents: -nexmark-events takes QUERY=N pairs or one N.
func TestNexmarkEvents(t *testing.T) {
	got, err := parseNexmarkEvents("q0=10, q5=3")
	if err != nil || len(got) != 2 || got["q0"] != 10 || got["q5"] != 3 {
		t.Errorf("QUERY=N pairs: got %v, %v", got, err)
	}
	if got, err := parseNexmarkEvents("7"); err != nil || got[""] != 7 {
		t.Errorf("one N: got %v, %v", got, err)
	}
	for _, bad := range []string{"q0=", "q0=-1", "x", "q0=1,,q1=2"} {
		if _, err := parseNexmarkEvents(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestSplitNexmarkQuery: every file of bench/nexmark is a sink's CREATE TABLE
// and an INSERT INTO it.
func TestSplitNexmarkQuery(t *testing.T) {
	for _, q := range append(nexmarkQueries, "q6") {
		text, err := os.ReadFile(filepath.Join("..", "..", "nexmark", q+".sql"))
		if err != nil {
			t.Fatal(err)
		}
		sink, insert, err := splitNexmarkQuery(string(text))
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if !strings.HasPrefix(sink, "CREATE TABLE nexmark_"+q+" ") || !strings.HasPrefix(insert, "INSERT INTO nexmark_"+q+"\n") {
			t.Errorf("%s: got %q and %q", q, sink, insert)
		}
	}
	if _, _, err := splitNexmarkQuery("SELECT 1;"); err == nil {
		t.Error("a file of one SELECT: no error")
	}
}
