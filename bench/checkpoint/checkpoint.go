// Package checkpoint is issue 6's checkpoint benchmark, in two parts.
//
// Overhead: a stateful continuous job (WordCount into an upsert topic) and a
// stateless one (a pass-through), each over copies of data/kjv.txt preloaded
// into Kafka, run with checkpoints every second, without checkpoints, and
// with checkpointing on but none taken (the same transactional sink), the
// modes alternating, on one `hummer serve`; the throughput is the input's
// lines over the time from the INSERT until the job's output is complete.
//
// Recovery: a JobManager and TaskManagers in their own processes run a
// pass-through job with checkpoints every second while time-stamped lines are
// produced at a steady rate; a TaskManager running the job's tasks is killed
// with SIGKILL (or frozen with SIGSTOP, which only the heartbeat timeout
// detects), and the time from the failure, and from the JobManager noticing
// it, to the restored job's first output is measured, several times.
//
// The broker is franz-go's kfake, in this process, as in bench/latency: an
// in-memory Kafka-protocol broker. Hummer is the real binary, driven over the
// PostgreSQL wire protocol with pgx.
package checkpoint

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/hummer-db/hummer/bench/counts"
)

// Config is what to run.
type Config struct {
	Hummer  string // the hummer binary
	Repo    string // the Hummer repository, for data/kjv.txt
	Work    string // scratch directory: data directories and logs
	Version string // git describe of the Hummer repository
	Log     func(format string, args ...any)

	// Overhead part.
	Copies      int           // copies of data/kjv.txt in WordCount's input
	PassCopies  int           // copies of data/kjv.txt in the pass-through's input
	Reps        int           // measured runs per query and mode, after one warm-up run per query
	Partitions  int           // of the input topic and the output topics
	Parallelism int           // the jobs' SET parallelism, and serve's --slots
	RunTimeout  time.Duration // bounds one run

	// Recovery part.
	Kills    int           // TaskManagers killed (SIGKILL), one after another
	Freezes  int           // then TaskManagers frozen (SIGSTOP), found lost by the heartbeat timeout
	Rate     int           // lines per second produced while the job runs
	Settle   time.Duration // how long the job runs undisturbed before each kill
	Recovery time.Duration // bounds each recovery, kill to the restored job's output
}

// Run runs both parts and returns the report; a part that fails leaves its
// section empty and its error in the report's Errors, and Run returns the
// first such error too.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	start := time.Now()
	rep := &Report{
		Date:     start.UTC().Format(time.RFC3339),
		Machine:  readMachine(),
		Versions: Versions{Hummer: cfg.Version, Go: runtime.Version(), FranzGo: moduleVersion("github.com/twmb/franz-go"), KFake: moduleVersion("github.com/twmb/franz-go/pkg/kfake")},
	}
	kjvPath := filepath.Join(cfg.Repo, "data", "kjv.txt")
	kjv, err := readLines(kjvPath)
	if err != nil {
		return nil, err
	}
	ref, err := counts.Reference(kjvPath)
	if err != nil {
		return nil, err
	}
	rep.Overhead.Setup = OverheadSetup{Copies: cfg.Copies, PassCopies: cfg.PassCopies, Reps: cfg.Reps, Partitions: cfg.Partitions,
		Parallelism: cfg.Parallelism, QuietMs: quietFor.Milliseconds(),
		Tables: []string{versesSQL, longSQL, countsTableSQL, outTableSQL}, WordCount: wordCountSQL, PassThrough: passThroughSQL}
	var first error
	if cfg.Reps > 0 {
		if err := runOverhead(ctx, cfg, kjv, ref, rep); err != nil {
			rep.Errors = append(rep.Errors, "overhead: "+err.Error())
			first = err
		}
	}
	rep.Overhead.summarise()
	if cfg.Kills+cfg.Freezes > 0 {
		if err := runRecovery(ctx, cfg, rep); err != nil {
			rep.Errors = append(rep.Errors, "recovery: "+err.Error())
			if first == nil {
				first = err
			}
		}
	}
	rep.Recovery.summarise()
	rep.judge()
	rep.DurationS = round(time.Since(start).Seconds(), 1)
	return rep, first
}

// readLines returns the lines of a text file.
func readLines(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"), nil
}

// moduleVersion returns the version of module path this binary was built with.
func moduleVersion(path string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	i := slices.IndexFunc(bi.Deps, func(m *debug.Module) bool { return m.Path == path })
	if i < 0 {
		return "unknown"
	}
	return bi.Deps[i].Version
}
