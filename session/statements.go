package session

// Planning a statement into a JobGraph and running it: queries, COPY (...) TO
// STDOUT, INSERT INTO ... SELECT and EXPLAIN.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/hummer-db/hummer/connectors/table"
	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/jobmanager"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/planner"
	"github.com/hummer-db/hummer/sql"
)

// viewSink, passed to plan as the sink, makes the rows go to a view operator.
var viewSink = &exec.ConnectorSpec{Connector: "view"}

// plan turns a query into its graphs; with sink set its rows go to that
// connector (or, for viewSink, a view operator) instead of to the client.
// Between its phases it checks ctx, so that a cancel or statement_timeout
// stops a statement still planning (57014).
//
// The scans of stored tables read the versions current now, pinned until the
// returned pins are released: the caller holds them until the job ends
// (pins.holdUntil), or releases them if it runs none.
func (s *Session) plan(ctx context.Context, q *sql.Query, sink ...*exec.ConnectorSpec) (*planner.StreamGraph, *exec.JobGraph, *pins, error) {
	return s.planWith(ctx, q, false, sink...)
}

// planWith is plan; with follow, the scans of stored tables follow their
// changes after their snapshot (a view over them).
func (s *Session) planWith(ctx context.Context, q *sql.Query, follow bool, sink ...*exec.ConnectorSpec) (*planner.StreamGraph, *exec.JobGraph, *pins, error) {
	sg, jg, ps, err := s.planPinned(ctx, q, follow, sink...)
	if err != nil {
		ps.release()
		return nil, nil, nil, err
	}
	return sg, jg, ps, nil
}

func (s *Session) planPinned(ctx context.Context, q *sql.Query, follow bool, sink ...*exec.ConnectorSpec) (*planner.StreamGraph, *exec.JobGraph, *pins, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, nil, err
	}
	var late *planner.LateRows
	var keep []string
	if v := s.vars["late_rows_table"]; v != "" {
		late = s.lateRows(v, sink...)
		for _, c := range late.Sink.Schema {
			keep = append(keep, c.Name)
		}
	}
	p := sql.OptimizeKeeping(q.Plan, keep)
	if err := ctx.Err(); err != nil {
		return nil, nil, nil, err
	}
	ps, err := s.e.pinScans(p, follow)
	if err != nil {
		return nil, nil, nil, err
	}
	wait := s.vars["wait_for_views"] != "off"
	opts := planner.Options{Parallelism: exec.AutoParallelism, Unbounded: s.e.cfg.Unbounded, Changelog: s.e.cfg.Upsert, Retracts: s.e.cfg.Retracts, SourceWatermarks: s.e.cfg.SourceWatermarks,
		Snapshot: func(name string) ([]byte, error) {
			if sql.IsSystemTableName(name) {
				return s.systemSnapshot(name)
			}
			return s.e.snapshot(ctx, name, wait)
		}}
	opts.Rows = func(p sql.Plan, upper bool) (float64, bool) { return sql.EstimateRows(p, s.e.catalog, upper) }
	opts.Lookup = table.Lookup
	if v := s.vars["parallelism"]; v != "auto" {
		opts.Parallelism = s.intVar("parallelism")
	}
	if v := s.vars["state_ttl"]; v != "" {
		opts.StateTTL, _ = parseTTL(v) // checked by SET
	}
	opts.StateBackend = s.vars["state_backend"]
	if v := s.vars["work_mem"]; v != "" {
		opts.WorkMem, _ = ParseSize(v, 1<<10) // checked by SET
	}
	opts.Late = late
	switch {
	case len(sink) > 0 && sink[0] == viewSink:
		opts.View = true
	case len(sink) > 0:
		opts.Sink = sink[0]
		opts.Upsert = len(opts.Sink.Key) > 0 && s.e.cfg.Upsert(opts.Sink.Connector)
	}
	sg, err := planner.Build(p, opts)
	if err != nil {
		return nil, nil, ps, err
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, ps, err
	}
	jg := planner.Fuse(sg)
	jg.Network = s.vars["network"]
	jg.NetworkTasks = s.vars["network_task"]
	jg.NoTaskMetrics = s.vars["task_metrics"] == "off"
	jg.MinParallelism = s.intVar("min_parallelism")
	jg.MaxParallelism = s.intVar("max_parallelism")
	return sg, jg, ps, ctx.Err()
}

func (s *Session) query(ctx context.Context, q *sql.Query, text string) (*Result, error) {
	if err := s.refuseUnbounded(q.Plan); err != nil {
		return nil, err
	}
	_, jg, pins, err := s.plan(ctx, q)
	if err != nil {
		return nil, err
	}
	rows := newJobRows(q.Plan.Schema())
	job, err := s.e.jm.Submit(text, jg, rows)
	if err != nil {
		pins.release()
		return nil, err
	}
	pins.holdUntil(job)
	rows.start(s.e.jm, job)
	return &Result{Tag: "SELECT", Rows: rows, Origins: sql.ColumnOrigins(q.Plan)}, nil
}

// refuseUnbounded refuses a query that would wait for the end of a stream.
func (s *Session) refuseUnbounded(p sql.Plan) error {
	if t := s.unboundedTable(p); t != nil {
		return sql.Errorf(sql.ErrUnsupported, 0,
			"table %s is a stream (%s) that never ends, so a SELECT over it would never answer; run the query continuously: keep its result in a view (CREATE VIEW v AS SELECT ..., then SELECT ... FROM v), write it to a table (INSERT INTO <table> SELECT ...), or stream its changes with COPY (SELECT ...) TO STDOUT",
			t.Name, t.Engine)
	}
	return nil
}

