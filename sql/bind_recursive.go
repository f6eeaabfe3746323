package sql

// WITH RECURSIVE, in batch queries: a recursive WITH query is base UNION
// [ALL] step, where step reads the query itself. The binder binds base, then
// step with the query's name as a WorkTable (the rows the last round added),
// then the main query with it as another WorkTable (every row); the session
// runs the rounds (session/recursive.go): base, then step again and again
// over the rows the round before added, until a round adds none, as
// PostgreSQL does. With UNION a round adds only rows not seen before, so
// a query over a graph with cycles ends.

import (
	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// WorkTable is a recursive WITH query's rows, which the session provides:
// those of the last round (in the step) or all of them (in the main query).
type WorkTable struct {
	Name string
	Out  types.Schema
}

func (p *WorkTable) Schema() types.Schema { return p.Out }
func (p *WorkTable) Inputs() []Plan       { return nil }

// Recursion is one recursive WITH query: Base's rows, then Step's over
// Work's (the last round's), each round's kept, until a round gives none;
// Result stands for all of them in what follows. With Distinct (UNION) a
// round keeps only rows no round had.
type Recursion struct {
	Work, Result *WorkTable
	Base, Step   Plan
	Distinct     bool
}

// RecursiveQuery is a SELECT under WITH RECURSIVE: Recursions run in order,
// then Main, which reads their Results.
type RecursiveQuery struct {
	Recursions []*Recursion
	Main       *Query
}

func (*RecursiveQuery) statement() {}

// bindRecursive binds a SELECT whose WITH is RECURSIVE. A WITH query that
// does not read itself is an ordinary one.
func (b *binder) bindRecursive(sel *ast.SelectStmt) (Statement, error) {
	w := sel.With
	if err := b.checkNames(w); err != nil {
		return nil, err
	}
	n := len(b.ctes)
	defer func() { b.ctes = b.ctes[:n] }()
	rq := &RecursiveQuery{}
	for _, c := range w.CTEs {
		def := &cte{name: c.Name.O, visible: len(b.ctes)}
		if c.Query != nil {
			def.query = c.Query.Query
		}
		for _, col := range c.ColNameList {
			def.cols = append(def.cols, col.O)
		}
		set, ok := def.query.(*ast.SetOprStmt)
		if !ok || !readsName(set, def.name) {
			b.ctes = append(b.ctes, def)
			continue
		}
		r, err := b.bindRecursion(def, set)
		if err != nil {
			return nil, err
		}
		rq.Recursions = append(rq.Recursions, r)
		def.work = r.Result // what follows reads every row
		b.ctes = append(b.ctes, def)
	}
	main := *sel
	main.With = nil
	p, err := b.bindQuery(&main)
	if err != nil {
		return nil, err
	}
	rq.Main = &Query{Plan: p}
	return rq, nil
}

// checkNames is checkWith's check of duplicate names, for WITH RECURSIVE.
func (b *binder) checkNames(w *ast.WithClause) error {
	seen := map[string]bool{}
	for _, c := range w.CTEs {
		if seen[c.Name.O] {
			return Errorf(ErrDuplicateTable, b.identPos(c.Name.O, "with", ","), "WITH query name \"%s\" specified more than once", c.Name.O)
		}
		seen[c.Name.O] = true
	}
	return nil
}

// bindRecursion binds base UNION [ALL] step.
func (b *binder) bindRecursion(def *cte, set *ast.SetOprStmt) (*Recursion, error) {
	l := set.SelectList
	if set.OrderBy != nil || set.Limit != nil || l == nil || len(l.Selects) != 2 {
		return nil, b.errorf(ErrUnsupported, nil, "recursive query \"%s\" must be of the form base UNION [ALL] recursive-term", def.name)
	}
	base, ok1 := l.Selects[0].(*ast.SelectStmt)
	step, ok2 := l.Selects[1].(*ast.SelectStmt)
	if !ok1 || !ok2 || step.AfterSetOperator == nil {
		return nil, b.errorf(ErrUnsupported, nil, "recursive query \"%s\" must be of the form base UNION [ALL] recursive-term", def.name)
	}
	op := *step.AfterSetOperator
	if op != ast.Union && op != ast.UnionAll {
		return nil, b.errorf(ErrUnsupported, nil, "recursive query \"%s\" does not have the form non-recursive-term UNION [ALL] recursive-term", def.name)
	}
	if readsName(base, def.name) {
		return nil, b.errorf(ErrUnsupported, nil, "recursive reference to query \"%s\" must not appear within its non-recursive term", def.name)
	}
	saved := b.ctes
	b.ctes = append([]*cte(nil), b.ctes[:def.visible]...)
	defer func() { b.ctes = saved }()
	basePlan, err := b.bindQuery(base)
	if err != nil {
		return nil, err
	}
	out := append(types.Schema{}, basePlan.Schema()...)
	if len(def.cols) > len(out) {
		return nil, b.errorf(ErrInvalidColumnReference, nil, "WITH query \"%s\" has %d columns available but %d columns specified", def.name, len(out), len(def.cols))
	}
	for i := range out {
		if i < len(def.cols) {
			out[i].Name = def.cols[i]
		}
		if out[i].Type.ID == types.Null {
			out[i].Type = types.StringType
		}
	}
	r := &Recursion{Work: &WorkTable{Name: def.name, Out: out}, Result: &WorkTable{Name: def.name, Out: out}, Distinct: op == ast.Union}
	r.Base = castPlan(basePlan, out)
	self := &cte{name: def.name, visible: len(b.ctes), work: r.Work}
	b.ctes = append(b.ctes, self)
	stepPlan, err := b.bindQuery(step)
	if err != nil {
		return nil, err
	}
	in := stepPlan.Schema()
	if len(in) != len(out) {
		return nil, b.errorf(ErrType, nil, "each UNION query must have the same number of columns")
	}
	for i, f := range in {
		if !assignable(f.Type, out[i].Type) {
			return nil, b.errorf(ErrType, nil, "recursive query \"%s\" column %d has type %s in non-recursive term but type %s overall", def.name, i+1, out[i].Type, f.Type)
		}
	}
	r.Step = castPlan(stepPlan, out)
	return r, nil
}

// readsName reports whether a query names table name anywhere in its text's
// FROM clauses (a conservative walk of the AST).
func readsName(n ast.Node, name string) bool {
	v := &nameFinder{name: name}
	n.Accept(v)
	return v.found
}

type nameFinder struct {
	name  string
	found bool
}

func (v *nameFinder) Enter(n ast.Node) (ast.Node, bool) {
	if t, ok := n.(*ast.TableName); ok && t.Schema.L == "" && t.Name.O == v.name {
		v.found = true
	}
	return n, v.found
}

func (v *nameFinder) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// workRef is a WorkTable as a FROM item: the table under a projection of all
// its columns (its own node, so that each reference is one).
func workRef(w *WorkTable) Plan {
	exprs := make([]*expr.Expr, len(w.Out))
	for i, f := range w.Out {
		exprs[i] = expr.Column(i, f.Type, f.Name)
	}
	return &Project{Input: w, Exprs: exprs, Out: w.Out}
}

// ReplaceWorkTables returns p with every WorkTable that tables maps replaced
// by a scan of that table; the nodes above them are copied, the rest shared.
func ReplaceWorkTables(p Plan, tables map[*WorkTable]*Table) Plan {
	switch n := p.(type) {
	case *WorkTable:
		if t, ok := tables[n]; ok {
			return &Scan{Table: t}
		}
		return n
	case *Filter:
		c := *n
		c.Input = ReplaceWorkTables(n.Input, tables)
		return &c
	case *Project:
		c := *n
		c.Input = ReplaceWorkTables(n.Input, tables)
		return &c
	case *Unnest:
		c := *n
		c.Input = ReplaceWorkTables(n.Input, tables)
		return &c
	case *Aggregate:
		c := *n
		c.Input = ReplaceWorkTables(n.Input, tables)
		return &c
	case *Join:
		c := *n
		c.Left, c.Right = ReplaceWorkTables(n.Left, tables), ReplaceWorkTables(n.Right, tables)
		return &c
	case *Union:
		c := *n
		c.Left, c.Right = ReplaceWorkTables(n.Left, tables), ReplaceWorkTables(n.Right, tables)
		return &c
	case *MaxOneRow:
		c := *n
		c.Input = ReplaceWorkTables(n.Input, tables)
		return &c
	case *Window:
		c := *n
		c.Input = ReplaceWorkTables(n.Input, tables)
		return &c
	case *Sort:
		c := *n
		c.Input = ReplaceWorkTables(n.Input, tables)
		return &c
	case *Limit:
		c := *n
		c.Input = ReplaceWorkTables(n.Input, tables)
		return &c
	}
	return p
}
