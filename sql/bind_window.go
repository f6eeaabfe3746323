package sql

import (
	"fmt"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/test_driver"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// Window functions, in the select list and ORDER BY of a query over bounded
// input. Each call is bound to a marker (kindWinRef) while the select list is;
// once the input (after GROUP BY and HAVING) is built, a Window node per
// distinct window (PARTITION BY and ORDER BY) computes the calls over it, and
// the markers become its columns.

// kindWinRef marks a reference to window call Col of the winState.
const kindWinRef expr.Kind = "sql.winref"

// winState collects a query's window calls.
type winState struct {
	calls []*winCall
	named []ast.WindowSpec // the query's WINDOW clause
}

// resolve returns spec with the named window it refers to filled in (OVER w,
// or OVER (w ORDER BY ...), which adds to w), as PostgreSQL has them: a
// window that refers to another may add an ORDER BY it lacks and a frame, not
// a PARTITION BY.
func (w *winState) resolve(spec ast.WindowSpec, depth int) (ast.WindowSpec, error) {
	ref := spec.Ref.O
	if spec.Name.O != "" && spec.OnlyAlias {
		ref = spec.Name.O
	}
	if ref == "" {
		return spec, nil
	}
	if depth > len(w.named) {
		return spec, fmt.Errorf("window \"%s\" refers to itself", ref)
	}
	for _, n := range w.named {
		if n.Name.O != ref {
			continue
		}
		base, err := w.resolve(n, depth+1)
		if err != nil {
			return spec, err
		}
		if spec.PartitionBy != nil {
			return spec, fmt.Errorf("cannot override PARTITION BY clause of window \"%s\"", ref)
		}
		if spec.OrderBy != nil && base.OrderBy != nil {
			return spec, fmt.Errorf("cannot override ORDER BY clause of window \"%s\"", ref)
		}
		out := base
		out.Name, out.Ref = spec.Name, spec.Ref
		if spec.OrderBy != nil {
			out.OrderBy = spec.OrderBy
		}
		if spec.Frame != nil {
			out.Frame = spec.Frame
		}
		return out, nil
	}
	return spec, fmt.Errorf("window \"%s\" does not exist", ref)
}

// winCall is one window call; its expressions are over the query's input (in
// the aggregation's space once it is built).
type winCall struct {
	fn        string
	args      []*expr.Expr
	dflt      *expr.Expr // lag's and lead's default, nil for NULL
	n         int64
	partition []*expr.Expr
	order     []winOrder
	frame     WindowFrame
	// A RANGE frame's offset bounds (rangeBounds), the columns of frame's
	// RangeKey, StartBound and EndBound once applyWindows computes them.
	rangeKey, startBound, endBound *expr.Expr
	typ                            types.Type
}

type winOrder struct {
	e                *expr.Expr
	desc, nullsFirst bool
}

// rankFuncs are the window functions that are not aggregates.
var rankFuncs = map[string]bool{"row_number": true, "rank": true, "dense_rank": true, "percent_rank": true,
	"cume_dist": true, "ntile": true, "lag": true, "lead": true, "first_value": true, "last_value": true, "nth_value": true}

// bindWindow binds a window call.
func (b *binder) bindWindow(ctx *exprCtx, n *ast.WindowFuncExpr) (*expr.Expr, error) {
	if ctx.wins == nil || ctx.inWindow {
		return nil, b.errorf(ErrGrouping, n, "window functions are not allowed in %s", ctx.where())
	}
	fn := strings.ToLower(n.Name)
	spec, err := ctx.wins.resolve(n.Spec, 0)
	if err != nil {
		return nil, b.errorf(ErrSyntax, n, "%s", err.Error())
	}
	switch {
	case n.IgnoreNull || n.FromLast:
		return nil, b.errorf(ErrUnsupported, n, "IGNORE NULLS and FROM LAST are not supported")
	case n.Distinct:
		return nil, b.errorf(ErrUnsupported, n, "DISTINCT in a window function is not supported")
	}
	inner := *ctx
	inner.inWindow = true
	call := &winCall{fn: fn, n: 1}
	bigint := false // sum of integers, a cast of the numeric sum
	bindArg := func(a ast.ExprNode) (*expr.Expr, error) { return b.bindExpr(&inner, a) }
	switch {
	case rankFuncs[fn]:
		if err := b.bindRankArgs(n, call, bindArg); err != nil {
			return nil, err
		}
	case fn == "count" || fn == "sum" || fn == "avg" || fn == "min" || fn == "max":
		if len(n.Args) != 1 {
			return nil, b.errorf(ErrUnsupported, n, "%s takes one argument", fn)
		}
		call.typ = types.Int64Type
		if !(fn == "count" && isRowCount(n.Args[0])) {
			a, err := bindArg(n.Args[0])
			if err != nil {
				return nil, err
			}
			at, rt, ok := aggSignature(fn, a.Type)
			if !ok {
				return nil, b.errorf(ErrUnknownFunction, n, "function %s(%s) does not exist", fn, a.Type)
			}
			if fn == "sum" && rt == types.Int64Type {
				// The window operator sums integers as numeric only: the
				// bigint PostgreSQL's sum of integers is is a cast of it.
				rt, bigint = types.DecimalType(38, 0), true
			}
			call.args, call.typ = []*expr.Expr{expr.Cast(a, at)}, rt
		}
	default:
		return nil, b.errorf(ErrUnknownFunction, n, "window function %s does not exist", fn)
	}
	if spec.PartitionBy != nil {
		for _, it := range spec.PartitionBy.Items {
			e, err := bindArg(it.Expr)
			if err != nil {
				return nil, err
			}
			call.partition = append(call.partition, e)
		}
	}
	if spec.OrderBy != nil {
		for _, it := range spec.OrderBy.Items {
			e, err := bindArg(it.Expr)
			if err != nil {
				return nil, err
			}
			o := winOrder{e: e, desc: it.Desc, nullsFirst: it.Desc}
			if first, ok := b.nullsOrder(it.Expr); ok {
				o.nullsFirst = first
			}
			call.order = append(call.order, o)
		}
	}
	// The default frame: the partition up to the current row's last peer
	// with ORDER BY, the whole partition without.
	call.frame = WindowFrame{StartUnbounded: true, EndUnbounded: spec.OrderBy == nil}
	if spec.Frame != nil {
		f, err := b.bindFrame(n, spec.Frame, call, bindArg)
		if err != nil {
			return nil, err
		}
		call.frame = f
	}
	ctx.wins.calls = append(ctx.wins.calls, call)
	ref := &expr.Expr{Kind: kindWinRef, Col: len(ctx.wins.calls) - 1, Type: call.typ}
	if bigint {
		return expr.Cast(ref, types.Int64Type), nil
	}
	return ref, nil
}

// bindRankArgs binds the arguments of the window functions that are not
// aggregates, and sets the call's type.
func (b *binder) bindRankArgs(n *ast.WindowFuncExpr, call *winCall, bindArg func(ast.ExprNode) (*expr.Expr, error)) error {
	fn := call.fn
	want := map[string][2]int{"row_number": {0, 0}, "rank": {0, 0}, "dense_rank": {0, 0}, "percent_rank": {0, 0},
		"cume_dist": {0, 0}, "ntile": {1, 1}, "lag": {1, 3}, "lead": {1, 3}, "first_value": {1, 1}, "last_value": {1, 1},
		"nth_value": {2, 2}}[fn]
	if len(n.Args) < want[0] || len(n.Args) > want[1] {
		return b.errorf(ErrUnknownFunction, n, "function %s with %d arguments does not exist", fn, len(n.Args))
	}
	switch fn {
	case "row_number", "rank", "dense_rank", "ntile":
		call.typ = types.Int64Type
	case "percent_rank", "cume_dist":
		call.typ = types.Float64Type
	}
	constant := func(a ast.ExprNode, what string) (int64, error) {
		v, ok := a.(*test_driver.ValueExpr)
		if !ok || (v.Kind() != test_driver.KindInt64 && v.Kind() != test_driver.KindUint64) {
			return 0, b.errorf(ErrUnsupported, a, "%s of %s must be an integer constant", what, fn)
		}
		return v.GetInt64(), nil
	}
	var err error
	switch fn {
	case "ntile":
		if call.n, err = constant(n.Args[0], "the number of buckets"); err != nil {
			return err
		}
		if call.n <= 0 {
			return b.errorf(ErrInvalidValue, n, "argument of ntile must be greater than zero")
		}
	case "lag", "lead", "first_value", "last_value", "nth_value":
		a, err := bindArg(n.Args[0])
		if err != nil {
			return err
		}
		if a.Type.ID == types.Null {
			a = expr.Cast(a, types.StringType)
		}
		call.args, call.typ = []*expr.Expr{a}, a.Type
		if fn == "nth_value" {
			if call.n, err = constant(n.Args[1], "the position"); err != nil {
				return err
			}
			if call.n <= 0 {
				return b.errorf(ErrInvalidValue, n, "argument of nth_value must be greater than zero")
			}
		}
		if (fn == "lag" || fn == "lead") && len(n.Args) >= 2 {
			if call.n, err = constant(n.Args[1], "the offset"); err != nil {
				return err
			}
		}
		if (fn == "lag" || fn == "lead") && len(n.Args) == 3 {
			d, err := bindArg(n.Args[2])
			if err != nil {
				return err
			}
			if d.Type != a.Type {
				if !expr.CanCast(d.Type, a.Type) {
					return b.errorf(ErrType, n.Args[2], "the default of %s must be of type %s, not %s", fn, a.Type, d.Type)
				}
				d = expr.Cast(d, a.Type)
			}
			call.dflt = d
		}
	}
	return nil
}

// bindFrame reads ROWS or RANGE BETWEEN ... AND ... of call, whose ORDER BY
// is bound; bindArg binds an expression of the window.
func (b *binder) bindFrame(n ast.Node, fc *ast.FrameClause, call *winCall, bindArg func(ast.ExprNode) (*expr.Expr, error)) (WindowFrame, error) {
	var f WindowFrame
	switch fc.Type {
	case ast.Rows:
		f.Rows = true
	case ast.Ranges:
	default:
		return f, b.errorf(ErrUnsupported, n, "GROUPS frames are not supported")
	}
	bound := func(fb ast.FrameBound, start bool) (unbounded bool, off int64, err error) {
		switch {
		case fb.Type == ast.CurrentRow:
			return false, 0, nil
		case fb.UnBounded:
			if start && fb.Type == ast.Following || !start && fb.Type == ast.Preceding {
				return false, 0, b.errorf(ErrSyntax, n, "frame starting from following row cannot end with current row")
			}
			return true, 0, nil
		}
		if !f.Rows {
			return false, 0, b.rangeBound(n, fb, start, call, bindArg)
		}
		v, ok := fb.Expr.(*test_driver.ValueExpr)
		if !ok || (v.Kind() != test_driver.KindInt64 && v.Kind() != test_driver.KindUint64) || v.GetInt64() < 0 {
			return false, 0, b.errorf(ErrUnsupported, n, "a frame offset must be a non-negative integer constant")
		}
		off = v.GetInt64()
		if fb.Type == ast.Preceding {
			off = -off
		}
		return false, off, nil
	}
	var err error
	if f.StartUnbounded, f.Start, err = bound(fc.Extent.Start, true); err != nil {
		return f, err
	}
	if f.EndUnbounded, f.End, err = bound(fc.Extent.End, false); err != nil {
		return f, err
	}
	f.StartOffset, f.EndOffset = call.startBound != nil, call.endBound != nil
	if f.StartOffset || f.EndOffset {
		// The key and the bounds at one type, for the window to compare.
		var t types.Type
		for _, e := range []*expr.Expr{call.startBound, call.endBound} {
			if e != nil && t.ID == types.Null {
				t = e.Type
			} else if e != nil {
				t, _ = expr.Coerce(t, e.Type)
			}
		}
		call.rangeKey = expr.Cast(call.order[0].e, t)
		for _, e := range []**expr.Expr{&call.startBound, &call.endBound} {
			if *e != nil {
				*e = expr.Cast(*e, t)
			}
		}
	}
	return f, nil
}

// rangeBound binds the offset bound fb of a RANGE frame (the start with
// start) as PostgreSQL does: over the one ORDER BY key k of call, the bound
// of a row is k - offset or k + offset (as PRECEDING or FOLLOWING, and the
// key's direction, say), an offset of k's numeric type for a number, an
// INTERVAL for a date or timestamp. It sets call's rangeKey, k at the
// bound's type, and its startBound or endBound.
func (b *binder) rangeBound(n ast.Node, fb ast.FrameBound, start bool, call *winCall, bindArg func(ast.ExprNode) (*expr.Expr, error)) error {
	if len(call.order) != 1 {
		return b.errorf(ErrWindowing, n, "RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column")
	}
	key := call.order[0]
	at := ast.Node(fb.Expr) // where errors point: the offset, else the call
	if fb.Expr.OriginTextPosition() == 0 {
		at = n
	}
	off, err := bindArg(fb.Expr)
	if err != nil {
		return err
	}
	if len(off.Columns(nil)) > 0 {
		return b.errorf(ErrSyntax, at, "argument of RANGE must not contain variables")
	}
	if id := off.Type.ID; id == types.Int64 || id == types.Decimal || id == types.Float64 {
		if neg, err := b.call(fb.Expr, "<", off, expr.Literal(types.Value{Type: off.Type})); err == nil {
			if v, err := expr.EvalConst(neg); err == nil && v.Bool {
				return b.errorf(ErrFrameSize, at, "invalid preceding or following size in window function")
			}
		}
	}
	sub := (fb.Type == ast.Preceding) != key.desc
	var bound *expr.Expr
	kt := key.e.Type.ID
	switch {
	case fb.Unit != 0 && (kt == types.Timestamp || kt == types.Date):
		count := off
		if count.Type.ID == types.String || count.Type.ID == types.Null {
			count = expr.Cast(count, types.Int64Type) // INTERVAL '3' DAY
		}
		if count.Type.ID != types.Int64 {
			return b.errorf(ErrUnsupported, at, "an interval of %s is not supported: use a whole number", count.Type)
		}
		if bound, err = b.addInterval(fb.Expr, expr.Cast(key.e, types.TimestampType), count, fb.Unit, sub); err != nil {
			return err
		}
	case fb.Unit == 0 && (kt == types.Int64 && off.Type.ID == types.Int64 ||
		kt == types.Decimal && (off.Type.ID == types.Int64 || off.Type.ID == types.Decimal) ||
		kt == types.Float64 && (off.Type.ID == types.Int64 || off.Type.ID == types.Decimal || off.Type.ID == types.Float64)):
		op := "+"
		if sub {
			op = "-"
		}
		if bound, err = b.call(fb.Expr, op, key.e, off); err != nil {
			return err
		}
	default:
		offType := off.Type.String()
		if fb.Unit != 0 {
			offType = "interval"
		}
		return b.errorf(ErrUnsupported, at, "RANGE with offset PRECEDING/FOLLOWING is not supported for column type %s and offset type %s", key.e.Type, offType)
	}
	if start {
		call.startBound = bound
	} else {
		call.endBound = bound
	}
	return nil
}

// applyWindows computes the window calls over input: a Window node per
// distinct window, over a Project that adds the calls' expressions as
// columns. It returns the plan and each call's column.
func applyWindows(input Plan, wins *winState) (Plan, []int) {
	in := input.Schema()
	exprs := make([]*expr.Expr, 0, len(in))
	out := append(types.Schema{}, in...)
	for i, f := range in {
		exprs = append(exprs, expr.Column(i, f.Type, f.Name))
	}
	col := func(e *expr.Expr) int {
		if e.Kind == expr.KindColumn && e.Col < len(in) {
			return e.Col
		}
		for i := len(in); i < len(exprs); i++ {
			if sameExpr(exprs[i], e) {
				return i
			}
		}
		exprs = append(exprs, e)
		out = append(out, types.Field{Name: "?column?", Type: e.Type})
		return len(exprs) - 1
	}
	type window struct {
		partition []int
		order     []SortKey
		funcs     []WindowCall
		calls     []int
	}
	var windows []*window
	for k, c := range wins.calls {
		var part []int
		for _, e := range c.partition {
			part = append(part, col(e))
		}
		var order []SortKey
		for _, o := range c.order {
			order = append(order, SortKey{Col: col(o.e), Desc: o.desc, NullsFirst: o.nullsFirst})
		}
		wc := WindowCall{Func: c.fn, N: c.n, Default: -1, Frame: c.frame, Type: c.typ}
		if c.rangeKey != nil {
			wc.Frame.RangeKey = col(c.rangeKey)
			if c.startBound != nil {
				wc.Frame.StartBound = col(c.startBound)
			}
			if c.endBound != nil {
				wc.Frame.EndBound = col(c.endBound)
			}
		}
		for _, a := range c.args {
			wc.Args = append(wc.Args, col(a))
		}
		if c.dflt != nil {
			wc.Default = col(c.dflt)
		}
		var w *window
		for _, x := range windows {
			if equalInts(x.partition, part) && equalKeys(x.order, order) {
				w = x
			}
		}
		if w == nil {
			w = &window{partition: part, order: order}
			windows = append(windows, w)
		}
		w.funcs = append(w.funcs, wc)
		w.calls = append(w.calls, k)
	}
	var p Plan = &Project{Input: input, Exprs: exprs, Out: out}
	at := make([]int, len(wins.calls))
	width := len(out)
	for _, w := range windows {
		wout := append(types.Schema{}, p.Schema()...)
		for j, f := range w.funcs {
			wout = append(wout, types.Field{Name: f.Func, Type: f.Type})
			at[w.calls[j]] = width + j
		}
		width += len(w.funcs)
		p = &Window{Input: p, Partition: w.partition, Order: w.order, Funcs: w.funcs, Out: wout}
	}
	return p, at
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func equalKeys(a, b []SortKey) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// windowRefs replaces the window markers of e by the calls' columns.
func windowRefs(e *expr.Expr, at []int) *expr.Expr {
	if e.Kind == kindWinRef {
		return expr.Column(at[e.Col], e.Type, "")
	}
	if len(e.Args) == 0 {
		return e
	}
	c := *e
	c.Args = make([]*expr.Expr, len(e.Args))
	for i, a := range e.Args {
		c.Args[i] = windowRefs(a, at)
	}
	return &c
}
