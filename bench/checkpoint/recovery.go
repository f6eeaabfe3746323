package checkpoint

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kfake"
)

// Topics and statements of the recovery part: one pass-through job, input
// and output of recoveryPartitions partitions each, parallelism 2 over two
// TaskManagers of one slot each.
const (
	topicIn            = "lin"
	topicOut           = "lout"
	recoveryPartitions = 2
	recoveryTablesSQL  = `CREATE TABLE lin (line TEXT) ENGINE=kafka CONNECTION='kafka://%[1]s/lin'; ` +
		`CREATE TABLE lout (line TEXT) ENGINE=kafka CONNECTION='kafka://%[1]s/lout'`
	recoveryQuery = `INSERT INTO lout SELECT line FROM lin`
	// caughtUpLatency is the latency under which an output line counts as
	// live again after a restore: the backlog of the outage is drained. The
	// job's p99 at a steady rate is a few milliseconds (bench/latency).
	caughtUpLatency = 100 * time.Millisecond
)

// Log lines the recovery part waits for.
var (
	tmLost    = regexp.MustCompile(`msg="TaskManager lost"`)
	jobFailed = regexp.MustCompile(`msg="job failed; restarting from its last checkpoint"`)
	sinkReady = regexp.MustCompile(`msg="kafka sink ready for transactions"`)
)

// recovery runs the second part: a JobManager, TaskManagers that get killed,
// a producer at a steady rate and two readers of the output.
type recovery struct {
	cfg   Config
	addr  string
	jm    *proc
	conn  *pgx.Conn
	rpc   string
	tms   map[string]*proc // live TaskManagers by id (their data address)
	order []string         // ids in start order, for their log names
	// running holds the two TaskManagers that run the job's tasks, spare the
	// third, idle one.
	running []string
	spare   string
	clk     clock
	out     *recorder // read_uncommitted: every record the job writes, at once
	done    *recorder // read_committed: what downstream readers see
	prod    *steadyProducer
	jobID   string
}

func runRecovery(ctx context.Context, cfg Config, rep *Report) error {
	r := &recovery{cfg: cfg, tms: map[string]*proc{}, clk: newClock()}
	rep.Recovery.Setup = RecoverySetup{Kills: cfg.Kills, Freezes: cfg.Freezes, Rate: cfg.Rate, Partitions: recoveryPartitions, Parallelism: 2,
		SettleS: cfg.Settle.Seconds(), CheckpointInterval: "1s", Query: recoveryQuery, CaughtUpMs: caughtUpLatency.Milliseconds()}
	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(recoveryPartitions, topicIn, topicOut))
	if err != nil {
		return err
	}
	defer broker.Close()
	r.addr = broker.ListenAddrs()[0]
	defer r.stopAll()
	if err := r.startCluster(ctx); err != nil {
		return err
	}
	if r.out, err = startRecorder(r.addr, topicOut, false, r.clk); err != nil {
		return err
	}
	defer r.out.close()
	if r.done, err = startRecorder(r.addr, topicOut, true, r.clk); err != nil {
		return err
	}
	defer r.done.close()
	if r.prod, err = startProducer(r.addr, topicIn, recoveryPartitions, cfg.Rate, r.clk); err != nil {
		return err
	}
	defer r.prod.stop()

	meter, err := startMeter(0)
	if err != nil {
		return err
	}
	// The job is running once a checkpoint committed output.
	if _, err := r.done.waitFirst(time.Time{}, nil, time.Now().Add(time.Minute)); err != nil {
		return fmt.Errorf("the job's first committed output: %w", err)
	}
	total := cfg.Kills + cfg.Freezes
	for k := 1; k <= total; k++ {
		sig := SignalKill
		if k > cfg.Kills {
			sig = SignalStop
		}
		kill, err := r.killOne(ctx, k, sig)
		if err != nil {
			return fmt.Errorf("failure %d (%s): %w", k, sig, err)
		}
		rep.Recovery.Kills = append(rep.Recovery.Kills, kill)
		cfg.Log("recovery %d/%d, %s: detected %4.0f ms, restarted %4.0f ms, first output %4.0f ms after the failure (%4.0f ms after detection), committed %4.0f ms, caught up %4.0f ms",
			k, total, sig, kill.DetectMs, kill.RestartMs, kill.FirstOutputMs, kill.DetectToOutputMs, kill.FirstCommittedMs, kill.CaughtUpMs)
	}
	sent := r.prod.stop()
	rep.Recovery.Lines = sent
	// Every line must come out exactly once to a read_committed reader, once
	// the checkpoint after the last has completed.
	rep.Recovery.Missing, rep.Recovery.Duplicates, rep.Recovery.Bad = r.done.exactlyOnce(sent, time.Now().Add(15*time.Second))
	rep.Recovery.Machine = meter.done()
	if jobs, err := processList(ctx, r.conn); err == nil {
		rep.Recovery.Job = jobs[r.jobID].Raw
	}
	rep.Recovery.JobManagerWarnings = r.jm.count(regexp.MustCompile(`level=WARN`), time.Time{})
	if err := r.prod.failure(); err != nil {
		return fmt.Errorf("producing: %w", err)
	}
	if rep.Recovery.Missing > 0 || rep.Recovery.Duplicates > 0 || rep.Recovery.Bad > 0 {
		return fmt.Errorf("a read_committed reader of the output missed %d of the %d lines, got %d extra copies and %d records that were never sent",
			rep.Recovery.Missing, sent, rep.Recovery.Duplicates, rep.Recovery.Bad)
	}
	return nil
}

