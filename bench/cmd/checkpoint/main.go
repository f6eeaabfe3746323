// Command checkpoint is issue 6's checkpoint benchmark (package
// bench/checkpoint): the throughput a continuous job loses to checkpoints
// every second, and how long a job takes to produce output again after a
// TaskManager running it is killed. It writes results/checkpoint.json;
// bench/cmd/wordcount puts its tables into README.md (`make bench-checkpoint`
// runs both).
//
// Run it from bench/: go run ./cmd/checkpoint -repo ..
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hummer-db/hummer/bench/checkpoint"
	benchrepo "github.com/hummer-db/hummer/bench/repo"
)

func main() {
	cfg := checkpoint.Config{Log: progress}
	repo := flag.String("repo", "..", "the Hummer repository (data/kjv.txt; cmd/hummer is built from it without -hummer)")
	flag.StringVar(&cfg.Hummer, "hummer", "", "a hummer binary to use instead of building one from -repo")
	flag.IntVar(&cfg.Copies, "copies", 25, "copies of data/kjv.txt (31,102 lines each) preloaded as the overhead part's WordCount input")
	flag.IntVar(&cfg.PassCopies, "pass-copies", 60, "copies of data/kjv.txt preloaded as the overhead part's pass-through input")
	flag.IntVar(&cfg.Reps, "reps", 5, "measured runs per job and mode in the overhead part, after one warm-up run per job (0: skip the part)")
	flag.IntVar(&cfg.Partitions, "partitions", 2, "partitions of the overhead part's topics")
	flag.IntVar(&cfg.Parallelism, "parallelism", 2, "the overhead jobs' parallelism (and serve's --slots)")
	flag.DurationVar(&cfg.RunTimeout, "run-timeout", 2*time.Minute, "bounds one overhead run")
	flag.IntVar(&cfg.Kills, "kills", 5, "TaskManagers killed (SIGKILL) in the recovery part")
	flag.IntVar(&cfg.Freezes, "freezes", 2, "TaskManagers frozen (SIGSTOP) after the kills, which only the heartbeat timeout detects (-kills 0 -freezes 0: skip the part)")
	flag.IntVar(&cfg.Rate, "rate", 2000, "lines per second produced during the recovery part")
	flag.DurationVar(&cfg.Settle, "settle", 2*time.Second, "how long the job runs undisturbed before each kill")
	flag.DurationVar(&cfg.Recovery, "recovery-timeout", time.Minute, "bounds each recovery")
	results := flag.String("results", "results", "directory for checkpoint.json")
	work := flag.String("work", "", "scratch directory for the processes' data and logs (default: a fresh temporary one, removed after)")
	flag.Parse()
	if cfg.Copies < 1 || cfg.PassCopies < 1 || cfg.Partitions < 1 || cfg.Parallelism < 1 || cfg.Rate < 1 {
		fmt.Fprintln(os.Stderr, "checkpoint: -copies, -pass-copies, -partitions, -parallelism and -rate must be positive")
		os.Exit(2)
	}
	if err := run(cfg, *repo, *results, *work); err != nil {
		fmt.Fprintln(os.Stderr, "checkpoint:", err)
		os.Exit(1)
	}
}

func run(cfg checkpoint.Config, repo, results, work string) error {
	if work == "" {
		var err error
		if work, err = os.MkdirTemp("", "hummer-checkpoint-"); err != nil {
			return err
		}
		defer os.RemoveAll(work)
	} else if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	cfg.Work = work
	repo, err := filepath.Abs(repo)
	if err != nil {
		return err
	}
	cfg.Repo = repo
	if cfg.Hummer == "" {
		cfg.Hummer = filepath.Join(work, "hummer")
		progress("go build -o %s ./cmd/hummer (in %s)", cfg.Hummer, repo)
		if err := benchrepo.Build(repo, cfg.Hummer, "./cmd/hummer"); err != nil {
			return err
		}
	}
	cfg.Version = benchrepo.Version(repo)

	rep, runErr := checkpoint.Run(context.Background(), cfg)
	if rep == nil {
		return runErr
	}
	if err := os.MkdirAll(results, 0o755); err != nil {
		return err
	}
	if err := rep.WriteJSON(filepath.Join(results, checkpoint.ResultsFile)); err != nil {
		return err
	}
	rep.WriteTable(os.Stdout)
	return runErr
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: checkpoint: "+format+"\n", args...)
}
