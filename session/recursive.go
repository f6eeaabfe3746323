package session

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/connectors/table"
	"github.com/hummer-db/hummer/exec/vector"
	"github.com/hummer-db/hummer/sql"
)

// maxRecursion bounds the rounds of a recursive query, which PostgreSQL
// leaves to statement_timeout: here each round is a job, so a query that
// never ends is stopped sooner, with a message that says why.
const maxRecursion = 10000

// recursive runs a SELECT under WITH RECURSIVE (sql/bind_recursive.go): for
// each recursive WITH query, its base and then its step, round by round, each
// round's rows kept in a table of this engine's store, then the main query
// over them. The tables go when the main query's job ends.
func (s *Session) recursive(ctx context.Context, st *sql.RecursiveQuery, text string) (*Result, error) {
	tables := map[*sql.WorkTable]*sql.Table{}
	var ids []string
	defer func() {
		for _, id := range ids {
			s.e.tables.Drop(id) // pinned versions stay readable until released
		}
	}()
	temp := func(w *sql.WorkTable) (*sql.Table, error) {
		id := newTableID("rec_" + w.Name)
		if err := s.e.tables.Create(id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
		return &sql.Table{Name: w.Name, Columns: w.Out, Engine: sql.StoredEngine, Connection: table.URL(id)}, nil
	}
	for _, r := range st.Recursions {
		all, err := temp(r.Result)
		if err != nil {
			return nil, err
		}
		work, err := temp(r.Work)
		if err != nil {
			return nil, err
		}
		seen := map[string]bool{}
		rows, err := s.collect(ctx, sql.ReplaceWorkTables(r.Base, tables), text)
		for round := 0; err == nil && len(rows) > 0; round++ {
			if r.Distinct {
				rows = distinctNew(rows, seen)
			}
			if len(rows) == 0 {
				break
			}
			if round >= maxRecursion {
				release(rows)
				return nil, sql.Errorf(sql.ErrUnsupported, 0, "recursive query \"%s\" did not end after %d rounds", r.Work.Name, maxRecursion)
			}
			if err = s.writeRows(all, rows, false); err == nil {
				err = s.writeRows(work, rows, true)
			}
			release(rows)
			if err != nil {
				return nil, err
			}
			tables[r.Work] = work
			rows, err = s.collect(ctx, sql.ReplaceWorkTables(r.Step, tables), text)
		}
		release(rows)
		if err != nil {
			return nil, err
		}
		tables[r.Result] = all
	}
	return s.query(ctx, &sql.Query{Plan: sql.ReplaceWorkTables(st.Main.Plan, tables)}, text)
}

// collect runs a bounded plan and returns its rows' batches.
func (s *Session) collect(ctx context.Context, p sql.Plan, text string) ([]arrow.RecordBatch, error) {
	res, err := s.query(ctx, &sql.Query{Plan: p}, text)
	if err != nil {
		return nil, err
	}
	defer res.Rows.Close()
	var out []arrow.RecordBatch
	for {
		rec, err := res.Rows.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			release(out)
			return nil, err
		}
		out = append(out, rec)
	}
}

// writeRows appends rows to the stored table t, replacing what it held with
// replace.
func (s *Session) writeRows(t *sql.Table, rows []arrow.RecordBatch, replace bool) error {
	tx, err := s.begin(t)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if replace {
		tx.Replace()
	}
	for _, rec := range rows {
		if err := tx.Append(rec); err != nil {
			return fmt.Errorf("recursive query: %w", err)
		}
	}
	return tx.Commit()
}

// distinctNew returns the rows of batches not in seen (nor repeated among
// them), adding them to seen; it releases the batches it does not return.
func distinctNew(batches []arrow.RecordBatch, seen map[string]bool) []arrow.RecordBatch {
	var out []arrow.RecordBatch
	for _, rec := range batches {
		keep := table.NewRows(rec, seen)
		switch {
		case keep == nil:
			out = append(out, rec)
		case len(keep) == 0:
			rec.Release()
		default:
			g, err := vector.GatherRecord(memory.DefaultAllocator, rec, keep)
			rec.Release()
			if err == nil {
				out = append(out, g)
			}
		}
	}
	return out
}

func release(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}
