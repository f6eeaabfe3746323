package operators

// Checkpoint state of hash_agg (exec.Checkpointed), in the envelope of
// exec/state.
//
// A hash_agg snapshot is its groups as Arrow columns: the key columns, decoded
// (state.KeyTable.DecodeKeys) rather than copied as encoded bytes, so that a later build with a
// different key encoding or table layout still reads them; then each
// aggregate's per-group state as columns named "agg<i>.<name>" (saveState);
// then, in updates mode, the row counts and which groups are out downstream.
// count(DISTINCT) adds a table of its (group, value) pairs. A small JSON header
// says what the operator was (phase, emit mode, aggregates) so that restoring
// into a differently configured one is a clear error.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/state"
	"github.com/hummer-db/hummer/exec/vector"
)

var _ exec.Checkpointed = (*hashAggOp)(nil)

const (
	hashAggStateMagic = "HAGG"
	// hashAggStateVersion is the layout of hash_agg's state; a change to the
	// header, the column names or their meaning needs a new one.
	hashAggStateVersion = 1
)

// aggStateWriter collects the per-group state columns of hash_agg's aggregates
// for groups 0..n-1, each under prefix+name, and extra tables (count
// DISTINCT's pairs).
type aggStateWriter struct {
	mem        memory.Allocator
	n          int
	prefix     string
	fields     []arrow.Field
	cols       []arrow.Array
	tableNames []string
	tables     []arrow.RecordBatch
}

// put adds column a, taking over the caller's reference.
func (w *aggStateWriter) put(name string, a arrow.Array) {
	w.fields = append(w.fields, arrow.Field{Name: w.prefix + name, Type: a.DataType(), Nullable: true})
	w.cols = append(w.cols, a)
}

// putTable adds a table, taking over the caller's reference.
func (w *aggStateWriter) putTable(name string, rec arrow.RecordBatch) {
	w.tableNames = append(w.tableNames, w.prefix+name)
	w.tables = append(w.tables, rec)
}

// padded returns vals as exactly n entries: state slices grow lazily, and a
// missing entry means zero (vector.GrowZero).
func padded[T any](vals []T, n int) []T {
	out := make([]T, n)
	copy(out, vals)
	return out
}

func (w *aggStateWriter) int64s(name string, vals []int64) {
	w.put(name, int64Column(w.mem, padded(vals, w.n)))
}

func (w *aggStateWriter) float64s(name string, vals []float64) {
	b := array.NewFloat64Builder(w.mem)
	defer b.Release()
	b.AppendValues(padded(vals, w.n), nil)
	w.put(name, b.NewArray())
}

func (w *aggStateWriter) bools(name string, vals []bool) {
	b := array.NewBooleanBuilder(w.mem)
	defer b.Release()
	b.AppendValues(padded(vals, w.n), nil)
	w.put(name, b.NewArray())
}

func (w *aggStateWriter) decimals(name string, vals []decimal128.Num, scale int32) {
	b := array.NewDecimal128Builder(w.mem, &arrow.Decimal128Type{Precision: 38, Scale: scale})
	defer b.Release()
	b.AppendValues(padded(vals, w.n), nil)
	w.put(name, b.NewArray())
}

func (w *aggStateWriter) release() {
	vector.ReleaseArrays(w.cols)
	w.cols = nil
	for _, t := range w.tables {
		t.Release()
	}
	w.tables = nil
}

// aggStateReader gives the columns an aggStateWriter wrote back, by name, with
// their types and lengths checked. The slices it returns are copies.
type aggStateReader struct {
	n      int
	prefix string
	cols   map[string]arrow.Array
	tables map[string]arrow.RecordBatch
}

func (r *aggStateReader) col(name string) (arrow.Array, bool) {
	a, ok := r.cols[r.prefix+name]
	return a, ok
}

func (r *aggStateReader) table(name string) arrow.RecordBatch { return r.tables[r.prefix+name] }

