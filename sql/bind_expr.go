package sql

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/format"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	"github.com/pingcap/tidb/pkg/parser/test_driver"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// kindAggRef marks, while a SELECT with aggregates is bound, a reference to
// aggregate call Col of the aggState. It never leaves the binder: toAggSpace
// replaces it with a column of the Aggregate node.
const kindAggRef expr.Kind = "sql.aggref"

// exprCtx is where an expression is being bound.
type exprCtx struct {
	scope  *scope
	clause string    // for messages: "WHERE", "JOIN conditions", ...
	aggs   *aggState // collects aggregate calls; nil where they are not allowed
	inAgg  bool      // binding an aggregate's argument
	// subs collects the clause's subqueries (bind_subquery.go); nil where
	// they are not allowed.
	subs *subqueries
	// preSubs, in a query that aggregates, collects the subqueries of
	// aggregates' arguments, joined to the aggregation's input.
	preSubs *subqueries
	// wins collects window calls (bind_window.go), nil where they are not
	// allowed; inWindow: binding a window call's arguments or window.
	wins     *winState
	inWindow bool
	// conjuncts are the top-level conjuncts of a WHERE (topConjuncts), where
	// NULL and FALSE both drop the row; nil elsewhere.
	conjuncts map[ast.ExprNode]bool
	// strictSub is the scalar subquery being bound as an operand of a
	// comparison that is one of conjuncts: a NULL value of it drops the row.
	strictSub *ast.SubqueryExpr
}

// bindExpr binds one expression: names become column positions of ctx.scope,
// operators and functions are resolved with expr.Resolve and their arguments
// cast to the types it asks for.
func (b *binder) bindExpr(ctx *exprCtx, n ast.ExprNode) (*expr.Expr, error) {
	// Binding recurses once per level of nesting; past maxExprDepth levels
	// (that a chain of AND or OR does not take: bindLogic flattens it) the
	// statement is refused, as PostgreSQL refuses one past max_stack_depth,
	// rather than planned for minutes and megabytes.
	b.depth++
	defer func() { b.depth-- }()
	if b.depth > maxExprDepth {
		return nil, b.errorf(ErrTooDeep, n, "stack depth limit exceeded: expressions nest more than %d levels deep", maxExprDepth)
	}
	switch n := n.(type) {
	case *ast.ParenthesesExpr:
		return b.bindExpr(ctx, n.Expr)
	case *ast.ColumnNameExpr:
		return b.bindColumn(ctx, n)
	case *test_driver.ParamMarkerExpr:
		return b.param(b.markerParam(n)), nil
	case *test_driver.ValueExpr:
		v, err := b.literal(n)
		if err != nil {
			return nil, err
		}
		return expr.Literal(v), nil
	case *ast.BinaryOperationExpr:
		return b.bindBinary(ctx, n)
	case *ast.UnaryOperationExpr:
		arg, err := b.bindExpr(ctx, n.V)
		if err != nil {
			return nil, err
		}
		switch n.Op {
		case opcode.Plus:
			return arg, nil
		case opcode.Minus:
			if arg.Type.OID == types.OIDInterval { // interval_um
				return b.call(n, "$interval_mul", arg, expr.Literal(types.Value{Type: types.Float64Type, Float: -1}))
			}
			if arg.Kind == expr.KindLiteral && arg.Type == types.Int64Type && !arg.Value.Null && arg.Value.Int == -math.MinInt32 {
				// -2147483648 is an integer constant in PostgreSQL, whose
				// lexer reads the sign with the digits.
				return expr.Literal(types.Value{Type: types.Int4Type, Int: math.MinInt32}), nil
			}
			return b.call(n, "neg", arg)
		case opcode.Not, opcode.Not2:
			return b.call(n, "not", arg)
		}
		return nil, b.errorf(ErrUnsupported, n, "operator %s is not supported", n.Op)
	case *ast.IsNullExpr:
		arg, err := b.bindExpr(ctx, n.Expr)
		if err != nil {
			return nil, err
		}
		if n.Not {
			return b.call(n, "is_not_null", arg)
		}
		return b.call(n, "is_null", arg)
	case *ast.IsTruthExpr:
		arg, err := b.bindExpr(ctx, n.Expr)
		if err != nil {
			return nil, err
		}
		fn := "is_false"
		if n.True != 0 {
			fn = "is_true"
		}
		if n.Not {
			fn = strings.Replace(fn, "is_", "is_not_", 1)
		}
		return b.call(n, fn, arg)
	case *ast.PatternLikeOrIlikeExpr:
		return b.bindLike(ctx, n)
	case *ast.PatternInExpr:
		return b.bindIn(ctx, n)
	case *ast.BetweenExpr:
		return b.bindBetween(ctx, n)
	case *ast.CaseExpr:
		return b.bindCase(ctx, n)
	case *ast.FuncCallExpr:
		return b.bindFunc(ctx, n)
	case *ast.AggregateFuncExpr:
		return b.bindAggregate(ctx, n)
	case *ast.FuncCastExpr:
		return b.bindCast(ctx, n)
	case *ast.WindowFuncExpr:
		return b.bindWindow(ctx, n)
	case *ast.SubqueryExpr:
		return b.bindScalarSubquery(ctx, n)
	case *ast.ExistsSubqueryExpr:
		return b.bindExists(ctx, n)
	case *ast.CompareSubqueryExpr:
		return b.bindCompareSubquery(ctx, n)
	case *ast.RowExpr:
		return nil, b.errorf(ErrUnsupported, n, "row expressions are not supported")
	case *ast.VariableExpr:
		return nil, b.errorf(ErrUnsupported, n, "variables in expressions are not supported")
	case *ast.DefaultExpr:
		return nil, b.errorf(ErrUnsupported, n, "DEFAULT is not supported here")
	case *ast.PatternRegexpExpr:
		return b.bindRegexp(ctx, n)
	}
	return nil, b.errorf(ErrUnsupported, n, "expression %s is not supported", exprText(n))
}

