package session

// The tables Hummer stores (connectors/table): CREATE TABLE without ENGINE,
// CREATE TABLE AS, INSERT, UPDATE, DELETE and TRUNCATE, and the pinned
// versions that scans of them read.
//
// A statement that writes a table holds the table's writer lock (table.Tx)
// from before it plans its query until it commits, so that what an UPDATE
// read is what it replaces, and two writers never lose each other's rows.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/connectors/table"
	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/jobmanager"
	"github.com/hummer-db/hummer/exec/operators"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/sql"
)

// openTables opens the store of the stored tables, <DataDir>/tables (a
// temporary directory, removed by the returned func, without a DataDir), and
// removes what belongs to no table of the catalog. The returned func closes
// the store (waiting for its background writes) before removing anything.
func openTables(dataDir string, cat *sql.Catalog) (*table.Store, func(), error) {
	dir, cleanup := filepath.Join(dataDir, "tables"), func() {}
	if dataDir == "" {
		tmp, err := os.MkdirTemp("", "hummer-tables-")
		if err != nil {
			return nil, nil, err
		}
		dir, cleanup = tmp, func() { os.RemoveAll(tmp) }
	}
	st, err := table.OpenStore(dir)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	live := map[string]bool{}
	for _, t := range cat.Tables() {
		if t.IsStored() {
			if id, err := table.ID(t.Connection); err == nil {
				live[id] = true
			}
		}
	}
	if err := st.Keep(live); err != nil {
		cleanup()
		return nil, nil, err
	}
	return st, func() { st.Close(); cleanup() }, nil
}

// newTableID makes the id, unique to this CREATE, of a table's directory: its
// name (as far as it is letters and digits) and random hex.
func newTableID(name string) string {
	var sb strings.Builder
	for _, r := range name {
		if sb.Len() >= 40 {
			break
		}
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' {
			sb.WriteRune(r)
		} else {
			sb.WriteByte('_')
		}
	}
	var b [8]byte
	rand.Read(b[:])
	return sb.String() + "-" + hex.EncodeToString(b[:])
}

// constraints are what the store holds t's rows to.
func constraints(t *sql.Table) table.Constraints {
	return table.Constraints{Table: t.Name, Schema: t.Columns, Key: t.KeyColumns(), NotNull: t.NotNullColumns()}
}

func tableID(t *sql.Table) (string, error) { return table.ID(t.Connection) }

// createTable runs CREATE TABLE: a connector's table goes into the catalog
// once its options are valid; a stored one gets its directory first, and with
// AS SELECT its rows, before the catalog shows it.
func (s *Session) createTable(ctx context.Context, st *sql.CreateTable, text string) (*Result, error) {
	t := st.Table
	t.Engine = strings.ToLower(t.Engine) // connector names are lower case
	if !t.IsStored() {
		if err := s.e.cfg.Validate(sinkSpec(t)); err != nil {
			return nil, err
		}
		if err := s.e.catalog.Create(t, st.IfNotExists); err != nil {
			return nil, err
		}
		return &Result{Tag: "CREATE TABLE"}, nil
	}
	if _, exists := s.e.catalog.Table(t.Name); exists && st.IfNotExists {
		return &Result{Tag: "CREATE TABLE", Notices: []string{fmt.Sprintf("relation \"%s\" already exists, skipping", t.Name)}}, nil
	}
	id := newTableID(t.Name)
	t.Connection = table.URL(id)
	if err := s.e.tables.Create(id); err != nil {
		return nil, err
	}
	tag := "CREATE TABLE"
	if st.Query != nil {
		n, err := s.fill(ctx, t, st.Query, text)
		if err != nil {
			s.e.tables.Drop(id)
			return nil, err
		}
		tag = fmt.Sprintf("SELECT %d", n) // PostgreSQL's tag for CREATE TABLE AS
	}
	if err := s.e.catalog.Create(t, false); err != nil {
		s.e.tables.Drop(id)
		return nil, err
	}
	return &Result{Tag: tag}, nil
}

// fill writes q's rows into t, a new table no one else sees yet.
func (s *Session) fill(ctx context.Context, t *sql.Table, q *sql.Query, text string) (int64, error) {
	id, err := tableID(t)
	if err != nil {
		return 0, err
	}
	tx, err := s.e.tables.Begin(id, constraints(t))
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	if _, err := s.runInto(ctx, tx, q, text, false); err != nil {
		return 0, err
	}
	return tx.Rows(), tx.Commit()
}