// stateColumn returns the required column name, checking it is a T of r.n
// rows without NULLs.
func stateColumn[T arrow.Array](r *aggStateReader, name string) (T, error) {
	var zero T
	a, ok := r.col(name)
	if !ok {
		return zero, fmt.Errorf("%w: column %s%s missing", state.ErrBadState, r.prefix, name)
	}
	c, ok := a.(T)
	if !ok || a.NullN() != 0 || a.Len() != r.n {
		return zero, fmt.Errorf("%w: column %s%s is %d rows of %s (%d NULL), want %d", state.ErrBadState, r.prefix, name, a.Len(), a.DataType(), a.NullN(), r.n)
	}
	return c, nil
}

func (r *aggStateReader) int64s(name string) ([]int64, error) {
	c, err := stateColumn[*array.Int64](r, name)
	if err != nil {
		return nil, err
	}
	return slices.Clone(c.Int64Values()), nil
}

func (r *aggStateReader) float64s(name string) ([]float64, error) {
	c, err := stateColumn[*array.Float64](r, name)
	if err != nil {
		return nil, err
	}
	return slices.Clone(c.Float64Values()), nil
}

func (r *aggStateReader) bools(name string) ([]bool, error) {
	c, err := stateColumn[*array.Boolean](r, name)
	if err != nil {
		return nil, err
	}
	out := make([]bool, c.Len())
	for i := range out {
		out[i] = c.Value(i)
	}
	return out, nil
}

// decimals returns the values and the scale of a decimal column.
func (r *aggStateReader) decimals(name string) ([]decimal128.Num, int32, error) {
	c, err := stateColumn[*array.Decimal128](r, name)
	if err != nil {
		return nil, 0, err
	}
	return slices.Clone(c.Values()), c.DataType().(*arrow.Decimal128Type).Scale, nil
}

// The state of each aggregate (the methods of aggregate's saveState and
// loadState). loadState runs on a fresh aggregate; r.n is the number of groups.

func (a *countAgg) saveState(w *aggStateWriter) error {
	w.int64s("counts", a.counts)
	return nil
}

func (a *countAgg) loadState(r *aggStateReader) error {
	var err error
	a.counts, err = r.int64s("counts")
	return err
}

// save writes the accumulator: "nn", and for an input type seen, "sum" of the
// kind's type (so the kind and a decimal's scale come back with it) and a
// bigint sum's "spill" when it has one.
func (a *numAcc) save(w *aggStateWriter) {
	w.int64s("nn", a.nn)
	switch a.kind {
	case arrow.INT64:
		w.int64s("sum", a.ints)
		if a.spill != nil {
			w.decimals("spill", a.spill, 0)
		}
	case arrow.FLOAT64:
		w.float64s("sum", a.floats)
	case arrow.DECIMAL128:
		w.decimals("sum", a.decs, a.scale)
	}
}

func (a *numAcc) load(r *aggStateReader) error {
	nn, err := r.int64s("nn")
	if err != nil {
		return err
	}
	*a = numAcc{nn: nn}
	sum, ok := r.col("sum")
	_, spill := r.col("spill")
	if !ok {
		if spill {
			return fmt.Errorf("%w: %sspill without a sum", state.ErrBadState, r.prefix)
		}
		return nil
	}
	switch sum.DataType().ID() {
	case arrow.INT64:
		a.kind = arrow.INT64
		if a.ints, err = r.int64s("sum"); err != nil {
			return err
		}
		if spill {
			a.spill, _, err = r.decimals("spill")
		}
	case arrow.FLOAT64:
		a.kind = arrow.FLOAT64
		a.floats, err = r.float64s("sum")
	case arrow.DECIMAL128:
		a.kind = arrow.DECIMAL128
		a.decs, a.scale, err = r.decimals("sum")
	default:
		return fmt.Errorf("%w: %ssum is %s", state.ErrBadState, r.prefix, sum.DataType())
	}
	if err == nil && spill && a.kind != arrow.INT64 {
		err = fmt.Errorf("%w: %sspill beside a %s sum", state.ErrBadState, r.prefix, sum.DataType())
	}
	return err
}

func (a *sumAgg) saveState(w *aggStateWriter) error {
	a.acc.save(w)
	return nil
}

func (a *sumAgg) loadState(r *aggStateReader) error { return a.acc.load(r) }

