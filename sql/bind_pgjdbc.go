package sql

// What pgjdbc's DatabaseMetaData sends beyond the catalog forms of
// bind_pgfunc.go: the bit operators (getIndexInfo's indoption[k] & 1),
// pg_get_indexdef(index, column, pretty), and
// information_schema._pg_expandarray(a), the set of records (x, n) of a's
// elements and their positions (from 1) that getPrimaryKeys and
// getIndexInfo read as (information_schema._pg_expandarray(i.indkey)).n
// and (keys).x, select items evaluated in lockstep with each other, as
// PostgreSQL evaluates set-returning select items of one length. Hummer has
// no record type: the record is held as its text form, '(1,1)', and the
// dialect layer's record_field((r), 'x') (PostgreSQL's (r).x) reads its
// fields; x is a bigint (pgjdbc expands int2vector and int2[] only).

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

func init() {
	binaryOps[opcode.And], binaryOps[opcode.Or] = "&", "|"
	binaryOps[opcode.LeftShift], binaryOps[opcode.RightShift] = "<<", ">>"
	srfNames["_pg_expandarray"] = true
}

// expandFields are the fields of _pg_expandarray's records, by position.
var expandFields = map[string]int64{"x": 1, "n": 2}

// bindBitOp binds &, |, << and >> over bigints; an element of an array
// held as text (x[i]) is the int2 of an int2vector there.
func (b *binder) bindBitOp(n ast.Node, fn string, l, r *expr.Expr) (*expr.Expr, bool, error) {
	switch fn {
	case "&", "|", "<<", ">>":
	default:
		return nil, false, nil
	}
	for _, x := range []**expr.Expr{&l, &r} {
		if (*x).Kind == expr.KindCall && (*x).Func == "array_get" {
			*x = expr.Cast(*x, types.Int64Type)
		}
	}
	e, err := b.call(n, fn, l, r)
	return e, true, err
}

// bindRecordField binds record_field(r, 'name'), the dialect layer's (r).name.
func (b *binder) bindRecordField(ctx *exprCtx, n *ast.FuncCallExpr) (*expr.Expr, bool, error) {
	if n.FnName.L != "record_field" {
		return nil, false, nil
	}
	k, err := b.recordFieldOf(n)
	if err != nil {
		return nil, true, err
	}
	r, err := b.bindExpr(ctx, n.Args[0])
	if err != nil {
		return nil, true, err
	}
	if r.Type.ID != types.String && r.Type.ID != types.Null {
		return nil, true, b.errorf(ErrType, n, "column notation .%s applied to type %s, which is not a composite type", fieldName(n), r.Type)
	}
	f := expr.Call("$record_field", types.StringType, expr.Cast(r, types.StringType), expr.Literal(types.IntValue(k)))
	return expr.Cast(f, types.Int64Type), true, nil
}

// recordFieldOf returns the position of record_field's field.
func (b *binder) recordFieldOf(n *ast.FuncCallExpr) (int64, error) {
	if len(n.Args) != 2 {
		return 0, b.errorf(ErrUnknownFunction, n, "function record_field takes a record and a field name")
	}
	k, ok := expandFields[fieldName(n)]
	if !ok {
		return 0, b.errorf(ErrUnknownColumn, n, "could not identify column \"%s\" in record data type", fieldName(n))
	}
	return k, nil
}

func fieldName(n *ast.FuncCallExpr) string {
	s, _ := stringLiteral(n.Args[1])
	return s
}