// dropTables drops tables and, once the catalog no longer has them, the rows
// of those Hummer stores.
func (s *Session) dropTables(st *sql.DropTable) (*Result, error) {
	var ids []string
	notices := s.missingNotices("table", st.Names)
	for _, n := range st.Names {
		if t, ok := s.e.catalog.Table(n); ok && t.IsStored() {
			if id, err := tableID(t); err == nil {
				ids = append(ids, id)
			}
		}
	}
	if err := s.e.catalog.DropTables(st.Names, st.IfExists); err != nil {
		return nil, err
	}
	for _, id := range ids {
		if err := s.e.tables.Drop(id); err != nil {
			s.e.cfg.Log.Warn("dropped table's rows not removed", "table", id, "err", err)
		}
	}
	return &Result{Tag: "DROP TABLE", Notices: notices}, nil
}

// missingNotices are the notices of DROP ... IF EXISTS about the names that
// name nothing, as PostgreSQL sends them: table "t" does not exist, skipping.
func (s *Session) missingNotices(kind string, names []string) []string {
	var out []string
	for _, n := range names {
		if _, ok := s.e.catalog.Table(n); !ok {
			out = append(out, fmt.Sprintf("%s \"%s\" does not exist, skipping", kind, n))
		}
	}
	return out
}

// insertStored runs INSERT into a stored table: every row of the query, or
// none if one is refused.
func (s *Session) insertStored(ctx context.Context, st *sql.Insert, text string) (*Result, error) {
	tx, err := s.begin(st.Table)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	if _, err := s.runInto(ctx, tx, st.Query, text, false); err != nil {
		return nil, err
	}
	n := tx.Rows()
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	return &Result{Tag: fmt.Sprintf("INSERT 0 %d", n)}, nil
}

// update runs UPDATE: the query's rows are the new rows with the ids of
// the rows they replace, changed in place, and their count is the
// statement's.
func (s *Session) update(ctx context.Context, st *sql.Update, text string) (*Result, error) {
	tx, err := s.begin(st.Table)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	tx.Change() // first: it waits for INSERTs committing in a group
	n, err := s.runInto(ctx, tx, st.Query, text, true)
	if err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	return &Result{Tag: fmt.Sprintf("UPDATE %d", n)}, nil
}