// startCluster starts the JobManager and two TaskManagers, starts the job on
// them, then a third, spare TaskManager.
func (r *recovery) startCluster(ctx context.Context) error {
	rpc, err := freeAddr()
	if err != nil {
		return err
	}
	r.rpc = rpc
	for _, d := range []string{"jobmanager-data", "taskmanager-*-data"} { // left by an earlier run
		old, _ := filepath.Glob(filepath.Join(r.cfg.Work, d))
		for _, o := range old {
			if err := os.RemoveAll(o); err != nil {
				return err
			}
		}
	}
	r.jm, err = startProc("hummer jobmanager", filepath.Join(r.cfg.Work, "jobmanager.log"), r.cfg.Hummer, "jobmanager",
		"--pg-addr", "127.0.0.1:0", "--rpc-addr", rpc, "--data-dir", filepath.Join(r.cfg.Work, "jobmanager-data"),
		"--checkpoint-interval", "1s")
	if err != nil {
		return err
	}
	var notice string
	if r.conn, err = connect(ctx, r.jm, func(m string) { notice = m }); err != nil {
		return err
	}
	for range 2 {
		id, err := r.startTM()
		if err != nil {
			return err
		}
		r.running = append(r.running, id)
	}
	stmts := strings.Split(fmt.Sprintf(recoveryTablesSQL, r.addr), "; ")
	stmts = append(stmts, "SET parallelism = 2", recoveryQuery)
	if err := execAll(ctx, r.conn, stmts...); err != nil {
		return err
	}
	m := jobStarted.FindStringSubmatch(notice)
	if m == nil {
		return fmt.Errorf("no notice naming the job (got %q)", notice)
	}
	r.jobID = m[1]
	r.spare, err = r.startTM()
	return err
}

// startTM starts a TaskManager of one slot on a free data address, its id,
// and waits for the JobManager to register it.
func (r *recovery) startTM() (string, error) {
	id, err := freeAddr()
	if err != nil {
		return "", err
	}
	n := len(r.order)
	t := time.Now()
	p, err := startProc("hummer taskmanager "+id, filepath.Join(r.cfg.Work, fmt.Sprintf("taskmanager-%d.log", n)), r.cfg.Hummer, "taskmanager",
		"--jobmanager", r.rpc, "--slots", "1", "--data-addr", id, "--data-dir", filepath.Join(r.cfg.Work, fmt.Sprintf("taskmanager-%d-data", n)))
	if err != nil {
		return "", err
	}
	r.tms[id] = p
	r.order = append(r.order, id)
	if _, _, err := r.jm.waitLine(regexp.MustCompile(`msg="TaskManager registered".* tm=`+regexp.QuoteMeta(id)+`\b`), t, time.Now().Add(time.Minute)); err != nil {
		return "", err
	}
	return id, nil
}

// The ways a TaskManager is made to fail. SIGKILL ends the process: the
// kernel closes its connections, so the JobManager's control stream breaks
// at once. SIGSTOP freezes it, as a hung or cut-off machine would be: its
// connections stay open and only the heartbeat timeout (3 s) notices.
const (
	SignalKill = "SIGKILL"
	SignalStop = "SIGSTOP"
)

