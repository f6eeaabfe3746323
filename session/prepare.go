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
	// declared are the parameter types the client declared (Prepare).
	declared []types.Type

	// Params are the types of $1..$n, as PostgreSQL infers them: the type the
	// client declared; else the type the binder cast the parameter to where it
	// used one (the column's type in d = $1 or INSERT ... VALUES ($1)); bigint
	// for a LIMIT or OFFSET; else text (PostgreSQL resolves "unknown" as text).
	Params []types.Type
	// Schema is the columns the statement returns, nil for a statement without
	// rows.
	Schema types.Schema
	// Origins are the table columns Schema's columns read as they are, for
	// the RowDescription (pgjdbc's ResultSetMetaData.getTableName).
	Origins []sql.ColumnOrigin
}

// Prepare parses query, which must hold at most one statement, and binds it to
// learn its parameter types and result columns. declared are the types the
// client gave the parameters (the null type, or none past its end, where it
// gave none); a parameter of a declared type binds as a value of that type.
// Binding happens again at each Run, so that a Prepared follows catalog
// changes; a result schema that changed is an error there, as in PostgreSQL.
//
// A failure fails the session's transaction block (tx.go), as any failed
// statement does; in a failed block only the statements that end it may be
// prepared.
func (s *Session) Prepare(ctx context.Context, query string, declared []types.Type) (*Prepared, error) {
	p, err := s.prepare(ctx, query, declared)
	if err != nil {
		s.FailTransaction()
	}
	return p, err
}

func (s *Session) prepare(_ context.Context, query string, declared []types.Type) (*Prepared, error) {
	stmts, err := sql.Parse(query)
	if err != nil {
		return nil, err
	}
	p := &Prepared{s: s, query: query, declared: declared}
	switch len(stmts) {
	case 0:
		return p, nil
	case 1:
	default:
		return nil, sql.Errorf(sql.ErrSyntax, 0, "cannot insert multiple commands into a prepared statement")
	}
	if err := s.checkAborted(stmts[0]); err != nil {
		return nil, err
	}
	p.node = stmts[0]
	stmt, err := sql.BindSession(p.node, s.e.catalog, query, s.info(), declared)
	if err != nil {
		return nil, err
	}
	params := make([]*types.Type, len(declared)) // nil entry: no type seen yet
	see := func(n int, t types.Type) {
		for len(params) < n {
			params = append(params, nil)
		}
		if params[n-1] == nil && t.ID != types.Null {
			params[n-1] = &t
		}
	}
	for i, t := range declared {
		see(i+1, t)
	}
	err = planExprs(stmt, func(slot **expr.Expr) error {
		walkParams(*slot, nil, func(n int, cast *expr.Expr) {
			if cast != nil {
				see(n, cast.Type)
			} else {
				see(n, types.NullType)
			}
		})
		return nil
	})
	if err != nil {
		return nil, err
	}
	eachLimit(stmt, func(l *sql.Limit) {
		for _, n := range []int{l.CountParam, l.OffsetParam} {
			if n > 0 {
				see(n, types.Int64Type)
			}
		}
	})
	p.Params = make([]types.Type, len(params))
	for i, t := range params {
		p.Params[i] = types.StringType
		if t != nil {
			p.Params[i] = *t
		}
	}
	p.Schema = s.schemaOf(stmt)
	if q, ok := stmt.(*sql.Query); ok {
		p.Origins = sql.ColumnOrigins(q.Plan)
	}
	return p, nil
}

// Empty reports whether the prepared query holds no statement; running it does
// nothing, and the client is told so (EmptyQueryResponse).
func (p *Prepared) Empty() bool { return p.node == nil }

// Run executes the statement with params as $1..$n. A parameter is a value of its
// type in Params, a text value to be parsed by PostgreSQL's input rules for that
// type (a cast from text), or a NULL. The caller consumes or closes Result.Rows.
//
// Like Exec's statements, it runs in the session's transaction block, which
// its failure fails.
func (p *Prepared) Run(ctx context.Context, params []types.Value) (*Result, error) {
	res, err := p.run(ctx, params)
	if err != nil {
		p.s.FailTransaction()
	}
	return res, err
}

// Resumable reports whether a portal of p that ran before may go on
// returning rows: not in a failed transaction block (25P02), as in
// PostgreSQL.
func (p *Prepared) Resumable() error { return p.s.checkAborted(p.node) }

