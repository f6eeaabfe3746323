package main

import (
	"os"
	"strings"
	"testing"
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
	md := r.readme("results")
	for _, s := range []string{"![", "| hummer p=2 | 10 x kjv (100 MB) | 200.0 |", "| mawk | 10 x kjv (100 MB) | failed |", "0.50 ❌"} {
		if !strings.Contains(md, s) {
			t.Errorf("README lacks %q", s)
		}
	}
	if strings.Index(md, "![") > strings.Index(md, "| contender |") {
		t.Error("the plot must come before the table")
	}
}
