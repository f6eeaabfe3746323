package session

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hummer-db/hummer/planner"
	"github.com/hummer-db/hummer/sql"
)

// CopyOpColumn names the column a continuous COPY ... TO STDOUT sends first:
// each row's change kind (exec.ChangeKind's names: insert, delete,
// update_before, update_after; an update is an update_before of the old row
// followed by an update_after of the new), in every format: text, csv (its
// HEADER names it) and binary (as text). A bounded COPY, whose rows are the
// final answer, has no such column, as in PostgreSQL.
const CopyOpColumn = "op"

// CopyOut is a COPY ... TO STDOUT under way: its rows, and how the wire
// server writes them.
type CopyOut struct {
	// Rows are the data columns. For a continuous query they implement
	// ChangeRows, whose change kinds go in the op column.
	Rows Rows
	// Changes says the query is continuous (it reads a stream that never
	// ends): every row carries its change kind, sent as the first column,
	// CopyOpColumn, and the COPY runs until the client cancels it or
	// statement_timeout ends it.
	Changes bool
	Options sql.CopyOptions
	// ForceQuote says, per data column, that csv quotes its values
	// (FORCE_QUOTE).
	ForceQuote []bool
}

// CopyOut starts COPY t [(columns)] TO STDOUT or COPY (query) TO STDOUT
// [WITH (...)]. Unlike a plain SELECT the query may read streams that never
// end: its changes then arrive as they are produced. statement_timeout covers
// the whole COPY: at the deadline Next fails with context.DeadlineExceeded.
func (s *Session) CopyOut(ctx context.Context, query string) (*CopyOut, error) {
	if s.tx.state == txFailed {
		return nil, errAborted()
	}
	c, ok, err := sql.ParseCopy(query)
	if err != nil {
		return nil, err
	}
	if !ok || !c.To {
		return nil, sql.Errorf(sql.ErrSyntax, 0, "not a COPY ... TO STDOUT")
	}
	var deadline time.Time
	if timeout := s.statementTimeout(); timeout > 0 {
		deadline = time.Now().Add(timeout)
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	text := c.Query
	if c.Query == "" {
		if text, err = s.copyTableQuery(c); err != nil {
			return nil, err
		}
	}
	q, err := s.bindCopyQuery(text)
	if err != nil {
		// A position in the query is one in the COPY statement; the
		// SELECT of a table's COPY is not the user's text.
		var se *sql.Error
		if errors.As(err, &se) && se.Pos > 0 {
			se.Pos += utf8.RuneCountInString(query[:c.QueryPos])
			if c.Query == "" {
				se.Pos = 0
			}
		}
		return nil, err
	}
	co := &CopyOut{Options: c.Options, Changes: planner.Continuous(q.Plan, s.e.cfg.Unbounded)}
	if co.ForceQuote, err = forceQuoted(c, q); err != nil {
		return nil, err
	}
	if _, err := s.authorize(q); err != nil {
		return nil, err
	}
	_, jg, pins, err := s.plan(ctx, q)
	if err != nil {
		return nil, err
	}
	rows := newJobRows(q.Plan.Schema())
	job, err := s.e.jm.Submit(strings.TrimRight(strings.TrimSpace(query), "; \t\r\n"), jg, rows)
	if err != nil {
		pins.release()
		return nil, err
	}
	pins.holdUntil(job)
	rows.start(s.e.jm, job)
	co.Rows = rows
	if !deadline.IsZero() {
		co.Rows = &deadlineRows{Rows: rows, deadline: deadline}
	}
	return co, nil
}

// copyTableQuery is the SELECT of COPY t [(columns)] TO STDOUT, its columns
// checked as PostgreSQL does.
func (s *Session) copyTableQuery(c *sql.Copy) (string, error) {
	t, ok := s.e.catalog.Table(c.Table)
	if !ok {
		return "", sql.Errorf(sql.ErrUnknownTable, 0, "relation \"%s\" does not exist", c.Table)
	}
	names := c.Columns
	if names == nil {
		for _, col := range t.Columns {
			names = append(names, col.Name)
		}
	}
	for _, name := range c.Options.ForceQuote {
		if t.Columns.Index(name) < 0 {
			return "", sql.Errorf(sql.ErrUnknownColumn, 0, "column \"%s\" of relation \"%s\" does not exist", name, t.Name)
		}
	}
	var sb strings.Builder
	sb.WriteString("SELECT ")
	for i, name := range names {
		if t.Columns.Index(name) < 0 {
			return "", sql.Errorf(sql.ErrUnknownColumn, 0, "column \"%s\" of relation \"%s\" does not exist", name, t.Name)
		}
		if slices.Contains(names[:i], name) {
			return "", sql.Errorf(sql.ErrDuplicateColumn, 0, "column \"%s\" specified more than once", name)
		}
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(quotedIdent(name))
	}
	sb.WriteString(" FROM ")
	sb.WriteString(quotedIdent(t.Name))
	return sb.String(), nil
}

// quotedIdent is name as a quoted identifier.
func quotedIdent(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// bindCopyQuery binds COPY's query, which must be one SELECT.
func (s *Session) bindCopyQuery(text string) (*sql.Query, error) {
	stmts, err := sql.Parse(text)
	if err != nil {
		return nil, err
	}
	if len(stmts) != 1 {
		return nil, sql.Errorf(sql.ErrUnsupported, 0, "COPY takes one query")
	}
	s.txStart = time.Now()
	st, err := sql.BindSession(stmts[0], s.e.catalog, text, s.info(), nil)
	if err != nil {
		return nil, err
	}
	q, ok := st.(*sql.Query)
	if !ok {
		return nil, sql.Errorf(sql.ErrUnsupported, 0, "COPY (...) TO STDOUT takes a SELECT")
	}
	return q, nil
}

// forceQuoted resolves FORCE_QUOTE's columns to the query's: of a table's
// COPY, columns of the table the COPY lists; of a query's, its output
// columns (the first of a name).
func forceQuoted(c *sql.Copy, q *sql.Query) ([]bool, error) {
	schema := q.Plan.Schema()
	out := make([]bool, len(schema))
	for i := range out {
		out[i] = c.Options.ForceQuoteAll
	}
	for _, name := range c.Options.ForceQuote {
		i := schema.Index(name)
		switch {
		case i >= 0:
			out[i] = true
		case c.Query != "":
			return nil, sql.Errorf(sql.ErrUnknownColumn, 0, "column \"%s\" does not exist", name)
		default:
			return nil, sql.Errorf(sql.ErrInvalidColumnReference, 0, "FORCE_QUOTE column \"%s\" not referenced by COPY", name)
		}
	}
	return out, nil
}