// exprText restores an AST expression as SQL, for messages.
func exprText(n ast.Node) string {
	var sb strings.Builder
	if err := n.Restore(format.NewRestoreCtx(format.DefaultRestoreFlags, &sb)); err == nil {
		return sb.String()
	}
	return fmt.Sprintf("%T", n)
}

// bindColumn resolves a column name, or a $n parameter (PostgreSQL clients send
// $1; the MySQL dialect reads it as an identifier).
func (b *binder) bindColumn(ctx *exprCtx, n *ast.ColumnNameExpr) (*expr.Expr, error) {
	cn := n.Name
	if k, ok := paramNumber(cn); ok {
		return b.param(k), nil
	}
	table, name := cn.Table.O, cn.Name.O
	sc := ctx.scope
	if sc == nil {
		sc = &scope{}
	}
	found := sc.lookup(table, name)
	if len(found) == 0 {
		// The nearest enclosing query that has the column: the immediate one
		// would have made this subquery correlated if it could be; one further
		// out makes the subquery between them correlated too (needOuter).
		for i := len(b.outer) - 1; i >= 0; i-- {
			outer := b.outer[i]
			if outer == nil {
				continue
			}
			if at := outer.lookup(table, name); len(at) > 0 {
				ref := cn.Name.O
				if cn.Table.O != "" {
					ref = cn.Table.O + "." + ref
				}
				err := b.errorf(ErrUnsupported, n, "correlated subqueries are not supported yet: %s refers to a column of an enclosing query", ref)
				if i < len(b.outer)-1 && len(at) == 1 {
					return nil, &needOuter{err: err, scope: outer, col: outer.cols[at[0]]}
				}
				return nil, err
			}
		}
	}
	if name == "tableoid" && len(found) == 0 {
		if oid, ok := sc.tableOID(table); ok {
			return expr.Literal(types.IntValue(oid)), nil
		}
	}
	if fn, ok := sessionWords[name]; ok && len(found) == 0 && table == "" && !b.quoted(n) {
		e, _, err := b.bindSessionFunc(ctx, n, fn, nil) // user, current_schema, ...: bind_session.go
		return e, err
	}
	switch {
	case len(found) == 0 && table != "" && !sc.hasTable(table):
		return nil, b.errorf(ErrUnknownTable, n, "missing FROM-clause entry for table \"%s\"", table)
	case len(found) == 0 && table != "":
		return nil, sc.hintColumn(b.errorf(ErrUnknownColumn, n, "column %s.%s does not exist", table, name), table, name)
	case len(found) == 0:
		return nil, sc.hintColumn(b.errorf(ErrUnknownColumn, n, "column \"%s\" does not exist", name), table, name)
	case len(found) > 1:
		ref := name
		if table != "" {
			ref = table + "." + name
		}
		return nil, b.errorf(ErrAmbiguousColumn, n, "column reference \"%s\" is ambiguous", ref)
	}
	c := sc.cols[found[0]]
	e := expr.Column(c.idx, c.typ, c.name)
	b.refs[e] = colRef{pos: b.pos(n), name: c.qualified()}
	return e, nil
}

