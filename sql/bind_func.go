package sql

// Function calls and casts: the forms the binder maps itself (TRIM's, IF,
// POSITION, GREATEST and LEAST, the date and time ones of bind_datetime.go),
// then any function by name through expr.Resolve.

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// srfNames are the set-returning functions; the SELECT binder handles them at the
// top of a select item, and nowhere else.
var srfNames = map[string]bool{"unnest": true, "regexp_split_to_table": true, "string_to_table": true, "string_split": true,
	"generate_series": true, "generate_subscripts": true}

// funcAliases maps MySQL spellings to the engine's function names.
var funcAliases = map[string]string{
	"ifnull": "coalesce", "lcase": "lower", "ucase": "upper", "substr": "substring",
	"mid": "substring", "character_length": "char_length", "ceiling": "ceil", "mod": "%",
	"btrim": "trim",
}

func (b *binder) bindFunc(ctx *exprCtx, n *ast.FuncCallExpr) (*expr.Expr, error) {
	name := n.FnName.L
	if srfNames[name] {
		if name == "string_split" {
			return nil, b.errorf(ErrUnsupported, n, "string_split is supported only as unnest(string_split(s, separator)) in a select list")
		}
		if ctx.clause == "SELECT" {
			return nil, b.errorf(ErrUnsupported, n, "a set-returning function must be a whole select item, not part of an expression")
		}
		return nil, b.errorf(ErrUnsupported, n, "set-returning functions are not allowed in %s", ctx.where())
	}
	if e, ok, err := b.bindRecordField(ctx, n); ok { // bind_pgjdbc.go
		return e, err
	}
	if e, ok, err := b.bindPgFunc(ctx, n); ok {
		return e, err
	}
	if e, ok, err := b.bindClientFunc(ctx, n); ok { // bind_pgclients.go
		return e, err
	}
	if e, ok, err := b.bindSessionFunc(ctx, n, name, n.Args); ok { // bind_session.go
		return e, err
	}
	args := make([]*expr.Expr, 0, len(n.Args))
	bindArgs := func(nodes []ast.ExprNode) error {
		for _, a := range nodes {
			e, err := b.bindExpr(ctx, a)
			if err != nil {
				return err
			}
			args = append(args, e)
		}
		return nil
	}
	switch name {
	case ast.Grouping:
		return b.bindGrouping(ctx, n)
	case ast.DateLiteral, ast.TimestampLiteral:
		// DATE '...' and TIMESTAMP '...': a text literal cast (and checked) now.
		if err := bindArgs(n.Args); err != nil {
			return nil, err
		}
		to := types.TimestampType
		if name == ast.DateLiteral {
			to = types.DateType
		}
		v, err := expr.EvalConst(expr.Cast(args[0], to))
		if err != nil {
			return nil, b.errorf(ErrInvalidValue, n, "%s", err.Error())
		}
		return expr.Literal(v), nil
	case ast.TimeLiteral:
		return nil, b.errorf(ErrUnsupported, n, "type time is not supported")
	case "trim":
		return b.bindTrim(ctx, n)
	case "if":
		if len(n.Args) != 3 {
			break
		}
		if err := bindArgs(n.Args); err != nil {
			return nil, err
		}
		return b.call(n, "case", args...)
	case "position", "locate", "instr":
		if len(n.Args) != 2 {
			break
		}
		if err := bindArgs(n.Args); err != nil {
			return nil, err
		}
		if name != "instr" { // position(sub IN s), locate(sub, s); instr(s, sub)
			args[0], args[1] = args[1], args[0]
		}
		return b.call(n, "strpos", args...)
	case "concat":
		if b.isPipes(n) {
			name = "||"
		}
	case "extract", "date_part", "date_trunc", "to_char", "date_format", "datediff", "date_add", "date_sub", "adddate", "subdate", "now", "current_timestamp", "localtimestamp",
		"current_date", "curdate", "timezone", "to_timestamp",
		"year", "quarter", "month", "week", "day", "dayofmonth", "dayofyear", "hour", "minute", "second":
		if e, ok, err := b.bindDateTime(ctx, n, name); ok || err != nil {
			return e, err
		}
	case "greatest", "least":
		if len(n.Args) == 0 {
			break
		}
		if err := bindArgs(n.Args); err != nil {
			return nil, err
		}
		return b.bindGreatest(n, name, args)
	}
	if err := bindArgs(n.Args); err != nil {
		return nil, err
	}
	if a, ok := funcAliases[name]; ok {
		name = a
	}
	return b.call(n, name, args...)
}