func (a *avgAgg) saveState(w *aggStateWriter) error {
	a.acc.save(w)
	if a.countCol >= 0 {
		w.int64s("counts", a.counts)
	}
	return nil
}

func (a *avgAgg) loadState(r *aggStateReader) error {
	if err := a.acc.load(r); err != nil {
		return err
	}
	if a.countCol < 0 {
		return nil
	}
	var err error
	a.counts, err = r.int64s("counts")
	return err
}

// saveState writes min/max as one "value" column of the input's type, NULL
// where the group has no value (has), as result builds it; none before the
// first input.
func (a *minMaxAgg) saveState(w *aggStateWriter) error {
	if a.kind == 0 {
		return nil
	}
	cols, err := a.result(w.mem, state.GroupRange(0, w.n), []arrow.DataType{a.dt}, nil)
	if err != nil {
		return err
	}
	w.put("value", cols[0])
	return nil
}

func (a *minMaxAgg) loadState(r *aggStateReader) error {
	v, ok := r.col("value")
	if !ok {
		return nil
	}
	dt := v.DataType()
	switch dt.ID() {
	case arrow.INT64, arrow.TIMESTAMP, arrow.FLOAT64, arrow.DECIMAL128, arrow.BOOL, arrow.STRING, arrow.NULL:
	default:
		return fmt.Errorf("%w: %svalue is %s", state.ErrBadState, r.prefix, dt)
	}
	if v.Len() != r.n {
		return fmt.Errorf("%w: %svalue has %d rows, want %d", state.ErrBadState, r.prefix, v.Len(), r.n)
	}
	a.kind, a.dt = dt.ID(), dt
	a.grow(r.n)
	for g := range r.n {
		if v.IsNull(g) {
			continue
		}
		a.has[g] = true
		switch c := v.(type) {
		case *array.Int64:
			a.ints[g] = c.Value(g)
		case *array.Timestamp:
			a.ints[g] = int64(c.Value(g))
		case *array.Float64:
			a.floats[g] = c.Value(g)
		case *array.Decimal128:
			a.decs[g] = c.Value(g)
		case *array.Boolean:
			a.bools[g] = c.Value(g)
		case *array.String:
			a.strs[g] = []byte(c.Value(g))
			a.strBytes += int64(cap(a.strs[g]))
		}
	}
	return nil
}

// saveState writes the per-group counts and a "pairs" table: per (group,
// value) pair, in id order, its group ("group", uint32), its value ("value",
// decoded) and its reference count ("refs").
func (a *countDistinctAgg) saveState(w *aggStateWriter) error {
	w.int64s("counts", a.counts)
	m := a.table().Len()
	if m == 0 {
		return nil
	}
	groups, vals, err := a.table().DecodeGrouped(w.mem, []arrow.DataType{a.dt})
	if err != nil {
		return err
	}
	gb := array.NewUint32Builder(w.mem)
	gb.AppendValues(groups, nil)
	cols := append([]arrow.Array{gb.NewArray()}, vals...)
	gb.Release()
	cols = append(cols, int64Column(w.mem, padded(a.refs, m)))
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "group", Type: arrow.PrimitiveTypes.Uint32},
		{Name: "value", Type: a.dt, Nullable: true},
		{Name: "refs", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	rec := array.NewRecordBatch(schema, cols, int64(m))
	vector.ReleaseArrays(cols)
	w.putTable("pairs", rec)
	return nil
}

