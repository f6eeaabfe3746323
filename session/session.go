package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/planner"
	"github.com/hummer-db/hummer/sql"
)

// Config configures an Engine.
type Config struct {
	// DataDir keeps the catalog, so tables survive a restart.
	DataDir string
	// Registry builds operators and connectors for the local TaskManager.
	Registry *exec.Registry
	// Validate checks a connector's options at CREATE TABLE time.
	Validate func(exec.ConnectorSpec) error
	// Unbounded reports whether a connector's source never ends (Kafka); a plain
	// SELECT over such a table is refused, since it would never answer.
	Unbounded func(connector string) bool
	// Upsert reports whether a connector's sink upserts by a table's PRIMARY
	// KEY, so that a query producing updates may write to it.
	Upsert func(connector string) bool
	// Slots of each TaskManager; 0 means one per core.
	Slots int
	// JobManager, when set, is the JobManager of a cluster whose TaskManagers run
	// in other processes (hummer jobmanager); the engine then runs none itself.
	JobManager *exec.JobManager
	// TaskManagers is the number of TaskManagers the engine runs in this process
	// (0 or 1: local mode, edges are queues). With more, each TaskManager gets its
	// own data server on loopback and edges between them are network channels,
	// exactly as between processes: a cluster in one process, for tests.
	TaskManagers int
	// CheckpointURL is where continuous INSERT jobs keep their checkpoints (an
	// exec/checkpoint bucket URL); empty means file://<DataDir>/checkpoints, or
	// no checkpoints without a DataDir.
	CheckpointURL string
	// CheckpointInterval is the default time between checkpoints (1s when 0);
	// SET checkpoint_interval changes it per session, '0' turning them off.
	CheckpointInterval time.Duration
	// Alloc is the allocator of every task; nil means the TaskManagers' PoolAllocator.
	Alloc memory.Allocator
	// OnClose, if set, runs when the engine closes, after its jobs stopped (it
	// releases what the connectors hold, such as the memory tables).
	OnClose func()
	Log     *slog.Logger
}

// Engine is the part of Hummer a client talks to: the catalog and a JobManager.
// In local mode the JobManager calls one TaskManager in this process directly,
// as the paper's local mode does; given Config.JobManager it schedules on the
// TaskManagers of a cluster instead.
type Engine struct {
	cfg     Config
	catalog *sql.Catalog
	jm      *exec.JobManager
	data    []*exec.DataServer
	views   views
	closing chan struct{} // closed by Close, for the engine's goroutines
	wg      sync.WaitGroup
}

