package checkpoint

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/hummer-db/hummer/bench/counts"
)

// The overhead part's two jobs, by the names the report uses.
const (
	QueryWordCount   = "wordcount"
	QueryPassThrough = "pass-through"
)

// The modes each job runs in. ModeNone is what issue 6 compares against: no
// checkpoints, and so the sink's non-transactional writer (kafka-go).
// ModeIdle turns checkpointing on, and with it the transactional sink
// (franz-go), but with an interval no run reaches: set against ModeNone it
// shows what the sinks' writers cost, set against ModeCheckpoints what the
// checkpoints themselves (barriers, snapshots, commits) cost.
const (
	ModeNone        = "no checkpoints"
	ModeIdle        = "checkpointing on, none taken"
	ModeCheckpoints = "1 s checkpoints"
)

// modeInterval is each mode's SET checkpoint_interval.
var modeInterval = map[string]string{ModeNone: "0", ModeIdle: "1h", ModeCheckpoints: "1s"}

// modes in their order in the report.
var modes = []string{ModeNone, ModeIdle, ModeCheckpoints}

// Input topics of the overhead part: Copies × data/kjv.txt for WordCount,
// PassCopies × for the pass-through, which is faster.
const (
	topicVerses = "verses"
	topicLong   = "verses_long"
)

// Statements of the overhead part; %[1]s is the broker, %[2]d the run's number.
const (
	versesSQL      = `CREATE TABLE verses (line TEXT) ENGINE=kafka CONNECTION='kafka://%[1]s/verses'`
	longSQL        = `CREATE TABLE verses_long (line TEXT) ENGINE=kafka CONNECTION='kafka://%[1]s/verses_long'`
	countsTableSQL = `CREATE TABLE counts_%[2]d (word TEXT, n BIGINT, PRIMARY KEY (word)) ENGINE=kafka CONNECTION='kafka://%[1]s/counts_%[2]d?format=json'`
	outTableSQL    = `CREATE TABLE out_%[2]d (line TEXT) ENGINE=kafka CONNECTION='kafka://%[1]s/out_%[2]d'`
	wordCountSQL   = `INSERT INTO counts_%[2]d SELECT word, COUNT(*) FROM (SELECT unnest(string_split(lower(line), ' ')) AS word FROM verses) AS t WHERE word <> '' GROUP BY word`
	passThroughSQL = `INSERT INTO out_%[2]d SELECT line FROM verses_long`
)

// pollProcessList is how often a run reads SHOW PROCESSLIST; quietFor is how
// long WordCount's written rows must stay unchanged, once all input is read,
// for its output to count as complete.
const (
	pollProcessList = 10 * time.Millisecond
	quietFor        = 500 * time.Millisecond
)

// overhead runs the overhead part: one `hummer serve`, the inputs preloaded
// into the broker, every (query, mode) run Reps times, interleaved.
type overhead struct {
	cfg    Config
	addr   string
	adm    *admin
	srv    *proc
	conn   *pgx.Conn
	notice atomic.Pointer[string]
	lines  map[string]int64 // input lines by query
	ref    counts.Digest    // WordCount's result over topicVerses
	runs   int              // numbers the runs' output topics
}

