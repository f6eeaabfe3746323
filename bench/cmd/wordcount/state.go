package main

// The state suite (issue 27): the disk state backend. Its four parts are
// tests of the engine's packages that skip unless told to run (so `go test`
// of those packages stays quick), each built here as a test binary and run
// once under bench/cmd/measure, which gives its process's wall and CPU time
// and peak RSS; each writes what it measured inside to a JSON file:
//
//   - TestHashAggDiskScale (exec/operators): a streaming GROUP BY over many
//     distinct generated keys on the disk backend within --state-memory,
//     every emitted row checked against the counts;
//   - TestHashAggBackendThroughput (exec/operators): the disk backend against
//     memory on a state that fits, alternating runs;
//   - TestCheckpointScale (exec/state/disk): checkpoints of a 2 GB state with
//     one percent of its keys changing between them, in blocks and at random;
//   - TestWindowAggBackendThroughput (exec/operators): a tumbling window
//     aggregation on memory, on disk with a cache that holds its windows, and
//     on disk with one they outgrow.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

const (
	suiteState = "state"
	stateFile  = "state.json"

	stateRSSGoal   = "peak RSS of the GROUP BY over the keys, disk backend"
	stateExactGoal = "every emitted row checked"
	stateFitGoal   = "throughput on a state that fits, disk / memory"
	stateBlockGoal = "incremental / full checkpoint, 1% of keys changed in blocks (highest round)"
	stateRandGoal  = "incremental / full checkpoint, 1% of keys changed at random (highest round)"
)

// stateReport is the suite's results file.
type stateReport struct {
	Date        string   `json:"date"`
	DurationS   float64  `json:"duration_s"`
	Versions    versions `json:"versions"`
	LoadAvg     float64  `json:"loadavg_1m_before"`
	StateMemory int64    `json:"state_memory"`
	// Scale is TestHashAggDiskScale's run: its process, then what it measured.
	Scale      stateRun       `json:"scale"`
	ScaleInner map[string]any `json:"scale_inner"`
	// Fit is TestHashAggBackendThroughput's, walls by backend.
	Fit      stateRun `json:"fit"`
	FitInner struct {
		Keys  int64                `json:"keys"`
		Rows  float64              `json:"rows"`
		Reps  int                  `json:"reps"`
		WallS map[string][]float64 `json:"wall_s"`
	} `json:"fit_inner"`
	// Checkpoints is TestCheckpointScale's.
	Checkpoints      stateRun `json:"checkpoints"`
	CheckpointsInner struct {
		Keys        int64   `json:"keys"`
		KeyBytes    int     `json:"key_bytes"`
		ValueBytes  int     `json:"value_bytes"`
		LoadWallS   float64 `json:"load_wall_s"`
		LoadCPUS    float64 `json:"load_cpu_s"`
		ChangedKeys int64   `json:"changed_keys"`
		Blocks      int     `json:"blocks"`
		DiskBytes   int64   `json:"disk_bytes"`
		Checkpoints []struct {
			Kind     string  `json:"kind"`
			Uploaded int64   `json:"uploaded"`
			Total    int64   `json:"total"`
			Files    int     `json:"files"`
			StartS   float64 `json:"start_s"`
			WallS    float64 `json:"wall_s"`
			CPUS     float64 `json:"cpu_s"`
		} `json:"checkpoints"`
	} `json:"checkpoints_inner"`
	// Windows is TestWindowAggBackendThroughput's, walls by run ("memory",
	// "disk", "disk_small"); a results file from before it has none.
	Windows      *stateRun `json:"windows,omitempty"`
	WindowsInner struct {
		Keys        int64                `json:"keys"`
		Windows     int                  `json:"windows"`
		Rows        float64              `json:"rows"`
		Reps        int                  `json:"reps"`
		SmallMemory int64                `json:"small_memory"`
		WallS       map[string][]float64 `json:"wall_s"`
		Evictions   int                  `json:"evictions"`
		Closes      int                  `json:"closes"`
		// SeparateRun, when set, says the part ran on its own, not with the
		// suite's others: when, of which Hummer, and the load average.
		SeparateRun string `json:"separate_run,omitempty"`
	} `json:"windows_inner"`
	// Derived by summarise.
	FitRatio float64 `json:"fit_ratio"` // median rows/s of disk over memory's
	Goals    []goal  `json:"goals"`
}

