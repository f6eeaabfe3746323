package session

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/jobmanager"
	"github.com/hummer-db/hummer/planner"
	"github.com/hummer-db/hummer/sql"
)

// views are the engine's materialised views: each has a job whose last task,
// a "view" operator, keeps the query's rows inside the dataflow (where its
// checkpoints take them); a query over the view reads them through the job
// when it is planned.
type views struct {
	mu sync.Mutex
	m  map[string]*jobmanager.Job // by name
}

// createView starts the view's job, then adds the view to the catalog with
// the job's record, if it resumes after a restart, in one save (each save
// is written and synced: two made CREATE VIEW a few ms slower).
func (s *Session) createView(st *sql.CreateView, text string) (*Result, error) {
	name := st.View.Name
	if err := s.e.catalog.CanCreate(name); err != nil {
		return nil, err // before a job starts for nothing
	}
	job, durable, err := s.startView(st.View, st.Query, text)
	if err != nil {
		return nil, err
	}
	var rec *sql.JobRecord
	if durable {
		rec = s.e.jobRecord(job, name)
	}
	if err := s.e.catalog.CreateView(st.View, rec); err != nil { // a view of that name created meanwhile
		job.Cancel(fmt.Errorf("%w: CREATE VIEW %s failed: %w", exec.ErrJobCancelled, name, err))
		<-job.Done()
		return nil, err
	}
	s.e.setView(name, job)
	if rec != nil {
		s.e.watch(job)
	}
	return &Result{Tag: "CREATE VIEW", Notices: []string{
		fmt.Sprintf("job %s keeps view %s; SHOW PROCESSLIST shows it, DROP VIEW %s stops it", job.ID, st.View.Name, st.View.Name),
	}}, nil
}

// startView submits the job that keeps view t, the result of q. Over a
// stream, or tables it stores, it takes checkpoints; with durable ones (a
// data directory) the caller records it (durable), to resume with the
// engine.
func (s *Session) startView(t *sql.Table, q *sql.Query, text string) (job *jobmanager.Job, durable bool, err error) {
	// Not under a statement's context: it also resumes views as the engine
	// starts.
	//
	// Over tables Hummer stores and no stream, the view follows the tables'
	// changes (their scans read a snapshot, then every later commit): its
	// job runs until the view is dropped, taking checkpoints (the first says
	// it has caught up). With the engine's checkpoints (a data directory) it
	// is recorded and resumes after a restart from its position in the
	// tables' changes; else it starts again from a snapshot.
	stream := planner.Continuous(q.Plan, s.e.cfg.Unbounded)
	follow := !stream && readsStored(q.Plan)
	_, jg, pins, err := s.planWith(context.Background(), q, follow, viewSink)
	if err != nil {
		return nil, false, err
	}
	var opts jobmanager.JobOptions
	switch {
	case stream:
		opts = s.continuousOptions()
	case follow:
		opts = s.continuousOptions()
		if opts.CheckpointURL == "" {
			opts.CheckpointURL = s.e.scratchCheckpoints
			opts.CheckpointInterval = max(s.checkpointInterval(), 100*time.Millisecond)
		}
		opts.CheckpointAtStart = true
	}
	job, err = s.e.jm.SubmitJob(text, jg, nil, opts)
	if err != nil {
		pins.release()
		return nil, false, err
	}
	pins.holdUntil(job)
	durable = (stream || follow) && opts.CheckpointURL != "" && s.e.cfg.CheckpointURL != ""
	return job, durable, nil
}

func (e *Engine) setView(name string, job *jobmanager.Job) {
	e.views.mu.Lock()
	defer e.views.mu.Unlock()
	if e.views.m == nil {
		e.views.m = map[string]*jobmanager.Job{}
	}
	e.views.m[name] = job
}

// restartView binds view t's query again and starts its job after a restart,
// unless the view was dropped meanwhile or its job resumed from checkpoints:
// it begins again from its sources' start (or the offsets their Kafka consumer
// groups committed). A view whose query no longer binds (a table it read was
// dropped) stays in the catalog without a job, and reading it says so.
func (e *Engine) restartView(t *sql.Table) error {
	if cur, ok := e.catalog.Table(t.Name); !ok || cur != t {
		return nil
	}
	e.views.mu.Lock()
	_, running := e.views.m[t.Name] // resumed from its checkpoints
	e.views.mu.Unlock()
	if running {
		return nil
	}
	stmts, err := sql.Parse(t.Query)
	if err != nil {
		return err
	}
	if len(stmts) != 1 {
		return fmt.Errorf("view query has %d statements", len(stmts))
	}
	st, err := sql.Bind(stmts[0], e.catalog, t.Query)
	if err != nil {
		return err
	}
	q, ok := st.(*sql.Query)
	if !ok {
		return fmt.Errorf("view query is not a SELECT")
	}
	job, durable, err := e.NewSession().startView(t, q, "CREATE VIEW "+t.Name+" AS "+t.Query)
	if err != nil {
		return err
	}
	e.setView(t.Name, job)
	if durable {
		e.keep(job, t.Name)
	}
	return nil
}

