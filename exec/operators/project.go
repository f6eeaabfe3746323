package operators

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/vector"
)

// projectOp is kind "project" (see ProjectConfig): one output column per
// expression, evaluated over the whole batch. A bare column reference shares
// the input's array (Retain) instead of copying it. An expression that holds
// an earlier one (TPC-H q1's sum_charge, sum_disc_price * (1 + l_tax)) reads
// that one's output instead of computing it again. Change kinds pass through.
type projectOp struct {
	exprs []*expr.Expr
	out   *arrow.Schema
	mem   memory.Allocator
	// run[i] is exprs[i] with each subtree that is an earlier expression j
	// made a reference to column nIn+j of a record of the input's nIn
	// columns and the outputs before i, of schema ext[i] (nil: run[i] reads
	// the input alone). Made at the first batch.
	run []*expr.Expr
	ext []*arrow.Schema
	nIn int
}

var _ exec.Operator = (*projectOp)(nil)

func newProjectOp(spec exec.OperatorSpec) (exec.Operator, error) {
	var cfg ProjectConfig
	if err := json.Unmarshal(spec.Config, &cfg); err != nil {
		return nil, fmt.Errorf("project: bad config: %w", err)
	}
	if len(spec.Out) != len(cfg.Exprs) {
		return nil, fmt.Errorf("project: %d expressions for %d output columns", len(cfg.Exprs), len(spec.Out))
	}
	for i, e := range cfg.Exprs {
		if e == nil {
			return nil, fmt.Errorf("project: expression %d missing", i)
		}
	}
	return &projectOp{exprs: cfg.Exprs, out: spec.Out.Arrow()}, nil
}

func (o *projectOp) Open(ctx context.Context, tc *exec.TaskContext) error {
	o.mem = vector.TaskAlloc(tc)
	return nil
}

func (o *projectOp) ProcessBatch(ctx context.Context, input int, b exec.Batch, out exec.Collector) error {
	n := b.NumRows()
	if n == 0 {
		return nil
	}
	if o.run == nil || o.nIn != int(b.Rec.NumCols()) {
		o.prepare(b.Rec.Schema())
	}
	cols := make([]arrow.Array, 0, len(o.exprs))
	for i, e := range o.run {
		src := b.Rec
		if o.ext[i] != nil {
			ext, err := o.extend(b.Rec, cols, i)
			if err != nil {
				vector.ReleaseArrays(cols)
				return err
			}
			defer ext.Release()
			src = ext
		}
		if e.Kind == expr.KindColumn {
			if e.Col < 0 || e.Col >= int(src.NumCols()) {
				vector.ReleaseArrays(cols)
				return fmt.Errorf("project: column %d out of range (%d columns)", e.Col, b.Rec.NumCols())
			}
			c := src.Column(e.Col)
			c.Retain()
			cols = append(cols, c)
			continue
		}
		c, err := expr.Eval(e, src, o.mem)
		if err != nil {
			vector.ReleaseArrays(cols)
			return fmt.Errorf("project: %s: %w", o.exprs[i], err)
		}
		cols = append(cols, c)
	}
	rec, err := vector.MakeRecord(o.out, cols, n)
	if err != nil {
		return fmt.Errorf("project: %w", err)
	}
	defer rec.Release()
	return out.Collect(ctx, exec.Batch{Rec: rec, Ops: b.Ops})
}

// prepare makes run and ext for input of schema in.
func (o *projectOp) prepare(in *arrow.Schema) {
	o.nIn = in.NumFields()
	o.run = make([]*expr.Expr, len(o.exprs))
	o.ext = make([]*arrow.Schema, len(o.exprs))
	for i, e := range o.exprs {
		reuses := false
		o.run[i] = o.reuse(e, i, &reuses)
		if reuses {
			fields := append(append([]arrow.Field(nil), in.Fields()...), o.out.Fields()[:i]...)
			o.ext[i] = arrow.NewSchema(fields, nil)
		}
	}
}

// reuse returns e, of expression i, with each subtree that is an earlier
// expression (a call or a cast: a column or a literal costs nothing to
// evaluate) replaced by a reference to that one's output, and sets reuses
// if there was one.
func (o *projectOp) reuse(e *expr.Expr, i int, reuses *bool) *expr.Expr {
	if e.Kind != expr.KindCall && e.Kind != expr.KindCast {
		return e
	}
	for j, d := range o.exprs[:i] {
		if (d.Kind == expr.KindCall || d.Kind == expr.KindCast) && e.Same(d) {
			*reuses = true
			return expr.Column(o.nIn+j, e.Type, "")
		}
	}
	var args []*expr.Expr // a copy once an argument changes
	for k, a := range e.Args {
		r := o.reuse(a, i, reuses)
		if r != a && args == nil {
			args = append([]*expr.Expr(nil), e.Args...)
		}
		if args != nil {
			args[k] = r
		}
	}
	if args == nil {
		return e
	}
	c := *e
	c.Args = args
	return &c
}

// extend returns a record of rec's columns and then cols, the outputs before
// expression i, for run[i] to read.
func (o *projectOp) extend(rec arrow.RecordBatch, cols []arrow.Array, i int) (arrow.RecordBatch, error) {
	all := append(append(make([]arrow.Array, 0, o.nIn+i), rec.Columns()...), cols...)
	for j, c := range cols {
		if want := o.out.Field(j).Type; !arrow.TypeEqual(c.DataType(), want) {
			return nil, fmt.Errorf("project: column %d (%s) is %s, the schema says %s", j, o.out.Field(j).Name, c.DataType(), want)
		}
	}
	return array.NewRecordBatch(o.ext[i], all, rec.NumRows()), nil
}

func (o *projectOp) ProcessSignal(ctx context.Context, input int, s exec.Signal, out exec.Collector) error {
	return out.CollectSignal(ctx, s)
}

func (o *projectOp) Close(ctx context.Context) error { return nil }
