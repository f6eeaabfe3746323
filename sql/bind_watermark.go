package sql

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// Watermark is a table's watermark clause, WATERMARK FOR Column AS Expr: a
// source of the table says event time has reached the largest value of Expr
// over the rows it has read, so rows whose Column is older than that are late.
// Expr is over the table's columns (positions in Table.Columns), of Column's
// type; Delay is Column - Expr when Expr is Column minus a constant interval
// (the usual bounded out-of-orderness), for EXPLAIN and SHOW; -1 otherwise.
type Watermark struct {
	Column string     `json:"column"`
	Expr   *expr.Expr `json:"expr"`
	Delay  int64      `json:"delay_us"`
}

// bindWatermark binds the CHECK constraint a watermark clause is given to the
// parser as (dialect_watermark.go) into t's watermark.
func (b *binder) bindWatermark(t *Table, k *ast.Constraint) error {
	name := strings.ToLower(strings.TrimPrefix(k.Name, watermarkConstraint))
	switch {
	case t.Watermark != nil:
		return b.errorf(ErrInvalidValue, k.Expr, "multiple watermarks for table \"%s\" are not allowed", t.Name)
	case columnIndex(t.Columns, name) < 0:
		return Errorf(ErrUnknownColumn, b.identPos(name, "for"), "column \"%s\" of the watermark does not exist", name)
	}
	col := t.Columns[columnIndex(t.Columns, name)]
	if col.Type.ID != types.Timestamp {
		return Errorf(ErrType, b.identPos(name, "for"), "the watermark's column \"%s\" is of type %s: it must be a timestamp", name, col.Type)
	}
	sc := &scope{}
	for i, c := range t.Columns {
		sc.cols = append(sc.cols, column{name: c.Name, typ: c.Type, idx: i})
	}
	e, err := b.bindExpr(&exprCtx{scope: sc, clause: "WATERMARK"}, k.Expr)
	if err != nil {
		return err
	}
	if e.Type.ID != types.Timestamp {
		return b.errorf(ErrType, k.Expr, "a watermark expression must be a timestamp, not %s", e.Type)
	}
	e = foldExpr(e)
	t.Watermark = &Watermark{Column: name, Expr: e, Delay: watermarkDelay(e, columnIndex(t.Columns, name))}
	return nil
}

// watermarkDelay returns d when e is column col minus the constant interval d
// (in microseconds), or col itself (0); -1 for any other expression.
func watermarkDelay(e *expr.Expr, col int) int64 {
	// A timestamptz column's arithmetic is its timestamp's, cast back.
	unwrap := func(e *expr.Expr) *expr.Expr {
		if e.Kind == expr.KindCast && e.Type.ID == types.Timestamp && e.Args[0].Type.ID == types.Timestamp {
			return e.Args[0]
		}
		return e
	}
	e = unwrap(e)
	if e.Kind == expr.KindCall && len(e.Args) == 2 {
		e = &expr.Expr{Kind: e.Kind, Type: e.Type, Func: e.Func, Args: []*expr.Expr{unwrap(e.Args[0]), e.Args[1]}}
	}
	if e.Kind == expr.KindColumn && e.Col == col {
		return 0
	}
	// col - INTERVAL 'n' unit binds as $add_micros(col, -n µs).
	if e.Kind == expr.KindCall && e.Func == "$add_micros" && len(e.Args) == 2 &&
		e.Args[0].Kind == expr.KindColumn && e.Args[0].Col == col && e.Args[1].Kind == expr.KindLiteral && !e.Args[1].Value.Null {
		return -e.Args[1].Value.Int
	}
	return -1
}