// snapshot returns the rows of view name (planner.Options.Snapshot). With
// wait it first waits, as long as ctx lets it (statement_timeout, a cancel),
// until the view has caught up with its inputs: the job has read its bounded
// inputs to the end, or its first checkpoint's barrier reached the view (so
// a SELECT right after CREATE VIEW sees the whole result, not part of it). A
// job between attempts (restarting after a failure) is waited for a little.
func (e *Engine) snapshot(ctx context.Context, name string, wait bool) ([]byte, error) {
	e.views.mu.Lock()
	job, ok := e.views.m[name]
	e.views.mu.Unlock()
	if !ok {
		return nil, sql.Errorf(sql.ErrUnsupported, 0, "view %s has no job keeping it (its query failed to start after a restart: see the log); DROP VIEW %s and create it again", name, name)
	}
	if err := stoppedView(name, job); err != nil {
		return nil, err
	}
	start := time.Now()
	deadline := start.Add(10 * time.Second)
	for {
		data, err := job.ReadView(!wait)
		if err == nil {
			return data, nil
		}
		if errors.Is(err, exec.ErrViewNotReady) {
			// Catching up takes as long as the view's query: not bounded
			// by the restart deadline, only by ctx.
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-job.Done():
				if jerr := job.Err(); jerr != nil {
					return nil, fmt.Errorf("view %s: its job failed: %w", name, jerr)
				}
				return job.ReadView(true) // it ended: as caught up as it gets
			case <-time.After(viewPoll(time.Since(start))):
			}
			deadline = time.Now().Add(10 * time.Second)
			continue
		}
		select {
		case <-job.Done():
			if jerr := job.Err(); jerr != nil {
				return nil, fmt.Errorf("view %s: its job failed: %w", name, jerr)
			}
		default:
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("view %s: %w", name, err)
		}
		time.Sleep(50 * time.Millisecond) // the job is restarting
	}
}

// viewPoll is the pause between two looks at a view that has not caught up,
// waited for since waited: a millisecond for the first quarter second (a view
// over stored tables catches up in about the time of its query, and a SELECT
// right after CREATE VIEW, as TPC-H q15, answers as soon as it has), then
// 25 ms for a view that takes longer (over a stream's backlog), where a
// look at a TaskManager's view is a message each way.
func viewPoll(waited time.Duration) time.Duration {
	if waited < 250*time.Millisecond {
		return time.Millisecond
	}
	return 25 * time.Millisecond
}

// stoppedView refuses to read view name when its job was stopped (KILL):
// the rows it kept would be answered as current while its inputs move on.
// A job that finished (a view over bounded inputs) is read as it ended.
func stoppedView(name string, job *jobmanager.Job) error {
	select {
	case <-job.Done():
	default:
		return nil
	}
	err := job.Err()
	switch {
	case errors.Is(err, exec.ErrJobCancelled):
		return sql.Errorf(sql.ErrObjectState, 0, "view %s is stopped: its job %s was stopped (%v) and no longer follows its inputs; DROP VIEW %s and create it again",
			name, job.ID, err, name)
	case err != nil:
		return fmt.Errorf("view %s: its job failed: %w", name, err)
	}
	return nil
}

// dropViews stops the views' jobs and removes them from the catalog; the
// jobs' checkpoints are deleted after, off the statement's path.
func (s *Session) dropViews(st *sql.DropView) (*Result, error) {
	notices := s.missingNotices("view", st.Names) // tables.go
	if err := s.e.catalog.DropTables(st.Names, st.IfExists); err != nil {
		return nil, err
	}
	for _, name := range st.Names {
		s.e.views.mu.Lock()
		job, ok := s.e.views.m[name]
		delete(s.e.views.m, name)
		s.e.views.mu.Unlock()
		if ok {
			job.Cancel(fmt.Errorf("%w: DROP VIEW %s", exec.ErrJobCancelled, name))
			<-job.Done()
			s.e.wg.Add(1)
			go func() {
				defer s.e.wg.Done()
				if err := job.DropCheckpoints(context.Background()); err != nil {
					s.e.cfg.Log.Warn("deleting a dropped view's checkpoints", "view", name, "job", job.ID, "err", err)
				}
			}()
		}
	}
	return &Result{Tag: "DROP VIEW", Notices: notices}, nil
}
