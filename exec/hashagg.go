package exec

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// hashAggOp is kind "hash_agg" (see HashAggConfig): GROUP BY over a hash table of
// keys (keys.go) with one state array per aggregate (hashagg_funcs.go).
//
// Per batch: the key columns are encoded (or, for one text column, read in
// place), then hashed and probed in one loop, giving a group id per row; then
// each aggregate folds the batch with one loop over the group ids. At end
// of stream on input 0 the groups are emitted, in order of first appearance, in
// batches of at most outBatchRows rows, and EndOfStream is forwarded.
//
// Rows with change kind Delete or UpdateBefore retract: count and sum subtract
// (avg too, through its sum and count); min and max return an error.
type hashAggOp struct {
	cfg     HashAggConfig
	out     *arrow.Schema
	outDTs  []arrow.DataType
	keyCols []int
	aggs    []aggregate

	mem      memory.Allocator
	table    *keyTable
	keyTypes []arrow.DataType
	keys     rowKeys
	keyArrs  []arrow.Array
	gids     []uint32
	signs    []int8
	seen     bool
	done     bool
}

var _ Operator = (*hashAggOp)(nil)

func newHashAggOp(spec OperatorSpec) (Operator, error) {
	var cfg HashAggConfig
	if err := json.Unmarshal(spec.Config, &cfg); err != nil {
		return nil, fmt.Errorf("hash_agg: bad config: %w", err)
	}
	return newHashAgg(cfg, spec)
}

func newHashAgg(cfg HashAggConfig, spec OperatorSpec) (*hashAggOp, error) {
	if cfg.Phase == "" {
		cfg.Phase = AggComplete
	}
	switch cfg.Phase {
	case AggComplete, AggPartial, AggFinal:
	default:
		return nil, fmt.Errorf("hash_agg: unknown phase %q", cfg.Phase)
	}
	o := &hashAggOp{cfg: cfg}
	nk := len(cfg.GroupBy)
	o.keyCols = cfg.GroupBy
	if cfg.Phase == AggFinal {
		// A final aggregate reads a partial one's output: keys first, then states.
		o.keyCols = make([]int, nk)
		for i := range o.keyCols {
			o.keyCols[i] = i
		}
	}
	col := nk
	width := nk
	for _, a := range cfg.Aggs {
		first := a.Arg
		if cfg.Phase == AggFinal {
			first = col
			col++
			if a.Func == "avg" {
				col++
			}
		}
		agg, err := newAggregate(a, cfg.Phase, first)
		if err != nil {
			return nil, err
		}
		o.aggs = append(o.aggs, agg)
		width += agg.width()
	}
	if len(spec.Out) != width {
		return nil, fmt.Errorf("hash_agg: output schema has %d columns, the config makes %d", len(spec.Out), width)
	}
	o.out = spec.Out.Arrow()
	for _, f := range o.out.Fields() {
		o.outDTs = append(o.outDTs, f.Type)
	}
	return o, nil
}

func (o *hashAggOp) Open(ctx context.Context, tc *TaskContext) error {
	o.mem = taskAlloc(tc)
	o.table = newKeyTable()
	return nil
}

func (o *hashAggOp) ngroups() int {
	if len(o.keyCols) == 0 {
		return 1
	}
	return o.table.len()
}

func (o *hashAggOp) ProcessBatch(ctx context.Context, input int, b Batch, out Collector) error {
	n := b.NumRows()
	if n == 0 {
		return nil
	}
	if o.done {
		return fmt.Errorf("hash_agg: batch after end of stream")
	}
	if o.table == nil {
		return fmt.Errorf("hash_agg: batch before Open")
	}
	rec := b.Rec
	o.seen = true
	o.gids = growSlice(o.gids, n)
	gids := o.gids
	if len(o.keyCols) > 0 {
		o.keyArrs = o.keyArrs[:0]
		for _, c := range o.keyCols {
			if c < 0 || c >= int(rec.NumCols()) {
				return fmt.Errorf("hash_agg: key column %d out of range (%d columns)", c, rec.NumCols())
			}
			o.keyArrs = append(o.keyArrs, rec.Column(c))
		}
		if o.keyTypes == nil {
			for _, a := range o.keyArrs {
				o.keyTypes = append(o.keyTypes, a.DataType())
			}
		} else {
			for i, a := range o.keyArrs {
				if !arrow.TypeEqual(a.DataType(), o.keyTypes[i]) {
					return fmt.Errorf("hash_agg: key column %d changed type from %s to %s", i, o.keyTypes[i], a.DataType())
				}
			}
		}
		if err := o.keys.encode(o.keyArrs, nil, n); err != nil {
			return err
		}
		o.table.insertRows(&o.keys, gids)
	} else {
		clear(gids)
	}
	if b.Ops != nil && len(b.Ops) != n {
		return fmt.Errorf("hash_agg: %d change kinds for %d rows", len(b.Ops), n)
	}
	signs := rowSigns(b.Ops, o.signs)
	if signs != nil {
		o.signs = signs
	}
	ng := o.ngroups()
	for _, a := range o.aggs {
		if err := a.update(rec, gids, ng, signs); err != nil {
			return err
		}
	}
	return nil
}

func (o *hashAggOp) ProcessSignal(ctx context.Context, input int, s Signal, out Collector) error {
	if s.Kind != EndOfStream {
		return out.CollectSignal(ctx, s)
	}
	if o.done {
		return nil
	}
	o.done = true
	if err := o.emit(ctx, out); err != nil {
		return err
	}
	o.release()
	return out.CollectSignal(ctx, s)
}

// emit sends every group's row.
func (o *hashAggOp) emit(ctx context.Context, out Collector) error {
	if o.table == nil {
		return fmt.Errorf("hash_agg: end of stream before Open")
	}
	n := o.ngroups()
	if len(o.keyCols) == 0 && o.cfg.Phase == AggPartial && !o.seen {
		// A partial aggregate without input has nothing to contribute; the final
		// one still emits its single row.
		n = 0
	}
	nk := len(o.keyCols)
	for lo := 0; lo < n; lo += outBatchRows {
		hi := min(n, lo+outBatchRows)
		cols := make([]arrow.Array, 0, len(o.outDTs))
		if nk > 0 {
			kc, err := o.table.decodeKeys(o.mem, o.keyTypes, lo, hi)
			if err != nil {
				return err
			}
			cols = append(cols, kc...)
		}
		c := nk
		for _, a := range o.aggs {
			var err error
			w := a.width()
			cols, err = a.result(o.mem, lo, hi, o.outDTs[c:c+w], cols)
			if err != nil {
				releaseArrays(cols)
				return err
			}
			c += w
		}
		rec, err := makeRecord(o.out, cols, hi-lo)
		if err != nil {
			return fmt.Errorf("hash_agg: %w", err)
		}
		err = out.Collect(ctx, Batch{Rec: rec})
		rec.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// release drops the group state; the operator only forwards signals afterwards.
func (o *hashAggOp) release() {
	o.table = nil
	o.aggs = nil
	o.keys = rowKeys{}
	o.gids, o.signs, o.keyArrs = nil, nil, nil
}

func (o *hashAggOp) Close(ctx context.Context) error {
	o.table = nil
	o.aggs = nil
	o.keys = rowKeys{}
	return nil
}
