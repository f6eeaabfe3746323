package sql

import (
	"slices"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// Insert is INSERT INTO t ... VALUES or SELECT: its rows go into a stored
// table, or a job writes them to t's connector. The plan's columns already
// have t's types, in t's order.
type Insert struct {
	Table *Table
	Query *Query
}

// ShowJobs is SHOW PROCESSLIST: the jobs the JobManager knows.
type ShowJobs struct{}

// Kill is KILL <job id>.
type Kill struct{ JobID string }

func (*Insert) statement()   {}
func (*ShowJobs) statement() {}
func (*Kill) statement()     {}

// bindInsert binds INSERT INTO t [(columns)] VALUES (...), ... and INSERT INTO
// t [(columns)] SELECT ...: a plan of t's columns in t's order, each column
// one of the query's (cast to the column's type) or, where the column list
// leaves it out, its DEFAULT or NULL, as PostgreSQL's.
func (b *binder) bindInsert(s *ast.InsertStmt) (Statement, error) {
	if s.IsReplace || len(s.OnDuplicate) > 0 || s.Setlist {
		return nil, b.errorf(ErrUnsupported, nil, "REPLACE, INSERT ... SET and ON DUPLICATE KEY UPDATE are not supported: INSERT INTO t [(columns)] VALUES ... or SELECT ...")
	}
	tn, ok := s.Table.TableRefs.Left.(*ast.TableSource)
	var name *ast.TableName
	if ok {
		name, ok = tn.Source.(*ast.TableName)
	}
	if !ok || s.Table.TableRefs.Right != nil {
		return nil, b.errorf(ErrUnsupported, nil, "INSERT INTO takes one table")
	}
	t, err := b.lookupTable(name)
	if err != nil {
		return nil, err
	}
	if t.IsView() {
		return nil, b.errorf(ErrWrongObjectType, nil, "cannot insert into view \"%s\": a view holds the result of its own query", t.Name)
	}
	// target[j] is the table column the query's column j goes to.
	var target []int
	for _, c := range s.Columns {
		i := columnIndex(t.Columns, c.Name.O)
		if i < 0 {
			return nil, b.errorf(ErrUnknownColumn, c, "column \"%s\" of relation \"%s\" does not exist", c.Name.O, t.Name)
		}
		if slices.Contains(target, i) {
			return nil, b.errorf(ErrDuplicateColumn, c, "column \"%s\" specified more than once", c.Name.O)
		}
		target = append(target, i)
	}
	if s.Columns == nil {
		for i := range t.Columns {
			target = append(target, i)
		}
	}
	var p Plan
	switch {
	case s.Lists != nil:
		p, err = b.bindInsertValues(s.Lists, t, target)
	case s.Select != nil:
		p, err = b.bindResultSet(s.Select)
	default:
		return nil, b.errorf(ErrUnsupported, nil, "INSERT needs VALUES or a SELECT")
	}
	if err != nil {
		return nil, err
	}
	in := p.Schema()
	switch {
	case len(in) > len(target):
		return nil, b.errorf(ErrSyntax, nil, "INSERT has more expressions than target columns")
	case len(in) < len(target) && len(s.Columns) > 0:
		return nil, b.errorf(ErrSyntax, nil, "INSERT has more target columns than expressions")
	}
	target = target[:len(in)]
	exprs := make([]*expr.Expr, len(t.Columns))
	for j, i := range target {
		want := t.Columns[i].Type
		if !assignable(in[j].Type, want) {
			return nil, b.errorf(ErrType, nil, "column \"%s\" is of type %s but expression is of type %s", t.Columns[i].Name, want, in[j].Type)
		}
		e, err := b.zonedCast(nil, expr.Column(j, in[j].Type, in[j].Name), want)
		if err != nil {
			return nil, err
		}
		exprs[i] = e
	}
	for i, e := range exprs {
		if e == nil {
			exprs[i] = expr.Literal(defaultOf(t, i))
		}
	}
	out := make(types.Schema, len(t.Columns))
	copy(out, t.Columns)
	return &Insert{Table: t, Query: &Query{Plan: &Project{Input: p, Exprs: exprs, Out: out}}}, nil
}

// ConstantRows returns, for an INSERT's plan that projects VALUES rows, each
// row's values as expressions of no column (constant once the statement's
// parameters are bound), so that the rows need no job; ok is false for any
// other plan.
func ConstantRows(p Plan) (rows [][]*expr.Expr, ok bool) {
	proj, ok := p.(*Project)
	if !ok {
		return nil, false
	}
	v, ok := proj.Input.(*Values)
	if !ok {
		return nil, false
	}
	for _, row := range v.Rows {
		out := make([]*expr.Expr, len(proj.Exprs))
		for j, e := range proj.Exprs {
			out[j] = substitute(e, row)
		}
		rows = append(rows, out)
	}
	return rows, true
}

// defaultOf is the value an INSERT writes into column i of t when it names no
// other: its DEFAULT, else NULL.
func defaultOf(t *Table, i int) types.Value {
	if v, ok := t.Defaults[t.Columns[i].Name]; ok {
		return v
	}
	return types.NullValue(t.Columns[i].Type)
}

// bindInsertValues binds the rows of INSERT ... VALUES: row j's k-th value,
// cast to the type of table column target[k], or that column's default for
// DEFAULT. Without a column list a row may be shorter than the table (the rest
// take their defaults), never longer.
func (b *binder) bindInsertValues(lists [][]ast.ExprNode, t *Table, target []int) (Plan, error) {
	width := len(lists[0])
	if width > len(target) {
		return nil, b.errorf(ErrSyntax, lists[0][len(target)], "INSERT has more expressions than target columns")
	}
	out := make(types.Schema, width)
	for k := range out {
		out[k] = t.Columns[target[k]]
	}
	v := &Values{Out: out}
	ctx := &exprCtx{scope: &scope{}, clause: "VALUES"}
	for _, list := range lists {
		if len(list) != width {
			return nil, b.errorf(ErrSyntax, nil, "VALUES lists must all be the same length")
		}
		row := make([]*expr.Expr, width)
		for k, n := range list {
			col := t.Columns[target[k]]
			if _, ok := n.(*ast.DefaultExpr); ok {
				row[k] = expr.Literal(defaultOf(t, target[k]))
				continue
			}
			e, err := b.bindExpr(ctx, n)
			if err != nil {
				return nil, err
			}
			if !assignableExpr(e, col.Type) {
				return nil, b.errorf(ErrType, n, "column \"%s\" is of type %s but expression is of type %s", col.Name, col.Type, e.Type)
			}
			if e, err = b.zonedCast(n, e, col.Type); err != nil {
				return nil, err
			}
			row[k] = foldExpr(e)
		}
		v.Rows = append(v.Rows, row)
	}
	return v, nil
}

// assignableExpr is assignable for e's type, and also true for a string
// literal any cast from text can read: PostgreSQL types a quoted literal by
// where it goes ('2024-01-02' into a date column, '7' into a bigint one).
func assignableExpr(e *expr.Expr, to types.Type) bool {
	if e.Kind == expr.KindLiteral && e.Type.ID == types.String {
		return expr.CanCast(e.Type, to)
	}
	return assignable(e.Type, to)
}

// assignable reports whether a value of type from may be stored in a column of
// type to without an explicit cast, as PostgreSQL's assignment casts allow:
// NULL, numbers between number types, anything into text.
func assignable(from, to types.Type) bool {
	switch {
	case from == to, from.ID == types.Null, from.ID == to.ID:
		return true
	case from.IsNumeric() && to.IsNumeric():
		return true
	case to.ID == types.String:
		return expr.CanCast(from, to)
	}
	return false
}
