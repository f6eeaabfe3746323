package session

// Cursors: DECLARE name CURSOR [WITH HOLD] FOR query starts the query's job,
// FETCH and MOVE read its rows forward a few at a time, CLOSE (or the end of
// the block, tx.go) stops it. psql's FETCH_COUNT and psycopg2's named cursors
// read results so.
//
// A cursor may follow a stream: over a continuous query (one reading a Kafka
// table) its rows are the query's changes, as COPY (...) TO STDOUT streams
// them: a first column op (insert, delete, update_before, update_after), then
// the query's columns. Such a FETCH n waits for the first row, as long as
// statement_timeout allows or until cancelled, then returns it with the
// others already there, up to n: a client without COPY follows the stream by
// fetching again. Over a bounded query FETCH n returns n rows unless the
// query ends first, as in PostgreSQL (psql's FETCH_COUNT stops at a short
// answer).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/planner"
	"github.com/hummer-db/hummer/sql"
)

// cursor is an open cursor.
type cursor struct {
	name   string
	rows   Rows         // the query's
	schema types.Schema // of what FETCH returns: op first for a stream
	stream bool         // over a continuous query
	hold   bool         // WITH HOLD
	seq    int          // Session.cursorCount when declared
	// pending are rows of a batch the last FETCH did not take.
	pending exec.Batch
	ended   bool // the query's rows ended (io.EOF seen)
	mem     memory.Allocator
	scroll  *scrollState // SCROLL: its rows and position (scroll.go)
	pos     int64        // rows read without SCROLL: the position, 1-based
}

// opField is the first column of a stream cursor's rows.
var opField = types.Field{Name: "op", Type: types.StringType}

// errNotYet is what polling answers when no batch is queued yet.
var errNotYet = errors.New("session: no rows queued yet")

// declare runs DECLARE ... CURSOR FOR query: it starts the query's job,
// whose rows wait for FETCH.
func (s *Session) declare(ctx context.Context, st *sql.DeclareCursor, text string) (*Result, error) {
	if !st.Hold && s.tx.state == txIdle {
		return nil, outsideBlock("DECLARE CURSOR")
	}
	switch {
	case st.Binary:
		return nil, sql.Errorf(sql.ErrUnsupported, 0, "BINARY cursors are not supported: a cursor's rows are sent as text")
	}
	if _, ok := s.cursors[st.Name]; ok {
		return nil, sql.Errorf(sql.ErrDuplicateCursor, 0, "cursor \"%s\" already exists", st.Name)
	}
	if _, err := s.authorize(st.Query); err != nil {
		return nil, err
	}
	c := &cursor{name: st.Name, hold: st.Hold, mem: s.alloc()}
	switch q := st.Query.(type) {
	case *sql.Query:
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
		c.rows, c.schema = rows, q.Plan.Schema()
		if planner.Continuous(q.Plan, s.e.cfg.Unbounded) {
			c.stream, c.schema = true, append(types.Schema{opField}, c.schema...)
		}
	case *sql.RecursiveQuery:
		// Its rows are computed now, round by round (recursive.go).
		res, err := s.recursive(ctx, q, text)
		if err != nil {
			return nil, err
		}
		c.rows, c.schema = res.Rows, res.Rows.Schema()
	default:
		return nil, fmt.Errorf("session: cursor over %T", st.Query)
	}
	if st.Scroll {
		if c.stream {
			c.rows.Close()
			return nil, sql.Errorf(sql.ErrUnsupported, 0, "SCROLL cursors over a continuous query are not supported: its rows never end")
		}
		c.scroll = &scrollState{} // scroll.go
	}
	c.seq = s.cursorCount
	s.cursorCount++
	if s.cursors == nil {
		s.cursors = map[string]*cursor{}
	}
	s.cursors[st.Name] = c
	return &Result{Tag: "DECLARE CURSOR"}, nil
}

// fetch runs FETCH or MOVE.
func (s *Session) fetch(ctx context.Context, st *sql.Fetch) (*Result, error) {
	c, ok := s.cursors[st.Name]
	if !ok {
		return nil, sql.Errorf(sql.ErrUnknownCursor, 0, "cursor \"%s\" does not exist", st.Name)
	}
	if c.scroll != nil {
		return s.scrollFetch(ctx, c, st)
	}
	count := st.Count
	if st.Dir != sql.FetchForward {
		// To a row ahead: skip to the one before it, then read one. Back,
		// or to the current row again: PostgreSQL's answer for a NO SCROLL
		// cursor.
		skip := int64(-1)
		switch {
		case st.Dir == sql.FetchAbsolute && st.Count > c.pos:
			skip = st.Count - c.pos - 1
		case st.Dir == sql.FetchRelative && st.Count > 0:
			skip = st.Count - 1
		}
		if skip < 0 || c.stream {
			return nil, sql.Errorf(sql.ErrCursorState, 0, "cursor can only scan forward")
		}
		if _, err := c.move(ctx, skip); err != nil {
			return nil, err
		}
		count = 1
	}
	if !st.Move {
		return &Result{Tag: "FETCH", Rows: &fetchRows{c: c, left: count}}, nil
	}
	moved, err := c.move(ctx, count)
	if err != nil {
		return nil, err
	}
	return &Result{Tag: "MOVE " + strconv.FormatInt(moved, 10)}, nil
}

// move reads and drops up to count rows (sql.FetchAll: all), returning how
// many it dropped.
func (c *cursor) move(ctx context.Context, count int64) (int64, error) {
	f := &fetchRows{c: c, left: count}
	var moved int64
	for {
		b, err := f.Next(ctx)
		if errors.Is(err, io.EOF) {
			return moved, nil
		}
		if err != nil {
			return moved, err
		}
		moved += b.NumRows()
		b.Release()
	}
}

