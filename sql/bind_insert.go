package sql

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// Insert is INSERT INTO t SELECT ...: a job that writes the query's rows to t's
// connector. The plan's columns already have t's types, in t's order.
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

// bindInsert binds INSERT INTO t [(all of t's columns, in order)] SELECT ...
func (b *binder) bindInsert(s *ast.InsertStmt) (Statement, error) {
	if s.IsReplace || len(s.OnDuplicate) > 0 || s.Setlist {
		return nil, b.errorf(ErrUnsupported, nil, "only INSERT INTO t SELECT ... is supported")
	}
	if s.Select == nil {
		return nil, b.errorf(ErrUnsupported, nil, "INSERT ... VALUES is not supported: use INSERT INTO t SELECT ...")
	}
	sel, ok := s.Select.(*ast.SelectStmt)
	if !ok {
		return nil, b.errorf(ErrUnsupported, nil, "INSERT takes a plain SELECT")
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
	if len(s.Columns) > 0 {
		if len(s.Columns) != len(t.Columns) {
			return nil, b.errorf(ErrUnsupported, s.Columns[0], "INSERT must name all of %s's columns, in order, or none", t.Name)
		}
		for i, c := range s.Columns {
			if !strings.EqualFold(c.Name.O, t.Columns[i].Name) {
				return nil, b.errorf(ErrUnsupported, c, "INSERT must name all of %s's columns, in order, or none", t.Name)
			}
		}
	}
	p, err := b.bindQuery(sel)
	if err != nil {
		return nil, err
	}
	in := p.Schema()
	if len(in) != len(t.Columns) {
		return nil, b.errorf(ErrType, nil, "INSERT has %d expressions for %d columns of %s", len(in), len(t.Columns), t.Name)
	}
	exprs := make([]*expr.Expr, len(in))
	out := make(types.Schema, len(in))
	cast := false
	for i, f := range in {
		want := t.Columns[i].Type
		if !assignable(f.Type, want) {
			return nil, b.errorf(ErrType, nil, "column %q is of type %s but expression is of type %s", t.Columns[i].Name, want, f.Type)
		}
		exprs[i] = expr.Cast(expr.Column(i, f.Type, f.Name), want)
		cast = cast || f.Type != want
		out[i] = types.Field{Name: t.Columns[i].Name, Type: want}
	}
	if cast {
		p = &Project{Input: p, Exprs: exprs, Out: out}
	}
	return &Insert{Table: t, Query: &Query{Plan: p}}, nil
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