// paramNumber recognises $n.
func paramNumber(cn *ast.ColumnName) (int, bool) {
	if cn.Table.O != "" || !strings.HasPrefix(cn.Name.O, "$") {
		return 0, false
	}
	k, err := strconv.Atoi(cn.Name.O[1:])
	return k, err == nil && k >= 1
}

// literal converts a parsed constant to a typed value: integers are integer
// (int4) when they fit it, as in PostgreSQL, else bigint;
// decimal literals (1.5) decimal as PostgreSQL's numeric, 1e3 double, quoted
// strings text, TRUE/FALSE boolean, NULL the null type.
func (b *binder) literal(n *test_driver.ValueExpr) (types.Value, error) {
	switch n.Kind() {
	case test_driver.KindNull:
		return types.NullValue(types.NullType), nil
	case test_driver.KindInt64:
		if n.GetType().GetFlag()&mysql.IsBooleanFlag != 0 {
			return types.BoolValue(n.GetInt64() != 0), nil
		}
		if v := n.GetInt64(); v >= math.MinInt32 && v <= math.MaxInt32 {
			return types.Value{Type: types.Int4Type, Int: v}, nil // PostgreSQL's integer
		}
		return types.IntValue(n.GetInt64()), nil
	case test_driver.KindUint64:
		return types.DecimalValue(types.DecimalType(20, 0), decimal128.FromU64(n.GetUint64())), nil
	case test_driver.KindFloat32, test_driver.KindFloat64:
		return types.FloatValue(n.GetFloat64()), nil
	case test_driver.KindString, test_driver.KindBytes:
		return types.StringValue(n.GetString()), nil
	case test_driver.KindMysqlDecimal:
		return decimalLiteral(n.GetMysqlDecimal().String())
	}
	return types.Value{}, b.errorf(ErrUnsupported, n, "literal %s is not supported", exprText(n))
}

// decimalLiteral types 12.50 as decimal(4,2): as many digits as written. Beyond
// 38 digits it falls back to double, which is what the literal can still mean.
func decimalLiteral(s string) (types.Value, error) {
	intPart, frac, _ := strings.Cut(strings.TrimPrefix(s, "-"), ".")
	scale := len(frac)
	prec := max(len(strings.TrimLeft(intPart, "0"))+scale, 1)
	if prec > 38 {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return types.Value{}, Errorf(ErrInvalidValue, 0, "invalid number %s", s)
		}
		return types.FloatValue(f), nil
	}
	t := types.DecimalType(prec, scale)
	num, err := decimal128.FromString(s, int32(prec), int32(scale))
	if err != nil {
		return types.Value{}, Errorf(ErrInvalidValue, 0, "invalid number %s", s)
	}
	return types.DecimalValue(t, num), nil
}

// call resolves fn over args, casting each argument to the type Resolve wants.
// node positions the error if the call does not type-check.
func (b *binder) call(node ast.Node, fn string, args ...*expr.Expr) (*expr.Expr, error) {
	fn = heldFunc(fn, args) // bind_pgtypes.go
	ts := make([]types.Type, len(args))
	for i, a := range args {
		ts[i] = a.Type
	}
	sig, err := expr.Resolve(fn, ts)
	if err != nil {
		return nil, b.resolveError(node, fn, err)
	}
	cast := make([]*expr.Expr, len(args))
	zoned := !strings.HasPrefix(fn, "$") && b.timeZone() != "" // bind_timezone.go
	for i, a := range args {
		cast[i] = expr.Cast(a, sig.Args[i])
		if zoned && (a.Type.OID == types.OIDTimestamptz) != (sig.Args[i].OID == types.OIDTimestamptz) {
			// ts = '2024-07-01 12:00', ts > TIMESTAMP '...': read in the
			// session's zone, as PostgreSQL's implicit casts do.
			if cast[i], err = b.zonedCast(node, a, sig.Args[i]); err != nil {
				return nil, err
			}
		}
		if (a.Type.OID == types.OIDBytea || a.Type.Narrow()) && a.Type.Base() == sig.Args[i] {
			// bytea: its bytes, not its text (bind_pgtypes.go); an integer or
			// a character varying: its values as they are.
			cast[i] = a
		}
	}
	if t, ok := arithType(fn, args, sig.Result); ok { // bind_pgtypes.go
		return expr.Cast(expr.Call(fn, sig.Result.Base(), cast...), t), nil
	}
	return expr.Call(fn, sig.Result, cast...), nil
}

