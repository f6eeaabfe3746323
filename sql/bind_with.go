package sql

import (
	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// WITH queries (CTEs), not recursive: each reference binds the query afresh,
// as a derived table, seeing the WITH queries defined before it (and those of
// enclosing queries); a name of a WITH query hides a table of that name.

// cte is one WITH query.
type cte struct {
	name    string
	query   ast.ResultSetNode // *ast.SelectStmt or *ast.SetOprStmt
	cols    []string          // its column list, if written
	visible int               // how many of the binder's ctes it sees
	// work, for a recursive WITH query, is the rows a reference reads
	// (bind_recursive.go), instead of binding query.
	work *WorkTable
}

// pushWith makes w's queries visible and returns the function that hides
// them again.
func (b *binder) pushWith(w *ast.WithClause) func() {
	n := len(b.ctes)
	for _, c := range w.CTEs {
		def := &cte{name: c.Name.O, visible: len(b.ctes)}
		if c.Query != nil {
			def.query = c.Query.Query
		}
		for _, col := range c.ColNameList {
			def.cols = append(def.cols, col.O)
		}
		b.ctes = append(b.ctes, def)
	}
	return func() { b.ctes = b.ctes[:n] }
}

// checkWith refuses what WITH cannot do here.
func (b *binder) checkWith(w *ast.WithClause) error {
	if w.IsRecursive {
		return b.errorf(ErrUnsupported, nil, "WITH RECURSIVE is not supported")
	}
	seen := map[string]bool{}
	for _, c := range w.CTEs {
		if seen[c.Name.O] {
			return Errorf(ErrDuplicateTable, b.identPos(c.Name.O, "with", ","), "WITH query name \"%s\" specified more than once", c.Name.O)
		}
		seen[c.Name.O] = true
	}
	return nil
}

// lookupCTE finds the innermost visible WITH query of that name.
func (b *binder) lookupCTE(name string) (*cte, bool) {
	for i := len(b.ctes) - 1; i >= 0; i-- {
		if b.ctes[i].name == name {
			return b.ctes[i], true
		}
	}
	return nil, false
}

// bindCTE binds a reference to a WITH query.
func (b *binder) bindCTE(c *cte) (Plan, error) {
	if c.work != nil {
		return workRef(c.work), nil
	}
	saved := b.ctes
	b.ctes = append([]*cte(nil), b.ctes[:c.visible]...)
	defer func() { b.ctes = saved }()
	var p Plan
	var err error
	switch q := c.query.(type) {
	case *ast.SelectStmt:
		p, err = b.bindQuery(q)
	case *ast.SetOprStmt:
		p, err = b.bindSetOpr(q)
	default:
		return nil, b.errorf(ErrUnsupported, nil, "WITH query \"%s\" is not a SELECT", c.name)
	}
	if err != nil || len(c.cols) == 0 {
		return p, err
	}
	in := p.Schema()
	if len(c.cols) > len(in) {
		return nil, b.errorf(ErrInvalidColumnReference, nil, "WITH query \"%s\" has %d columns available but %d columns specified", c.name, len(in), len(c.cols))
	}
	exprs := make([]*expr.Expr, len(in))
	out := make(types.Schema, len(in))
	for i, f := range in {
		exprs[i] = expr.Column(i, f.Type, f.Name)
		out[i] = f
		if i < len(c.cols) {
			out[i].Name = c.cols[i]
		}
	}
	return &Project{Input: p, Exprs: exprs, Out: out}, nil
}
