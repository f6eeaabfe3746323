package session

import (
	"context"

	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/connectors/table"
	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/operators"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/sql"
)

// CopyIn is a COPY t FROM STDIN under way: the wire server passes it the
// client's data (Write) and ends it with Done, which commits every row, or
// Abort, which keeps none.
type CopyIn struct {
	// Columns is the number of fields of each record.
	Columns int
	// Binary says the data is PostgreSQL's binary tuples, which the wire
	// server decodes (it knows the formats) and passes to WriteRow; Types
	// are the fields' types. Otherwise it passes the data itself to Write.
	Binary bool
	Types  []types.Type
	tx     *table.Tx
	sess   *Session // whose transaction block counts the COPY as a write
	r      *table.CopyReader
	fields []int
	t      *sql.Table
	rows   [][]types.Value // binary rows not yet appended
}

// copyChunk is how many binary rows CopyIn gathers into one batch.
const copyChunk = 8192

// CopyIn starts COPY t [(columns)] FROM STDIN [WITH (...)] into a table Hummer
// stores. It holds the table's writer lock until Done or Abort.
func (s *Session) CopyIn(ctx context.Context, query string) (*CopyIn, error) {
	switch {
	case s.tx.state == txFailed:
		return nil, errAborted()
	case s.tx.state == txBlock && s.tx.readOnly:
		return nil, sql.Errorf(sql.ErrReadOnlyTransaction, 0, "cannot execute COPY FROM in a read-only transaction")
	}
	c, ok, err := sql.ParseCopy(query)
	if err != nil {
		return nil, err
	}
	if !ok || c.To {
		return nil, sql.Errorf(sql.ErrSyntax, 0, "not a COPY ... FROM STDIN")
	}
	t, ok := s.e.catalog.Table(c.Table)
	if !ok {
		return nil, sql.Errorf(sql.ErrUnknownTable, c.Pos+1, "relation \"%s\" does not exist", c.Table)
	}
	if !t.IsStored() {
		return nil, sql.Errorf(sql.ErrWrongObjectType, c.Pos+1, "cannot COPY into \"%s\": its rows belong to its connector (%s); COPY FROM fills tables Hummer stores (CREATE TABLE without ENGINE)", t.Name, t.Engine)
	}
	if _, err := s.authorize(&sql.Insert{Table: t, Query: &sql.Query{Plan: &sql.Values{}}}); err != nil {
		return nil, err
	}
	var fields []int
	for _, name := range c.Columns {
		i := t.Columns.Index(name)
		if i < 0 {
			return nil, sql.Errorf(sql.ErrUnknownColumn, 0, "column \"%s\" of relation \"%s\" does not exist", name, t.Name)
		}
		if slices.Contains(fields, i) {
			return nil, sql.Errorf(sql.ErrDuplicateColumn, 0, "column \"%s\" specified more than once", name)
		}
		fields = append(fields, i)
	}
	if c.Columns == nil {
		for i := range t.Columns {
			fields = append(fields, i)
		}
	}
	defaults := map[int]string{}
	for name, v := range t.Defaults {
		if i := t.Columns.Index(name); i >= 0 && !v.Null {
			defaults[i] = copyText(v)
		}
	}
	tx, err := s.begin(t)
	if err != nil {
		return nil, err
	}
	o := c.Options
	ci := &CopyIn{Columns: len(fields), Binary: o.Binary, tx: tx, sess: s, fields: fields, t: t}
	for _, i := range fields {
		ci.Types = append(ci.Types, t.Columns[i].Type)
	}
	if !o.Binary {
		f := table.CopyFormat{CSV: o.CSV, Header: o.Header, Delimiter: o.Delimiter, Null: o.Null, Quote: o.Quote, Escape: o.Escape, Zone: s.TimeZone()}
		ci.r = table.NewCopyReader(tx, fields, defaults, f)
	}
	return ci, nil
}

// copyText is v as COPY's text format writes it.
func copyText(v types.Value) string {
	if v.Type.ID == types.String {
		return v.Str
	}
	s := expr.FormatValue(v) // TIMESTAMP '...', DATE '...' for those
	if i := strings.IndexByte(s, '\''); i >= 0 && strings.HasSuffix(s, "'") {
		return s[i+1 : len(s)-1]
	}
	return s
}

// Write parses a chunk of the client's data; an error fails the COPY (the
// caller Aborts).
func (c *CopyIn) Write(data []byte) error { return c.r.Write(data) }

// WriteRow adds one binary row: a value per field, of the field's type or
// text (numeric comes as its text), or NULL.
func (c *CopyIn) WriteRow(vals []types.Value) error {
	c.rows = append(c.rows, vals)
	if len(c.rows) >= copyChunk {
		return c.flushRows()
	}
	return nil
}

// flushRows appends the binary rows gathered, each value cast to its
// column's type and the columns the COPY leaves out at their defaults.
func (c *CopyIn) flushRows() error {
	if len(c.rows) == 0 {
		return nil
	}
	full := make([][]types.Value, len(c.rows))
	for r, vals := range c.rows {
		row := make([]types.Value, len(c.t.Columns))
		for i := range row {
			row[i] = c.t.Defaults[c.t.Columns[i].Name]
			if row[i].Type.ID == types.Null {
				row[i] = types.NullValue(c.t.Columns[i].Type)
			}
		}
		for k, i := range c.fields {
			v, err := castValue(vals[k], c.t.Columns[i].Type)
			if err != nil {
				return fmt.Errorf("COPY %s, row %d, column %s: %w", c.t.Name, c.tx.Rows()+int64(r)+1, c.t.Columns[i].Name, err)
			}
			row[i] = v
		}
		full[r] = row
	}
	c.rows = c.rows[:0]
	rec, err := operators.ValuesRecord(memory.DefaultAllocator, c.t.Columns, full)
	if err != nil {
		return err
	}
	defer rec.Release()
	return c.tx.Append(rec)
}

// castValue casts v to t, as an assignment would.
func castValue(v types.Value, t types.Type) (types.Value, error) {
	if v.Null {
		return types.NullValue(t), nil
	}
	if v.Type == t {
		return v, nil
	}
	out, err := expr.EvalConst(expr.Cast(expr.Literal(v), t))
	if err != nil {
		return types.Value{}, err
	}
	out.Type = t
	return out, nil
}

// Done commits the rows: the result is PostgreSQL's "COPY n".
func (c *CopyIn) Done() (*Result, error) {
	var err error
	if c.r != nil {
		err = c.r.Close()
	} else {
		err = c.flushRows()
	}
	if err != nil {
		c.tx.Rollback()
		return nil, err
	}
	n := c.tx.Rows()
	if err := c.tx.Commit(); err != nil {
		return nil, err
	}
	if c.sess != nil {
		c.sess.wroteInBlock()
	}
	return &Result{Tag: fmt.Sprintf("COPY %d", n)}, nil
}

// Abort drops the COPY's rows; safe to call after Done.
func (c *CopyIn) Abort() {
	if c.r != nil {
		c.r.Release()
	}
	c.tx.Rollback()
}