func (a *countDistinctAgg) loadState(r *aggStateReader) error {
	var err error
	if a.counts, err = r.int64s("counts"); err != nil {
		return err
	}
	rec := r.table("pairs")
	if rec == nil {
		return nil
	}
	m := int(rec.NumRows())
	if rec.NumCols() != 3 {
		return fmt.Errorf("%w: %spairs has %d columns, want 3", state.ErrBadState, r.prefix, rec.NumCols())
	}
	gc, ok1 := rec.Column(0).(*array.Uint32)
	val := rec.Column(1)
	rc, ok2 := rec.Column(2).(*array.Int64)
	if !ok1 || !ok2 || gc.NullN() != 0 || rc.NullN() != 0 || gc.Len() != m || val.Len() != m || rc.Len() != m {
		return fmt.Errorf("%w: %spairs has columns %s", state.ErrBadState, r.prefix, rec.Schema())
	}
	if _, err := state.KeyWidth(val.DataType()); err != nil {
		return fmt.Errorf("%w: %spairs: %v", state.ErrBadState, r.prefix, err)
	}
	groups := gc.Uint32Values()
	for _, g := range groups {
		if int(g) >= r.n {
			return fmt.Errorf("%w: %spairs: group %d of %d", state.ErrBadState, r.prefix, g, r.n)
		}
	}
	a.dt = val.DataType()
	if m > 0 {
		if err := a.keys.Encode([]arrow.Array{val}, groups, m); err != nil {
			return err
		}
		ids := make([]uint32, m)
		a.table().InsertRows(&a.keys, ids)
		a.keys = state.RowKeys{}
		if a.table().Len() != m {
			return fmt.Errorf("%w: %spairs: repeated pairs", state.ErrBadState, r.prefix)
		}
	}
	a.refs = slices.Clone(rc.Int64Values())
	// Every group counts its pairs referenced at least once.
	live := make([]int64, r.n)
	for p, g := range groups {
		if a.refs[p] > 0 {
			live[g]++
		}
	}
	if !slices.Equal(live, a.counts) {
		return fmt.Errorf("%w: %spairs disagree with the counts", state.ErrBadState, r.prefix)
	}
	return nil
}

// hashAggStateHeader is the JSON header of a hash_agg state blob.
type hashAggStateHeader struct {
	// What the operator is, checked against the restoring one's config.
	Phase   AggPhase `json:"phase"`
	Updates bool     `json:"updates"`
	Keys    int      `json:"keys"`
	Aggs    []string `json:"aggs"`

	// Done: the operator had ended (and released its state); nothing follows.
	Done bool `json:"done,omitempty"`
	Seen bool `json:"seen,omitempty"`
	// Groups is the number of groups: rows of the groups section.
	Groups int `json:"groups"`
	// KeyColumns: the groups section has the key columns ("key<i>"); false
	// until the operator saw its first batch, which sets the key types.
	KeyColumns bool `json:"key_columns,omitempty"`
	// Tables names the sections after the groups section.
	Tables []string `json:"tables,omitempty"`
}

func (o *hashAggOp) stateHeader() hashAggStateHeader {
	h := hashAggStateHeader{Phase: o.cfg.Phase, Updates: o.updates, Keys: len(o.keyCols), Done: o.done}
	for _, a := range o.cfg.Aggs {
		name := a.Func
		if a.Distinct {
			name += " distinct"
		}
		h.Aggs = append(h.Aggs, name)
	}
	return h
}

