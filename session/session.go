package session

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/hummer-db/hummer/connectors/table"
	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/jobmanager"
	"github.com/hummer-db/hummer/exec/network"
	"github.com/hummer-db/hummer/exec/operators"
	"github.com/hummer-db/hummer/exec/taskmanager"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/planner"
	"github.com/hummer-db/hummer/sql"
)

// Config configures an Engine.
type Config struct {
	// DataDir keeps the catalog, so tables survive a restart, and the rows
	// of the tables Hummer stores.
	DataDir string
	// CatalogStore, when set, keeps the catalog instead of DataDir (an object
	// in object storage, for a JobManager whose pod may come back without
	// its volume); see openCatalog.
	CatalogStore sql.CatalogStore
	// Registry builds operators and connectors for the local TaskManager.
	Registry *exec.Registry
	// Validate checks a connector's options at CREATE TABLE time.
	Validate func(exec.ConnectorSpec) error
	// Unbounded reports whether a connector's source never ends (Kafka); a plain
	// SELECT over such a table is refused, since it would never answer.
	Unbounded func(connector, url string) bool
	// EstimateRows estimates a table's rows from its connector, for the join
	// order (sql.RowEstimator); nil or false: unknown.
	EstimateRows func(exec.ConnectorSpec) (float64, bool)
	// EstimateDistinct estimates the distinct values of a table's column
	// (sql.DistinctEstimator); nil or false: unknown.
	EstimateDistinct func(c exec.ConnectorSpec, col int) (float64, bool)
	// Retracts reports whether a connector's source emits deletes of its own
	// rows (planner.Options.Retracts): the changes a view over a stored table
	// follows.
	Retracts func(connector string) bool
	// SourceWatermarks reports whether a connector's source keeps a table's
	// watermarks itself (planner.Options.SourceWatermarks).
	SourceWatermarks func(connector string) bool
	// InsertWaits reports whether a bounded INSERT into a table of the
	// connector waits for its job and returns the rows written (INSERT 0 n),
	// as into a stored table, instead of returning when the job starts.
	InsertWaits func(connector string) bool
	// Upsert reports whether a connector's sink upserts by a table's PRIMARY
	// KEY, so that a query producing updates may write to it, and its source
	// reads such a table back as upserts and deletes (planner.Options.Changelog).
	Upsert func(connector string) bool
	// Slots of each TaskManager; 0 means one per core.
	Slots int
	// JobManager, when set, is the JobManager of a cluster whose TaskManagers run
	// in other processes (hummer jobmanager); the engine then runs none itself.
	JobManager *jobmanager.JobManager
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
	// StateBackend and StateMemory are the local TaskManagers' default state
	// backend and the memory their disk backend keeps state in
	// (taskmanager.Config); SET state_backend chooses per job.
	StateBackend string
	StateMemory  int64
	// NoTaskMetrics turns off the local TaskManagers' per-task time
	// accounting and per-operator counts (exec.TaskContext.NoTaskMetrics).
	NoTaskMetrics bool
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
	// tables keeps the rows of the tables Hummer stores; closeTables removes
	// its directory when it is a temporary one.
	tables      *table.Store
	closeTables func()
	// scratchCheckpoints is where the jobs of views over stored tables keep
	// their checkpoints without a CheckpointURL (a temporary directory).
	scratchCheckpoints string
	jm                 *jobmanager.JobManager
	data               []*network.Server
	views              views
	// waiting are the recorded jobs whose resumption waits for slots, by id.
	waitMu  sync.Mutex
	waiting map[string]*waitingJob
	closing chan struct{} // closed by Close, for the engine's goroutines
	wg      sync.WaitGroup
}

