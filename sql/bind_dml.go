package sql

// UPDATE, DELETE and TRUNCATE of the tables Hummer stores. Each becomes a
// query over the table's current rows whose result replaces them: the binder
// writes it as a SELECT over the table, so WHERE and SET take every
// expression and subquery a SELECT does.

import (
	"slices"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// Update is UPDATE t SET ... [WHERE ...]. Query reads t and gives, for each
// of its rows, t's columns after the update, then a boolean column: whether
// the row was updated (its count is the statement's).
type Update struct {
	Table *Table
	Query *Query
}

// Delete is DELETE FROM t [WHERE ...]. Query, nil without a WHERE, reads t
// and gives the rows that stay.
type Delete struct {
	Table *Table
	Query *Query
}

// Truncate is TRUNCATE [TABLE] t.
type Truncate struct{ Table *Table }

func (*Update) statement()   {}
func (*Delete) statement()   {}
func (*Truncate) statement() {}

// dmlTable returns the one stored table of an UPDATE or DELETE.
func (b *binder) dmlTable(refs *ast.TableRefsClause, verb string) (*Table, error) {
	if refs == nil || refs.TableRefs == nil || refs.TableRefs.Right != nil {
		return nil, b.errorf(ErrUnsupported, nil, "%s takes one table", verb)
	}
	ts, ok := refs.TableRefs.Left.(*ast.TableSource)
	var tn *ast.TableName
	if ok {
		tn, ok = ts.Source.(*ast.TableName)
	}
	if !ok {
		return nil, b.errorf(ErrUnsupported, nil, "%s takes one table", verb)
	}
	t, err := b.lookupTable(tn)
	if err != nil {
		return nil, err
	}
	return t, b.checkStored(t, verb)
}

// checkStored refuses to change a table Hummer does not store.
func (b *binder) checkStored(t *Table, verb string) error {
	switch {
	case t.IsView():
		return b.errorf(ErrWrongObjectType, nil, "cannot %s view \"%s\": a view holds the result of its own query", verb, t.Name)
	case !t.IsStored():
		return b.errorf(ErrWrongObjectType, nil, "cannot %s table \"%s\": its rows belong to its connector (%s); only tables Hummer stores (CREATE TABLE without ENGINE) change in place", verb, t.Name, t.Engine)
	}
	return nil
}

// bindUpdate binds UPDATE t SET c = e, ... [WHERE cond] as SELECT *, e, ...,
// cond IS TRUE FROM t, then the new columns: CASE WHEN matched THEN e ELSE c
// END for every assigned one.
func (b *binder) bindUpdate(s *ast.UpdateStmt) (Statement, error) {
	switch {
	case s.MultipleTable:
		return nil, b.errorf(ErrUnsupported, nil, "UPDATE of several tables is not supported")
	case s.Order != nil || s.Limit != nil:
		return nil, b.errorf(ErrUnsupported, nil, "UPDATE ... ORDER BY/LIMIT is not supported")
	case s.With != nil:
		return nil, b.errorf(ErrUnsupported, nil, "WITH ... UPDATE is not supported")
	}
	t, err := b.dmlTable(s.TableRefs, "update")
	if err != nil {
		return nil, err
	}
	fields := []*ast.SelectField{{WildCard: &ast.WildCardField{}}}
	assigned := make([]int, 0, len(s.List)) // the column of each assignment
	for _, a := range s.List {
		i := columnIndex(t.Columns, a.Column.Name.O)
		if i < 0 {
			return nil, b.errorf(ErrUnknownColumn, a.Column, "column \"%s\" of relation \"%s\" does not exist", a.Column.Name.O, t.Name)
		}
		if slices.Contains(assigned, i) {
			return nil, b.errorf(ErrSyntax, a.Column, "multiple assignments to same column \"%s\"", a.Column.Name.O)
		}
		assigned = append(assigned, i)
		e := a.Expr
		if _, ok := e.(*ast.DefaultExpr); ok {
			e = nil // bound below as the column's default
		}
		fields = append(fields, &ast.SelectField{Expr: e})
	}
	var where ast.ExprNode = s.Where
	if where != nil {
		fields = append(fields, &ast.SelectField{Expr: &ast.IsTruthExpr{Expr: where, True: 1}})
	}
	// Assignments of DEFAULT are not SELECT items: they are left out here.
	sel := &ast.SelectStmt{Kind: ast.SelectStmtKindSelect, From: s.TableRefs, Fields: &ast.FieldList{}}
	for _, f := range fields {
		if f.WildCard != nil || f.Expr != nil {
			sel.Fields.Fields = append(sel.Fields.Fields, f)
		}
	}
	p, err := b.bindQuery(sel)
	if err != nil {
		return nil, err
	}
	in := p.Schema()
	n := len(t.Columns)
	matched := expr.Literal(types.BoolValue(true))
	if where != nil {
		matched = expr.Column(len(in)-1, types.BoolType, "$matched")
	}
	exprs := make([]*expr.Expr, n+1)
	for i, c := range t.Columns {
		exprs[i] = expr.Column(i, c.Type, c.Name)
	}
	next := n // the SELECT item of the next assignment that is not DEFAULT
	for k, i := range assigned {
		col := t.Columns[i]
		var v *expr.Expr
		if fields[k+1].Expr == nil {
			v = expr.Literal(defaultOf(t, i))
		} else {
			f := in[next]
			ok := assignable(f.Type, col.Type)
			if proj, isProj := p.(*Project); isProj && next < len(proj.Exprs) {
				ok = assignableExpr(proj.Exprs[next], col.Type) // SET d = '2024-01-02'
			}
			next++
			if !ok {
				return nil, b.errorf(ErrType, s.List[k].Expr, "column \"%s\" is of type %s but expression is of type %s", col.Name, col.Type, f.Type)
			}
			var err error
			if v, err = b.zonedCast(s.List[k].Expr, expr.Column(next-1, f.Type, f.Name), col.Type); err != nil {
				return nil, err
			}
		}
		exprs[i] = expr.Call("case", col.Type, matched, v, exprs[i])
	}
	exprs[n] = matched
	out := append(append(types.Schema{}, t.Columns...), types.Field{Name: "$matched", Type: types.BoolType})
	return &Update{Table: t, Query: &Query{Plan: &Project{Input: p, Exprs: exprs, Out: out}}}, nil
}

// bindDelete binds DELETE FROM t [WHERE cond] as SELECT * FROM t WHERE cond IS
// NOT TRUE: the rows that stay.
func (b *binder) bindDelete(s *ast.DeleteStmt) (Statement, error) {
	switch {
	case s.IsMultiTable:
		return nil, b.errorf(ErrUnsupported, nil, "DELETE of several tables is not supported")
	case s.Order != nil || s.Limit != nil:
		return nil, b.errorf(ErrUnsupported, nil, "DELETE ... ORDER BY/LIMIT is not supported")
	case s.With != nil:
		return nil, b.errorf(ErrUnsupported, nil, "WITH ... DELETE is not supported")
	}
	t, err := b.dmlTable(s.TableRefs, "delete from")
	if err != nil {
		return nil, err
	}
	if s.Where == nil {
		return &Delete{Table: t}, nil
	}
	sel := &ast.SelectStmt{Kind: ast.SelectStmtKindSelect, From: s.TableRefs,
		Fields: &ast.FieldList{Fields: []*ast.SelectField{{WildCard: &ast.WildCardField{}}}},
		Where:  &ast.IsTruthExpr{Expr: s.Where, Not: true, True: 1}}
	p, err := b.bindQuery(sel)
	if err != nil {
		return nil, err
	}
	return &Delete{Table: t, Query: &Query{Plan: castPlan(p, t.Columns)}}, nil
}

func (b *binder) bindTruncate(s *ast.TruncateTableStmt) (Statement, error) {
	t, err := b.lookupTable(s.Table)
	if err != nil {
		return nil, err
	}
	return &Truncate{Table: t}, b.checkStored(t, "truncate")
}
