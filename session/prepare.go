package session

import (
	"context"
	"fmt"
	"time"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/sql"
)

// Prepared is one statement parsed and bound ahead of its execution, with $n
// parameters, for the extended query protocol. It belongs to the session that
// prepared it and is used from that session's goroutine.
type Prepared struct {
	s     *Session
	query string
	node  ast.StmtNode // nil for an empty query

	// Params are the types of $1..$n: the type the binder cast the parameter to
	// where it used one, else text (as PostgreSQL infers "unknown" as text).
	Params []types.Type
	// Schema is the columns the statement returns, nil for a statement without
	// rows.
	Schema types.Schema
}

// Prepare parses query, which must hold at most one statement, and binds it to
// learn its parameter types and result columns. Binding happens again at each Run,
// so that a Prepared follows catalog changes; a result schema that changed is an
// error there, as in PostgreSQL.
func (s *Session) Prepare(_ context.Context, query string) (*Prepared, error) {
	stmts, err := sql.Parse(query)
	if err != nil {
		return nil, err
	}
	p := &Prepared{s: s, query: query}
	switch len(stmts) {
	case 0:
		return p, nil
	case 1:
	default:
		return nil, sql.Errorf(sql.ErrSyntax, 0, "cannot insert multiple commands into a prepared statement")
	}
	p.node = stmts[0]
	stmt, err := sql.BindSession(p.node, s.e.catalog, query, s.info())
	if err != nil {
		return nil, err
	}
	var params []*types.Type // nil entry: not seen yet
	err = planExprs(stmt, func(slot **expr.Expr) error {
		walkParams(*slot, nil, func(n int, cast *expr.Expr) {
			for len(params) < n {
				params = append(params, nil)
			}
			if params[n-1] == nil && cast != nil {
				t := cast.Type
				params[n-1] = &t
			}
		})
		return nil
	})
	if err != nil {
		return nil, err
	}
	p.Params = make([]types.Type, len(params))
	for i, t := range params {
		p.Params[i] = types.StringType
		if t != nil {
			p.Params[i] = *t
		}
	}
	p.Schema = resultSchema(stmt)
	return p, nil
}

// Empty reports whether the prepared query holds no statement; running it does
// nothing, and the client is told so (EmptyQueryResponse).
func (p *Prepared) Empty() bool { return p.node == nil }

// Run executes the statement with params as $1..$n. A parameter is a value of its
// type in Params, a text value to be parsed by PostgreSQL's input rules for that
// type (a cast from text), or a NULL. The caller consumes or closes Result.Rows.
func (p *Prepared) Run(ctx context.Context, params []types.Value) (*Result, error) {
	if p.node == nil {
		return nil, fmt.Errorf("session: running an empty prepared statement")
	}
	if len(params) != len(p.Params) {
		return nil, sql.Errorf(sql.ErrInvalidValue, 0, "bind message supplies %d parameters, but prepared statement requires %d",
			len(params), len(p.Params))
	}
	p.s.txStart = time.Now()
	stmt, err := sql.BindSession(p.node, p.s.e.catalog, p.query, p.s.info())
	if err != nil {
		return nil, err
	}
	err = planExprs(stmt, func(slot **expr.Expr) error {
		e, err := bindParams(*slot, params)
		*slot = e
		return err
	})
	if err != nil {
		return nil, err
	}
	if !sameSchema(resultSchema(stmt), p.Schema) {
		return nil, sql.Errorf(sql.ErrUnsupported, 0, "cached plan must not change result type")
	}
	return p.s.runBound(ctx, stmt, p.node.Text())
}

// ParamTypeError is the error of a parameter whose type the statement does not
// determine (SELECT $1 with a non-NULL value).
type ParamTypeError struct{ Param int }

func (e *ParamTypeError) Error() string {
	return fmt.Sprintf("could not determine data type of parameter $%d", e.Param)
}

// SQLState returns indeterminate_datatype.
func (e *ParamTypeError) SQLState() string { return "42P18" }

// walkParams calls fn for every parameter in e, with the cast around it, if any.
func walkParams(e, parent *expr.Expr, fn func(n int, cast *expr.Expr)) {
	if e.Kind == expr.KindParam {
		if parent != nil && parent.Kind == expr.KindCast {
			fn(e.Param, parent)
		} else {
			fn(e.Param, nil)
		}
		return
	}
	for _, a := range e.Args {
		walkParams(a, e, fn)
	}
}

