package sql

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// A row-at-a-time reference interpreter for plans, used to check that Optimize
// keeps results: every query of the data-driven files runs before and after
// optimisation over the fixture rows below, and the two results must be the
// same multiset. It is slow and simple on purpose; it shares only the scalar
// evaluator (expr.EvalConst) with the engine.

type row []types.Value

func dec(s string, p, sc int) types.Value {
	n, err := decimal128.FromString(s, int32(p), int32(sc))
	if err != nil {
		panic(err)
	}
	return types.DecimalValue(types.DecimalType(p, sc), n)
}

var (
	null    = func(t types.Type) types.Value { return types.NullValue(t) }
	i64     = types.IntValue
	str     = types.StringValue
	f64     = types.FloatValue
	boolean = types.BoolValue
	ts      = func(day int64) types.Value { return types.TimestampValue(1704067200_000000 + day*86400_000000) }
)

// fixtures holds the rows of the test catalog's tables, NULLs and duplicates
// included.
var fixtures = map[string][]row{
	"docs": {
		{str("In the beginning God created")}, {str("")}, {str("and the  earth was")},
		{null(types.StringType)}, {str("the end")},
	},
	"orders": {
		{i64(1), i64(1), dec("10.50", 10, 2), str("paid"), ts(0)},
		{i64(2), i64(1), dec("3.00", 10, 2), str("open"), ts(1)},
		{i64(3), i64(2), dec("99.99", 10, 2), str("paid"), ts(400)},
		{i64(4), i64(3), null(types.DecimalType(10, 2)), str("a"), null(types.TimestampType)},
		{i64(5), null(types.Int64Type), dec("7.25", 10, 2), null(types.StringType), ts(3)},
		{i64(6), i64(9), dec("1.00", 10, 2), str("paid"), ts(4)},
		{i64(11), i64(2), dec("12.00", 10, 2), str("x"), ts(5)},
		{i64(7), i64(4), dec("2.00", 10, 2), str("a"), ts(6)},
		{i64(8), i64(1), dec("1.50", 10, 2), str("paid"), ts(7)},
	},
	"customers": {
		{i64(1), str("ann,bob"), str("eu"), f64(1.5)},
		{i64(2), str("cy dee"), str("us"), f64(0.5)},
		{i64(3), null(types.StringType), str("eu"), null(types.Float64Type)},
		{i64(4), str("Quinn"), null(types.StringType), f64(7)},
		{i64(12), str("abc"), str("x"), f64(3)},
	},
	"events": {
		{i64(1), boolean(true), f64(1.5), i64(3), dec("10", 10, 0), ts(0)},
		{i64(2), boolean(false), f64(2.5), i64(4), null(types.DecimalType(10, 0)), ts(1)},
		{i64(3), null(types.BoolType), null(types.Float64Type), i64(5), dec("3", 10, 0), ts(2)},
		{i64(4), boolean(true), f64(1), null(types.Int64Type), dec("10", 10, 0), null(types.TimestampType)},
	},
}

// run evaluates p.
func run(p Plan) ([]row, error) {
	switch n := p.(type) {
	case *Scan:
		var out []row
		for _, r := range fixtures[n.Table.Name] {
			if n.Columns == nil {
				out = append(out, r)
				continue
			}
			o := make(row, len(n.Columns))
			for i, c := range n.Columns {
				o[i] = r[c]
			}
			out = append(out, o)
		}
		return out, nil
	case *Values:
		var out []row
		for _, r := range n.Rows {
			o, err := evalRow(r, nil)
			if err != nil {
				return nil, err
			}
			out = append(out, o)
		}
		return out, nil
	case *Filter:
		in, err := run(n.Input)
		if err != nil {
			return nil, err
		}
		var out []row
		for _, r := range in {
			ok, err := holds(n.Cond, r)
			if err != nil {
				return nil, err
			}
			if ok {
				out = append(out, r)
			}
		}
		return out, nil
	case *Project:
		in, err := run(n.Input)
		if err != nil {
			return nil, err
		}
		out := make([]row, 0, len(in))
		for _, r := range in {
			o, err := evalRow(n.Exprs, r)
			if err != nil {
				return nil, err
			}
			out = append(out, o)
		}
		return out, nil
	case *Unnest:
		in, err := run(n.Input)
		if err != nil {
			return nil, err
		}
		var out []row
		for _, r := range in {
			v := r[n.Col]
			if v.Null {
				continue
			}
			var parts []string
			if n.Func == "regexp_split_to_table" {
				parts = regexp.MustCompile(n.Sep).Split(v.Str, -1)
			} else {
				parts = strings.Split(v.Str, n.Sep)
			}
			for _, s := range parts {
				o := append(row{}, r...)
				o[n.Col] = str(s)
				out = append(out, o)
			}
		}
		return out, nil
	case *Aggregate:
		return runAggregate(n)
	case *Join:
		return runJoin(n)
	case *Sort:
		in, err := run(n.Input)
		if err != nil {
			return nil, err
		}
		out := append([]row{}, in...)
		sort.SliceStable(out, func(i, j int) bool {
			for _, k := range n.Keys {
				a, b := out[i][k.Col], out[j][k.Col]
				c := compareValues(a, b)
				if a.Null != b.Null {
					c = 1
					if a.Null == k.NullsFirst {
						c = -1
					}
				} else if k.Desc {
					c = -c
				}
				if c != 0 {
					return c < 0
				}
			}
			return false
		})
		return out, nil
	case *Limit:
		in, err := run(n.Input)
		if err != nil {
			return nil, err
		}
		lo := min(int(n.Offset), len(in))
		hi := len(in)
		if n.Count >= 0 && n.Count < int64(hi-lo) {
			hi = lo + int(n.Count)
		}
		return in[lo:hi], nil
	}
	return nil, fmt.Errorf("interp: %T", p)
}

