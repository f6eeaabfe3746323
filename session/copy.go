package session

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/hummer-db/hummer/connectors/table"
	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/sql"
)

// CopyIn is a COPY t FROM STDIN under way: the wire server passes it the
// client's data (Write) and ends it with Done, which commits every row, or
// Abort, which keeps none.
type CopyIn struct {
	// Columns is the number of fields of each record.
	Columns int
	tx      *table.Tx
	r       *table.CopyReader
}

// CopyIn starts COPY t [(columns)] FROM STDIN [WITH (...)] into a table Hummer
// stores. It holds the table's writer lock until Done or Abort.
func (s *Session) CopyIn(ctx context.Context, query string) (*CopyIn, error) {
	c, ok, err := sql.ParseCopyFrom(query)
	if err != nil {
		return nil, err
	}
	if !ok {
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
	f := table.CopyFormat{CSV: o.CSV, Header: o.Header, Delimiter: o.Delimiter, Null: o.Null, Quote: o.Quote, Escape: o.Escape}
	return &CopyIn{Columns: len(fields), tx: tx, r: table.NewCopyReader(tx, fields, defaults, f)}, nil
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

// Done commits the rows: the result is PostgreSQL's "COPY n".
func (c *CopyIn) Done() (*Result, error) {
	if err := c.r.Close(); err != nil {
		c.tx.Rollback()
		return nil, err
	}
	n := c.tx.Rows()
	if err := c.tx.Commit(); err != nil {
		return nil, err
	}
	return &Result{Tag: fmt.Sprintf("COPY %d", n)}, nil
}

// Abort drops the COPY's rows; safe to call after Done.
func (c *CopyIn) Abort() {
	c.r.Release()
	c.tx.Rollback()
}