// killOne waits for the job to have run undisturbed for Settle, with a
// checkpoint of its current attempt complete, makes one of the TaskManagers
// running it fail with sig, measures the recovery, ends the TaskManager if it
// was only frozen, and starts a replacement, the new spare.
func (r *recovery) killOne(ctx context.Context, k int, sig string) (Kill, error) {
	kill := Kill{N: k, Signal: sig}
	time.Sleep(r.cfg.Settle) // the job's steady state before the kill is what is disturbed
	// A checkpoint of this attempt must be complete, or the restore goes back
	// to the one before.
	base, err := r.job(ctx)
	if err != nil {
		return kill, err
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		j, err := r.job(ctx)
		if err != nil {
			return kill, err
		}
		if j.Checkpoint > base.Checkpoint {
			break
		}
		if time.Now().After(deadline) {
			return kill, fmt.Errorf("no checkpoint completed in 30 s: %s", j.Raw)
		}
		time.Sleep(50 * time.Millisecond)
	}
	victim := r.running[k%2]
	kill.Victim = victim
	// Producers and epochs seen so far: the restored tasks fence the old
	// ones and write with epochs never seen before.
	old := r.out.producers()
	vp := r.tms[victim]
	delete(r.tms, victim)
	var tKill time.Time
	if sig == SignalKill {
		tKill = vp.kill()
	} else {
		tKill = vp.freeze()
		defer vp.kill()
	}
	deadline := tKill.Add(r.cfg.Recovery)

	lost, _, err := r.jm.waitLine(tmLost, tKill, deadline)
	if err != nil {
		return kill, err
	}
	failed, _, err := r.jm.waitLine(jobFailed, tKill, deadline)
	if err != nil {
		return kill, err
	}
	detect := lost.at
	if failed.at.Before(detect) {
		detect = failed.at
	}
	kill.DetectMs, kill.RestartMs = ms(lost.at.Sub(tKill)), ms(failed.at.Sub(tKill))
	// The old attempt has ended when the JobManager logs the failure: its
	// surviving tasks were cancelled and reported done. What the readers get
	// after that, from a producer epoch never seen before the kill, comes from
	// the restored tasks.
	fresh := func(a arrival) bool { return !old[a.producer] }
	first, err := r.out.waitFirst(failed.at, fresh, deadline)
	if err != nil {
		return kill, fmt.Errorf("the restored job's first output: %w", err)
	}
	kill.FirstOutputMs, kill.DetectToOutputMs = ms(first.at.Sub(tKill)), ms(first.at.Sub(detect))
	kill.ReplayedLines = first.seq < r.out.maxSeqBefore(tKill)
	committed, err := r.done.waitFirst(failed.at, fresh, deadline)
	if err != nil {
		return kill, fmt.Errorf("the restored job's first committed output: %w", err)
	}
	kill.FirstCommittedMs = ms(committed.at.Sub(tKill))
	live, err := r.out.waitFirst(failed.at, func(a arrival) bool { return fresh(a) && a.latency <= caughtUpLatency }, deadline)
	if err != nil {
		return kill, fmt.Errorf("the restored job catching up: %w", err)
	}
	kill.CaughtUpMs = ms(live.at.Sub(tKill))

	// Where the restored job runs: the TaskManagers whose sinks readied
	// themselves after the failure.
	var running []string
	var ready time.Time
	for {
		running, ready = running[:0], time.Time{}
		for id, p := range r.tms {
			if at, ok := p.first(sinkReady, failed.at); ok {
				running = append(running, id)
				ready = later(ready, at)
			}
		}
		if len(running) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			return kill, fmt.Errorf("after the restore, %d TaskManagers run the job's sinks, not 2", len(running))
		}
		time.Sleep(10 * time.Millisecond)
	}
	kill.TasksReadyMs = ms(ready.Sub(tKill))
	slices.Sort(running)
	r.running = running
	for id := range r.tms {
		if !slices.Contains(running, id) {
			r.spare = id
		}
	}
	j, err := r.job(ctx)
	if err != nil {
		return kill, err
	}
	kill.Restarts, kill.RestoredFrom = j.Restarts, j.Checkpoint
	// The replacement: the new spare, as the killed one's successor.
	if _, err := r.startTM(); err != nil {
		return kill, err
	}
	return kill, nil
}

// job returns the job's SHOW PROCESSLIST row; an error if it stopped.
func (r *recovery) job(ctx context.Context) (job, error) {
	jobs, err := processList(ctx, r.conn)
	if err != nil {
		return job{}, err
	}
	j, ok := jobs[r.jobID]
	if !ok || j.State != "running" {
		return j, fmt.Errorf("job %s is not running: %s", r.jobID, j.Raw)
	}
	return j, nil
}

func (r *recovery) stopAll() {
	if r.conn != nil {
		r.conn.Close(context.Background())
	}
	if r.jm != nil {
		r.jm.stop()
	}
	for _, p := range r.tms {
		p.stop()
	}
}

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func ms(d time.Duration) float64 { return round(float64(d)/float64(time.Millisecond), 1) }

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
