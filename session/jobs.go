package session

// Continuous jobs: keeping them in the catalog, resuming them when the
// engine restarts, SHOW PROCESSLIST and KILL.

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/jobmanager"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/sql"
)

// checkpointInterval returns the session's checkpoint_interval (0: none).
func (s *Session) checkpointInterval() time.Duration {
	v := s.vars["checkpoint_interval"]
	if v == "" {
		return s.e.cfg.CheckpointInterval
	}
	d, _ := parseInterval(v) // checked by SET
	return d
}

// continuousOptions returns the options of a continuous job: checkpoints
// every checkpoint_interval into the engine's store (none when the interval is
// 0 or there is no store), failing over after tolerable_failed_checkpoints
// failed in a row, its restarts recorded in the catalog.
func (s *Session) continuousOptions() jobmanager.JobOptions {
	opts := jobmanager.JobOptions{OnRestart: s.e.recordRestart}
	if iv := s.checkpointInterval(); iv > 0 && s.e.cfg.CheckpointURL != "" {
		opts.CheckpointURL, opts.CheckpointInterval = s.e.cfg.CheckpointURL, iv
		opts.FailoverAfter = s.intVar("tolerable_failed_checkpoints") + 1
	}
	return opts
}

// recordRestart keeps a recorded job's count of restarts in the catalog, so
// that it counts on across the engine's restarts.
func (e *Engine) recordRestart(j *jobmanager.Job) {
	if err := e.catalog.SetJobRestarts(j.ID, j.Checkpoints().Restarts); err != nil {
		e.cfg.Log.Warn("recording a restart", "job", j.ID, "err", err)
	}
}

// parseInterval reads an interval setting: a Go duration ('500ms', '2s') or a
// number of milliseconds, as PostgreSQL's time settings take.
func parseInterval(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n >= 0 {
		return time.Duration(n) * time.Millisecond, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("want a duration such as '500ms' or '2s', or milliseconds")
	}
	return d, nil
}

// keep records a continuous job (of view, if not "") in the catalog so that a
// restarted engine resumes it, and forgets it when it ends (killed, failed,
// finished) while the engine runs.
func (e *Engine) keep(job *jobmanager.Job, view string) {
	if r := e.jobRecord(job, view); r != nil {
		if err := e.catalog.AddJob(r); err != nil {
			e.cfg.Log.Warn("job not recorded: it will not resume after a restart", "job", job.ID, "err", err)
		}
	}
	e.watch(job)
}

// jobRecord is what the catalog records of a continuous job (of view, if
// not ""), or nil, logged, when its graph does not encode.
func (e *Engine) jobRecord(job *jobmanager.Job, view string) *sql.JobRecord {
	graph, err := json.Marshal(job.Graph.Job)
	if err != nil {
		e.cfg.Log.Warn("job not recorded: it will not resume after a restart", "job", job.ID, "err", err)
		return nil
	}
	return &sql.JobRecord{ID: job.ID, Statement: job.Statement, Graph: graph, View: view,
		Restarts: job.Checkpoints().Restarts, FailoverAfter: job.Options().FailoverAfter}
}

// watch keeps a recorded job's count of restarts saved and forgets the job
// when it ends while the engine runs.
func (e *Engine) watch(job *jobmanager.Job) {
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		// The count of restarts is saved at each restart (recordRestart);
		// when that failed (the disk was full) it is saved again here.
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
	wait:
		for {
			select {
			case <-job.Done():
				break wait
			case <-e.closing:
				return // the engine stops: the job resumes with it
			case <-tick.C:
				e.catalog.SetJobRestarts(job.ID, job.Checkpoints().Restarts) // its failure was logged
			}
		}
		select {
		case <-e.closing:
		default:
			if err := e.catalog.RemoveJob(job.ID); err != nil {
				e.cfg.Log.Warn("forgetting job", "job", job.ID, "err", err)
			}
		}
	}()
}

