// Command latency is issue 5's latency benchmark (package bench/latency): lines
// produced into Kafka at fixed rates through a continuous Hummer job, against the
// broker's own round trip. It writes results/latency.json and results/latency.png;
// bench/cmd/wordcount puts its table into README.md (`make bench-latency` runs
// both).
//
// Run it from bench/: go run ./cmd/latency -repo ..
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hummer-db/hummer/bench/latency"
	benchrepo "github.com/hummer-db/hummer/bench/repo"
)

func main() {
	cfg := latency.Config{Log: progress}
	repo := flag.String("repo", "..", "the Hummer repository (to build cmd/hummer from, and to name its version)")
	flag.StringVar(&cfg.Hummer, "hummer", "", "a hummer binary to use instead of building one from -repo")
	rates := flag.String("rates", "1000,5000,20000", "rates to measure, in lines per second")
	flag.DurationVar(&cfg.Warmup, "warmup", 2*time.Second, "warm-up per rate and path, not measured")
	flag.DurationVar(&cfg.Measure, "measure", 10*time.Second, "measured time per rate and path")
	flag.IntVar(&cfg.Rounds, "rounds", 5, "segments -measure is split into per rate and path; the paths alternate")
	flag.StringVar(&cfg.Parallelism, "parallelism", "1", "the job's SET parallelism: the input topic has one partition")
	flag.DurationVar(&cfg.Drain, "drain", 5*time.Second, "how long a segment waits for its lines after the last was sent")
	flag.DurationVar(&cfg.Startup, "startup", time.Minute, "how long the first segment waits for the job to start")
	results := flag.String("results", "results", "directory for latency.json and latency.png")
	work := flag.String("work", "", "scratch directory for the server's data and log (default: a fresh temporary one, removed after)")
	flag.Parse()
	for f := range strings.SplitSeq(*rates, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "latency: -rates: %q is not a positive number\n", f)
			os.Exit(2)
		}
		cfg.Rates = append(cfg.Rates, n)
	}
	for _, r := range cfg.Rates {
		if cfg.Rounds < 1 || float64(r)*cfg.Measure.Seconds() < float64(cfg.Rounds) {
			fmt.Fprintln(os.Stderr, "latency: every segment needs a line: -rounds must be at least 1 and at most rate × -measure")
			os.Exit(2)
		}
	}
	if err := run(cfg, *repo, *results, *work); err != nil {
		fmt.Fprintln(os.Stderr, "latency:", err)
		os.Exit(1)
	}
}

func run(cfg latency.Config, repo, results, work string) error {
	if work == "" {
		var err error
		if work, err = os.MkdirTemp("", "hummer-latency-"); err != nil {
			return err
		}
		defer os.RemoveAll(work)
	}
	cfg.Work = work
	repo, err := filepath.Abs(repo)
	if err != nil {
		return err
	}
	if cfg.Hummer == "" {
		cfg.Hummer = filepath.Join(work, "hummer")
		progress("go build -o %s ./cmd/hummer (in %s)", cfg.Hummer, repo)
		if err := benchrepo.Build(repo, cfg.Hummer, "./cmd/hummer"); err != nil {
			return err
		}
	}
	cfg.Version = benchrepo.Version(repo)

	rep, runErr := latency.Run(context.Background(), cfg)
	if rep == nil {
		return runErr
	}
	if err := os.MkdirAll(results, 0o755); err != nil {
		return err
	}
	// One file per suite: earlier runs are in git history.
	if err := rep.WriteJSON(filepath.Join(results, latency.ResultsFile)); err != nil {
		return err
	}
	if err := rep.Plot(filepath.Join(results, latency.PlotFile)); err != nil {
		return err
	}
	rep.WriteTable(os.Stdout)
	return runErr
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: latency: "+format+"\n", args...)
}