// resolveError classifies a Resolve failure as PostgreSQL does: a boolean
// operator or CASE/COALESCE given the wrong types is a datatype mismatch (42804),
// any other call that does not exist for its argument types is an undefined
// function (42883: "operator does not exist: text + bigint").
func (b *binder) resolveError(node ast.Node, fn string, err error) *Error {
	kind := ErrUnknownFunction
	if errors.Is(err, expr.ErrArgumentType) {
		switch fn {
		case "and", "or", "not", "is_true", "is_false", "is_not_true", "is_not_false", "case", "coalesce":
			kind = ErrType
		}
	}
	return b.errorf(kind, node, "%s", err.Error())
}

var binaryOps = map[opcode.Op]string{
	opcode.LogicAnd: "and", opcode.LogicOr: "or",
	opcode.EQ: "=", opcode.NE: "<>", opcode.LT: "<", opcode.LE: "<=", opcode.GT: ">", opcode.GE: ">=",
	opcode.Plus: "+", opcode.Minus: "-", opcode.Mul: "*", opcode.Div: "/", opcode.Mod: "%",
	// ^ is PostgreSQL's exponentiation (MySQL's exclusive or): both bind it
	// tighter than * and to the left, so the parsed tree is PostgreSQL's.
	opcode.Xor: "power",
}

func isComparison(fn string) bool {
	switch fn {
	case "=", "<>", "<", "<=", ">", ">=":
		return true
	}
	return false
}

// maxExprDepth bounds the nesting of an expression (bindExpr).
const maxExprDepth = 1000

// logicTerms returns the terms of the chain of op (AND or OR) that n heads,
// left to right, without recursion: a WHERE of 70,000 ORs is one n-ary OR,
// not a tree that deep. Parentheses around a term of the same op are looked
// through, as they change nothing.
func logicTerms(n *ast.BinaryOperationExpr) []ast.ExprNode {
	var terms []ast.ExprNode
	stack := []ast.ExprNode{n}
	for len(stack) > 0 {
		e := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		inner := e
		for {
			p, ok := inner.(*ast.ParenthesesExpr)
			if !ok {
				break
			}
			inner = p.Expr
		}
		if b, ok := inner.(*ast.BinaryOperationExpr); ok && b.Op == n.Op {
			stack = append(stack, b.R, b.L) // L is taken first
			continue
		}
		terms = append(terms, e)
	}
	return terms
}