// resume restarts what the catalog says was running: the continuous jobs,
// each from its newest complete checkpoint, and the views.
func (e *Engine) resume() {
	var starts []pendingStart
	resumed := map[string]bool{} // views whose jobs resume from checkpoints
	for _, r := range e.catalog.Jobs() {
		if r.View != "" {
			resumed[r.View] = true
		}
		starts = append(starts, pendingStart{what: "job " + r.ID, job: r, start: func() error { return e.resumeJob(r) }})
	}
	for _, t := range e.catalog.Tables() {
		if t.IsView() && !resumed[t.Name] {
			starts = append(starts, pendingStart{what: "view " + t.Name, start: func() error { return e.restartView(t) }})
		}
	}
	e.startAll(starts)
}

// pendingStart is a job to start again after a restart.
type pendingStart struct {
	what  string
	job   *sql.JobRecord // the recorded job, or nil for a view to start afresh
	start func() error
}

// waitingJob is a recorded job whose resumption waits for slots, for SHOW
// PROCESSLIST.
type waitingJob struct {
	rec   *sql.JobRecord
	since time.Time
	err   error
}

// WaitingJob is a recorded job whose resumption after a restart waits for
// slots (a cluster's TaskManagers have not registered yet).
type WaitingJob struct {
	ID, Statement string
	Since         time.Time
	Err           error // why it cannot start yet
}

// WaitingJobs returns the recorded jobs waiting for slots, by id, which the
// JobManager does not list yet (SHOW PROCESSLIST shows them too).
func (e *Engine) WaitingJobs() []WaitingJob {
	e.waitMu.Lock()
	defer e.waitMu.Unlock()
	out := make([]WaitingJob, 0, len(e.waiting))
	for _, w := range e.waiting {
		out = append(out, WaitingJob{ID: w.rec.ID, Statement: w.rec.Statement, Since: w.since, Err: w.err})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
	return out
}

// setWaiting records that p waits for slots (err), or no longer (nil).
func (e *Engine) setWaiting(p pendingStart, err error) {
	if p.job == nil {
		return
	}
	e.waitMu.Lock()
	defer e.waitMu.Unlock()
	if err == nil {
		delete(e.waiting, p.job.ID)
		return
	}
	w, ok := e.waiting[p.job.ID]
	if !ok {
		if e.waiting == nil {
			e.waiting = map[string]*waitingJob{}
		}
		w = &waitingJob{rec: p.job, since: time.Now()}
		e.waiting[p.job.ID] = w
	}
	w.err = err
}

// startAll starts each in order. A cluster's TaskManagers may not have
// registered yet: what finds no slots is retried every second until it starts
// or the engine closes; other failures are logged.
func (e *Engine) startAll(starts []pendingStart) {
	try := func(starts []pendingStart) (waiting []pendingStart) {
		for _, p := range starts {
			err := p.start()
			if errors.Is(err, jobmanager.ErrNoSlots) {
				waiting = append(waiting, p)
				e.setWaiting(p, err)
				continue
			}
			e.setWaiting(p, nil)
			if err != nil {
				e.cfg.Log.Error("not restarted", "what", p.what, "err", err)
			}
		}
		return waiting
	}
	waiting := try(starts)
	if len(waiting) == 0 {
		return
	}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for len(waiting) > 0 {
			select {
			case <-e.closing:
				return
			case <-tick.C:
			}
			waiting = try(waiting)
		}
	}()
}