// deleteRows runs DELETE (the query's rows are the ids of those that go,
// changed in place) and TRUNCATE or DELETE without WHERE (q nil: none stay).
func (s *Session) deleteRows(ctx context.Context, t *sql.Table, q *sql.Query, text, tag string) (*Result, error) {
	tx, err := s.begin(t)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	var deleted int64
	if q != nil {
		tx.Change() // first: it waits for INSERTs committing in a group
		if _, err := s.runInto(ctx, tx, q, text, true); err != nil {
			return nil, err
		}
		deleted = tx.Deleted()
	} else {
		tx.Replace()
		id, _ := tableID(t)
		if deleted, err = s.e.tables.Rows(id); err != nil {
			return nil, err
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	if tag == "TRUNCATE TABLE" {
		return &Result{Tag: tag}, nil
	}
	return &Result{Tag: fmt.Sprintf("DELETE %d", deleted)}, nil
}

func (s *Session) begin(t *sql.Table) (*table.Tx, error) {
	id, err := tableID(t)
	if err != nil {
		return nil, err
	}
	return s.e.tables.Begin(id, constraints(t))
}

// runInto appends q's rows to tx. With ids, q's last column is the row ids
// (sql.RowIDColumn) of the rows the statement removes (tx.Delete), the others,
// if any, the rows it puts in their place; the rows are counted (the count is
// returned).
// Constant rows (INSERT ... VALUES) are written without a job.
func (s *Session) runInto(ctx context.Context, tx *table.Tx, q *sql.Query, text string, ids bool) (int64, error) {
	if rec, ok, err := constantRows(q.Plan, s.alloc()); ok || err != nil {
		if err != nil {
			return 0, err
		}
		defer rec.Release()
		return 0, tx.Append(rec)
	}
	_, jg, pins, err := s.plan(ctx, q)
	if err != nil {
		return 0, err
	}
	rows := newJobRows(q.Plan.Schema())
	job, err := s.e.jm.Submit(text, jg, rows)
	if err != nil {
		pins.release()
		return 0, err
	}
	pins.holdUntil(job)
	rows.start(s.e.jm, job)
	defer rows.Close()
	var count int64
	for {
		rec, err := rows.Next(ctx)
		if errors.Is(err, io.EOF) {
			return count, nil
		}
		if err != nil {
			return 0, err
		}
		if ids {
			n := int(rec.NumCols()) - 1
			count += rec.NumRows()
			if err := tx.Delete(rec.Column(n).(*array.Int64)); err != nil {
				rec.Release()
				job.Cancel(err)
				return 0, err
			}
			if n == 0 {
				rec.Release()
				continue
			}
			cols := rec.Columns()[:n]
			proj := array.NewRecordBatch(arrow.NewSchema(rec.Schema().Fields()[:n], nil), cols, rec.NumRows())
			rec.Release()
			rec = proj
		}
		err = tx.Append(rec)
		rec.Release()
		if err != nil {
			job.Cancel(err)
			return 0, err
		}
	}
}

// constantRows evaluates the rows of a plan that projects constant rows
// (INSERT ... VALUES, its parameters bound): ok is false for any other plan.
func constantRows(p sql.Plan, alloc memory.Allocator) (arrow.RecordBatch, bool, error) {
	exprs, ok := sql.ConstantRows(p)
	if !ok {
		return nil, false, nil
	}
	rows := make([][]types.Value, len(exprs))
	for i, row := range exprs {
		rows[i] = make([]types.Value, len(row))
		for j, e := range row {
			if !e.IsConstant() {
				return nil, false, nil
			}
			v, err := expr.EvalConst(e)
			if err != nil {
				return nil, true, err
			}
			rows[i][j] = v
		}
	}
	rec, err := operators.ValuesRecord(alloc, p.Schema(), rows)
	return rec, true, err
}

// alloc is the allocator of the rows the session makes itself.
func (s *Session) alloc() memory.Allocator {
	if s.e.cfg.Alloc != nil {
		return s.e.cfg.Alloc
	}
	return memory.DefaultAllocator
}

// pins are the table versions a planned query reads, and the tables whose
// changes it follows, held until its job ends.
type pins struct {
	once    sync.Once
	ps      []*table.Pinned
	follows []func()
}

func (p *pins) release() {
	if p == nil {
		return
	}
	p.once.Do(func() {
		for _, x := range p.ps {
			x.Release()
		}
		for _, f := range p.follows {
			f()
		}
	})
}

// readsStored reports whether p scans a table Hummer stores.
func readsStored(p sql.Plan) bool {
	if scan, ok := p.(*sql.Scan); ok && scan.Table.IsStored() {
		return true
	}
	for _, in := range p.Inputs() {
		if readsStored(in) {
			return true
		}
	}
	return false
}

// holdUntil releases the pins when job ends.
func (p *pins) holdUntil(job *jobmanager.Job) {
	if p == nil || len(p.ps) == 0 {
		return
	}
	go func() {
		<-job.Done()
		p.release()
	}()
}

// pinScans points every scan of a stored table in plan at the table's
// current version, pinned until the returned pins are released; with
// follow, the scans go on with the table's changes (table.ChangesName), which
// the table records from before the version is pinned.
func (e *Engine) pinScans(plan sql.Plan, follow bool) (*pins, error) {
	ps := &pins{}
	var walk func(p sql.Plan) error
	walk = func(p sql.Plan) error {
		if scan, ok := p.(*sql.Scan); ok && scan.Table.IsStored() {
			id, err := tableID(scan.Table)
			if err != nil {
				return err
			}
			if follow {
				stop, err := e.tables.Follow(id)
				if err != nil {
					return err
				}
				ps.follows = append(ps.follows, stop)
			}
			pin, err := e.tables.Pin(id)
			if err != nil {
				return err
			}
			ps.ps = append(ps.ps, pin)
			t := *scan.Table
			t.Connection = pin.URL
			if follow {
				t.Engine, t.Connection = table.ChangesName, pin.URL+"&follow=1"
			}
			scan.Table = &t
		}
		for _, in := range p.Inputs() {
			if err := walk(in); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(plan); err != nil {
		ps.release()
		return nil, err
	}
	return ps, nil
}