// closeCursor runs CLOSE name and CLOSE ALL.
func (s *Session) closeCursor(st *sql.CloseCursor) (*Result, error) {
	if st.All {
		s.closeCursors(func(*cursor) bool { return true })
		return &Result{Tag: "CLOSE CURSOR ALL"}, nil
	}
	c, ok := s.cursors[st.Name]
	if !ok {
		return nil, sql.Errorf(sql.ErrUnknownCursor, 0, "cursor \"%s\" does not exist", st.Name)
	}
	c.close()
	delete(s.cursors, st.Name)
	return &Result{Tag: "CLOSE CURSOR"}, nil
}

// closeCursors closes the cursors which says to.
func (s *Session) closeCursors(which func(*cursor) bool) {
	for name, c := range s.cursors {
		if which(c) {
			c.close()
			delete(s.cursors, name)
		}
	}
}

// close stops the cursor's job and releases what it holds.
func (c *cursor) close() {
	if c.pending.Rec != nil {
		c.pending.Rec.Release()
		c.pending = exec.Batch{}
	}
	c.rows.Close()
	c.ended = true
	if c.scroll != nil {
		c.scroll.release()
	}
}

// take returns the cursor's next rows, at most max (FetchAll: any number):
// it waits for them if wait, else answers errNotYet when none are queued. It
// returns io.EOF after the last.
func (c *cursor) take(ctx context.Context, max int64, wait bool) (exec.Batch, error) {
	for c.pending.Rec == nil || c.pending.Rec.NumRows() == 0 {
		if c.pending.Rec != nil {
			c.pending.Rec.Release()
			c.pending = exec.Batch{}
		}
		if c.ended {
			return exec.Batch{}, io.EOF
		}
		b, err := c.next(ctx, wait)
		if errors.Is(err, io.EOF) {
			c.ended = true
		}
		if err != nil {
			return exec.Batch{}, err
		}
		c.pending = b
	}
	b := c.pending
	c.pending = exec.Batch{}
	if n := b.Rec.NumRows(); max != sql.FetchAll && n > max {
		head := exec.Batch{Rec: b.Rec.NewSlice(0, max)}
		c.pending = exec.Batch{Rec: b.Rec.NewSlice(max, n)}
		if b.Ops != nil {
			head.Ops, c.pending.Ops = b.Ops[:max], b.Ops[max:]
		}
		b.Rec.Release()
		b = head
	}
	return b, nil
}

// next reads the query's next batch, with its change kinds.
func (c *cursor) next(ctx context.Context, wait bool) (exec.Batch, error) {
	if jr, ok := c.rows.(*jobRows); ok {
		if !wait {
			return jr.pollChanges()
		}
		return jr.NextChanges(ctx)
	}
	rec, err := c.rows.Next(ctx)
	return exec.Batch{Rec: rec}, err
}

// fetchRows are the rows of one FETCH: up to left more of its cursor's.
type fetchRows struct {
	c    *cursor
	left int64 // sql.FetchAll: no limit
	sent bool  // a row was returned
}

var _ Rows = (*fetchRows)(nil)

func (f *fetchRows) Schema() types.Schema { return f.c.schema }

// Next returns the FETCH's next batch. Over a stream, only the first waits.
func (f *fetchRows) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if f.left == 0 {
		return nil, io.EOF
	}
	b, err := f.c.take(ctx, f.left, !f.c.stream || !f.sent)
	if errors.Is(err, errNotYet) {
		return nil, io.EOF
	}
	if err != nil {
		return nil, err
	}
	n := b.Rec.NumRows()
	if f.left != sql.FetchAll {
		f.left -= n
	}
	f.c.pos += n
	f.sent = true
	if !f.c.stream {
		return insertsOf(b)
	}
	return withOps(f.c.mem, b)
}

// Close leaves the cursor's rows to the next FETCH.
func (f *fetchRows) Close() { f.left = 0 }

// withOps returns b's rows with their change kinds as a first column, op,
// releasing b.
func withOps(mem memory.Allocator, b exec.Batch) (arrow.RecordBatch, error) {
	defer b.Rec.Release()
	n := int(b.Rec.NumRows())
	ops := array.NewStringBuilder(mem)
	defer ops.Release()
	ops.Reserve(n)
	for i := range n {
		ops.Append(b.Op(i).String())
	}
	opCol := ops.NewArray()
	defer opCol.Release()
	fields := append([]arrow.Field{{Name: opField.Name, Type: opField.Type.Arrow(), Nullable: true}}, b.Rec.Schema().Fields()...)
	cols := append([]arrow.Array{opCol}, b.Rec.Columns()...)
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, int64(n)), nil
}

// schemaOf is the columns stmt returns when run (resultSchema), a FETCH's
// those of its cursor if it is open now.
func (s *Session) schemaOf(stmt sql.Statement) types.Schema {
	if f, ok := stmt.(*sql.Fetch); ok {
		if c, open := s.cursors[f.Name]; open && !f.Move {
			return c.schema
		}
		return nil
	}
	return resultSchema(stmt)
}

// CursorSchema returns the columns of what FETCH returns from the open
// cursor name (wire.CursorDescriber).
func (s *Session) CursorSchema(name string) (types.Schema, bool) {
	c, ok := s.cursors[name]
	if !ok {
		return nil, false
	}
	return c.schema, true
}
