package sql

import (
	"math"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// Plan is a node of a bound logical plan. Every expression in a node refers to the
// columns of its input(s) by position: the binder resolves names once, and nothing
// after it looks names up again.
type Plan interface {
	// Schema is the node's output columns.
	Schema() types.Schema
	// Inputs are the node's children (none for Scan and Values).
	Inputs() []Plan
}

// Scan reads a connector-backed table.
type Scan struct {
	Table *Table
	// Columns are the table columns read, by position in Table.Columns, in output
	// order; projection push-down narrows them. Nil means every column.
	Columns []int
}

// Values produces constant rows (a SELECT without FROM).
type Values struct {
	Rows [][]*expr.Expr // every expression is constant
	Out  types.Schema
}

// Filter keeps rows where Cond is true (not false, not NULL).
type Filter struct {
	Input Plan
	Cond  *expr.Expr
}

// Project computes one output column per expression.
type Project struct {
	Input Plan
	Exprs []*expr.Expr
	Out   types.Schema // names and types, one per expression
}

// Unnest is a set-returning function in a select list: it replaces input column
// Col by one row per element of the split of its string, repeating the other
// columns. Func is "string_split" (unnest(string_split(s, Sep)): a literal
// separator, empty pieces kept, as DuckDB) or "regexp_split_to_table" (Sep is a
// regular expression, as PostgreSQL). A NULL string yields no rows.
//
// Func "generate_series" is PostgreSQL's generate_series(lo, hi, step) over
// bigints instead: Col holds lo, input columns Hi and Step the others, and
// Col gets one row per value of the series.
type Unnest struct {
	Input    Plan
	Col      int
	Func     string
	Sep      string
	Hi, Step int // generate_series's
	// Outer (generate_series): a row whose series is empty gives one row
	// with NULL in Col, rather than none.
	Outer bool
	Out   types.Schema
}

// AggCall is one aggregate of an Aggregate node.
type AggCall struct {
	// Func is "count", "sum", "min", "max", "avg" or "string_agg".
	Func string
	// Arg is the input column aggregated, or -1 for COUNT(*).
	Arg      int
	Distinct bool
	// Type is the result type, chosen by the binder (bindAggregate): COUNT
	// bigint; SUM of bigint decimal(38,0) and of decimal(p,s) decimal(38,s) (where
	// PostgreSQL gives numeric), of double double; AVG of bigint decimal(38,16), of
	// decimal(p,s) decimal(38, max(s, min(16, 38-(p-s)))), of double double; MIN
	// and MAX the argument's type. The argument column already has the type the
	// aggregate takes.
	Type types.Type
	// Sep and Order are string_agg's (GROUP_CONCAT's): the separator and the
	// input columns that order a group's values.
	Sep   string
	Order []SortKey
}

// Aggregate groups its input by the GroupBy columns and computes Aggs per group.
// Output: the group columns in GroupBy order, then one column per AggCall. With no
// GroupBy it yields exactly one row, even over empty input.
type Aggregate struct {
	Input   Plan
	GroupBy []int
	Aggs    []AggCall
	Out     types.Schema
}

// JoinKind is the kind of a join.
type JoinKind int

const (
	InnerJoin JoinKind = iota
	LeftJoin
	// FullJoin keeps the rows of either side that match none of the other,
	// NULL-extended.
	FullJoin
	// SemiJoin keeps each left row that some right row matches, once; its
	// output is the left columns only. AntiJoin keeps each left row that no
	// right row matches. (EXISTS and NOT EXISTS, decorrelated.)
	SemiJoin
	AntiJoin
)

// Filters reports whether the join only keeps or drops left rows (semi and
// anti joins): its output is the left columns.
func (k JoinKind) Filters() bool { return k == SemiJoin || k == AntiJoin }

func (k JoinKind) String() string {
	switch k {
	case LeftJoin:
		return "left"
	case FullJoin:
		return "full"
	case SemiJoin:
		return "semi"
	case AntiJoin:
		return "anti"
	}
	return "inner"
}

// Join is a join: rows match when LeftKeys[i] = RightKeys[i] for every i (no
// key is NULL), and Extra, if set, is true. Extra refers to the concatenated left
// and right columns. Without keys (a CROSS JOIN, a condition that equates no
// column of one side with one of the other) every pair is a candidate: a
// nested-loop join. Output: left columns then right columns (the left ones
// only for a semi or anti join).
type Join struct {
	Left, Right         Plan
	Kind                JoinKind
	LeftKeys, RightKeys []int
	Extra               *expr.Expr
	Out                 types.Schema
}

// SortKey is one ORDER BY key.
type SortKey struct {
	Col        int
	Desc       bool
	NullsFirst bool // PostgreSQL's default: NULLs last ascending, first descending
}

// Sort orders its input.
type Sort struct {
	Input Plan
	Keys  []SortKey
}

// Limit skips Offset rows and then passes at most Count rows (Count < 0: all).
// CountParam and OffsetParam, when not 0, are the parameters ($n) that give
// Count and Offset; whoever binds the parameters sets those from them.
type Limit struct {
	Input  Plan
	Offset int64
	Count  int64

	CountParam, OffsetParam int
}

// Clamp makes a count that reaches past the last row int64 can number no
// limit, so that Offset+Count never overflows (LIMIT ALL OFFSET n is read as
// LIMIT 18446744073709551615 OFFSET n).
func (p *Limit) Clamp() {
	if p.Count > 0 && p.Offset > math.MaxInt64-p.Count {
		p.Count = -1
	}
}

func (p *Scan) Schema() types.Schema {
	if p.Columns == nil {
		return p.Table.Columns
	}
	s := make(types.Schema, len(p.Columns))
	for i, c := range p.Columns {
		s[i] = p.Table.Columns[c]
	}
	return s
}
func (p *Values) Schema() types.Schema    { return p.Out }
func (p *Filter) Schema() types.Schema    { return p.Input.Schema() }
func (p *Project) Schema() types.Schema   { return p.Out }
func (p *Unnest) Schema() types.Schema    { return p.Out }
func (p *Aggregate) Schema() types.Schema { return p.Out }
func (p *Join) Schema() types.Schema      { return p.Out }
func (p *Sort) Schema() types.Schema      { return p.Input.Schema() }
func (p *Limit) Schema() types.Schema     { return p.Input.Schema() }

func (p *Scan) Inputs() []Plan      { return nil }
func (p *Values) Inputs() []Plan    { return nil }
func (p *Filter) Inputs() []Plan    { return []Plan{p.Input} }
func (p *Project) Inputs() []Plan   { return []Plan{p.Input} }
func (p *Unnest) Inputs() []Plan    { return []Plan{p.Input} }
func (p *Aggregate) Inputs() []Plan { return []Plan{p.Input} }
func (p *Join) Inputs() []Plan      { return []Plan{p.Left, p.Right} }
func (p *Sort) Inputs() []Plan      { return []Plan{p.Input} }
func (p *Limit) Inputs() []Plan     { return []Plan{p.Input} }

// Union is UNION ALL: the rows of Left and of Right, whose columns have Out's
// types (the binder casts them); Out's names are the left side's. UNION,
// INTERSECT and EXCEPT are built from it and an Aggregate (bind_setop.go).
type Union struct {
	Left, Right Plan
	Out         types.Schema
}

func (p *Union) Schema() types.Schema { return p.Out }
func (p *Union) Inputs() []Plan       { return []Plan{p.Left, p.Right} }

// MaxOneRow passes its input's rows, failing the query (SQLSTATE 21000) if
// there is more than one: a scalar subquery's.
type MaxOneRow struct {
	Input Plan
}

func (p *MaxOneRow) Schema() types.Schema { return p.Input.Schema() }
func (p *MaxOneRow) Inputs() []Plan       { return []Plan{p.Input} }

// WindowFrame bounds the rows a window function sees (see
// operators.WindowFrame, which it mirrors).
type WindowFrame struct {
	Rows                         bool
	StartUnbounded, EndUnbounded bool
	Start, End                   int64
	// A RANGE frame's offset bounds: input columns.
	StartOffset, EndOffset         bool
	RangeKey, StartBound, EndBound int
}

// WindowCall is one window function of a Window node: Args (and Default, -1
// for none) are input columns.
type WindowCall struct {
	Func    string
	Args    []int
	N       int64
	Default int
	Frame   WindowFrame
	Type    types.Type
}

// Window computes window functions over its input, partitioned by Partition
// and ordered by Order within each partition. Output: the input's columns,
// then one per call.
type Window struct {
	Input     Plan
	Partition []int
	Order     []SortKey
	Funcs     []WindowCall
	Out       types.Schema
}

func (p *Window) Schema() types.Schema { return p.Out }
func (p *Window) Inputs() []Plan       { return []Plan{p.Input} }