func (p *Prepared) run(ctx context.Context, params []types.Value) (*Result, error) {
	if err := p.s.checkAborted(p.node); err != nil {
		return nil, err
	}
	if p.node == nil {
		return nil, fmt.Errorf("session: running an empty prepared statement")
	}
	if len(params) != len(p.Params) {
		return nil, sql.Errorf(sql.ErrInvalidValue, 0, "bind message supplies %d parameters, but prepared statement requires %d",
			len(params), len(p.Params))
	}
	p.s.txStart = time.Now()
	stmt, err := sql.BindSession(p.node, p.s.e.catalog, p.query, p.s.info(), p.declared)
	if err != nil {
		return nil, err
	}
	err = planExprs(stmt, func(slot **expr.Expr) error {
		e, err := bindParams(*slot, params, p.s.TimeZone())
		*slot = e
		return err
	})
	if err == nil {
		err = bindLimits(stmt, params)
	}
	if err != nil {
		return nil, err
	}
	if !sameSchema(p.s.schemaOf(stmt), p.Schema) {
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

// paramError is an error with its SQLSTATE about a statement's parameters.
type paramError struct{ code, msg string }

func (e *paramError) Error() string    { return e.msg }
func (e *paramError) SQLState() string { return e.code }

// noParams refuses a statement run without parameters (the simple query
// protocol) that refers to one, as PostgreSQL does, rather than run it with
// the parameter unbound.
func noParams(stmt sql.Statement) error {
	n := 0
	_ = planExprs(stmt, func(slot **expr.Expr) error {
		walkParams(*slot, nil, func(k int, _ *expr.Expr) {
			if n == 0 {
				n = k
			}
		})
		return nil
	})
	eachLimit(stmt, func(l *sql.Limit) {
		if n == 0 {
			n = max(l.CountParam, l.OffsetParam)
		}
	})
	if n > 0 {
		return &paramError{code: "42P02", msg: fmt.Sprintf("there is no parameter $%d", n)}
	}
	return nil
}

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
// place, by literals. A parameter of a declared type becomes its value cast to
// that type. A cast of a parameter of no type becomes the literal of the cast's
// value, so a text parameter is parsed by the cast's input rules; a bare one
// (of the null type) can only be NULL.
func bindParams(e *expr.Expr, params []types.Value, loc *time.Location) (*expr.Expr, error) {
	switch {
	case e.Kind == expr.KindCast && e.Args[0].Kind == expr.KindParam && e.Args[0].Type.ID == types.Null:
		return castParam(params[e.Args[0].Param-1], e.Type, loc)
	case e.Kind == expr.KindParam && e.Type.ID != types.Null:
		return castParam(params[e.Param-1], e.Type, loc)
	case e.Kind == expr.KindParam:
		v := params[e.Param-1]
		if !v.Null && v.Type.ID != types.Null {
			return nil, &ParamTypeError{Param: e.Param}
		}
		return expr.Literal(types.NullValue(e.Type)), nil
	}
	for i, a := range e.Args {
		b, err := bindParams(a, params, loc)
		if err != nil {
			return nil, err
		}
		e.Args[i] = b
	}
	return e, nil
}

// castParam is the literal of parameter value v as a value of type t, the
// text of a timestamp with time zone without one read in loc (the session's
// TimeZone; nil: UTC).
func castParam(v types.Value, t types.Type, loc *time.Location) (*expr.Expr, error) {
	if v.Null || v.Type.ID == types.Null {
		return expr.Literal(types.NullValue(t)), nil
	}
	if t.OID == types.OIDTimestamptz && v.Type.ID == types.String && loc != nil {
		us, err := expr.ParseTimestampTZIn([]byte(v.Str), loc)
		if err != nil {
			return nil, err
		}
		return expr.Literal(types.Value{Type: t, Int: us}), nil
	}
	val, err := expr.EvalConst(expr.Cast(expr.Literal(v), t))
	if err != nil {
		return nil, err
	}
	return expr.Literal(val), nil
}

// bindLimits sets the counts and offsets of the statement's LIMITs that
// parameters give. As in PostgreSQL, a NULL count is no limit and a NULL
// offset none; a negative one is an error.
func bindLimits(stmt sql.Statement, params []types.Value) error {
	var err error
	value := func(n int, what, code string) (int64, bool) {
		lit, e := castParam(params[n-1], types.Int64Type, nil)
		if e != nil {
			err = e
			return 0, false
		}
		if lit.Value.Null {
			return 0, false
		}
		if lit.Value.Int < 0 {
			err = &paramError{code: code, msg: what + " must not be negative"}
			return 0, false
		}
		return lit.Value.Int, true
	}
	eachLimit(stmt, func(l *sql.Limit) {
		if l.CountParam > 0 && err == nil {
			l.Count = -1
			if v, ok := value(l.CountParam, "LIMIT", "2201W"); ok {
				l.Count = v
			}
		}
		if l.OffsetParam > 0 && err == nil {
			l.Offset = 0
			if v, ok := value(l.OffsetParam, "OFFSET", "2201X"); ok {
				l.Offset = v
			}
		}
		l.Clamp()
	})
	return err
}

// eachLimit calls fn with every Limit of a bound statement's plan.
func eachLimit(stmt sql.Statement, fn func(*sql.Limit)) {
	_ = eachPlan(stmt, func(p sql.Plan) error {
		if l, ok := p.(*sql.Limit); ok {
			fn(l)
		}
		return nil
	})
}

// planExprs calls fn with the address of every expression of a bound statement's
// plan, so that fn may replace it.
func planExprs(stmt sql.Statement, fn func(**expr.Expr) error) error {
	return eachPlan(stmt, func(p sql.Plan) error {
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
		return nil
	})
}

// eachPlan calls fn with every node of a bound statement's plan.
func eachPlan(stmt sql.Statement, fn func(sql.Plan) error) error {
	var walk func(p sql.Plan) error
	walk = func(p sql.Plan) error {
		if err := fn(p); err != nil {
			return err
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
	case *sql.DeclareCursor:
		// DECLARE c CURSOR FOR SELECT ... WHERE id > $1 (psycopg 3's named
		// cursors): the query's parameters are the statement's.
		return eachPlan(st.Query, fn)
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