func (b *binder) bindBinary(ctx *exprCtx, n *ast.BinaryOperationExpr) (*expr.Expr, error) {
	if n.Op == opcode.NullEQ {
		return b.bindNullEQ(ctx, n)
	}
	fn, ok := binaryOps[n.Op]
	if !ok {
		return nil, b.errorf(ErrUnsupported, n, "operator %s is not supported", n.Op)
	}
	if n.Op == opcode.LogicAnd || n.Op == opcode.LogicOr {
		terms := logicTerms(n)
		args := make([]*expr.Expr, len(terms))
		for i, t := range terms {
			a, err := b.bindExpr(ctx, t)
			if err != nil {
				return nil, err
			}
			args[i] = a
		}
		if fn == "or" {
			var err error
			if args, err = b.orToIn(n, args); err != nil {
				return nil, err
			}
			if len(args) == 1 {
				return args[0], nil
			}
			return b.factorOr(n, args)
		}
		return b.call(n, fn, args...)
	}
	strict := isComparison(fn) && ctx.conjuncts[n]
	l, err := b.bindOperand(ctx, n.L, strict)
	if err != nil {
		return nil, err
	}
	r, err := b.bindOperand(ctx, n.R, strict)
	if err != nil {
		return nil, err
	}
	if isComparison(fn) {
		l, r = arrayElementTyped(l, r), arrayElementTyped(r, l)
		l, r = regtypeCompared(l, r), regtypeCompared(r, l) // bind_pgclients.go
		args, err := b.adaptLiterals(n, []*expr.Expr{l, r})
		if err != nil {
			return nil, err
		}
		l, r = args[0], args[1]
	}
	if e, ok, err := b.intervalOps(n, fn, l, r); ok { // bind_interval.go
		return e, err
	}
	if e, ok, err := b.intervalArith(n, fn, l, r); ok { // bind_pgtypes.go
		return e, err
	}
	if e, ok, err := b.dateArith(n, fn, l, r); ok {
		return e, err
	}
	if e, ok, err := b.bindBitOp(n, fn, l, r); ok { // bind_pgjdbc.go
		return e, err
	}
	return b.call(n, fn, l, r)
}

// bindOperand binds an operand of a binary operator; strict: the operator is
// a comparison that drops the row when it is NULL, which a scalar subquery
// as the operand may use (ctx.strictSub).
func (b *binder) bindOperand(ctx *exprCtx, n ast.ExprNode, strict bool) (*expr.Expr, error) {
	saved := ctx.strictSub
	defer func() { ctx.strictSub = saved }()
	ctx.strictSub = nil
	if sq, ok := subqueryOf(n); ok && strict {
		ctx.strictSub = sq
	}
	return b.bindExpr(ctx, n)
}

// bindNullEQ binds a <=> b (IS NOT DISTINCT FROM, through the dialect layer):
// true when both are NULL or both equal, never NULL: coalesce(a = b, a IS NULL
// AND b IS NULL).
func (b *binder) bindNullEQ(ctx *exprCtx, n *ast.BinaryOperationExpr) (*expr.Expr, error) {
	l, err := b.bindExpr(ctx, n.L)
	if err != nil {
		return nil, err
	}
	r, err := b.bindExpr(ctx, n.R)
	if err != nil {
		return nil, err
	}
	args, err := b.adaptLiterals(n, []*expr.Expr{l, r})
	if err != nil {
		return nil, err
	}
	l, r = args[0], args[1]
	eq, err := b.call(n, "=", l, r)
	if err != nil {
		return nil, err
	}
	ln, err := b.call(n, "is_null", l)
	if err != nil {
		return nil, err
	}
	rn, err := b.call(n, "is_null", r)
	if err != nil {
		return nil, err
	}
	both, err := b.call(n, "and", ln, rn)
	if err != nil {
		return nil, err
	}
	return b.call(n, "coalesce", eq, both)
}

// factorOr binds the OR of terms, taking out the conjuncts every term has:
// (a AND x) OR (a AND y) is a AND (x OR y), under SQL's three-valued logic as
// under two (AND and OR distribute over each other). A join condition written
// in every term (TPC-H's q19: p_partkey = l_partkey in each) then reaches the
// planner as a join key instead of hiding inside an OR over a cross join.
func (b *binder) factorOr(node ast.Node, terms []*expr.Expr) (*expr.Expr, error) {
	split := make([][]*expr.Expr, len(terms))
	for i, t := range terms {
		split[i] = conjuncts(t)
	}
	var common []*expr.Expr
	for _, c := range split[0] {
		inAll := true
		for _, cs := range split[1:] {
			inAll = inAll && slices.ContainsFunc(cs, func(e *expr.Expr) bool { return sameConjunct(c, e) })
		}
		if inAll && !slices.ContainsFunc(common, func(e *expr.Expr) bool { return sameConjunct(c, e) }) {
			common = append(common, c)
		}
	}
	if len(common) == 0 {
		return b.call(node, "or", terms...)
	}
	rest := make([]*expr.Expr, 0, len(terms))
	for _, cs := range split {
		var left []*expr.Expr
		for _, c := range cs {
			if !slices.ContainsFunc(common, func(e *expr.Expr) bool { return sameConjunct(c, e) }) {
				left = append(left, c)
			}
		}
		if len(left) == 0 {
			return and(common...), nil // a term that is only common conjuncts: the OR is true
		}
		rest = append(rest, and(left...))
	}
	or, err := b.call(node, "or", rest...)
	if err != nil {
		return nil, err
	}
	return and(append(common, or)...), nil
}

