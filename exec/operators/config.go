package operators

import (
	"fmt"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// The Config of each built-in operator kind. The planner fills them; the
// operator's factory decodes them. Column numbers refer to the operator's input.

// FilterConfig configures kind "filter": keep rows where Cond is true.
type FilterConfig struct {
	Cond *expr.Expr `json:"cond"`
	// Keep, when set, are the input columns the filter emits, in order: a
	// column only the condition reads (TPC-H q4's l_commitdate and
	// l_receiptdate) is not gathered for the rows that pass.
	Keep []int `json:"keep,omitempty"`
}

// ProjectConfig configures kind "project": one output column per expression.
type ProjectConfig struct {
	Exprs []*expr.Expr `json:"exprs"`
}

// UnnestConfig configures kind "unnest": input column Col (a string) is replaced
// by one row per piece of its split, the other columns repeated. Func is
// "string_split" (Sep is a literal separator; empty pieces are kept) or
// "regexp_split_to_table" (Sep is a regular expression, PostgreSQL semantics).
// A NULL string produces no rows.
type UnnestConfig struct {
	Col  int    `json:"col"`
	Func string `json:"func"`
	Sep  string `json:"sep"`
	// MinBytes and MinChars drop the pieces shorter than that many bytes or
	// characters: a filter on the pieces' length (word <> '', length(word) > 3)
	// that the planner moved into the split, so that the pieces it would drop
	// are never written.
	MinBytes int `json:"min_bytes,omitempty"`
	MinChars int `json:"min_chars,omitempty"`
}

// AggPhase says which half of a two-phase aggregation an operator does.
type AggPhase string

const (
	// AggComplete reads raw rows and emits final values.
	AggComplete AggPhase = "complete"
	// AggPartial reads raw rows and emits partial states (pre-aggregation before
	// a hash exchange).
	AggPartial AggPhase = "partial"
	// AggFinal reads partial states and emits final values.
	AggFinal AggPhase = "final"
)

// AggSpec is one aggregate. Func is "count", "sum", "min", "max" or "avg"; Arg is
// the input column (-1 for COUNT(*)); Type is the final result type.
type AggSpec struct {
	Func     string     `json:"func"`
	Arg      int        `json:"arg"`
	Distinct bool       `json:"distinct,omitempty"`
	Type     types.Type `json:"type"`
	// Sep and Order are string_agg's: the separator, and the input columns
	// its values are ordered by within a group (none: the order they came in).
	Sep   string        `json:"sep,omitempty"`
	Order []SortKeySpec `json:"order,omitempty"`
	// Retract says the input retracts rows (Delete, UpdateBefore): min and
	// max then keep every value of a group, to find the next extreme when
	// theirs is taken back.
	Retract bool `json:"retract,omitempty"`
}

// HashAggConfig configures kind "hash_agg". Output: the GroupBy columns, then the
// aggregates. In AggPartial the aggregates are partial states (see PartialSchema);
// an AggFinal operator's input is a partial operator's output, with GroupBy
// 0..n-1. Distinct aggregates only run in AggComplete. With no GroupBy, the
// operator emits one row at end of stream even when it saw no input.
//
// Emit says when results go out: AggEmitFinal (the default, for bounded input)
// at end of stream; AggEmitUpdates (for unbounded input) as changes whenever the
// task flushes the operator, a partial aggregate then also emitting the signed
// row count per group as its last column (PartialUpdatesSchema).
//
// MemoryLimit bounds, with AggEmitFinal, the memory of the groups (SET
// work_mem): past it a partial aggregate emits what it holds and starts
// afresh, and a complete or final one spills the rows of new groups to disk
// and aggregates them after the others (hashagg_spill.go). 0 means the
// task's TaskContext.WorkMem.
//
// StateBackend, "memory" or "disk" (SET state_backend), says where the
// groups of a streaming complete or final aggregation with GROUP BY live
// (hashagg_disk.go); "" leaves it to the TaskManager (TaskContext.StateBackend).
type HashAggConfig struct {
	GroupBy      []int     `json:"group_by"`
	Aggs         []AggSpec `json:"aggs"`
	Phase        AggPhase  `json:"phase"`
	Emit         AggEmit   `json:"emit,omitempty"`
	MemoryLimit  int64     `json:"memory_limit,omitempty"`
	StateBackend string    `json:"state_backend,omitempty"`
}

// AggEmit says when an aggregation emits (HashAggConfig.Emit).
type AggEmit string

const (
	// AggEmitFinal emits each group's row once, at end of stream.
	AggEmitFinal AggEmit = "final"
	// AggEmitUpdates emits inserts, updates and deletes of groups as they change.
	AggEmitUpdates AggEmit = "updates"
)

// PartialUpdatesSchema is PartialSchema plus the trailing column a partial
// aggregate emits in AggEmitUpdates mode: the signed number of rows it folded
// into each group, which tells the final one when a group becomes empty.
func PartialUpdatesSchema(groupCols types.Schema, aggs []AggSpec, in types.Schema) types.Schema {
	return append(PartialSchema(groupCols, aggs, in), types.Field{Name: "rows", Type: types.Int64Type})
}

// PartialSchema returns the columns a partial aggregate emits for each AggSpec:
// count -> count bigint; sum, min, max -> one column of the final type;
// avg -> sum and count bigint, the sum exact for exact inputs (decimal(38, 0) for
// bigint, decimal(38, s) for decimal(p, s)) and double for doubles.
func PartialSchema(groupCols types.Schema, aggs []AggSpec, in types.Schema) types.Schema {
	out := append(types.Schema{}, groupCols...)
	for i, a := range aggs {
		name := fmt.Sprintf("%s_%d", a.Func, i)
		switch a.Func {
		case "count":
			out = append(out, types.Field{Name: name, Type: types.Int64Type})
		case "avg":
			st := types.Float64Type
			switch in[a.Arg].Type.ID {
			case types.Decimal:
				st = types.DecimalType(38, int(in[a.Arg].Type.Scale))
			case types.Int64:
				st = types.DecimalType(38, 0)
			}
			out = append(out, types.Field{Name: name + "_sum", Type: st},
				types.Field{Name: name + "_count", Type: types.Int64Type})
		default:
			out = append(out, types.Field{Name: name, Type: a.Type})
		}
	}
	return out
}

// SnapshotConfig configures the source kind "snapshot": rows captured when the
// query was planned (a materialised view's contents, ViewState.Snapshot), as an
// Arrow IPC stream in its OperatorSpec's Data, emitted once by subtask 0.
// Columns, when not nil, are the positions it emits, in order (projection
// push-down).
type SnapshotConfig struct {
	Columns []int `json:"columns,omitempty"`
}

// JoinConfig configures kind "hash_join": input 0 is the left side, input 1 the
// right. Rows match when every LeftKeys[i] equals RightKeys[i] (NULL keys never
// match) and Extra (over left columns then right columns), if set, is true.
// Without keys every pair of rows is a candidate (a nested-loop join), which
// needs all rows of both sides in one instance.
// Kind is "inner", "left", "right" (also the right rows no left row matched,
// NULL-extended, once both inputs ended) or "full". Output: left columns then
// right columns.
// MemoryLimit bounds the rows it holds before it partitions both inputs to disk
// (SET work_mem; join_hash_spill.go); 0 means the task's TaskContext.WorkMem, -1
// never to spill (a join over a stream, whose left side never ends).
type JoinConfig struct {
	Kind        string       `json:"kind"`
	LeftKeys    []int        `json:"left_keys"`
	RightKeys   []int        `json:"right_keys"`
	Extra       *expr.Expr   `json:"extra,omitempty"`
	Left        types.Schema `json:"left"`
	Right       types.Schema `json:"right"`
	MemoryLimit int64        `json:"memory_limit,omitempty"`
	// Keep, when set, lists the columns of a pair (left columns, then
	// right ones) the output has, in order: an inner or outer join then
	// gathers only those, and not the keys and columns that only the join
	// itself read. Not for the semi and anti joins, whose output is a side.
	Keep []int `json:"keep,omitempty"`
}

// UpsertConfig configures kind "upsert" (upsert.go), which turns upserts and
// deletes by key into a changelog: Key are the positions of the key columns in
// its input, whose schema its output keeps.
type UpsertConfig struct {
	Key []int `json:"key"`
}

// SortKeySpec is one sort key.
type SortKeySpec struct {
	Col        int  `json:"col"`
	Desc       bool `json:"desc,omitempty"`
	NullsFirst bool `json:"nulls_first,omitempty"`
}

// SortConfig configures kind "sort": at end of stream it emits all rows seen, in
// key order (stable). With Limit >= 0 it keeps only the first Offset+Limit rows
// (top-N) and emits rows Offset.. of them. MemoryLimit bounds the rows it holds
// (SET work_mem) before it writes them to disk as a sorted run, to merge at end
// of stream (sort_spill.go); 0 means the task's TaskContext.WorkMem.
type SortConfig struct {
	Keys        []SortKeySpec `json:"keys"`
	Offset      int64         `json:"offset"`
	Limit       int64         `json:"limit"`
	MemoryLimit int64         `json:"memory_limit,omitempty"`
}

// LimitConfig configures kind "limit": skip Offset rows, then pass Count rows
// (Count < 0: all), then drop the rest.
type LimitConfig struct {
	Offset int64 `json:"offset"`
	Count  int64 `json:"count"`
}

// ValuesConfig configures kind "values", a bounded source of constant rows; only
// subtask 0 emits them.
type ValuesConfig struct {
	Rows [][]types.Value `json:"rows"`
}

// ResultConfig configures kind "result", the sink that hands a query's rows to
// the client waiting for job JobID through TaskContext.Results.
type ResultConfig struct{}

// WindowConfig configures kind "window", window functions over a bounded
// input (window.go): rows are grouped by Partition, ordered by Order within
// each partition, and each of Funcs adds a column. Output: the input's
// columns, then one column per function.
type WindowConfig struct {
	Partition []int            `json:"partition,omitempty"`
	Order     []SortKeySpec    `json:"order,omitempty"`
	Funcs     []WindowFuncSpec `json:"funcs"`
}

// WindowFuncSpec is one window function. Func is row_number, rank,
// dense_rank, percent_rank, cume_dist, ntile, lag, lead, first_value,
// last_value, nth_value, count, sum, avg, min or max; Args are input columns
// (none for count(*)); N is lag's and lead's offset, ntile's buckets,
// nth_value's position; Default, if not -1, is the column lag and lead read
// past the partition's edge. Frame bounds the rows an aggregate or a value
// function sees. Type is the result's.
type WindowFuncSpec struct {
	Func    string      `json:"func"`
	Args    []int       `json:"args,omitempty"`
	N       int64       `json:"n,omitempty"`
	Default int         `json:"default"`
	Frame   WindowFrame `json:"frame"`
	Type    types.Type  `json:"type"`
}

// WindowFrame is a frame: with Rows, the rows from Start to End (offsets
// from the current row, negative before it), unbounded on a side whose
// Unbounded flag is set; without Rows (RANGE), from the first row of the
// partition (StartUnbounded) or of the current row's peers, to the last of
// the partition (EndUnbounded) or of the peers. A RANGE frame with an offset
// (RANGE BETWEEN 3 PRECEDING AND CURRENT ROW) has its bounds as input
// columns: with StartOffset it starts at the first row whose RangeKey is not
// before the current row's StartBound in the window's order (its first key's
// direction), with EndOffset it ends after the last row whose RangeKey is
// not after its EndBound; RangeKey orders as that key and has the bounds'
// type. A row whose key is NULL has its peers (the NULL rows) as those bounds.
type WindowFrame struct {
	Rows           bool  `json:"rows,omitempty"`
	StartUnbounded bool  `json:"start_unbounded,omitempty"`
	EndUnbounded   bool  `json:"end_unbounded,omitempty"`
	Start          int64 `json:"start,omitempty"`
	End            int64 `json:"end,omitempty"`
	StartOffset    bool  `json:"start_offset,omitempty"`
	EndOffset      bool  `json:"end_offset,omitempty"`
	RangeKey       int   `json:"range_key,omitempty"`
	StartBound     int   `json:"start_bound,omitempty"`
	EndBound       int   `json:"end_bound,omitempty"`
}