// evalExpr evaluates e over one row by substituting literals for its columns.
func evalExpr(e *expr.Expr, r row) (types.Value, error) {
	defs := make([]*expr.Expr, len(r))
	for i, v := range r {
		defs[i] = expr.Literal(v)
	}
	return expr.EvalConst(substitute(e, defs))
}

func evalRow(es []*expr.Expr, r row) (row, error) {
	out := make(row, len(es))
	for i, e := range es {
		v, err := evalExpr(e, r)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func holds(cond *expr.Expr, r row) (bool, error) {
	v, err := evalExpr(cond, r)
	return err == nil && !v.Null && v.Bool, err
}

// compareValues orders two non-NULL values of one type.
func compareValues(a, b types.Value) int {
	if a.Null || b.Null {
		return 0
	}
	switch a.Type.ID {
	case types.Int64, types.Timestamp:
		return cmpOrdered(a.Int, b.Int)
	case types.Float64:
		return cmpOrdered(a.Float, b.Float)
	case types.String:
		return strings.Compare(a.Str, b.Str)
	case types.Bool:
		return cmpOrdered(boolInt(a.Bool), boolInt(b.Bool))
	case types.Decimal:
		return a.Decimal().Cmp(b.Decimal())
	}
	return 0
}

func cmpOrdered[T int64 | float64 | int](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func valueKey(v types.Value) string { return v.Type.String() + ":" + expr.FormatValue(v) }

func runJoin(n *Join) ([]row, error) {
	left, err := run(n.Left)
	if err != nil {
		return nil, err
	}
	right, err := run(n.Right)
	if err != nil {
		return nil, err
	}
	rs := n.Right.Schema()
	var out []row
	for _, l := range left {
		matched := false
		for _, r := range right {
			ok := true
			for i := range n.LeftKeys {
				a, b := l[n.LeftKeys[i]], r[n.RightKeys[i]]
				ok = ok && !a.Null && !b.Null && compareValues(a, b) == 0
			}
			o := append(append(row{}, l...), r...)
			if ok && n.Extra != nil {
				if ok, err = holds(n.Extra, o); err != nil {
					return nil, err
				}
			}
			if ok {
				matched = true
				out = append(out, o)
			}
		}
		if !matched && n.Kind == LeftJoin {
			o := append(row{}, l...)
			for _, f := range rs {
				o = append(o, null(f.Type))
			}
			out = append(out, o)
		}
	}
	return out, nil
}

func runAggregate(n *Aggregate) ([]row, error) {
	in, err := run(n.Input)
	if err != nil {
		return nil, err
	}
	type group struct {
		key  row
		rows []row
	}
	var order []string
	groups := map[string]*group{}
	for _, r := range in {
		var key row
		var ks []string
		for _, g := range n.GroupBy {
			key = append(key, r[g])
			ks = append(ks, valueKey(r[g]))
		}
		k := strings.Join(ks, "\x00")
		if groups[k] == nil {
			groups[k] = &group{key: key}
			order = append(order, k)
		}
		groups[k].rows = append(groups[k].rows, r)
	}
	if len(n.GroupBy) == 0 && len(order) == 0 {
		groups[""] = &group{}
		order = append(order, "")
	}
	var out []row
	for _, k := range order {
		g := groups[k]
		o := append(row{}, g.key...)
		for _, a := range n.Aggs {
			v, err := aggregate(a, g.rows)
			if err != nil {
				return nil, err
			}
			o = append(o, v)
		}
		out = append(out, o)
	}
	return out, nil
}

func aggregate(a AggCall, rows []row) (types.Value, error) {
	var vals []types.Value
	seen := map[string]bool{}
	for _, r := range rows {
		if a.Arg < 0 {
			vals = append(vals, i64(1))
			continue
		}
		v := r[a.Arg]
		if v.Null || a.Distinct && seen[valueKey(v)] {
			continue
		}
		seen[valueKey(v)] = true
		vals = append(vals, v)
	}
	if a.Func == "count" {
		return i64(int64(len(vals))), nil
	}
	if len(vals) == 0 {
		return null(a.Type), nil
	}
	switch a.Func {
	case "min", "max":
		best := vals[0]
		for _, v := range vals[1:] {
			if c := compareValues(v, best); a.Func == "min" && c < 0 || a.Func == "max" && c > 0 {
				best = v
			}
		}
		return best, nil
	}
	// sum and avg accumulate in the result type (avg: then divide by the count).
	plus, err := expr.Resolve("+", []types.Type{a.Type, a.Type})
	if err != nil {
		return types.Value{}, err
	}
	var acc *expr.Expr
	for _, v := range vals {
		x := expr.Cast(expr.Literal(v), a.Type)
		if acc == nil {
			acc = x
		} else {
			acc = expr.Cast(expr.Call("+", plus.Result, acc, x), a.Type)
		}
	}
	if a.Func == "avg" {
		sig, err := expr.Resolve("/", []types.Type{a.Type, a.Type})
		if err != nil {
			return types.Value{}, err
		}
		acc = expr.Cast(expr.Call("/", sig.Result, acc, expr.Cast(expr.Literal(i64(int64(len(vals)))), a.Type)), a.Type)
	}
	return expr.EvalConst(acc)
}

// resultKey renders rows as a sorted multiset, for comparison.
func resultKey(rows []row) string {
	lines := make([]string, len(rows))
	for i, r := range rows {
		parts := make([]string, len(r))
		for j, v := range r {
			parts[j] = valueKey(v)
		}
		lines[i] = strings.Join(parts, ", ")
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