// Open starts an engine over the catalog in cfg.DataDir.
func Open(cfg Config) (*Engine, error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Slots <= 0 {
		cfg.Slots = runtime.NumCPU()
	}
	if cfg.Validate == nil {
		cfg.Validate = func(exec.ConnectorSpec) error { return nil }
	}
	cat, err := sql.OpenCatalog(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	if err := cat.EnsureSuperuser(Superuser, ""); err != nil { // auth.go
		return nil, err
	}
	if cfg.Upsert == nil {
		cfg.Upsert = func(string) bool { return false }
	}
	if cfg.CheckpointURL == "" && cfg.DataDir != "" {
		dir, err := filepath.Abs(filepath.Join(cfg.DataDir, "checkpoints"))
		if err != nil {
			return nil, err
		}
		cfg.CheckpointURL = "file://" + dir
	}
	if cfg.CheckpointInterval <= 0 {
		cfg.CheckpointInterval = time.Second
	}
	if cfg.JobManager != nil {
		e := &Engine{cfg: cfg, catalog: cat, jm: cfg.JobManager, closing: make(chan struct{})}
		e.resume()
		return e, nil
	}
	e := &Engine{cfg: cfg, catalog: cat, jm: exec.NewJobManager(cfg.Log), closing: make(chan struct{})}
	if cfg.TaskManagers <= 1 {
		e.jm.AddTaskManager(exec.NewTaskManager(exec.TaskManagerConfig{
			ID: "local", Slots: cfg.Slots, Registry: cfg.Registry, Alloc: cfg.Alloc, Log: cfg.Log,
		}))
		e.resume()
		return e, nil
	}
	for i := 0; i < cfg.TaskManagers; i++ {
		data, err := exec.ListenData(exec.DataServerConfig{Addr: "127.0.0.1:0", Log: cfg.Log})
		if err != nil {
			e.Close()
			return nil, err
		}
		e.data = append(e.data, data)
		e.jm.AddTaskManager(exec.NewTaskManager(exec.TaskManagerConfig{
			ID: data.Addr().String(), Slots: cfg.Slots, Registry: cfg.Registry, Alloc: cfg.Alloc, Log: cfg.Log, Data: data,
		}))
	}
	e.resume()
	return e, nil
}

// Close cancels running jobs and waits for them to stop.
func (e *Engine) Close() error {
	close(e.closing)
	e.wg.Wait()
	e.jm.Close()
	for _, d := range e.data {
		d.Close()
	}
	if e.cfg.OnClose != nil {
		e.cfg.OnClose()
	}
	return nil
}

// slots returns the number of slots the cluster has now (TaskManagers of a
// distributed cluster come and go).
func (e *Engine) slots() int { return max(1, len(e.jm.Slots())) }

// JobManager returns the engine's JobManager.
func (e *Engine) JobManager() *exec.JobManager { return e.jm }

// Session is one client's connection state: its variables and running statement.
// A Session is used by one goroutine at a time.
type Session struct {
	e    *Engine
	vars map[string]types.Value
	user string // the client's user, "" for the engine's own sessions (auth.go)
}

// NewSession starts a session with default variables.
func (e *Engine) NewSession() *Session {
	return &Session{e: e, vars: defaultVars()}
}

// Exec runs every statement of query in order, calling emit with each result; it
// stops at the first error and returns it. A syntax error anywhere in query runs
// nothing. emit must consume (or Close) Result.Rows before returning.
func (s *Session) Exec(ctx context.Context, query string, emit func(*Result) error) error {
	stmts, err := sql.Parse(query)
	if err != nil {
		return err
	}
	for _, stmt := range stmts {
		res, err := s.run(ctx, stmt, query)
		if err != nil {
			return err
		}
		err = emit(res)
		if res.Rows != nil {
			res.Rows.Close()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Close ends the session.
func (s *Session) Close() {}

func (s *Session) run(ctx context.Context, node ast.StmtNode, query string) (*Result, error) {
	stmt, err := sql.Bind(node, s.e.catalog, query)
	if err != nil {
		return nil, err
	}
	return s.runBound(ctx, stmt, node.Text())
}

// execBound runs a bound statement whose text is text; runBound (auth.go)
// checks privileges first.
func (s *Session) execBound(ctx context.Context, stmt sql.Statement, text string) (*Result, error) {
	switch st := stmt.(type) {
	case *sql.CreateTable:
		t := st.Table
		t.Engine = strings.ToLower(t.Engine) // connector names are lower case
		if err := s.e.cfg.Validate(sinkSpec(t)); err != nil {
			return nil, err
		}
		if err := s.e.catalog.Create(t, st.IfNotExists); err != nil {
			return nil, err
		}
		return &Result{Tag: "CREATE TABLE"}, nil
	case *sql.CreateView:
		return s.createView(st, text)
	case *sql.DropView:
		return s.dropViews(st)
	case *sql.DropTable:
		if err := s.e.catalog.DropTables(st.Names, st.IfExists); err != nil {
			return nil, err
		}
		return &Result{Tag: "DROP TABLE"}, nil
	case *sql.ShowTables:
		schema := showTablesSchema
		var rows [][]types.Value
		for _, t := range s.e.catalog.Tables() {
			conn := t.Connection
			if t.IsView() {
				conn = t.Query
			}
			rows = append(rows, []types.Value{types.StringValue(t.Name), types.StringValue(t.Engine), types.StringValue(conn)})
		}
		return s.valuesResult("SHOW", schema, rows)
	case *sql.Describe:
		schema := describeSchema
		var rows [][]types.Value
		for _, c := range st.Table.Columns {
			rows = append(rows, []types.Value{types.StringValue(c.Name), types.StringValue(c.Type.String())})
		}
		return s.valuesResult("DESCRIBE", schema, rows)
	case *sql.Set:
		if err := s.set(st.Name, st.Value); err != nil {
			return nil, err
		}
		return &Result{Tag: "SET"}, nil
	case *sql.Show:
		if st.Name == "" {
			return s.showAll()
		}
		v, ok := s.vars[st.Name]
		if !ok {
			return nil, sql.Errorf(sql.ErrUnknownVariable, 0, "unrecognized configuration parameter %q", st.Name)
		}
		return s.valuesResult("SHOW", types.Schema{{Name: st.Name, Type: types.StringType}},
			[][]types.Value{{types.StringValue(formatVar(v))}})
	case *sql.Explain:
		return s.explain(ctx, st, text)
	case *sql.Query:
		return s.query(ctx, st, text)
	case *sql.Insert:
		return s.insert(st, text)
	case *sql.ShowJobs:
		return s.showJobs()
	case *sql.Kill:
		return s.kill(st.JobID)
	}
	return nil, sql.Errorf(sql.ErrUnsupported, 0, "statement %T is not supported", stmt)
}

// viewSink, passed to plan as the sink, makes the rows go to a view operator.
var viewSink = &exec.ConnectorSpec{Connector: "view"}

// plan turns a query into its graphs; with sink set its rows go to that
// connector (or, for viewSink, a view operator) instead of to the client.
func (s *Session) plan(q *sql.Query, sink ...*exec.ConnectorSpec) (*planner.StreamGraph, *exec.JobGraph, error) {
	p := sql.Optimize(q.Plan)
	opts := planner.Options{Parallelism: exec.AutoParallelism, Unbounded: s.e.cfg.Unbounded, Snapshot: s.e.snapshot}
	if v := s.vars["parallelism"]; v.Type.ID == types.Int64 {
		opts.Parallelism = int(v.Int)
	}
	switch {
	case len(sink) > 0 && sink[0] == viewSink:
		opts.View = true
	case len(sink) > 0:
		opts.Sink = sink[0]
		opts.Upsert = len(opts.Sink.Key) > 0 && s.e.cfg.Upsert(opts.Sink.Connector)
	}
	sg, err := planner.Build(p, opts)
	if err != nil {
		return nil, nil, err
	}
	jg := planner.Fuse(sg)
	jg.Network = s.vars["network"].Str
	jg.NetworkTasks = s.vars["network_task"].Str
	jg.MinParallelism = int(s.vars["min_parallelism"].Int)
	jg.MaxParallelism = int(s.vars["max_parallelism"].Int)
	return sg, jg, nil
}

func (s *Session) query(_ context.Context, q *sql.Query, text string) (*Result, error) {
	if err := s.refuseUnbounded(q.Plan); err != nil {
		return nil, err
	}
	_, jg, err := s.plan(q)
	if err != nil {
		return nil, err
	}
	rows := newJobRows(q.Plan.Schema())
	job, err := s.e.jm.Submit(text, jg, rows)
	if err != nil {
		return nil, err
	}
	rows.start(s.e.jm, job)
	return &Result{Tag: "SELECT", Rows: rows}, nil
}

// CopyOut runs query, one SELECT, for COPY (<query>) TO STDOUT: unlike a plain
// SELECT it may read streams that never end, its rows arriving as they are
// produced until the client cancels.
func (s *Session) CopyOut(ctx context.Context, query string) (*Result, error) {
	stmts, err := sql.Parse(query)
	if err != nil {
		return nil, err
	}
	if len(stmts) != 1 {
		return nil, sql.Errorf(sql.ErrUnsupported, 0, "COPY takes one query")
	}
	st, err := sql.Bind(stmts[0], s.e.catalog, query)
	if err != nil {
		return nil, err
	}
	q, ok := st.(*sql.Query)
	if !ok {
		return nil, sql.Errorf(sql.ErrUnsupported, 0, "COPY (...) TO STDOUT takes a SELECT")
	}
	if _, err := s.authorize(q); err != nil {
		return nil, err
	}
	_, jg, err := s.plan(q)
	if err != nil {
		return nil, err
	}
	rows := newJobRows(q.Plan.Schema())
	job, err := s.e.jm.Submit("COPY ("+stmts[0].Text()+") TO STDOUT", jg, rows)
	if err != nil {
		return nil, err
	}
	rows.start(s.e.jm, job)
	return &Result{Tag: "COPY", Rows: rows}, nil
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
	if scan, ok := p.(*sql.Scan); ok && s.e.cfg.Unbounded != nil && s.e.cfg.Unbounded(scan.Table.Engine) {
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
func (s *Session) insert(st *sql.Insert, text string) (*Result, error) {
	t := st.Table
	sink := sinkSpec(t)
	_, jg, err := s.plan(st.Query, &sink)
	if err != nil {
		return nil, err
	}
	var opts exec.JobOptions
	continuous := planner.Continuous(st.Query.Plan, s.e.cfg.Unbounded)
	if iv := s.checkpointInterval(); continuous && iv > 0 && s.e.cfg.CheckpointURL != "" {
		opts.CheckpointURL, opts.CheckpointInterval = s.e.cfg.CheckpointURL, iv
	}
	job, err := s.e.jm.SubmitJob(text, jg, nil, opts)
	if err != nil {
		return nil, err
	}
	if continuous {
		s.e.keep(job, "")
	}
	return &Result{Tag: "INSERT 0 0", Notices: []string{
		fmt.Sprintf("job %s started: it writes into %s; SHOW PROCESSLIST shows it, KILL %s stops it", job.ID, t.Name, job.ID),
	}}, nil
}

// checkpointInterval returns the session's checkpoint_interval (0: none).
func (s *Session) checkpointInterval() time.Duration {
	v := s.vars["checkpoint_interval"]
	if v.Str == "" {
		return s.e.cfg.CheckpointInterval
	}
	d, _ := parseInterval(v.Str) // checked by SET
	return d
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
func (e *Engine) keep(job *exec.Job, view string) {
	graph, err := json.Marshal(job.Graph.Job)
	if err == nil {
		err = e.catalog.AddJob(&sql.JobRecord{ID: job.ID, Statement: job.Statement, Graph: graph, View: view})
	}
	if err != nil {
		e.cfg.Log.Warn("job not recorded: it will not resume after a restart", "job", job.ID, "err", err)
	}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		select {
		case <-job.Done():
		case <-e.closing:
			return // the engine stops: the job resumes with it
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
		starts = append(starts, pendingStart{"job " + r.ID, func() error { return e.resumeJob(r) }})
	}
	for _, t := range e.catalog.Tables() {
		if t.IsView() && !resumed[t.Name] {
			starts = append(starts, pendingStart{"view " + t.Name, func() error { return e.restartView(t) }})
		}
	}
	e.startAll(starts)
}

// pendingStart is a job to start again after a restart.
type pendingStart struct {
	what  string
	start func() error
}

// startAll starts each in order. A cluster's TaskManagers may not have
// registered yet: what finds no slots is retried every second until it starts
// or the engine closes; other failures are logged.
func (e *Engine) startAll(starts []pendingStart) {
	try := func(starts []pendingStart) (waiting []pendingStart) {
		for _, p := range starts {
			if err := p.start(); errors.Is(err, exec.ErrNoSlots) {
				waiting = append(waiting, p)
			} else if err != nil {
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
	opts := exec.JobOptions{ID: r.ID, Resume: true}
	if e.cfg.CheckpointURL != "" {
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
	if r.View != "" {
		e.setView(r.View, job)
	}
	e.keep(job, r.View)
	return nil
}

// sinkSpec describes table t as a connector to write to.
func sinkSpec(t *sql.Table) exec.ConnectorSpec {
	return exec.ConnectorSpec{Connector: t.Engine, URL: t.Connection, Schema: t.Columns, Key: t.KeyColumns()}
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
		{Name: "checkpoint_bytes", Type: types.Int64Type}, {Name: "alignment_ms", Type: types.Float64Type}}
	var rows [][]types.Value
	for _, j := range s.e.jm.Jobs() {
		id, _ := strconv.ParseInt(j.ID, 10, 64)
		var in, out, bad, dead int64
		var status []string
		for tid, m := range j.Metrics() {
			if j.Graph.Job.Vertices[tid.Vertex].IsSource() {
				in += m.RowsIn.Load()
			}
			out += m.SinkRows.Load()
			bad += m.BadRecords.Load()
			dead += m.DeadLetters.Load()
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
		}
		rows = append(rows, []types.Value{types.IntValue(id), types.StringValue(j.Statement),
			types.StringValue(string(j.State())), types.TimestampValue(j.Started.UnixMicro()),
			types.IntValue(in), types.IntValue(out), types.IntValue(bad), types.IntValue(dead), statusText, errText,
			types.IntValue(int64(ck.Restarts)), checkpoint, optInt(ck.RestoredFrom),
			optMillis(ck.Last, ck.LastDuration), ckBytes(ck.Last, ck.LastBytes), optMillis(ck.Last, ck.LastAlign)})
	}
	return s.valuesResult("SHOW", schema, rows)
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

func (s *Session) explain(ctx context.Context, st *sql.Explain, text string) (*Result, error) {
	sg, jg, err := s.plan(st.Query)
	if err != nil {
		return nil, err
	}
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

// valuesResult answers with rows computed here rather than by a job.
func (s *Session) valuesResult(tag string, schema types.Schema, rows [][]types.Value) (*Result, error) {
	alloc := s.e.cfg.Alloc
	if alloc == nil {
		alloc = memory.DefaultAllocator
	}
	rec, err := exec.ValuesRecord(alloc, schema, rows)
	if err != nil {
		return nil, err
	}
	return &Result{Tag: tag, Rows: newStaticRows(schema, rec)}, nil
}

// Session variables: defaults, and which may be set.
func defaultVars() map[string]types.Value {
	return map[string]types.Value{
		"parallelism":        types.StringValue("auto"),
		"min_parallelism":    types.IntValue(0),
		"max_parallelism":    types.IntValue(0),
		"network":            types.StringValue(""),
		"network_task":       types.StringValue(exec.NetworkAuto),
		"application_name":   types.StringValue(""),
		"client_encoding":    types.StringValue("UTF8"),
		"datestyle":          types.StringValue("ISO, MDY"),
		"timezone":           types.StringValue("UTC"),
		"extra_float_digits": types.IntValue(1),
		"search_path":        types.StringValue("public"),
		"statement_timeout":  types.StringValue("0"),
		// Empty: the engine's default (Config.CheckpointInterval).
		"checkpoint_interval": types.StringValue(""),
	}
}

// showAll lists every session variable (SHOW VARIABLES).
func (s *Session) showAll() (*Result, error) {
	names := make([]string, 0, len(s.vars))
	for n := range s.vars {
		names = append(names, n)
	}
	sort.Strings(names)
	rows := make([][]types.Value, len(names))
	for i, n := range names {
		rows[i] = []types.Value{types.StringValue(n), types.StringValue(formatVar(s.vars[n]))}
	}
	return s.valuesResult("SHOW", showAllSchema, rows)
}

// set assigns a session variable; a NULL value (SET x = DEFAULT) resets it.
func (s *Session) set(name string, v types.Value) error {
	old, ok := s.vars[name]
	if !ok {
		return sql.Errorf(sql.ErrUnknownVariable, 0, "unrecognized configuration parameter %q", name)
	}
	if v.Null || v.Type.ID == types.Null {
		s.vars[name] = defaultVars()[name]
		return nil
	}
	if name == "network_task" {
		mode := strings.ToLower(strings.TrimSpace(formatVar(v)))
		if mode != exec.NetworkFused && mode != exec.NetworkOwn && mode != exec.NetworkAuto {
			return sql.Errorf(sql.ErrInvalidValue, 0, "network_task must be 'fused', 'own' or 'auto', got %s", formatVar(v))
		}
		s.vars[name] = types.StringValue(mode)
		return nil
	}
	if name == "checkpoint_interval" {
		text := formatVar(v)
		if _, err := parseInterval(text); err != nil {
			return sql.Errorf(sql.ErrInvalidValue, 0, "invalid value for parameter \"checkpoint_interval\": %q: %v", text, err)
		}
		s.vars[name] = types.StringValue(text)
		return nil
	}
	if name == "parallelism" {
		if v.Type.ID == types.String && strings.EqualFold(strings.TrimSpace(v.Str), "auto") {
			s.vars[name] = types.StringValue("auto")
			return nil
		}
		n, err := intValue(v)
		if slots := s.e.slots(); err != nil || n < 1 || n > int64(slots) {
			return sql.Errorf(sql.ErrInvalidValue, 0,
				"parallelism must be 'auto' or an integer from 1 to %d (the number of slots), got %s", slots, formatVar(v))
		}
		s.vars[name] = types.IntValue(n)
		return nil
	}
	if old.Type.ID == types.Int64 {
		n, err := intValue(v)
		if err != nil {
			return sql.Errorf(sql.ErrInvalidValue, 0, "invalid value for parameter %q: %s", name, formatVar(v))
		}
		s.vars[name] = types.IntValue(n)
		return nil
	}
	s.vars[name] = types.StringValue(formatVar(v))
	return nil
}

func intValue(v types.Value) (int64, error) {
	switch v.Type.ID {
	case types.Int64:
		return v.Int, nil
	case types.String:
		return strconv.ParseInt(strings.TrimSpace(v.Str), 10, 64)
	}
	return 0, fmt.Errorf("not an integer")
}

func formatVar(v types.Value) string {
	switch v.Type.ID {
	case types.Int64:
		return strconv.FormatInt(v.Int, 10)
	case types.String:
		return v.Str
	case types.Bool:
		if v.Bool {
			return "on"
		}
		return "off"
	case types.Float64:
		return strconv.FormatFloat(v.Float, 'g', -1, 64)
	}
	return fmt.Sprint(v)
}