// stateRun is one test binary's run under bench/cmd/measure.
type stateRun struct {
	Test       string  `json:"test"`
	WallS      float64 `json:"wall_s"`
	CPUS       float64 `json:"cpu_s"`
	PeakRSSMiB float64 `json:"peak_rss_mib"`
	Error      string  `json:"error,omitempty"`
}

// runState runs the suite and writes results/state.json. It returns how many
// of its four runs failed.
func runState(ctx context.Context, cfg config, b bins, vers versions, repo, work string) (int, error) {
	start := time.Now()
	rep := &stateReport{Date: start.UTC().Format(time.RFC3339), Versions: vers, LoadAvg: loadAvg(), StateMemory: cfg.stateMemory}
	bins := map[string]string{}
	for _, pkg := range []string{"./exec/operators", "./exec/state/disk"} {
		bin := filepath.Join(work, strings.ReplaceAll(strings.TrimPrefix(pkg, "./"), "/", "-")+".test")
		progress("go test -c -o %s %s (in %s)", bin, pkg, repo)
		cmd := exec.Command("go", "test", "-c", "-o", bin, pkg)
		cmd.Dir, cmd.Stdout, cmd.Stderr = repo, os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return 0, fmt.Errorf("building the tests of %s: %w", pkg, err)
		}
		bins[pkg] = bin
	}
	mem := strconv.FormatInt(cfg.stateMemory, 10)
	failed := 0
	run := func(pkg, test string, inner any, env ...string) stateRun {
		out := filepath.Join(work, test+".json")
		os.Remove(out)
		r := stateRun{Test: test}
		progress("state: %s %s", test, strings.Join(env, " "))
		cmd := exec.CommandContext(ctx, b.measure, "-o", filepath.Join(work, "measure.json"), "--", bins[pkg],
			"-test.run", "^"+test+"$", "-test.count", "1", "-test.v", "-test.timeout", "2h")
		cmd.Env = append(os.Environ(), append(env, "HUMMER_STATE_OUT="+out, "TMPDIR="+work)...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		err := cmd.Run()
		m, merr := readMeasure(filepath.Join(work, "measure.json"))
		if err == nil {
			err = merr
		}
		r.WallS, r.CPUS, r.PeakRSSMiB = round(m.Wall.Seconds(), 2), round(m.CPU.Seconds(), 2), mib(m.PeakRSS)
		if err == nil {
			var data []byte
			if data, err = os.ReadFile(out); err == nil {
				err = json.Unmarshal(data, inner)
			}
		}
		if err != nil {
			r.Error = err.Error()
			failed++
			progress("state: %s FAILED: %v", test, err)
		}
		return r
	}
	rep.Scale = run("./exec/operators", "TestHashAggDiskScale", &rep.ScaleInner,
		"HUMMER_STATE_KEYS="+strconv.Itoa(cfg.stateKeys), "HUMMER_STATE_MEMORY="+mem)
	rep.Fit = run("./exec/operators", "TestHashAggBackendThroughput", &rep.FitInner,
		"HUMMER_STATE_FIT_KEYS="+strconv.Itoa(cfg.stateFitKeys), "HUMMER_STATE_REPS="+strconv.Itoa(cfg.stateReps))
	rep.Checkpoints = run("./exec/state/disk", "TestCheckpointScale", &rep.CheckpointsInner,
		"HUMMER_STATE_CKPT_BYTES="+strconv.FormatInt(cfg.stateCkptBytes, 10), "HUMMER_STATE_MEMORY="+mem)
	win := run("./exec/operators", "TestWindowAggBackendThroughput", &rep.WindowsInner,
		"HUMMER_STATE_WIN_KEYS="+strconv.Itoa(cfg.stateWinKeys), "HUMMER_STATE_WIN_MEMORY="+strconv.FormatInt(cfg.stateWinMemory, 10),
		"HUMMER_STATE_REPS=3")
	rep.Windows = &win
	rep.DurationS = round(time.Since(start).Seconds(), 1)
	rep.summarise()
	if err := writeJSONFile(filepath.Join(cfg.results, stateFile), rep); err != nil {
		return 0, err
	}
	rep.writeTable(os.Stdout)
	return failed, nil
}