// sameConjunct is sameExpr, also for an equality written the other way round.
func sameConjunct(a, b *expr.Expr) bool {
	if sameExpr(a, b) {
		return true
	}
	return a.Kind == expr.KindCall && b.Kind == expr.KindCall && a.Func == "=" && b.Func == "=" &&
		len(a.Args) == 2 && len(b.Args) == 2 && sameExpr(a.Args[0], b.Args[1]) && sameExpr(a.Args[1], b.Args[0])
}

// orToIn turns the terms of an OR that compare one column with a literal of
// its type by = (c = 1 OR c = 2 OR ...) into one IN list, which is the same
// under SQL's three-valued logic and is evaluated once per row instead of once
// per term. The IN list stands where its first term stood.
func (b *binder) orToIn(node ast.Node, terms []*expr.Expr) ([]*expr.Expr, error) {
	colEqLit := func(e *expr.Expr) (col, lit *expr.Expr, ok bool) {
		if e.Kind != expr.KindCall || e.Func != "=" || len(e.Args) != 2 {
			return nil, nil, false
		}
		l, r := e.Args[0], e.Args[1]
		if l.Kind == expr.KindLiteral {
			l, r = r, l
		}
		if l.Kind != expr.KindColumn || r.Kind != expr.KindLiteral || l.Type != r.Type {
			return nil, nil, false
		}
		return l, r, true
	}
	type group struct {
		first int // index in terms
		col   *expr.Expr
		lits  []*expr.Expr
	}
	type column struct {
		col int
		t   types.Type
	}
	groups := map[column]*group{}
	of := make([]*group, len(terms)) // each term's group, nil for other terms
	for i, t := range terms {
		col, lit, ok := colEqLit(t)
		if !ok {
			continue
		}
		k := column{col.Col, col.Type}
		g := groups[k]
		if g == nil {
			g = &group{first: i, col: col}
			groups[k] = g
		}
		g.lits = append(g.lits, lit)
		of[i] = g
	}
	out := make([]*expr.Expr, 0, len(terms))
	for i, t := range terms {
		switch g := of[i]; {
		case g == nil || len(g.lits) < 2:
			out = append(out, t)
		case g.first == i:
			e, err := b.call(node, "in", append([]*expr.Expr{g.col}, g.lits...)...)
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		}
	}
	return out, nil
}

// adaptLiterals gives string literals compared with values of another type that
// type, as PostgreSQL types a quoted literal ('5', '2024-01-01') from its context:
// bigint_col = '5' compares numbers. A literal that does not convert is an error
// here, at bind time, rather than on every row.
func (b *binder) adaptLiterals(node ast.Node, args []*expr.Expr) ([]*expr.Expr, error) {
	target := types.NullType
	for _, a := range args {
		if isStringLiteral(a) {
			continue
		}
		t, ok := expr.Coerce(target, a.Type)
		if !ok {
			return args, nil // Resolve reports the mismatch
		}
		target = t
	}
	if target.ID == types.Null || target.ID == types.String || !expr.CanCast(types.StringType, target) {
		return args, nil
	}
	out := make([]*expr.Expr, len(args))
	for i, a := range args {
		out[i] = a
		if !isStringLiteral(a) || a.Value.Null {
			continue
		}
		c, err := b.zonedCast(node, a, target) // bind_timezone.go
		if err != nil {
			return nil, err
		}
		v, err := expr.EvalConst(c)
		if err != nil {
			return nil, b.errorf(ErrInvalidValue, node, "%s", err.Error())
		}
		out[i] = expr.Literal(v)
	}
	return out, nil
}

func isStringLiteral(e *expr.Expr) bool {
	return e.Kind == expr.KindLiteral && e.Type.ID == types.String
}