// unboundedTable returns a table read by p whose source never ends, or nil.
func (s *Session) unboundedTable(p sql.Plan) *sql.Table {
	if scan, ok := p.(*sql.Scan); ok && s.e.cfg.Unbounded != nil && s.e.cfg.Unbounded(scan.Table.Engine, scan.Table.Connection) {
		return scan.Table
	}
	for _, in := range p.Inputs() {
		if t := s.unboundedTable(in); t != nil {
			return t
		}
	}
	return nil
}

// insert starts a job writing the query's rows into the table's connector and
// returns at once: the job runs until its sources end, or for ever over an
// unbounded source (Kafka), until KILL. It does not depend on this session. A
// continuous job takes checkpoints, restarts from them after a failure, and is
// resumed from them when the engine restarts.
func (s *Session) insert(ctx context.Context, st *sql.Insert, text string) (*Result, error) {
	t := st.Table
	var opts jobmanager.JobOptions
	continuous := planner.Continuous(st.Query.Plan, s.e.cfg.Unbounded)
	if continuous {
		opts = s.continuousOptions()
	}
	if t.IsStored() && s.e.cfg.JobManager != nil && opts.CheckpointURL == "" {
		// On a cluster the table's sink only stages its changes in its
		// checkpoints, which this process commits through its store
		// (connectors/table/sink.go).
		return nil, sql.Errorf(sql.ErrUnsupported, 0, "a continuous INSERT into a table Hummer stores, on a cluster of TaskManager processes, commits its rows at checkpoints: turn them on (SET checkpoint_interval = '1s')")
	}
	sink, err := jobSinkSpec(t)
	if err != nil {
		return nil, err
	}
	_, jg, pins, err := s.plan(ctx, st.Query, &sink)
	if err != nil {
		return nil, err
	}
	job, err := s.e.jm.SubmitJob(text, jg, nil, opts)
	if err != nil {
		pins.release()
		return nil, err
	}
	pins.holdUntil(job)
	if continuous {
		s.e.keep(job, "")
	} else if s.e.cfg.InsertWaits != nil && s.e.cfg.InsertWaits(t.Engine) {
		return waitInsert(ctx, job)
	}
	return &Result{Tag: "INSERT 0 0", Notices: []string{
		fmt.Sprintf("job %s started: it writes into %s; SHOW PROCESSLIST shows it, KILL %s stops it", job.ID, t.Name, job.ID),
	}}, nil
}

// waitInsert waits for the job of a bounded INSERT to end and returns its
// tag, INSERT 0 n with n the rows its sinks wrote, or why it failed. A
// cancelled statement cancels the job.
func waitInsert(ctx context.Context, job *jobmanager.Job) (*Result, error) {
	select {
	case <-job.Done():
	case <-ctx.Done():
		job.Cancel(fmt.Errorf("%w: %w", exec.ErrJobCancelled, context.Cause(ctx)))
		<-job.Done()
		return nil, context.Cause(ctx)
	}
	if err := job.Err(); err != nil {
		return nil, err
	}
	var n int64
	for _, m := range job.Metrics() {
		n += m.SinkRows.Load()
	}
	return &Result{Tag: fmt.Sprintf("INSERT 0 %d", n)}, nil
}

// sinkSpec describes table t as a connector to write to.
func sinkSpec(t *sql.Table) exec.ConnectorSpec {
	return exec.ConnectorSpec{Connector: t.Engine, URL: t.Connection, Schema: t.Columns, Key: t.KeyColumns()}
}

// jobSinkSpec is sinkSpec of t as the sink of a job about to start: a
// stored table's URL names the job's sink with a run of its own
// (table.SinkURL), under which the table records what it committed.
func jobSinkSpec(t *sql.Table) (exec.ConnectorSpec, error) {
	spec := sinkSpec(t)
	if !t.IsStored() {
		return spec, nil
	}
	id, err := tableID(t)
	if err != nil {
		return spec, err
	}
	run := make([]byte, 8)
	if _, err := rand.Read(run); err != nil {
		return spec, err
	}
	spec.URL = table.SinkURL(id, hex.EncodeToString(run))
	return spec, nil
}

// sameTable reports whether sinks a and b write the same table.
func sameTable(a, b exec.ConnectorSpec) bool {
	if a.Connector != b.Connector {
		return false
	}
	if a.Connector == table.Name {
		x, errX := table.ID(a.URL)
		y, errY := table.ID(b.URL)
		return errX == nil && errY == nil && x == y
	}
	return a.URL == b.URL
}

func (s *Session) explain(ctx context.Context, st *sql.Explain, text string) (*Result, error) {
	sg, jg, pins, err := s.plan(ctx, st.Query)
	if err != nil {
		return nil, err
	}
	defer pins.release() // EXPLAIN ANALYZE reads the rows before it returns
	var plan string
	switch {
	case st.Format == "dot":
		plan = planner.ExplainDot(sg)
	case st.Analyze:
		// Run the query, discarding its rows, then show what every task did.
		if err := s.refuseUnbounded(st.Query.Plan); err != nil {
			return nil, err
		}
		rows := newJobRows(st.Query.Plan.Schema())
		job, err := s.e.jm.Submit(text, jg, rows)
		if err != nil {
			return nil, err
		}
		rows.start(s.e.jm, job)
		defer rows.Close()
		for {
			rec, err := rows.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, err
			}
			rec.Release()
		}
		plan = planner.Explain(sg, jg, job.Graph, job.Metrics())
	default:
		eg, err := s.e.jm.Schedule(jg)
		if err != nil {
			return nil, err
		}
		plan = planner.Explain(sg, jg, eg, nil)
	}
	var rows [][]types.Value
	for _, line := range strings.Split(strings.TrimRight(plan, "\n"), "\n") {
		rows = append(rows, []types.Value{types.StringValue(line)})
	}
	return s.valuesResult("EXPLAIN", explainSchema, rows)
}