func (r *stateReport) summarise() {
	r.Goals, r.FitRatio = nil, 0
	if w := r.FitInner.WallS; len(w["memory"]) > 0 && len(w["disk"]) > 0 {
		r.FitRatio = round(median(w["memory"])/median(w["disk"]), 2)
	}
	r.Goals = append(r.Goals,
		goal{Name: stateRSSGoal, Value: r.Scale.PeakRSSMiB, Target: "< 512 MiB", Pass: r.Scale.Error == "" && r.Scale.PeakRSSMiB > 0 && r.Scale.PeakRSSMiB < 512},
		goal{Name: stateExactGoal, Value: map[bool]float64{true: 1}[r.Scale.Error == ""], Target: "exact (1)", Pass: r.Scale.Error == ""},
		goal{Name: stateFitGoal, Value: r.FitRatio, Target: "≥ 0.7", Pass: r.Fit.Error == "" && r.FitRatio >= 0.7})
	for _, g := range []struct{ name, kind string }{{stateBlockGoal, "blocks"}, {stateRandGoal, "random"}} {
		worst := -1.0
		for _, c := range r.CheckpointsInner.Checkpoints {
			if c.Kind == g.kind && c.Total > 0 {
				worst = max(worst, r.fullRatio(c.Uploaded))
			}
		}
		r.Goals = append(r.Goals, goal{Name: g.name, Value: round(worst, 4), Target: "< 0.10", Pass: r.Checkpoints.Error == "" && worst >= 0 && worst < 0.1})
	}
}

// fullRatio is uploaded bytes over what the full (first) checkpoint uploaded.
func (r *stateReport) fullRatio(uploaded int64) float64 {
	cs := r.CheckpointsInner.Checkpoints
	if len(cs) == 0 || cs[0].Uploaded == 0 {
		return 0
	}
	return float64(uploaded) / float64(cs[0].Uploaded)
}

// innerFloat returns the number key of the scale run's own measurements.
func (r *stateReport) innerFloat(key string) float64 {
	f, _ := r.ScaleInner[key].(float64)
	return f
}

func (r *stateReport) writeTable(w io.Writer) {
	for _, g := range r.Goals {
		fmt.Fprintf(w, "goal %s: %.3f (%s) %s\n", g.Name, g.Value, g.Target, passMark(g.Pass))
	}
}

// readState reads state.json; a missing file is a nil report.
func readState(path string) (*stateReport, error) { return readSummarised[stateReport](path) }

