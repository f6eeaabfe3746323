package session

// SCROLL cursors: DECLARE c SCROLL CURSOR FOR a bounded query reads the
// query's rows when first fetched, keeps them, and FETCH and MOVE go any way
// over them (PRIOR, FIRST, LAST, ABSOLUTE n, RELATIVE n, BACKWARD n), as in
// PostgreSQL: the cursor stands before the first row, on a row, or after
// the last; a FETCH leaves it on the last row returned. A cursor without
// SCROLL reads forward only (cursor.go); over a continuous query SCROLL is
// refused, as its rows never end.

import (
	"context"
	"errors"
	"io"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/hummer-db/hummer/sql"
)

// scrollState is a SCROLL cursor's rows and position.
type scrollState struct {
	rows []arrow.RecordBatch // every row of the query, once read
	n    int64               // rows in all
	read bool                // rows holds them
	pos  int64               // 0: before the first row; n+1: after the last
}

// load reads every row of c's query, once.
func (c *cursor) load(ctx context.Context) error {
	sc := c.scroll
	if sc.read {
		return nil
	}
	for {
		b, err := c.take(ctx, sql.FetchAll, true)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		rec, err := insertsOf(b)
		if err != nil {
			return err
		}
		sc.rows = append(sc.rows, rec)
		sc.n += rec.NumRows()
	}
	sc.read = true
	return nil
}

// scrollFetch runs FETCH or MOVE on a SCROLL cursor.
func (s *Session) scrollFetch(ctx context.Context, c *cursor, st *sql.Fetch) (*Result, error) {
	if err := c.load(ctx); err != nil {
		return nil, err
	}
	sc := c.scroll
	var idx []int64 // the rows returned, 1-based, in order
	switch st.Dir {
	case sql.FetchForward, sql.FetchBackward:
		step, k := int64(1), st.Count
		if st.Dir == sql.FetchBackward {
			step = -1
		}
		if k == sql.FetchAll {
			k = sc.n + 1
		}
		for ; k > 0; k-- {
			next := sc.pos + step
			if next < 1 || next > sc.n {
				sc.pos = min(max(next, 0), sc.n+1) // before the first or after the last
				break
			}
			sc.pos = next
			idx = append(idx, next)
		}
	case sql.FetchAbsolute, sql.FetchRelative:
		target := st.Count
		switch {
		case st.Dir == sql.FetchRelative:
			target = sc.pos + st.Count
		case target < 0:
			target = sc.n + 1 + target
		}
		sc.pos = min(max(target, 0), sc.n+1)
		if target >= 1 && target <= sc.n {
			idx = append(idx, target)
		}
	}
	if st.Move {
		return &Result{Tag: "MOVE " + strconv.Itoa(len(idx))}, nil
	}
	rec, err := c.rowsAt(idx)
	if err != nil {
		return nil, err
	}
	return &Result{Tag: "FETCH", Rows: newStaticRows(c.schema, rec)}, nil
}

// rowsAt returns the rows at 1-based positions idx of a loaded SCROLL
// cursor, in that order, as one record.
func (c *cursor) rowsAt(idx []int64) (arrow.RecordBatch, error) {
	sc := c.scroll
	schema := c.schema.Arrow()
	cols := make([][]arrow.Array, len(schema.Fields()))
	defer func() {
		for _, cs := range cols {
			for _, a := range cs {
				a.Release()
			}
		}
	}()
	for _, at := range idx {
		r := at - 1
		b := 0
		for r >= sc.rows[b].NumRows() {
			r -= sc.rows[b].NumRows()
			b++
		}
		for j, col := range sc.rows[b].Columns() {
			cols[j] = append(cols[j], array.NewSlice(col, r, r+1))
		}
	}
	out := make([]arrow.Array, len(cols))
	for j, cs := range cols {
		var err error
		if len(cs) == 0 {
			out[j] = array.MakeArrayOfNull(c.mem, schema.Field(j).Type, 0)
			continue
		}
		if out[j], err = array.Concatenate(cs, c.mem); err != nil {
			for _, a := range out[:j] {
				a.Release()
			}
			return nil, err
		}
	}
	rec := array.NewRecordBatch(schema, out, int64(len(idx)))
	for _, a := range out {
		a.Release()
	}
	return rec, nil
}

// release frees the rows a SCROLL cursor holds.
func (sc *scrollState) release() {
	for _, r := range sc.rows {
		r.Release()
	}
	sc.rows, sc.n = nil, 0
}
