package latency

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLineRoundTrip(t *testing.T) {
	b := appendLine(nil, 1764480000123456789, 42)
	if string(b) != "ts=1764480000123456789 seq=42" {
		t.Fatalf("line %q", b)
	}
	ts, seq, err := parseLine(b)
	if err != nil || ts != 1764480000123456789 || seq != 42 {
		t.Errorf("parseLine: %d %d %v", ts, seq, err)
	}
	for _, bad := range []string{"", "seq=1", "ts=1", "ts=x seq=1", "ts=1 seq=y"} {
		if _, _, err := parseLine([]byte(bad)); err == nil {
			t.Errorf("parseLine(%q): no error", bad)
		}
	}
}

func TestStats(t *testing.T) {
	var lat []int64
	for i := 1; i <= 1000; i++ { // 1 µs .. 1000 µs
		lat = append(lat, int64(i)*int64(time.Microsecond))
	}
	s := stats(lat)
	if s.P50Ms != 0.5 || s.P90Ms != 0.9 || s.P99Ms != 0.99 || s.P999Ms != 0.999 || s.MaxMs != 1 || math.Abs(s.MeanMs-0.5005) > 0.001 {
		t.Errorf("%+v", s)
	}
	if (stats(nil) != Stats{}) {
		t.Error("stats of nothing")
	}
}

func TestTracker(t *testing.T) {
	tr := newTracker()
	for range 3 {
		tr.next()
	}
	tr.startSegment(1)
	lo, hi := int64(1), int64(3)
	tr.arrived([][]byte{appendLine(nil, 100, 1), appendLine(nil, 100, 1), appendLine(nil, 1, 9), []byte("junk")}, 150)
	if got := tr.wait(context.Background(), hi, time.Now()); got != 1 {
		t.Errorf("missing %d, want 1", got)
	}
	done := make(chan int64)
	go func() { done <- tr.wait(context.Background(), hi, time.Now().Add(time.Minute)) }()
	tr.arrived([][]byte{appendLine(nil, 100, 2)}, 300)
	if got := <-done; got != 0 {
		t.Errorf("missing %d after the last line came, want 0", got)
	}
	lat, lost := tr.latencies(0, hi)
	if lost != 1 || len(lat) != 2 || lat[0] != 50 || lat[1] != 200 {
		t.Errorf("latencies %v, lost %d", lat, lost)
	}
	if tr.dups != 1 || tr.bad != 2 {
		t.Errorf("dups %d, bad %d", tr.dups, tr.bad)
	}
	_, lost = tr.latencies(lo, hi)
	if lost != 0 {
		t.Errorf("lost %d in the segment", lost)
	}
}

func testReport() *Report {
	r := &Report{Setup: Setup{Rates: []int{1000, 5000}, WarmupS: 2, MeasureS: 10, Rounds: 5, Parallelism: "1", Query: Query}}
	r.Machine.CPUs = 2
	r.Summary = []Row{
		{Rate: 1000, Path: PathHummer, Lines: 10000, Stats: Stats{P50Ms: 50, P99Ms: 100}, HummerCPUPct: 10},
		{Rate: 1000, Path: PathRaw, Lines: 10000, Stats: Stats{P50Ms: 0.2, P99Ms: 0.5}},
		{Rate: 5000, Path: PathHummer, Lines: 50000, Stats: Stats{P50Ms: 0.4, P99Ms: 1.2}},
		{Rate: 5000, Path: PathRaw, Lines: 50000, Lost: 1, Stats: Stats{P50Ms: 0.2, P99Ms: 0.5}},
	}
	r.judge()
	return r
}

func TestGoals(t *testing.T) {
	r := testReport()
	type k struct {
		name string
		rate int
	}
	want := map[k]bool{
		{goalPaper, 1000}: false, {goalLost, 1000}: true,
		{goalDiffName, 5000}: true, {goalPaper, 5000}: true, {goalLost, 5000}: false,
	}
	if len(r.Goals) != len(want) {
		t.Fatalf("goals %+v", r.Goals)
	}
	for _, g := range r.Goals {
		if pass, ok := want[k{g.Name, g.Rate}]; !ok || pass != g.Pass {
			t.Errorf("goal %+v", g)
		}
	}
	if r.Lost() != 1 {
		t.Errorf("lost %d", r.Lost())
	}
}

func TestReadmeAndJSON(t *testing.T) {
	r := testReport()
	path := filepath.Join(t.TempDir(), ResultsFile)
	if err := r.WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	back, err := ReadReport(path)
	if err != nil {
		t.Fatal(err)
	}
	md := back.Readme("results")
	for _, s := range []string{
		"## Latency", "results/latency.png",
		"| 1000 | hummer | 10000 | 0 | 50.000 |", "| +99.500 | 10% |",
		"| Hummer p99 − raw p99 | ≤ 1 ms (issue 5) |  | 0.7 ms ✅ |",
		"| lines lost (both paths) | 0 | 0 ✅ | 1 ❌ |",
		Query,
	} {
		if !strings.Contains(md, s) {
			t.Errorf("README section lacks %q:\n%s", s, md)
		}
	}
	if r, err := ReadReport(filepath.Join(t.TempDir(), "none.json")); r != nil || err != nil {
		t.Errorf("a missing file: %v, %v", r, err)
	}
	if err := back.Plot(filepath.Join(t.TempDir(), PlotFile)); err != nil {
		t.Error(err)
	}
}

func TestProcReads(t *testing.T) {
	if _, err := processCPU(os.Getpid()); err != nil {
		t.Fatal(err)
	}
	if _, err := steal(); err != nil {
		t.Fatal(err)
	}
}