func runOverhead(ctx context.Context, cfg Config, kjv []string, ref map[string]int64, rep *Report) error {
	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(int32(cfg.Partitions), topicVerses, topicLong))
	if err != nil {
		return err
	}
	defer broker.Close()
	o := &overhead{cfg: cfg, addr: broker.ListenAddrs()[0], lines: map[string]int64{}}
	for w, n := range ref {
		o.ref.Add(w, n*int64(cfg.Copies))
	}
	if o.adm, err = newAdmin(o.addr); err != nil {
		return err
	}
	defer o.adm.close()
	for _, in := range []struct {
		query, topic string
		copies       int
	}{{QueryWordCount, topicVerses, cfg.Copies}, {QueryPassThrough, topicLong, cfg.PassCopies}} {
		t := time.Now()
		if o.lines[in.query], err = preload(ctx, o.addr, in.topic, cfg.Partitions, kjv, in.copies); err != nil {
			return err
		}
		cfg.Log("preloaded %d lines (%d x kjv) into %s, %d partitions, in %.1f s", o.lines[in.query], in.copies, in.topic, cfg.Partitions, time.Since(t).Seconds())
	}
	rep.Overhead.Lines = o.lines

	data := filepath.Join(cfg.Work, "serve-data")
	if err := os.RemoveAll(data); err != nil { // a catalog left by an earlier run would hold the tables
		return err
	}
	o.srv, err = startProc("hummer serve", filepath.Join(cfg.Work, "serve.log"), cfg.Hummer, "serve",
		"--pg-addr", "127.0.0.1:0", "--data-dir", data, "--slots", strconv.Itoa(cfg.Parallelism))
	if err != nil {
		return err
	}
	defer o.srv.stop()
	if o.conn, err = connect(ctx, o.srv, func(m string) { o.notice.Store(&m) }); err != nil {
		return err
	}
	defer o.conn.Close(context.Background())
	if err := execAll(ctx, o.conn, fmt.Sprintf(versesSQL, o.addr), fmt.Sprintf(longSQL, o.addr),
		fmt.Sprintf("SET parallelism = %d", cfg.Parallelism)); err != nil {
		return err
	}

	meter, err := startMeter(o.srv.pid())
	if err != nil {
		return err
	}
	// The warm-up: WordCount with checkpoints, its result checked against
	// the reference as a read_committed reader sees it, and the pass-through
	// without.
	for _, w := range []struct{ query, mode string }{{QueryWordCount, ModeCheckpoints}, {QueryPassThrough, ModeNone}} {
		run, err := o.run(ctx, w.query, w.mode, w.query == QueryWordCount)
		if err != nil {
			return fmt.Errorf("%s, %s: %w", w.query, w.mode, err)
		}
		rep.Overhead.Runs = append(rep.Overhead.Runs, run)
		o.logRun(run)
	}
	for r := 1; r <= cfg.Reps; r++ {
		for _, q := range []string{QueryWordCount, QueryPassThrough} {
			for i := range modes {
				m := modes[(i+r)%len(modes)] // each round starts with the next mode
				run, err := o.run(ctx, q, m, false)
				if err != nil {
					return fmt.Errorf("%s, %s: %w", q, m, err)
				}
				run.Round = r
				rep.Overhead.Runs = append(rep.Overhead.Runs, run)
				o.logRun(run)
			}
		}
	}
	rep.Overhead.Machine = meter.done()
	return nil
}

func (o *overhead) logRun(run OverheadRun) {
	what := fmt.Sprintf("round %d/%d", run.Round, o.cfg.Reps)
	if run.Round == 0 {
		what = "warm-up"
	}
	o.cfg.Log("overhead %-12s %-28s %-11s %6.3f s  %7.0f lines/s  CPU %5.2f s  %d checkpoints", run.Query, run.Mode, what, run.WallS, run.LinesPerS, run.HummerCPUS, run.Checkpoints)
}

