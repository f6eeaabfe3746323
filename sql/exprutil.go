package sql

import (
	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// sameExpr reports whether two bound expressions are the same computation.
func sameExpr(a, b *expr.Expr) bool {
	if a == b {
		return true
	}
	if a == nil || b == nil {
		return false
	}
	if a.Kind != b.Kind || a.Type != b.Type || a.Func != b.Func || a.Param != b.Param || len(a.Args) != len(b.Args) {
		return false
	}
	switch a.Kind {
	case expr.KindColumn, kindAggRef:
		if a.Col != b.Col {
			return false
		}
	case expr.KindLiteral:
		if a.Value != b.Value {
			return false
		}
	}
	for i := range a.Args {
		if !sameExpr(a.Args[i], b.Args[i]) {
			return false
		}
	}
	return true
}

// constant reports whether e reads no column, parameter or aggregate.
func constant(e *expr.Expr) bool {
	switch e.Kind {
	case expr.KindColumn, expr.KindParam, kindAggRef:
		return false
	}
	for _, a := range e.Args {
		if !constant(a) {
			return false
		}
	}
	return true
}

// hasAggRef reports whether e contains an aggregate marker.
func hasAggRef(e *expr.Expr) bool {
	if e.Kind == kindAggRef {
		return true
	}
	for _, a := range e.Args {
		if hasAggRef(a) {
			return true
		}
	}
	return false
}

// conjuncts splits a condition at its top-level ANDs.
func conjuncts(e *expr.Expr) []*expr.Expr {
	return appendConjuncts(nil, e)
}

// appendConjuncts appends e's conjuncts to out: one copy however deep the
// ANDs nest, not one per level.
func appendConjuncts(out []*expr.Expr, e *expr.Expr) []*expr.Expr {
	if e == nil {
		return out
	}
	if e.Kind == expr.KindCall && e.Func == "and" {
		for _, a := range e.Args {
			out = appendConjuncts(out, a)
		}
		return out
	}
	return append(out, e)
}

// and joins conditions with one n-ary AND (flattening those that are ANDs
// themselves, so that a WHERE of many conditions stays one level deep); nil
// for none.
func and(es ...*expr.Expr) *expr.Expr {
	var all []*expr.Expr
	for _, e := range es {
		all = append(all, conjuncts(e)...)
	}
	switch len(all) {
	case 0:
		return nil
	case 1:
		return all[0]
	}
	return expr.Call("and", types.BoolType, all...)
}
