package checkpoint

import (
	"path/filepath"
	"regexp"
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

func TestParseCount(t *testing.T) {
	for _, c := range []struct {
		key, value string
		tombstone  bool
		word       string
		n          int64
	}{
		{key: `{"word":"the"}`, value: `{"word":"the","n":63919}`, word: "the", n: 63919},
		{key: `{"word":"say,\"who"}`, value: `{"word":"say,\"who","n":2}`, word: `say,"who`, n: 2},
		{key: `{"word":"\u00e9"}`, value: `{"word":"é","n":1}`, word: "é", n: 1},
		{key: `{"word":"lord"}`, tombstone: true, word: "lord"},
	} {
		var value []byte
		if !c.tombstone {
			value = []byte(c.value)
		}
		w, n, err := parseCount([]byte(c.key), value)
		if err != nil || w != c.word || n != c.n {
			t.Errorf("parseCount(%s, %s) = %q, %d, %v; want %q, %d", c.key, c.value, w, n, err, c.word, c.n)
		}
	}
	for _, bad := range [][2]string{{`{"w":"a"}`, `{"word":"a","n":1}`}, {`{"word":"a"}`, `{"word":"a"}`}, {`{"word":"a"}`, `{"word":"a","n":x}`}} {
		if _, _, err := parseCount([]byte(bad[0]), []byte(bad[1])); err == nil {
			t.Errorf("parseCount(%s, %s): no error", bad[0], bad[1])
		}
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(c.xs); got != c.want {
			t.Errorf("median(%v) = %g, want %g", c.xs, got, c.want)
		}
	}
}

// TestOverheadGoals checks the summary and the goals on made-up runs: the
// warm-up is left out, throughput is lines over the median wall time.
func TestOverheadGoals(t *testing.T) {
	r := &Report{Overhead: Overhead{Lines: map[string]int64{QueryWordCount: 1000, QueryPassThrough: 4000}}}
	add := func(q, m string, round int, wall, cpu float64) {
		r.Overhead.Runs = append(r.Overhead.Runs, OverheadRun{Query: q, Mode: m, Round: round, WallS: wall, HummerCPUS: cpu})
	}
	add(QueryWordCount, ModeNone, 0, 100, 100) // warm-up: ignored
	for round, w := range []float64{1.0, 1.2, 0.8} {
		add(QueryWordCount, ModeNone, round+1, w, 2)
		add(QueryWordCount, ModeIdle, round+1, w*1.25, 2.5)
		add(QueryWordCount, ModeCheckpoints, round+1, w*1.25*1.05, 2.6)
		add(QueryPassThrough, ModeNone, round+1, w*2, 4)
		add(QueryPassThrough, ModeIdle, round+1, w*2, 4)
		add(QueryPassThrough, ModeCheckpoints, round+1, w*2/0.8, 5)
	}
	r.Overhead.summarise()
	r.judge()
	wc := r.Overhead.row(QueryWordCount, ModeCheckpoints)
	if wc.Runs != 3 || wc.LinesPerS != round(1000/1.3125, 0) || wc.VsNone != 0.762 || wc.VsIdle != 0.952 || wc.CPUVsNone != 1.3 || wc.BestVsNone != 0.762 {
		t.Errorf("wordcount, 1 s checkpoints: %+v", wc)
	}
	if none := r.Overhead.row(QueryWordCount, ModeNone); none.WallS != 1 || none.WallMinS != 0.8 || none.WallMaxS != 1.2 || none.VsNone != 1 {
		t.Errorf("wordcount, none: %+v", none)
	}
	want := map[string]bool{
		GoalThroughput + ", wordcount":        false, // 23.8%
		GoalThroughputIdle + ", wordcount":    true,  // 4.8%
		GoalCPU + ", wordcount":               false, // 30%
		GoalThroughput + ", pass-through":     false, // 20%
		GoalThroughputIdle + ", pass-through": false, // 20%
		GoalCPU + ", pass-through":            false, // 25%
	}
	if len(r.Goals) != len(want) {
		t.Fatalf("goals %+v", r.Goals)
	}
	for _, g := range r.Goals {
		if pass, ok := want[g.Name]; !ok || pass != g.Pass {
			t.Errorf("goal %+v", g)
		}
	}
}

func TestRecoverySummary(t *testing.T) {
	r := &Report{Recovery: Recovery{Setup: RecoverySetup{Kills: 3, Freezes: 1}, Kills: []Kill{
		{N: 1, Signal: SignalKill, DetectMs: 3, DetectToOutputMs: 520},
		{N: 2, Signal: SignalKill, DetectMs: 5, DetectToOutputMs: 540},
		{N: 3, Signal: SignalKill, DetectMs: 4, DetectToOutputMs: 530},
		{N: 4, Signal: SignalStop, DetectMs: 2950, DetectToOutputMs: 2100},
	}}}
	r.Recovery.summarise()
	r.judge()
	if len(r.Recovery.Summary) != 3 {
		t.Fatalf("summary %+v", r.Recovery.Summary)
	}
	kill, all := r.Recovery.Summary[0], r.Recovery.total()
	if kill.Signal != SignalKill || kill.Recovered != 3 || kill.Detect != (Spread{MedianMs: 4, MinMs: 3, MaxMs: 5}) {
		t.Errorf("SIGKILL row %+v", kill)
	}
	if all.Signal != signalAll || all.Failures != 4 || all.DetectToOutput != (Spread{MedianMs: 535, MinMs: 520, MaxMs: 2100}) {
		t.Errorf("all row %+v", all)
	}
	if len(r.Goals) != 2 || !r.Goals[0].Pass || r.Goals[0].Value != 0.535 || r.Goals[1].Pass || r.Goals[1].Value != 2.1 {
		t.Errorf("goals %+v", r.Goals)
	}
	// A failure the job never recovered from fails the goals.
	r.Recovery.Setup.Freezes = 2
	r.Recovery.summarise()
	r.judge()
	if r.Goals[0].Pass {
		t.Errorf("goal passed with a failure missing: %+v", r.Goals[0])
	}
}

func TestExactlyOnce(t *testing.T) {
	r := &recorder{counts: []uint8{1, 2, 0, 1, 1}}
	missing, dups, bad := r.exactlyOnce(4, time.Now())
	if missing != 1 || dups != 1 || bad != 1 { // seq 2 missing, seq 1 twice, seq 4 never sent
		t.Errorf("missing %d, dups %d, bad %d", missing, dups, bad)
	}
	if missing, _, _ := r.exactlyOnce(7, time.Now()); missing != 3 {
		t.Errorf("missing %d of 7, want 3", missing)
	}
}

func TestReportRoundTrip(t *testing.T) {
	r := &Report{Date: "2026-11-30T00:00:00Z", Machine: Machine{CPUs: 2},
		Overhead: Overhead{Setup: OverheadSetup{Reps: 1, WordCount: wordCountSQL, PassThrough: passThroughSQL},
			Lines: map[string]int64{QueryWordCount: 10, QueryPassThrough: 20},
			Runs: []OverheadRun{{Query: QueryWordCount, Mode: ModeNone, Round: 1, WallS: 1, HummerCPUS: 1},
				{Query: QueryWordCount, Mode: ModeCheckpoints, Round: 1, WallS: 1.05, HummerCPUS: 1, Checkpoints: 1, LastCheckpointMs: 3}}},
		Recovery: Recovery{Setup: RecoverySetup{Kills: 1, Query: recoveryQuery}, Kills: []Kill{{N: 1, Signal: SignalKill, DetectToOutputMs: 500}}}}
	path := filepath.Join(t.TempDir(), ResultsFile)
	if err := r.WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	got, err := ReadReport(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Goals) != 4 || got.Overhead.row(QueryWordCount, ModeCheckpoints).VsNone != 0.952 {
		t.Errorf("read back: goals %+v, summary %+v", got.Goals, got.Overhead.Summary)
	}
	md := got.Readme("results")
	for _, want := range []string{"## Checkpoints", "### Overhead", "### Recovery", "| wordcount | 1 s checkpoints |", "SIGKILL (process killed), 1 of 1", "INSERT INTO lout SELECT line FROM lin"} {
		if !strings.Contains(md, want) {
			t.Errorf("README section lacks %q:\n%s", want, md)
		}
	}
	if r, err := ReadReport(filepath.Join(t.TempDir(), "none.json")); r != nil || err != nil {
		t.Errorf("a missing file: %v, %v", r, err)
	}
}

func TestProcLines(t *testing.T) {
	dir := t.TempDir()
	p, err := startProc("sh", filepath.Join(dir, "log"), "sh", "-c", "echo one >&2; sleep 0.2; echo 'hummer is ready: psql -h 127.0.0.1 -p 5 -U x' >&2; exec sleep 30")
	if err != nil {
		t.Fatal(err)
	}
	defer p.stop()
	l, m, err := p.waitLine(readyLine, time.Time{}, time.Now().Add(10*time.Second))
	if err != nil || m[2] != "5" {
		t.Fatalf("waitLine: %v %v", m, err)
	}
	if _, ok := p.first(regexp.MustCompile("one"), l.at); ok {
		t.Error("first found a line from before since")
	}
	if p.count(regexp.MustCompile("one|ready"), time.Time{}) != 2 {
		t.Error("count")
	}
	if _, _, err := p.waitLine(regexp.MustCompile("never"), time.Time{}, time.Now().Add(50*time.Millisecond)); err == nil {
		t.Error("waitLine found a line never written")
	}
	p.kill()
	if _, _, err := p.waitLine(regexp.MustCompile("never"), time.Time{}, time.Now().Add(10*time.Second)); err == nil || !strings.Contains(err.Error(), "exited") {
		t.Errorf("waitLine after the exit: %v", err)
	}
}