// bindParams replaces the parameters in e, a freshly bound tree it may change in
// place, by literals. A cast of a parameter becomes the literal of the cast's
// value, so a text parameter is parsed by the cast's input rules; a bare parameter
// (of the null type) can only be NULL.
func bindParams(e *expr.Expr, params []types.Value) (*expr.Expr, error) {
	switch {
	case e.Kind == expr.KindCast && e.Args[0].Kind == expr.KindParam:
		v := params[e.Args[0].Param-1]
		if v.Null || v.Type.ID == types.Null {
			return expr.Literal(types.NullValue(e.Type)), nil
		}
		val, err := expr.EvalConst(expr.Cast(expr.Literal(v), e.Type))
		if err != nil {
			return nil, err
		}
		return expr.Literal(val), nil
	case e.Kind == expr.KindParam:
		v := params[e.Param-1]
		if !v.Null && v.Type.ID != types.Null {
			return nil, &ParamTypeError{Param: e.Param}
		}
		return expr.Literal(types.NullValue(e.Type)), nil
	}
	for i, a := range e.Args {
		b, err := bindParams(a, params)
		if err != nil {
			return nil, err
		}
		e.Args[i] = b
	}
	return e, nil
}

// planExprs calls fn with the address of every expression of a bound statement's
// plan, so that fn may replace it.
func planExprs(stmt sql.Statement, fn func(**expr.Expr) error) error {
	var walk func(p sql.Plan) error
	walk = func(p sql.Plan) error {
		switch n := p.(type) {
		case *sql.Values:
			for _, row := range n.Rows {
				for i := range row {
					if err := fn(&row[i]); err != nil {
						return err
					}
				}
			}
		case *sql.Filter:
			if err := fn(&n.Cond); err != nil {
				return err
			}
		case *sql.Project:
			for i := range n.Exprs {
				if err := fn(&n.Exprs[i]); err != nil {
					return err
				}
			}
		case *sql.Join:
			if n.Extra != nil {
				if err := fn(&n.Extra); err != nil {
					return err
				}
			}
		}
		for _, in := range p.Inputs() {
			if err := walk(in); err != nil {
				return err
			}
		}
		return nil
	}
	switch st := stmt.(type) {
	case *sql.Query:
		return walk(st.Plan)
	case *sql.RecursiveQuery:
		for _, r := range st.Recursions {
			if err := walk(r.Base); err != nil {
				return err
			}
			if err := walk(r.Step); err != nil {
				return err
			}
		}
		return walk(st.Main.Plan)
	case *sql.Explain:
		return walk(st.Query.Plan)
	case *sql.Insert:
		return walk(st.Query.Plan)
	case *sql.Update:
		return walk(st.Query.Plan)
	case *sql.Delete:
		if st.Query != nil {
			return walk(st.Query.Plan)
		}
	case *sql.CreateTable:
		if st.Query != nil {
			return walk(st.Query.Plan)
		}
	}
	return nil
}

// Schemas of the statements answered by the session itself.
var (
	showTablesSchema = types.Schema{{Name: "name", Type: types.StringType}, {Name: "engine", Type: types.StringType},
		{Name: "connection", Type: types.StringType}}
	describeSchema = types.Schema{{Name: "column", Type: types.StringType}, {Name: "type", Type: types.StringType}}
	showAllSchema  = types.Schema{{Name: "name", Type: types.StringType}, {Name: "setting", Type: types.StringType},
		{Name: "description", Type: types.StringType}}
	explainSchema = types.Schema{{Name: "QUERY PLAN", Type: types.StringType}}
)

// resultSchema is the columns stmt returns when run, nil if it returns none.
func resultSchema(stmt sql.Statement) types.Schema {
	switch st := stmt.(type) {
	case *sql.Query:
		return st.Plan.Schema()
	case *sql.RecursiveQuery:
		return st.Main.Plan.Schema()
	case *sql.Explain:
		return explainSchema
	case *sql.ShowTables:
		return showTablesSchema
	case *sql.Describe:
		return describeSchema
	case *sql.ShowGrants:
		return showGrantsSchema
	case *sql.Show:
		if st.Name == "" {
			return showAllSchema
		}
		return types.Schema{{Name: paramName(st.Name), Type: types.StringType}}
	}
	return nil
}

func sameSchema(a, b types.Schema) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Type != b[i].Type {
			return false
		}
	}
	return true
}