func (b *binder) bindLike(ctx *exprCtx, n *ast.PatternLikeOrIlikeExpr) (*expr.Expr, error) {
	s, err := b.bindExpr(ctx, n.Expr)
	if err != nil {
		return nil, err
	}
	p, err := b.bindExpr(ctx, n.Pattern)
	if err != nil {
		return nil, err
	}
	esc := "\\"
	if n.Escape != 0 {
		esc = string(rune(n.Escape))
	}
	fn := "like"
	if !n.IsLike {
		fn = "ilike"
	}
	e, err := b.call(n, fn, s, p, expr.Literal(types.StringValue(esc)))
	if err != nil || !n.Not {
		return e, err
	}
	return b.call(n, "not", e)
}

func (b *binder) bindIn(ctx *exprCtx, n *ast.PatternInExpr) (*expr.Expr, error) {
	if n.Sel != nil {
		return b.bindInSubquery(ctx, n)
	}
	args := make([]*expr.Expr, 0, len(n.List)+1)
	for _, a := range append([]ast.ExprNode{n.Expr}, n.List...) {
		e, err := b.bindExpr(ctx, a)
		if err != nil {
			return nil, err
		}
		args = append(args, e)
	}
	args, err := b.adaptLiterals(n, args)
	if err != nil {
		return nil, err
	}
	e, err := b.call(n, "in", args...)
	if err != nil || !n.Not {
		return e, err
	}
	return b.call(n, "not", e)
}

// bindBetween rewrites x BETWEEN a AND b into x >= a AND x <= b.
func (b *binder) bindBetween(ctx *exprCtx, n *ast.BetweenExpr) (*expr.Expr, error) {
	var args [3]*expr.Expr
	for i, a := range []ast.ExprNode{n.Expr, n.Left, n.Right} {
		e, err := b.bindExpr(ctx, a)
		if err != nil {
			return nil, err
		}
		args[i] = e
	}
	lo, err := b.compare(n, ">=", args[0], args[1])
	if err != nil {
		return nil, err
	}
	hi, err := b.compare(n, "<=", args[0], args[2])
	if err != nil {
		return nil, err
	}
	e, err := b.call(n, "and", lo, hi)
	if err != nil || !n.Not {
		return e, err
	}
	return b.call(n, "not", e)
}

// compare builds a comparison of two bound expressions.
func (b *binder) compare(node ast.Node, fn string, l, r *expr.Expr) (*expr.Expr, error) {
	l, r = arrayElementTyped(l, r), arrayElementTyped(r, l)
	args, err := b.adaptLiterals(node, []*expr.Expr{l, r})
	if err != nil {
		return nil, err
	}
	return b.call(node, fn, args[0], args[1])
}

// bindCase builds the searched form case(when1, then1, ..., else); a simple CASE
// x WHEN v compares with "=", and a missing ELSE is NULL.
func (b *binder) bindCase(ctx *exprCtx, n *ast.CaseExpr) (*expr.Expr, error) {
	var value *expr.Expr
	if n.Value != nil {
		v, err := b.bindExpr(ctx, n.Value)
		if err != nil {
			return nil, err
		}
		value = v
	}
	var args []*expr.Expr
	for _, w := range n.WhenClauses {
		cond, err := b.bindExpr(ctx, w.Expr)
		if err != nil {
			return nil, err
		}
		if value != nil {
			if cond, err = b.compare(w.Expr, "=", value, cond); err != nil {
				return nil, err
			}
		}
		then, err := b.bindExpr(ctx, w.Result)
		if err != nil {
			return nil, err
		}
		args = append(args, cond, then)
	}
	els := expr.Literal(types.NullValue(types.NullType))
	if n.ElseClause != nil {
		e, err := b.bindExpr(ctx, n.ElseClause)
		if err != nil {
			return nil, err
		}
		els = e
	}
	return b.call(n, "case", append(args, els)...)
}

// where names ctx's clause for messages.
func (ctx *exprCtx) where() string {
	if ctx.clause == "" {
		return "this context"
	}
	return ctx.clause
}

// boolean checks that a WHERE, HAVING or ON condition is boolean (an untyped
// NULL becomes a boolean NULL).
func (b *binder) boolean(e *expr.Expr, clause string, node ast.Node) (*expr.Expr, error) {
	switch e.Type.ID {
	case types.Bool:
		return e, nil
	case types.Null:
		return expr.Cast(e, types.BoolType), nil
	}
	return nil, b.errorf(ErrType, node, "argument of %s must be type boolean, not type %s", clause, e.Type)
}
