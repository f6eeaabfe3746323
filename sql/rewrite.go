package sql

import (
	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// Optimize rewrites a bound plan into a cheaper equivalent with the same output
// schema. The rules run in a fixed order:
//
//  1. constant folding: constant subexpressions are evaluated (expr.EvalConst),
//     AND/OR with a constant operand simplified, a DATE compared with a
//     constant timestamp compared as dates (compareAsDates), a widened decimal
//     compared with a constant at its own precision (compareNarrowDecimal), and
//     a Filter whose condition becomes TRUE removed;
//  2. predicate push-down: filter conjuncts move through Project (by
//     substitution), Sort and Unnest (unless they read the unnested column),
//     below Aggregate when they read only group columns, into either side of an
//     inner join and the left side of a left join; never through Limit;
//  3. constant folding again, for what substitution exposed;
//  4. projection push-down: unused columns and aggregates are pruned, Scan.Columns
//     set to what is read, adjacent Projects merged, Projects over Values folded
//     into the Values, and Projects that only pass their input through removed.
//
// Optimize does not modify p: nodes that change are copied.
func Optimize(p Plan) Plan {
	p = foldPlan(p)
	p = pushFilters(p, nil)
	p = foldPlan(p)
	return (&pruner{}).pruneRoot(p)
}

// OptimizeKeeping is Optimize, but an aggregation's input keeps the columns
// named in keep that it could read, even those the query does not use: a
// late-rows table (SET late_rows_table) takes a windowed aggregation's late
// rows by column name, the event time among them.
func OptimizeKeeping(p Plan, keep []string) Plan {
	if len(keep) == 0 {
		return Optimize(p)
	}
	pr := &pruner{keep: map[string]bool{}}
	for _, k := range keep {
		pr.keep[k] = true
	}
	p = foldPlan(p)
	p = pushFilters(p, nil)
	p = foldPlan(p)
	return pr.pruneRoot(p)
}

// foldPlan folds the constants of every expression of the plan.
func foldPlan(p Plan) Plan {
	switch n := p.(type) {
	case *Scan:
		return n
	case *Values:
		c := *n
		c.Rows = make([][]*expr.Expr, len(n.Rows))
		for i, r := range n.Rows {
			c.Rows[i] = foldAll(r)
		}
		return &c
	case *Filter:
		in := foldPlan(n.Input)
		cond := foldExpr(n.Cond)
		if isTrue(cond) {
			return in
		}
		return &Filter{Input: in, Cond: cond}
	case *Project:
		c := *n
		c.Input, c.Exprs = foldPlan(n.Input), foldAll(n.Exprs)
		return &c
	case *Unnest:
		c := *n
		c.Input = foldPlan(n.Input)
		return &c
	case *Aggregate:
		c := *n
		c.Input = foldPlan(n.Input)
		return &c
	case *Join:
		c := *n
		c.Left, c.Right = foldPlan(n.Left), foldPlan(n.Right)
		if n.Extra != nil {
			c.Extra = foldExpr(n.Extra)
			if isTrue(c.Extra) {
				c.Extra = nil
			}
		}
		return &c
	case *Union:
		c := *n
		c.Left, c.Right = foldPlan(n.Left), foldPlan(n.Right)
		return &c
	case *MaxOneRow:
		return &MaxOneRow{Input: foldPlan(n.Input)}
	case *Window:
		c := *n
		c.Input = foldPlan(n.Input)
		return &c
	case *Sort:
		c := *n
		c.Input = foldPlan(n.Input)
		return &c
	case *Limit:
		c := *n
		c.Input = foldPlan(n.Input)
		return &c
	}
	return p
}

func foldAll(es []*expr.Expr) []*expr.Expr {
	out := make([]*expr.Expr, len(es))
	for i, e := range es {
		out[i] = foldExpr(e)
	}
	return out
}

// foldExpr evaluates e's constant subtrees and simplifies AND, OR and NOT. A
// constant whose evaluation fails (1/0) is left for the runtime to report, on
// the rows that reach it.
func foldExpr(e *expr.Expr) *expr.Expr {
	if len(e.Args) == 0 {
		return e
	}
	c := *e
	c.Args = foldAll(e.Args)
	if c.Kind == expr.KindCall {
		switch c.Func {
		case "and", "or":
			// FALSE decides AND and TRUE decides OR, whatever the other operands
			// (NULL included); the other constant is the identity.
			decide := c.Func == "or"
			var rest []*expr.Expr
			for _, a := range c.Args {
				if v, ok := boolLiteral(a); ok {
					if v == decide {
						return expr.Literal(types.BoolValue(decide))
					}
					continue
				}
				rest = append(rest, a)
			}
			switch len(rest) {
			case 0:
				return expr.Literal(types.BoolValue(!decide))
			case 1:
				return rest[0]
			}
			c.Args = rest
		case "not":
			if a := c.Args[0]; a.Kind == expr.KindCall && a.Func == "not" {
				return a.Args[0]
			}
		}
	}
	if c.IsConstant() {
		if v, err := expr.EvalConst(&c); err == nil {
			return expr.Literal(v)
		}
	}
	if d := compareAsDates(&c); d != nil {
		return d
	}
	if d := compareNarrowDecimal(&c); d != nil {
		return d
	}
	return &c
}

func boolLiteral(e *expr.Expr) (value, ok bool) {
	if e.Kind != expr.KindLiteral || e.Type.ID != types.Bool || e.Value.Null {
		return false, false
	}
	return e.Value.Bool, true
}

func isTrue(e *expr.Expr) bool {
	v, ok := boolLiteral(e)
	return ok && v
}

// substitute replaces each column reference i of e by defs[i] (the expressions of
// the Project e reads).
func substitute(e *expr.Expr, defs []*expr.Expr) *expr.Expr {
	if e.Kind == expr.KindColumn {
		return defs[e.Col]
	}
	if len(e.Args) == 0 {
		return e
	}
	c := *e
	c.Args = make([]*expr.Expr, len(e.Args))
	for i, a := range e.Args {
		c.Args[i] = substitute(a, defs)
	}
	return &c
}

// remapCols renames the column references of e: column i becomes m[i].
func remapCols(e *expr.Expr, m []int) *expr.Expr {
	mm := make(map[int]int)
	for _, c := range e.Columns(nil) {
		mm[c] = m[c]
	}
	return e.Remap(mm)
}

// columnSet marks the columns e reads in set.
func columnSet(e *expr.Expr, set []bool) {
	for _, c := range e.Columns(nil) {
		set[c] = true
	}
}