// run runs query once in mode over its whole input, into a fresh output
// topic, and stops the job once its output is complete. With check it then
// reads the output and compares it with the reference.
func (o *overhead) run(ctx context.Context, query, mode string, check bool) (OverheadRun, error) {
	o.runs++
	n := o.runs
	lines := o.lines[query]
	run := OverheadRun{Query: query, Mode: mode, Lines: lines}
	topic, table, insert := fmt.Sprintf("out_%d", n), outTableSQL, passThroughSQL
	if query == QueryWordCount {
		topic, table, insert = fmt.Sprintf("counts_%d", n), countsTableSQL, wordCountSQL
	}
	if err := o.adm.createTopic(ctx, topic, o.cfg.Partitions); err != nil {
		return run, err
	}
	defer o.adm.deleteTopic(ctx, topic) // the broker keeps topics in memory
	if err := execAll(ctx, o.conn, fmt.Sprintf(table, o.addr, n), "SET checkpoint_interval = '"+modeInterval[mode]+"'"); err != nil {
		return run, err
	}

	cpu0, err := processCPU(o.srv.pid())
	if err != nil {
		return run, err
	}
	self0 := selfCPU()
	o.notice.Store(nil)
	t0 := time.Now()
	if err := execAll(ctx, o.conn, fmt.Sprintf(insert, o.addr, n)); err != nil {
		return run, err
	}
	var id string
	if m := o.notice.Load(); m != nil {
		if s := jobStarted.FindStringSubmatch(*m); s != nil {
			id = s[1]
		}
	}
	if id == "" {
		return run, fmt.Errorf("no notice naming the job")
	}
	deadline := t0.Add(o.cfg.RunTimeout)
	var j job
	var lastOut int64 = -1
	// When rows_out was first seen at its current value, and the CPU times
	// then.
	var changed time.Time
	var cpuAt, selfAt time.Duration
	for {
		jobs, err := processList(ctx, o.conn)
		if err != nil {
			return run, err
		}
		j = jobs[id]
		now := time.Now()
		if j.State != "running" {
			return run, fmt.Errorf("job %s is %s: %s", id, j.State, j.Error)
		}
		if j.RowsIn > 0 && run.FirstInS == 0 {
			run.FirstInS = secs(now.Sub(t0))
		}
		if j.RowsIn >= lines && run.InputS == 0 {
			run.InputS = secs(now.Sub(t0))
		}
		if j.RowsOut != lastOut {
			lastOut, changed = j.RowsOut, now
			if cpuAt, err = processCPU(o.srv.pid()); err != nil {
				return run, err
			}
			selfAt = selfCPU()
		}
		if query == QueryPassThrough && j.RowsOut >= lines {
			break
		}
		// WordCount writes updates, as many as its flushes make: its
		// output is complete once the input is all read and the sink has
		// written nothing new for quietFor (its task flushes at least every
		// 100 ms while busy). It was complete when its count last changed.
		if query == QueryWordCount && j.RowsIn >= lines && now.Sub(changed) >= quietFor {
			break
		}
		if now.After(deadline) {
			return run, fmt.Errorf("output incomplete after %v: %s", o.cfg.RunTimeout, j.Raw)
		}
		time.Sleep(pollProcessList)
	}
	run.WallS = secs(changed.Sub(t0))
	run.HummerCPUS, run.BenchCPUS = secs(cpuAt-cpu0), secs(selfAt-self0)
	run.LinesPerS = round(float64(lines)/run.WallS, 0)
	run.RowsOut, run.Checkpoints, run.Restarts = j.RowsOut, j.Checkpoint, j.Restarts
	run.LastCheckpointMs, run.LastCheckpointBytes, run.LastAlignmentMs = j.CheckpointMs, j.CheckpointBytes, j.AlignmentMs
	if mode == ModeCheckpoints {
		// A read_committed reader sees the last records once the checkpoint
		// after them completes and the sink commits its transaction.
		for {
			hw, err1 := o.adm.endOffsets(ctx, topic, o.cfg.Partitions, false)
			lso, err2 := o.adm.endOffsets(ctx, topic, o.cfg.Partitions, true)
			if err1 != nil || err2 != nil {
				return run, fmt.Errorf("end offsets of %s: %v %v", topic, err1, err2)
			}
			if lso == hw {
				run.CommittedS = secs(time.Since(t0))
				break
			}
			if time.Now().After(deadline) {
				return run, fmt.Errorf("output of %s not committed after %v", topic, o.cfg.RunTimeout)
			}
			time.Sleep(pollProcessList)
		}
	}
	// Output after the run was taken as complete would mean the quiet
	// period was too short; the report shows it.
	if jobs, err := processList(ctx, o.conn); err == nil && jobs[id].RowsOut > run.RowsOut {
		run.RowsAfterDone = jobs[id].RowsOut - run.RowsOut
		o.cfg.Log("overhead %s, %s: %d rows written after the output was taken as complete", query, mode, run.RowsAfterDone)
	}
	if err := execAll(ctx, o.conn, "KILL "+id); err != nil {
		return run, err
	}
	if check {
		t := time.Now()
		got, err := readCounts(ctx, o.addr, topic, mode != ModeNone)
		if err != nil {
			return run, err
		}
		if d := counts.Of(got); d != o.ref {
			return run, fmt.Errorf("wrong result in %s: %v, want %v", topic, d, o.ref)
		}
		o.cfg.Log("the result in %s is right (%v; read in %.1f s)", topic, o.ref, time.Since(t).Seconds())
		run.Checked = true
	}
	return run, nil
}
