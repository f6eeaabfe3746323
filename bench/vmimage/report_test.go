package vmimage

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func testReport() *Report {
	r := &Report{
		Date:    "2026-11-30 06:00 UTC",
		Machine: Machine{CPUs: 2, CPUModel: "test CPU", RunsS: 60},
		Setup:   Setup{Runs: 3, CPUs: 1, Memory: "1G", KernelVersion: "6.1.0-test"},
		Images: []Image{
			{Variant: "lz4", Compression: "lz4", KernelBytes: 14e6, InitramfsBytes: 15e6},
			{Variant: "gzip", Compression: "gzip", KernelBytes: 14e6, InitramfsBytes: 13e6},
		},
	}
	for i, s := range []float64{1.9, 2.4, 2.1} {
		r.Runs = append(r.Runs, Run{Variant: "lz4", Round: i + 1, FirstAnswerS: s, QEMUCPUS: s - 0.2, CleanStop: true})
		r.Runs = append(r.Runs, Run{Variant: "gzip", Round: i + 1, FirstAnswerS: s + 0.3, CleanStop: i > 0})
	}
	r.Runs = append(r.Runs, Run{Variant: "gzip", Round: 4, Err: "no answer"})
	return r
}

func TestSummarise(t *testing.T) {
	r := testReport()
	r.Summarise()
	lz4, gz := r.Summary[0], r.Summary[1]
	if lz4.FirstAnswerS != 2.1 || lz4.FirstAnswerMinS != 1.9 || lz4.FirstAnswerMaxS != 2.4 || lz4.CleanStops != 3 || lz4.SizeMB != 29 {
		t.Errorf("lz4 row %+v", lz4)
	}
	if gz.Runs != 4 || gz.Failed != 1 || gz.CleanStops != 2 || gz.FirstAnswerS != 2.4 {
		t.Errorf("gzip row %+v", gz)
	}
	pass := map[string]bool{}
	for _, g := range r.Goals {
		pass[g.Variant+"/"+g.Name] = g.Pass
	}
	if !pass["lz4/"+goalSizeName] || pass["lz4/"+goalBootName] || !pass["lz4/"+goalBootName2] || pass["gzip/"+goalBootName2] {
		t.Errorf("goals %+v", r.Goals)
	}
}

func TestReadmeAndJSON(t *testing.T) {
	r := testReport()
	r.Summarise()
	md := r.Readme("results")
	for _, want := range []string{"## VM image", "| lz4 | 29.0 | 2.10 (1.90–2.40)", "| gzip (1 of 4 failed) |", "≤ 40 MB", "❌", "✅"} {
		if !strings.Contains(md, want) {
			t.Errorf("README section lacks %q:\n%s", want, md)
		}
	}
	path := filepath.Join(t.TempDir(), ResultsFile)
	b, _ := json.Marshal(r)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadReport(path)
	if err != nil || got.Summary[0].FirstAnswerS != 2.1 {
		t.Errorf("ReadReport = %+v, %v", got, err)
	}
	if r, err := ReadReport(filepath.Join(t.TempDir(), "none.json")); r != nil || err != nil {
		t.Errorf("a missing report: %v, %v", r, err)
	}
}
