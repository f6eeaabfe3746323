package operators

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	mathbits "math/bits"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/vector"
)

// filterOp is kind "filter" (see FilterConfig): it keeps the rows where Cond is
// true (NULL counts as false) with their change kinds. A batch whose rows all
// pass is forwarded as is; one whose kept rows are contiguous is forwarded as a
// zero-copy slice; otherwise the kept rows are gathered by a selection vector.
// An empty result emits nothing.
type filterOp struct {
	cond *expr.Expr
	mem  memory.Allocator
	sel  []int32
}

var _ exec.Operator = (*filterOp)(nil)

func newFilterOp(spec exec.OperatorSpec) (exec.Operator, error) {
	var cfg FilterConfig
	if err := json.Unmarshal(spec.Config, &cfg); err != nil {
		return nil, fmt.Errorf("filter: bad config: %w", err)
	}
	if cfg.Cond == nil {
		return nil, fmt.Errorf("filter: no condition")
	}
	return &filterOp{cond: cfg.Cond}, nil
}

func (o *filterOp) Open(ctx context.Context, tc *exec.TaskContext) error {
	o.mem = vector.TaskAlloc(tc)
	return nil
}

func (o *filterOp) ProcessBatch(ctx context.Context, input int, b exec.Batch, out exec.Collector) error {
	n := b.NumRows()
	if n == 0 {
		return nil
	}
	res, err := expr.Eval(o.cond, b.Rec, o.mem)
	if err != nil {
		return fmt.Errorf("filter: %w", err)
	}
	defer res.Release()
	if res.Len() != n {
		return fmt.Errorf("filter: condition gave %d values for %d rows", res.Len(), n)
	}
	cond, ok := res.(*array.Boolean)
	if !ok {
		if res.NullN() == n {
			return nil // WHERE NULL
		}
		return fmt.Errorf("filter: condition is %s, not boolean", res.DataType())
	}
	sel := trueRows(cond, o.sel[:0])
	o.sel = sel
	k := len(sel)
	switch {
	case k == 0:
		return nil
	case k == n:
		return out.Collect(ctx, b)
	case int(sel[k-1]-sel[0]) == k-1:
		lo, hi := int64(sel[0]), int64(sel[k-1])+1
		s := exec.Batch{Rec: b.Rec.NewSlice(lo, hi)}
		defer s.Rec.Release()
		if b.Ops != nil {
			s.Ops = b.Ops[lo:hi]
		}
		return out.Collect(ctx, s)
	}
	rec, err := vector.GatherRecord(o.mem, b.Rec, sel)
	if err != nil {
		return fmt.Errorf("filter: %w", err)
	}
	defer rec.Release()
	return out.Collect(ctx, exec.Batch{Rec: rec, Ops: vector.GatherOps(b.Ops, sel)})
}

// trueRows appends to sel the rows where cond is true (not false, not NULL): a
// selection vector.
func trueRows(cond *array.Boolean, sel []int32) []int32 {
	d := cond.Data()
	if d.Buffers()[1] == nil {
		return sel
	}
	vals, off := d.Buffers()[1].Bytes(), d.Offset()
	valid, voff := vector.ValidityOf(cond)
	n := cond.Len()
	if off == 0 && (valid == nil || voff == 0) {
		// Sixty-four rows at a time: one AND of the value and validity words, then
		// only the set bits are visited.
		full := n / 64
		for w := 0; w < full; w++ {
			bits := binary.LittleEndian.Uint64(vals[w*8:])
			if valid != nil {
				bits &= binary.LittleEndian.Uint64(valid[w*8:])
			}
			for bits != 0 {
				sel = append(sel, int32(w*64+mathbits.TrailingZeros64(bits)))
				bits &= bits - 1
			}
		}
		for i := full * 64; i < n; i++ {
			if bitutil.BitIsSet(vals, i) && (valid == nil || bitutil.BitIsSet(valid, i)) {
				sel = append(sel, int32(i))
			}
		}
		return sel
	}
	for i := range n {
		if bitutil.BitIsSet(vals, off+i) && (valid == nil || bitutil.BitIsSet(valid, voff+i)) {
			sel = append(sel, int32(i))
		}
	}
	return sel
}

func (o *filterOp) ProcessSignal(ctx context.Context, input int, s exec.Signal, out exec.Collector) error {
	return out.CollectSignal(ctx, s)
}

func (o *filterOp) Close(ctx context.Context) error { return nil }

// Gathering rows by index: the selection machinery of filter, shared with
// unnest (repeating columns), hash_join (pairing rows) and sort (permuting).