// SnapshotState returns the operator's groups and their aggregate states (see
// the top of this file). In updates mode a complete or final aggregation must
// have been flushed since its last batch (it flushes itself on a barrier, as
// checkpoint.go asks): its pending changes and saved old rows are not part of
// the snapshot, so SnapshotState returns an error instead while it has any. A
// partial one's pending states are its whole state and are snapshotted.
func (o *hashAggOp) SnapshotState(ctx context.Context, checkpoint int64) ([]byte, error) {
	if o.spill != nil {
		return nil, fmt.Errorf("hash_agg: part of its groups is spilled to disk, which checkpoints do not take")
	}
	h := o.stateHeader()
	if o.done {
		hdr, err := json.Marshal(h)
		if err != nil {
			return nil, err
		}
		return state.Encode(hashAggStateMagic, hashAggStateVersion, hdr), nil
	}
	if err := o.snapshotReady(); err != nil {
		return nil, err
	}
	if o.disk != nil {
		p, err := o.snapshotDisk(checkpoint)
		return finishNow(ctx, p, err)
	}
	n := o.ngroups()
	h.Seen, h.Groups = o.seen, n
	w := &aggStateWriter{mem: o.mem, n: n}
	defer w.release()
	if o.keyTypes != nil {
		cols, err := o.table.DecodeKeys(o.mem, o.keyTypes, state.GroupRange(0, n))
		if err != nil {
			return nil, fmt.Errorf("hash_agg: snapshot: %w", err)
		}
		for i, c := range cols {
			w.put(fmt.Sprintf("key%d", i), c)
		}
		h.KeyColumns = true
	}
	for i, a := range o.aggs {
		w.prefix = fmt.Sprintf("agg%d.", i)
		if err := a.saveState(w); err != nil {
			return nil, fmt.Errorf("hash_agg: snapshot: %w", err)
		}
	}
	w.prefix = ""
	if o.rows != nil {
		w.prefix = "rows."
		if err := o.rows.saveState(w); err != nil {
			return nil, err
		}
		w.prefix = ""
		if o.cfg.Phase != AggPartial {
			w.bools("emitted", o.emitted)
		}
	}
	h.Tables = w.tableNames
	for i, c := range w.cols {
		if c.Len() != n {
			return nil, fmt.Errorf("hash_agg: snapshot: state column %s has %d rows for %d groups", w.fields[i].Name, c.Len(), n)
		}
	}
	schema := arrow.NewSchema(w.fields, nil)
	rec := array.NewRecordBatch(schema, w.cols, int64(n))
	groups, err := state.WriteIPC(o.mem, schema, rec)
	rec.Release()
	if err != nil {
		return nil, fmt.Errorf("hash_agg: snapshot: %w", err)
	}
	hdr, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	sections := [][]byte{hdr, groups}
	for _, t := range w.tables {
		data, err := state.WriteIPC(o.mem, t.Schema(), t)
		if err != nil {
			return nil, fmt.Errorf("hash_agg: snapshot: %w", err)
		}
		sections = append(sections, data)
	}
	return state.Encode(hashAggStateMagic, hashAggStateVersion, sections...), nil
}

// snapshotReady says the operator, open and not done, can be snapshotted:
// it has no changes not flushed.
func (o *hashAggOp) snapshotReady() error {
	if o.table == nil {
		return fmt.Errorf("hash_agg: snapshot before Open")
	}
	if len(o.dirty) > 0 || len(o.oldRows) > 0 {
		return fmt.Errorf("hash_agg: snapshot with %d groups' changes not flushed", len(o.dirty))
	}
	return nil
}

// RestoreState makes a freshly opened operator the one SnapshotState saw. On
// an error it is left as fresh as it was.
func (o *hashAggOp) RestoreState(ctx context.Context, data []byte) (err error) {
	if o.table == nil || o.done {
		return fmt.Errorf("hash_agg: RestoreState before Open or after end of stream")
	}
	if o.seen || o.table.Len() > 0 || len(o.emitted) > 0 {
		return fmt.Errorf("hash_agg: RestoreState after input")
	}
	defer func() {
		if err != nil {
			if rerr := o.resetState(); rerr != nil {
				err = errors.Join(err, rerr)
			}
		}
	}()
	defer state.Recover("hash_agg", &err)
	if len(data) >= 4 && string(data[:4]) == hashAggDiskMagic {
		return o.restoreDisk(ctx, data)
	}
	sections, err := state.Decode("hash_agg", hashAggStateMagic, hashAggStateVersion, data)
	if err != nil {
		return err
	}
	if len(sections) == 0 {
		return fmt.Errorf("hash_agg: %w: no header", state.ErrBadState)
	}
	var h hashAggStateHeader
	if err := json.Unmarshal(sections[0], &h); err != nil {
		return fmt.Errorf("hash_agg: %w: header: %v", state.ErrBadState, err)
	}
	if err := o.checkHeader(h); err != nil {
		return err
	}
	if h.Done {
		o.release()
		o.done = true
		return nil
	}
	if len(sections) != 2+len(h.Tables) {
		return fmt.Errorf("hash_agg: %w: %d sections, want %d", state.ErrBadState, len(sections), 2+len(h.Tables))
	}
	if err := o.restoreGroups(h, sections[1], sections[2:]); err != nil {
		return fmt.Errorf("hash_agg: restore: %w", err)
	}
	if o.disk != nil {
		// State of the memory backend restored into the disk backend's
		// cache: every group goes to the DB at the next write-back.
		o.disk.markAll(o.table.Len())
	}
	return nil
}