// readme is the README's section on the suite.
func (r *stateReport) readme(resultsDir string, p func(string, ...any)) {
	p("## State larger than memory: the disk state backend and incremental checkpoints (issue 27)")
	p("")
	p("<!-- From %s, written by `make bench-state` (suite state of bench/cmd/wordcount; the section is bench/cmd/wordcount/state.go). -->", filepath.Join(resultsDir, stateFile))
	p("")
	p("Run of %s (Hummer `%s`), %.0f s in all, each part run once; load average %.2f just before, on a machine shared with other work, so times are noisy. The parts are tests of the engine's packages, skipped unless their environment variables are set, built as test binaries and run each in its own process under `bench/cmd/measure` (the process's wall and CPU time and peak RSS, its start-up included). The first two drive the aggregation operator directly, a batch of 4096 rows at a time as a task would, the third the operator's pebble DB; no server, SQL or network is in between, so the figures are the backend's own.",
		r.Date, r.Versions.Hummer, r.DurationS, r.LoadAvg)
	p("")
	p("| goal | target | value |")
	p("| --- | --- | ---: |")
	for _, g := range r.Goals {
		p("| %s | %s | %.3g %s |", g.Name, g.Target, g.Value, passMark(g.Pass))
	}
	p("")
	keys := r.innerFloat("keys")
	p("**A streaming GROUP BY over %.0f distinct keys** (`count(*), sum(x) GROUP BY k`, k a bigint, every key once in an order that visits the key space in runs of 4096, then one percent of them again) on the disk backend with a state memory of %d MiB, as `--state-memory %dMiB` gives one slot (`TestHashAggDiskScale`, exec/operators):",
		keys, r.StateMemory>>20, r.StateMemory>>20)
	p("")
	p("| keys | fold wall s | fold CPU s | keys/s | cache emptied | pebble on disk MB | process wall s | process CPU s | peak RSS MiB | result |")
	p("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
	result := "exact"
	if r.Scale.Error != "" {
		result = "failed: " + r.Scale.Error
	}
	wall := r.innerFloat("wall_s")
	p("| %.0f | %.1f | %.1f | %.0f | %.0f | %.0f | %.1f | %.1f | %.0f | %s |", keys, wall, r.innerFloat("cpu_s"), keys/max(wall, 1e-9),
		r.innerFloat("evictions"), r.innerFloat("disk_bytes")/1e6, r.Scale.WallS, r.Scale.CPUS, r.Scale.PeakRSSMiB, result)
	p("")
	p("*Exact*: every row the aggregation emitted is checked: after the first pass one insert per key, their keys summing to 0 + 1 + ... + (keys - 1), each of count 1; after the second pass over %.0f keys (every hundredth batch's, long evicted from the cache to pebble), for each an update from count 1 to count 2. Fold times are the aggregation's own (the test's clock and `getrusage`); the process's include building the batches, the second pass and pebble's directory removal.", r.innerFloat("again_keys"))
	p("")
	fit := r.FitInner
	p("**Disk against memory on a state that fits** (`TestHashAggBackendThroughput`): %d keys, each seen 8 times (%.0f rows in batches of 4096 scattered over the key space), flushed every 16 batches; the disk backend within 256 MiB, whose cache holds every group (the test fails if it is ever emptied), so it differs from memory by its bookkeeping of changed groups; %d runs of each backend, alternating.", fit.Keys, fit.Rows, fit.Reps)
	p("")
	p("| backend | runs (s) | median s | rows/s |")
	p("| --- | --- | ---: | ---: |")
	for _, b := range []string{"memory", "disk"} {
		ws := fit.WallS[b]
		if len(ws) == 0 {
			p("| %s | failed | | |", b)
			continue
		}
		var cells []string
		for _, w := range ws {
			cells = append(cells, fmt.Sprintf("%.3f", w))
		}
		p("| %s | %s | %.3f | %.0f |", b, strings.Join(cells, ", "), median(ws), fit.Rows/median(ws))
	}
	p("")
	ck := r.CheckpointsInner
	p("**Checkpoints of a %.1f GB state** (`TestCheckpointScale`, exec/state/disk): a pebble DB of the disk backend (the state memory as above) holding %d keys of %d bytes with incompressible values of %d bytes (written in %.0f s, %.0f s CPU), checkpointed to a `file://` checkpoint store; then three rounds in which %d keys (1%%) get new values and a checkpoint follows, the keys of %d contiguous runs spread over the key space (*blocks*: a round's runs are next to the last round's), then three rounds of %d keys drawn at random. *incremental / full* is what the checkpoint uploaded over what the first, full one did; *state* is the size of every file the checkpoint refers to, what a full checkpoint at that point would upload. *task s* is the part a task does at the barrier (`StartCheckpoint`: pebble's flush of its memtable and checkpoint, hard links), *wall s* that and the rest, which a task leaves to a goroutine of its own while it goes on processing (`Finish`: the CRC-32C of the new files and their copy into the store); CPU s is the process's over both, pebble's background compactions included.",
		float64(ck.Keys)*float64(ck.KeyBytes+ck.ValueBytes)/1e9, ck.Keys, ck.KeyBytes, ck.ValueBytes, ck.LoadWallS, ck.LoadCPUS, ck.ChangedKeys, ck.Blocks, ck.ChangedKeys)
	p("")
	p("| checkpoint | keys changed | uploaded MB | state MB | files | incremental / full | task s | wall s | CPU s |")
	p("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for i, c := range ck.Checkpoints {
		p("| %d | %s | %.1f | %.1f | %d | %.3f | %.2f | %.2f | %.2f |", i+1, c.Kind, float64(c.Uploaded)/1e6, float64(c.Total)/1e6, c.Files, r.fullRatio(c.Uploaded), c.StartS, c.WallS, c.CPUS)
	}
	p("")
	var blocks, rand []string
	for _, c := range ck.Checkpoints {
		switch c.Kind {
		case "blocks":
			blocks = append(blocks, fmt.Sprintf("%.3f", r.fullRatio(c.Uploaded)))
		case "random":
			rand = append(rand, fmt.Sprintf("%.3f", r.fullRatio(c.Uploaded)))
		}
	}
	if len(rand) > 0 {
		p("A checkpoint uploads every file new since the last one: the changed keys pebble flushed, and whatever its compactions wrote since. Compactions merge each round's changes with earlier rounds' and with the files below them, so a round's upload holds earlier rounds' keys again and grows from round to round (in blocks %s of full, at random %s). Keys changed in blocks overlap few of the files below; keys changed at random overlap all of them, and a compaction of those into a lower level rewrites every file they overlap. No file is uploaded twice: each is uploaded once and referred to by every later checkpoint that needs it.",
			strings.Join(blocks, ", "), strings.Join(rand, ", "))
		p("")
	}
	r.readmeWindows(p)
	runs := []stateRun{r.Scale, r.Fit, r.Checkpoints}
	if r.Windows != nil {
		runs = append(runs, *r.Windows)
	}
	if slices.ContainsFunc(runs, func(s stateRun) bool { return s.Error != "" }) {
		var errs []string
		for _, s := range runs {
			errs = append(errs, s.Error)
		}
		p("Failed runs: %s.", strings.Join(errs, "; "))
		p("")
	}
}

// readmeWindows is the README's part on the window aggregation, when the run
// had one.
func (r *stateReport) readmeWindows(p func(string, ...any)) {
	if r.Windows == nil {
		return
	}
	w := r.WindowsInner
	p("**A window aggregation, disk against memory** (`TestWindowAggBackendThroughput`, exec/operators): `count(*), sum(x) GROUP BY k, window_end` over %d tumbling windows of %d keys each, every key twice per window (%.0f rows in batches of 4096 scattered over the key space), each window closed by the watermark once the next one's rows are in, so two are open at a time; every run's rows checked (one per key and window, their counts adding up to the rows). *disk* runs within 256 MiB of state memory, whose cache holds both windows; *disk, small cache* within %d MiB (a cache of %d MiB), which the windows outgrow: it emptied its cache %d times and closed %d windows from pebble, looking up each batch's groups that left the cache in one ordered pass over the window's keys. Every batch's keys are spread over the whole window, so once a window has left the cache each batch's lookups read all of its keys' blocks again: the worst case for a cache, and what the small cache's figure measures. %d runs of each, in turn; on a busy machine the two runs whose state fits differ by noise (disk runs the memory backend's loops, plus its bookkeeping of changed groups).",
		w.Windows, w.Keys, w.Rows, w.SmallMemory>>20, w.SmallMemory>>22, w.Evictions, w.Closes, w.Reps)
	if w.SeparateRun != "" {
		p("")
		p("This part ran on its own, not with the others above: %s. Its process: %.1f s wall, %.1f s CPU, peak RSS %.0f MiB.", w.SeparateRun, r.Windows.WallS, r.Windows.CPUS, r.Windows.PeakRSSMiB)
	}
	p("")
	p("| backend | runs (s) | median s | rows/s |")
	p("| --- | --- | ---: | ---: |")
	for _, b := range []struct{ key, name string }{{"memory", "memory"}, {"disk", "disk"}, {"disk_small", "disk, small cache"}} {
		ws := w.WallS[b.key]
		if len(ws) == 0 {
			p("| %s | failed | | |", b.name)
			continue
		}
		var cells []string
		for _, s := range ws {
			cells = append(cells, fmt.Sprintf("%.3f", s))
		}
		p("| %s | %s | %.3f | %.0f |", b.name, strings.Join(cells, ", "), median(ws), w.Rows/median(ws))
	}
	p("")
}