// bindGreatest binds GREATEST and LEAST as PostgreSQL has them: the largest
// (smallest) argument, NULLs ignored, NULL only when all are. Each argument
// is folded in by a CASE over the running result: CASE WHEN r IS NULL THEN a
// WHEN a IS NULL THEN r WHEN a > r THEN a ELSE r END.
func (b *binder) bindGreatest(n ast.Node, name string, args []*expr.Expr) (*expr.Expr, error) {
	args, err := b.adaptLiterals(n, args)
	if err != nil {
		return nil, err
	}
	t := types.NullType
	for _, a := range args {
		at := a.Type
		c, ok := expr.Coerce(t, at)
		if !ok {
			return nil, b.errorf(ErrType, n, "%s types %s and %s cannot be matched", strings.ToUpper(name), t, at)
		}
		t = c
	}
	if t.ID == types.Null {
		t = types.StringType // all NULL: PostgreSQL's text
	}
	for i, a := range args {
		if a.Type != t {
			args[i] = foldExpr(expr.Cast(a, t))
		}
	}
	op := ">"
	if name == "least" {
		op = "<"
	}
	r := args[0]
	for _, a := range args[1:] {
		rNull, err := b.call(n, "is_null", r)
		if err != nil {
			return nil, err
		}
		aNull, err := b.call(n, "is_null", a)
		if err != nil {
			return nil, err
		}
		better, err := b.call(n, op, a, r)
		if err != nil {
			return nil, err
		}
		if r, err = b.call(n, "case", rNull, a, aNull, r, better, a, r); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// isPipes tells a || b from concat(a, b): the parser (PIPES_AS_CONCAT) makes both
// a concat call, but only the function is written starting with its name.
// PostgreSQL's || yields NULL for a NULL operand; concat skips NULLs.
func (b *binder) isPipes(n *ast.FuncCallExpr) bool {
	off := n.OriginTextPosition()
	if off < 0 || off >= len(b.query) {
		return false
	}
	rest := strings.TrimLeft(b.query[off:], " \t\r\n")
	return len(rest) < 6 || !strings.EqualFold(rest[:6], "concat")
}

// bindTrim maps TiDB's TRIM forms: TRIM(s), TRIM(chars FROM s), and
// TRIM(BOTH|LEADING|TRAILING [chars] FROM s).
func (b *binder) bindTrim(ctx *exprCtx, n *ast.FuncCallExpr) (*expr.Expr, error) {
	fn := "trim"
	nodes := n.Args
	if len(nodes) == 3 {
		d, ok := nodes[2].(*ast.TrimDirectionExpr)
		if !ok {
			return nil, b.errorf(ErrUnsupported, n, "this form of TRIM is not supported")
		}
		switch d.Direction {
		case ast.TrimLeading:
			fn = "ltrim"
		case ast.TrimTrailing:
			fn = "rtrim"
		}
		nodes = nodes[:2]
	}
	args := make([]*expr.Expr, len(nodes))
	for i, a := range nodes {
		e, err := b.bindExpr(ctx, a)
		if err != nil {
			return nil, err
		}
		args[i] = e
	}
	return b.call(n, fn, args...)
}

func (b *binder) bindCast(ctx *exprCtx, n *ast.FuncCastExpr) (*expr.Expr, error) {
	if n.FunctionType == ast.CastBinaryOperator {
		return nil, b.errorf(ErrUnsupported, n, "BINARY is not supported")
	}
	arg, err := b.bindExpr(ctx, n.Expr)
	if err != nil {
		return nil, err
	}
	to, err := b.sqlType(n.Tp, n)
	if err != nil {
		return nil, err
	}
	to = b.castTypeFact(n, to) // bind_pgtypes.go
	if !expr.CanCast(arg.Type, to) {
		return nil, b.errorf(ErrType, n, "cannot cast type %s to %s", arg.Type, to)
	}
	if arg.Type == to {
		return arg, nil
	}
	if arg.Type.OID == types.OIDRegclass && to.ID == types.String {
		return b.regclassName(arg), nil // bind_pgtypes.go
	}
	if (arg.Type.OID == types.OIDTimestamptz) != (to.OID == types.OIDTimestamptz) {
		return b.zonedCast(n, arg, to) // bind_timezone.go
	}
	if to.Len > 0 {
		// An explicit cast to a character type of length n cuts what is
		// longer, where an assignment fails (exec/expr's narrowTo).
		if arg, err = b.call(n, "left", expr.Cast(arg, types.StringType), expr.Literal(types.IntValue(int64(to.Len)))); err != nil {
			return nil, err
		}
	}
	return &expr.Expr{Kind: expr.KindCast, Type: to, Args: []*expr.Expr{arg}}, nil
}