// openCatalog opens the catalog in cfg.CatalogStore, or else in cfg.DataDir.
// A CatalogStore that holds no catalog yet starts from the one in DataDir, if
// any: a server given a store after running without one keeps its tables (and
// its stored tables' rows, which openTables would remove as belonging to no
// table).
func openCatalog(cfg Config) (*sql.Catalog, error) {
	if cfg.CatalogStore == nil {
		return sql.OpenCatalog(cfg.DataDir)
	}
	data, err := cfg.CatalogStore.Load()
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	if data == nil && cfg.DataDir != "" {
		local, err := sql.FileCatalogStore(cfg.DataDir)
		if err != nil {
			return nil, err
		}
		if data, err = local.Load(); err != nil {
			return nil, fmt.Errorf("catalog: %w", err)
		}
		if data != nil {
			cfg.Log.Info("catalog store is empty: starting from the data directory's catalog", "from", local.String(), "to", cfg.CatalogStore.String())
			if err := cfg.CatalogStore.Save(data); err != nil {
				return nil, fmt.Errorf("catalog: %w", err)
			}
		}
	}
	return sql.OpenCatalogIn(cfg.CatalogStore)
}

// Open starts an engine over the catalog in cfg.CatalogStore or cfg.DataDir.
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
	cat, err := openCatalog(cfg)
	if err != nil {
		return nil, err
	}
	if err := cat.EnsureSuperuser(Superuser, ""); err != nil { // auth.go
		return nil, err
	}
	tables, closeTables, err := openTables(cfg.DataDir, cat) // tables.go
	if err != nil {
		return nil, err
	}
	if cfg.Registry != nil {
		// The sink of continuous INSERTs into stored tables writes through
		// this engine's store: it runs in the engine's own TaskManagers.
		table.RegisterSink(cfg.Registry, tables)
	}
	est := cfg.EstimateRows
	cat.SetRowEstimator(func(t *sql.Table) (float64, bool) {
		if t.IsStored() {
			id, err := tableID(t)
			if err != nil {
				return 0, false
			}
			n, err := tables.Rows(id)
			return float64(n), err == nil
		}
		if est == nil {
			return 0, false
		}
		return est(exec.ConnectorSpec{Connector: t.Engine, URL: t.Connection, Schema: t.Columns})
	})
	cat.SetDistinctEstimator(func(t *sql.Table, col int) (float64, bool) {
		if t.IsStored() {
			id, err := tableID(t)
			if err != nil {
				return 0, false
			}
			return tables.Distinct(id, col)
		}
		if cfg.EstimateDistinct == nil {
			return 0, false
		}
		return cfg.EstimateDistinct(exec.ConnectorSpec{Connector: t.Engine, URL: t.Connection, Schema: t.Columns}, col)
	})
	cat.SetRangeEstimator(func(t *sql.Table, col int, lo, hi int64) (float64, bool) {
		if !t.IsStored() {
			return 0, false
		}
		id, err := tableID(t)
		if err != nil {
			return 0, false
		}
		return tables.RangeFraction(id, col, lo, hi)
	})
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
	scratch := cfg.CheckpointURL
	if scratch == "" {
		dir, err := os.MkdirTemp("", "hummer-view-checkpoints-")
		if err != nil {
			closeTables()
			return nil, err
		}
		scratch = "file://" + dir
		inner := closeTables
		closeTables = func() { inner(); os.RemoveAll(dir) }
	}
	if cfg.JobManager != nil {
		// The TaskManagers of the cluster have no store: their table sinks
		// stage, and the JobManager commits what they staged through this
		// process's store (connectors/table/sink.go).
		cfg.JobManager.CommitSinks(table.Name, func(ctx context.Context, job string, staged []jobmanager.StagedSink) error {
			for _, s := range staged {
				if err := tables.CommitSink(s.Sink, job, s.Task.Subtask, s.State); err != nil {
					return err
				}
			}
			return nil
		})
		e := &Engine{cfg: cfg, catalog: cat, tables: tables, closeTables: closeTables, scratchCheckpoints: scratch, jm: cfg.JobManager, closing: make(chan struct{})}
		e.resume()
		return e, nil
	}
	e := &Engine{cfg: cfg, catalog: cat, tables: tables, closeTables: closeTables, scratchCheckpoints: scratch, jm: jobmanager.New(cfg.Log), closing: make(chan struct{})}
	if cfg.TaskManagers <= 1 {
		e.jm.AddTaskManager(taskmanager.New(taskmanager.Config{
			ID: "local", Slots: cfg.Slots, Registry: cfg.Registry, Alloc: cfg.Alloc, Log: cfg.Log,
			StateBackend: cfg.StateBackend, StateMemory: cfg.StateMemory, NoTaskMetrics: cfg.NoTaskMetrics,
		}))
		e.resume()
		return e, nil
	}
	for i := 0; i < cfg.TaskManagers; i++ {
		data, err := network.Listen(network.ServerConfig{Addr: "127.0.0.1:0", Log: cfg.Log})
		if err != nil {
			e.Close()
			return nil, err
		}
		e.data = append(e.data, data)
		e.jm.AddTaskManager(taskmanager.New(taskmanager.Config{
			ID: data.Addr().String(), Slots: cfg.Slots, Registry: cfg.Registry, Alloc: cfg.Alloc, Log: cfg.Log, Data: data,
			StateBackend: cfg.StateBackend, StateMemory: cfg.StateMemory, NoTaskMetrics: cfg.NoTaskMetrics,
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
	e.closeTables()
	return nil
}

// slots returns the number of slots the cluster has now (TaskManagers of a
// distributed cluster come and go).
func (e *Engine) slots() int { return max(1, len(e.jm.Slots())) }

// JobManager returns the engine's JobManager.
func (e *Engine) JobManager() *jobmanager.JobManager { return e.jm }

// Session is one client's connection state: its variables and running statement.
// A Session is used by one goroutine at a time.
type Session struct {
	e    *Engine
	user string // the client's user, "" for the engine's own sessions (auth.go)
	tx   txn    // the transaction block (tx.go)
	// cursors are the open cursors by name (cursor.go); cursorCount numbers
	// them as they are declared.
	cursors     map[string]*cursor
	cursorCount int
	// start is what the client's startup packet said (startup.go).
	start Startup
	// vars are the parameters' values by lower-case name (settings.go);
	// resets their values after RESET where the startup packet set them;
	// reported the values the client was last told (ParameterStatus).
	vars, resets, reported map[string]string
	// inBlock: a transaction block is open, which SET LOCAL lasts to the end
	// of; local holds the values it replaced. The engine has no BEGIN: a
	// block is a simple query of several statements, which PostgreSQL runs
	// as one implicit transaction.
	inBlock bool
	local   map[string]string
	// txStart is when the current transaction (statement, or query of
	// several) started: now() and current_timestamp.
	txStart time.Time
}

// NewSession starts a session of the engine's own, with default variables.
func (e *Engine) NewSession() *Session {
	return e.newSession(Startup{Superuser: true})
}

func (e *Engine) newSession(st Startup) *Session {
	if st.ServerVersion == "" {
		st.ServerVersion = DefaultServerVersion
	}
	return &Session{e: e, start: st, vars: defaultVars(st.User, st.Superuser, st.ServerVersion),
		resets:   map[string]string{"session_authorization": st.User},
		reported: map[string]string{}, local: map[string]string{}}
}

// Exec runs every statement of query in order, calling emit with each result; it
// stops at the first error and returns it. A syntax error anywhere in query runs
// nothing. emit must consume (or Close) Result.Rows before returning.
func (s *Session) Exec(ctx context.Context, query string, emit func(*Result) error) error {
	stmts, err := sql.Parse(query)
	if err != nil {
		return err
	}
	s.txStart = time.Now()
	if len(stmts) > 1 {
		s.inBlock = true
		defer s.endBlock()
	}
	for _, stmt := range stmts {
		res, err := s.run(ctx, stmt, query)
		if err != nil {
			s.FailTransaction()
			return err
		}
		err = emit(res)
		if res.Rows != nil {
			res.Rows.Close()
		}
		if err != nil {
			s.FailTransaction()
			return err
		}
	}
	return nil
}

// Close ends the session, closing its cursors.
func (s *Session) Close() {
	s.closeCursors(func(*cursor) bool { return true })
}

// run binds and runs one statement; statement_timeout covers the binding too.
// In a failed transaction block only the statements that end it run.
func (s *Session) run(ctx context.Context, node ast.StmtNode, query string) (*Result, error) {
	if err := s.checkAborted(node); err != nil {
		return nil, err
	}
	if timeout := s.statementTimeout(); timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	stmt, err := sql.BindSession(node, s.e.catalog, query, s.info(), nil)
	if err == nil {
		err = noParams(stmt)
	}
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return s.runBound(ctx, stmt, node.Text())
}

// execBound runs a bound statement whose text is text; runBound (auth.go)
// checks privileges first. A statement that writes is refused in a READ ONLY
// block and counted against the block (tx.go).
func (s *Session) execBound(ctx context.Context, stmt sql.Statement, text string) (*Result, error) {
	write, err := s.beforeWrite(stmt, text)
	if err != nil {
		return nil, err
	}
	res, err := s.execStatement(ctx, stmt, text)
	if err == nil && write {
		s.wroteInBlock()
	}
	return res, err
}

func (s *Session) execStatement(ctx context.Context, stmt sql.Statement, text string) (*Result, error) {
	switch st := stmt.(type) {
	case *sql.Begin, *sql.Commit, *sql.Rollback, *sql.Savepoint, *sql.Release, *sql.RollbackTo:
		return s.transaction(st)
	case *sql.DeclareCursor:
		return s.declare(ctx, st, text)
	case *sql.Fetch:
		return s.fetch(ctx, st)
	case *sql.CloseCursor:
		return s.closeCursor(st)
	case *sql.CreateTable:
		return s.createTable(ctx, st, text)
	case *sql.CreateView:
		return s.createView(st, text)
	case *sql.DropView:
		return s.dropViews(st)
	case *sql.DropTable:
		return s.dropTables(st)
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
		return s.set(st)
	case *sql.Reset:
		return s.reset(st.Name)
	case *sql.Discard:
		return s.discard(st.What), nil
	case *sql.Deallocate:
		if st.Name == "" {
			return &Result{Tag: "DEALLOCATE ALL", DropAllPrepared: true}, nil
		}
		return &Result{Tag: "DEALLOCATE", DropPrepared: st.Name}, nil
	case *sql.Show:
		if st.Name == "" {
			return s.showAll()
		}
		return s.show(st.Name)
	case *sql.Explain:
		return s.explain(ctx, st, text)
	case *sql.Query:
		if err := s.setConfigs(st.SetConfigs); err != nil {
			return nil, err
		}
		return s.query(ctx, st, text)
	case *sql.RecursiveQuery:
		return s.recursive(ctx, st, text)
	case *sql.Insert:
		if st.Table.IsStored() && !planner.Continuous(st.Query.Plan, s.e.cfg.Unbounded) {
			return s.insertStored(ctx, st, text)
		}
		return s.insert(ctx, st, text) // a continuous job: into a stored table, its sink (connectors/table/sink.go)
	case *sql.Update:
		return s.update(ctx, st, text)
	case *sql.Delete:
		return s.deleteRows(ctx, st.Table, st.Query, text, "DELETE")
	case *sql.Truncate:
		return s.deleteRows(ctx, st.Table, nil, text, "TRUNCATE TABLE")
	case *sql.ShowJobs:
		return s.showJobs()
	case *sql.Kill:
		return s.kill(st.JobID)
	}
	return nil, sql.Errorf(sql.ErrUnsupported, 0, "statement %T is not supported", stmt)
}

// valuesResult answers with rows computed here rather than by a job.
func (s *Session) valuesResult(tag string, schema types.Schema, rows [][]types.Value) (*Result, error) {
	rec, err := operators.ValuesRecord(s.alloc(), schema, rows)
	if err != nil {
		return nil, err
	}
	return &Result{Tag: tag, Rows: newStaticRows(schema, rec)}, nil
}