// resumeJob submits a recorded job again under its id, from its checkpoints.
func (e *Engine) resumeJob(r *sql.JobRecord) error {
	var jg exec.JobGraph
	if err := json.Unmarshal(r.Graph, &jg); err != nil {
		return err
	}
	// The engine's restart is one of the job's.
	opts := jobmanager.JobOptions{ID: r.ID, Resume: true, Restarts: r.Restarts + 1, OnRestart: e.recordRestart}
	if e.cfg.CheckpointURL != "" {
		opts.FailoverAfter = r.FailoverAfter
		opts.CheckpointURL, opts.CheckpointInterval = e.cfg.CheckpointURL, e.cfg.CheckpointInterval
	}
	if r.View != "" {
		if t, ok := e.catalog.Table(r.View); !ok || !t.IsView() {
			return e.catalog.RemoveJob(r.ID) // the view was dropped meanwhile
		}
	}
	job, err := e.jm.SubmitJob(r.Statement, &jg, nil, opts)
	if err != nil {
		return err
	}
	e.cfg.Log.Info("job resumed", "job", job.ID, "checkpoint", job.Checkpoints().RestoredFrom)
	if r.View != "" && job.Checkpoints().RestoredFrom == 0 {
		// No checkpoint to resume from: the view starts afresh (a view over
		// stored tables would read a snapshot that went with the restart).
		job.Cancel(errors.New("no checkpoint to resume the view from"))
		<-job.Done()
		if err := e.catalog.RemoveJob(r.ID); err != nil {
			return err
		}
		t, _ := e.catalog.Table(r.View)
		return e.restartView(t)
	}
	if r.View != "" {
		e.setView(r.View, job)
	}
	e.keep(job, r.View)
	return nil
}

// showJobs lists the jobs: continuous INSERT jobs, and queries still running.
func (s *Session) showJobs() (*Result, error) {
	schema := types.Schema{{Name: "id", Type: types.Int64Type}, {Name: "statement", Type: types.StringType},
		{Name: "state", Type: types.StringType}, {Name: "started", Type: types.TimestampType},
		{Name: "rows_in", Type: types.Int64Type}, {Name: "rows_out", Type: types.Int64Type},
		{Name: "bad_records", Type: types.Int64Type}, {Name: "dead_letters", Type: types.Int64Type},
		{Name: "status", Type: types.StringType}, {Name: "error", Type: types.StringType},
		{Name: "restarts", Type: types.Int64Type}, {Name: "checkpoint", Type: types.Int64Type},
		{Name: "restored_from", Type: types.Int64Type}, {Name: "checkpoint_ms", Type: types.Float64Type},
		{Name: "checkpoint_bytes", Type: types.Int64Type}, {Name: "alignment_ms", Type: types.Float64Type},
		{Name: "failed_checkpoints", Type: types.Int64Type}, {Name: "checkpoint_failure", Type: types.StringType},
		{Name: "late_rows", Type: types.Int64Type}, {Name: "watermark", Type: types.TimestampType},
		{Name: "watermark_lag_s", Type: types.Float64Type}}
	var rows [][]types.Value
	listed := map[string]bool{}
	for _, j := range s.e.jm.Jobs() {
		listed[j.ID] = true
		id, _ := strconv.ParseInt(j.ID, 10, 64)
		var in, out, bad, dead, late int64
		// The job's watermark: the least its watermark operators emitted
		// (idle ones aside), NULL when none has.
		wm := int64(-1)
		var status []string
		for tid, m := range j.Metrics() {
			if j.Graph.Job.Vertices[tid.Vertex].IsSource() {
				in += m.RowsIn.Load()
			}
			out += m.SinkRows.Load()
			bad += m.BadRecords.Load()
			dead += m.DeadLetters.Load()
			late += m.LateRows.Load()
			if w := m.Watermark.Load(); w > 0 && (wm < 0 || w < wm) {
				wm = w
			}
			if st := m.Status(); st != "" {
				status = append(status, fmt.Sprintf("%s[%d]: %s", j.Graph.Job.Vertices[tid.Vertex].Name, tid.Subtask, st))
			}
		}
		sort.Strings(status)
		ck := j.Checkpoints()
		checkpoint := types.NullValue(types.Int64Type)
		if ck.Last > 0 {
			checkpoint = types.IntValue(ck.Last)
		}
		statusText := types.NullValue(types.StringType)
		if len(status) > 0 {
			statusText = types.StringValue(strings.Join(status, "; "))
		}
		errText := types.NullValue(types.StringType)
		if err := j.Err(); err != nil {
			errText = types.StringValue(err.Error())
		} else if err := j.Failure(); err != nil {
			errText = types.StringValue(err.Error()) // why it is restarting or waiting
		}
		ckFailure := types.NullValue(types.StringType)
		if ck.LastFailure != "" {
			ckFailure = types.StringValue(ck.LastFailure)
		}
		rows = append(rows, []types.Value{types.IntValue(id), types.StringValue(j.Statement),
			types.StringValue(string(j.State())), types.TimestampValue(j.Started.UnixMicro()),
			types.IntValue(in), types.IntValue(out), types.IntValue(bad), types.IntValue(dead), statusText, errText,
			types.IntValue(int64(ck.Restarts)), checkpoint, optInt(ck.RestoredFrom),
			optMillis(ck.Last, ck.LastDuration), ckBytes(ck.Last, ck.LastBytes), optMillis(ck.Last, ck.LastAlign),
			types.IntValue(ck.Failed), ckFailure, types.IntValue(late), wmValue(wm), wmLag(wm)})
	}
	// Recorded jobs whose resumption waits for slots (a cluster's
	// TaskManagers not registered yet) are jobs too.
	s.e.waitMu.Lock()
	var waiting []*waitingJob
	for _, w := range s.e.waiting {
		if !listed[w.rec.ID] {
			waiting = append(waiting, w)
		}
	}
	s.e.waitMu.Unlock()
	sort.Slice(waiting, func(a, b int) bool { return waiting[a].rec.ID < waiting[b].rec.ID })
	null := func(t types.Type) types.Value { return types.NullValue(t) }
	for _, w := range waiting {
		id, _ := strconv.ParseInt(w.rec.ID, 10, 64)
		rows = append(rows, []types.Value{types.IntValue(id), types.StringValue(w.rec.Statement),
			types.StringValue(string(jobmanager.JobWaitingForSlots)), types.TimestampValue(w.since.UnixMicro()),
			null(types.Int64Type), null(types.Int64Type), null(types.Int64Type), null(types.Int64Type),
			null(types.StringType), types.StringValue(w.err.Error()), types.IntValue(int64(w.rec.Restarts)),
			null(types.Int64Type), null(types.Int64Type), null(types.Float64Type), null(types.Int64Type),
			null(types.Float64Type), null(types.Int64Type), null(types.StringType), null(types.Int64Type),
			null(types.TimestampType), null(types.Float64Type)})
	}
	return s.valuesResult("SHOW", schema, rows)
}