// bindExpandArray binds a select item that is _pg_expandarray(a) (the
// record) or a field of it, as generate_series over a's positions with the
// item's value at each (srfCall.elem); ok is false for other items.
func (b *binder) bindExpandArray(ctx *exprCtx, f *ast.FuncCallExpr) (call *srfCall, e *expr.Expr, ok bool, err error) {
	field := int64(0)
	if f.FnName.L == "record_field" && len(f.Args) == 2 {
		inner := f.Args[0]
		for {
			p, isParen := inner.(*ast.ParenthesesExpr)
			if !isParen {
				break
			}
			inner = p.Expr
		}
		g, isCall := inner.(*ast.FuncCallExpr)
		if !isCall || g.FnName.L != "_pg_expandarray" {
			return nil, nil, false, nil
		}
		if field, err = b.recordFieldOf(f); err != nil {
			return nil, nil, true, err
		}
		f = g
	}
	if f.FnName.L != "_pg_expandarray" {
		return nil, nil, false, nil
	}
	if len(f.Args) != 1 {
		return nil, nil, true, b.errorf(ErrUnknownFunction, f, "function _pg_expandarray takes one array")
	}
	arr, err := b.bindExpr(ctx, f.Args[0])
	if err != nil {
		return nil, nil, true, err
	}
	if !accepts(types.StringType, arr.Type) {
		return nil, nil, true, b.errorf(ErrUnknownFunction, f, "function _pg_expandarray(%s) does not exist", arr.Type)
	}
	arr = expr.Cast(arr, types.StringType)
	hi := expr.Call("$vector_count", types.Int64Type, arr)
	call = &srfCall{fn: "generate_series", extra: []*expr.Expr{hi, expr.Literal(types.IntValue(1))}, array: arr,
		elem: func(a, pos *expr.Expr) *expr.Expr {
			x := expr.Call("$vector_elem", types.StringType, a, pos)
			switch field {
			case 1:
				return expr.Cast(x, types.Int64Type)
			case 2:
				return pos
			}
			text := func(s string) *expr.Expr { return expr.Literal(types.StringValue(s)) }
			cat := func(a, b *expr.Expr) *expr.Expr { return expr.Call("||", types.StringType, a, b) }
			return cat(cat(cat(cat(text("("), x), text(",")), expr.Cast(pos, types.StringType)), text(")"))
		}}
	return call, expr.Literal(types.IntValue(1)), true, nil
}

// element is the value of an array-based set-returning select item at
// position pos (from 1, in order) of array a: the element itself for
// unnest.
func (c *srfCall) element(a, pos *expr.Expr) *expr.Expr {
	if c.elem != nil {
		return c.elem(a, pos)
	}
	return expr.Call("$vector_elem", types.StringType, a, pos)
}

// bindIndexColumnDef binds pg_get_indexdef(index, column, pretty): the
// name of the index's column (from 1), quoted as an identifier needs; for
// column 0, the whole definition.
func (b *binder) bindIndexColumnDef(n *ast.FuncCallExpr, args []*expr.Expr) (*expr.Expr, bool, error) {
	names := map[int64]string{}
	if cat, ok := b.cat.(systemCatalogReader); ok {
		for _, t := range cat.Tables() {
			if len(t.PrimaryKey) == 0 {
				continue
			}
			idx := PrimaryKeyIndexOID(t.OID) * 100 // max_index_keys is 32
			names[idx] = primaryKeyIndexDef(t)
			for k, c := range t.PrimaryKey {
				names[idx+int64(k)+1] = expr.QuoteIdent(c)
			}
		}
	}
	if args[1].Type.ID != types.Int64 && args[1].Type.ID != types.Null {
		return nil, true, b.errorf(ErrType, n, "function pg_get_indexdef(%s, %s) does not exist", args[0].Type, args[1].Type)
	}
	if args[0].Type.ID != types.Int64 && args[0].Type.ID != types.Null {
		return nil, true, b.errorf(ErrType, n, "function pg_get_indexdef(%s, %s) does not exist", args[0].Type, args[1].Type)
	}
	key, err := b.call(n, "*", expr.Cast(args[0], types.Int64Type), expr.Literal(types.IntValue(100)))
	if err != nil {
		return nil, true, err
	}
	if key, err = b.call(n, "+", key, expr.Cast(args[1], types.Int64Type)); err != nil {
		return nil, true, err
	}
	return b.oidNames(n, key, names, "")
}

// primaryKeyIndexDef is pg_get_indexdef of t's primary key index, names
// quoted where PostgreSQL quotes them ("Users_pkey" ON public."Users").
func primaryKeyIndexDef(t *Table) string {
	return "CREATE UNIQUE INDEX " + expr.QuoteIdent(t.Name+"_pkey") + " ON public." + expr.QuoteIdent(t.Name) +
		" USING btree (" + quoteIdents(t.PrimaryKey) + ")"
}

// quoteIdents is names quoted as identifiers where they need it, joined by ", ".
func quoteIdents(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = expr.QuoteIdent(n)
	}
	return strings.Join(q, ", ")
}