// checkHeader checks that a state's header is of an operator configured as
// this one.
func (o *hashAggOp) checkHeader(h hashAggStateHeader) error {
	want := o.stateHeader()
	if h.Phase != want.Phase || h.Updates != want.Updates || h.Keys != want.Keys || !slices.Equal(h.Aggs, want.Aggs) {
		return fmt.Errorf("hash_agg: %w: state of a %s aggregation (updates %t) of %d keys and %v, this one is %s (updates %t) of %d keys and %v",
			state.ErrBadState, h.Phase, h.Updates, h.Keys, h.Aggs, want.Phase, want.Updates, want.Keys, want.Aggs)
	}
	return nil
}

func (o *hashAggOp) restoreGroups(h hashAggStateHeader, groups []byte, tables [][]byte) error {
	_, recs, err := state.ReadIPC(o.mem, groups)
	if err != nil {
		return fmt.Errorf("%w: %v", state.ErrBadState, err)
	}
	defer func() {
		for _, rec := range recs {
			rec.Release()
		}
	}()
	n := h.Groups
	if len(recs) != 1 || int(recs[0].NumRows()) != n {
		return fmt.Errorf("%w: the groups are not one record of %d rows", state.ErrBadState, n)
	}
	nk := len(o.keyCols)
	if nk == 0 && n != 1 {
		return fmt.Errorf("%w: %d groups without GROUP BY", state.ErrBadState, n)
	}
	r := &aggStateReader{n: n, cols: map[string]arrow.Array{}, tables: map[string]arrow.RecordBatch{}}
	for i, f := range recs[0].Schema().Fields() {
		r.cols[f.Name] = recs[0].Column(i)
	}
	for i, name := range h.Tables {
		_, trecs, err := state.ReadIPC(o.mem, tables[i])
		if err != nil {
			return fmt.Errorf("%w: table %s: %v", state.ErrBadState, name, err)
		}
		recs = append(recs, trecs...)
		if len(trecs) != 1 {
			return fmt.Errorf("%w: table %s has %d records", state.ErrBadState, name, len(trecs))
		}
		r.tables[name] = trecs[0]
	}

	if h.KeyColumns {
		cols := make([]arrow.Array, nk)
		keyTypes := make([]arrow.DataType, nk)
		for i := range cols {
			c, ok := r.col(fmt.Sprintf("key%d", i))
			if !ok || c.Len() != n {
				return fmt.Errorf("%w: key column %d missing", state.ErrBadState, i)
			}
			if _, err := state.KeyWidth(c.DataType()); err != nil {
				return fmt.Errorf("%w: %v", state.ErrBadState, err)
			}
			cols[i], keyTypes[i] = c, c.DataType()
		}
		if n > 0 {
			// Distinct keys inserted in order get ids 0..n-1 again.
			var keys state.RowKeys
			if err := keys.Encode(cols, nil, n); err != nil {
				return err
			}
			gids := make([]uint32, n)
			o.table.InsertRows(&keys, gids)
			if o.table.Len() != n {
				return fmt.Errorf("%w: repeated group keys", state.ErrBadState)
			}
		}
		o.keyTypes = keyTypes
	} else if nk > 0 && n > 0 {
		return fmt.Errorf("%w: %d groups without key columns", state.ErrBadState, n)
	}
	for i, a := range o.aggs {
		r.prefix = fmt.Sprintf("agg%d.", i)
		if err := a.loadState(r); err != nil {
			return err
		}
	}
	r.prefix = ""
	if o.rows != nil {
		r.prefix = "rows."
		if err := o.rows.loadState(r); err != nil {
			return err
		}
		r.prefix = ""
		if o.cfg.Phase != AggPartial {
			if o.emitted, err = r.bools("emitted"); err != nil {
				return err
			}
		}
	}
	o.seen = h.Seen
	return nil
}

// resetState makes the operator fresh again after a failed RestoreState.
func (o *hashAggOp) resetState() error {
	o.table = state.NewKeyTable()
	o.keyTypes = nil
	o.keys = state.RowKeys{}
	o.seen = false
	o.dirty, o.isDirty, o.emitted = nil, nil, nil
	_, err := o.buildAggs()
	return err
}