// wmValue is a job's watermark, NULL when it has none (-1).
func wmValue(wm int64) types.Value {
	if wm < 0 {
		return types.NullValue(types.TimestampType)
	}
	return types.TimestampValue(wm)
}

// wmLag is how far a job's watermark is behind the wall clock, in seconds.
func wmLag(wm int64) types.Value {
	if wm < 0 {
		return types.NullValue(types.Float64Type)
	}
	return types.FloatValue(float64(time.Now().UnixMicro()-wm) / 1e6)
}

// optInt is n, or NULL for 0 (no such checkpoint).
func optInt(n int64) types.Value {
	if n == 0 {
		return types.NullValue(types.Int64Type)
	}
	return types.IntValue(n)
}

// optMillis is d in milliseconds, or NULL when there is no checkpoint.
func optMillis(checkpoint int64, d time.Duration) types.Value {
	if checkpoint == 0 {
		return types.NullValue(types.Float64Type)
	}
	return types.FloatValue(float64(d.Microseconds()) / 1000)
}

// ckBytes is the size of a checkpoint's state, or NULL when there is none.
func ckBytes(checkpoint, n int64) types.Value {
	if checkpoint == 0 {
		return types.NullValue(types.Int64Type)
	}
	return types.IntValue(n)
}

// kill cancels a job.
func (s *Session) kill(id string) (*Result, error) {
	for _, j := range s.e.jm.Jobs() {
		if j.ID == id {
			j.Cancel(fmt.Errorf("%w: KILL %s", exec.ErrJobCancelled, id))
			<-j.Done()
			return &Result{Tag: "KILL"}, nil
		}
	}
	return nil, sql.Errorf(sql.ErrInvalidValue, 0, "no job %s (SHOW PROCESSLIST lists them)", id)
}
