package planner

import (
	"fmt"
	"strings"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/operators"
	"github.com/hummer-db/hummer/sql"
)

// windowConfig is the operators' form of window p, and its functions'
// names.
func windowConfig(p *sql.Window) (operators.WindowConfig, []string) {
	cfg := operators.WindowConfig{Partition: p.Partition}
	for _, k := range p.Order {
		cfg.Order = append(cfg.Order, operators.SortKeySpec{Col: k.Col, Desc: k.Desc, NullsFirst: k.NullsFirst})
	}
	var fns []string
	for _, f := range p.Funcs {
		cfg.Funcs = append(cfg.Funcs, operators.WindowFuncSpec{Func: f.Func, Args: f.Args, N: f.N, Default: f.Default, Type: f.Type,
			Frame: operators.WindowFrame{Rows: f.Frame.Rows, StartUnbounded: f.Frame.StartUnbounded, EndUnbounded: f.Frame.EndUnbounded,
				Start: f.Frame.Start, End: f.Frame.End, StartOffset: f.Frame.StartOffset, EndOffset: f.Frame.EndOffset,
				RangeKey: f.Frame.RangeKey, StartBound: f.Frame.StartBound, EndBound: f.Frame.EndBound}})
		fns = append(fns, f.Func)
	}
	return cfg, fns
}

// overAgg plans window p over a stream, which is no Top-N: aggregates over
// frames from a bounded way before the current row to it. Over rows that
// change (the rows of an aggregation or a Top-N over a stream) it is an
// over_window, whose rows change as its input does (overWindow). Over rows
// that are only inserted, ordered by one time column with a watermark,
// ascending, it is Flink's OVER aggregation (kind "over_agg"): its rows go
// out as the watermark passes them, so it forwards the watermark and its
// output is append-only. Any other window over a stream is refused: over an
// append-only stream without that order an over_window would keep every row
// ever seen, where over a changing input it keeps the rows its input holds
// at the time.
func (b *builder) overAgg(p *sql.Window) (int, error) {
	from, err := b.build(p.Input)
	if err != nil {
		return 0, err
	}
	for _, f := range p.Funcs {
		if err := overFunc(f, b.updates[from]); err != nil {
			return 0, err
		}
	}
	if b.updates[from] {
		return b.overWindow(p, from)
	}
	if len(p.Order) != 1 || p.Order[0].Desc || !eventTime(p.Input, p.Order[0].Col) {
		return 0, errWindowOverStream()
	}
	cfg, fns := windowConfig(p)
	label := fmt.Sprintf("over_agg %s order by %s", strings.Join(fns, ", "), p.Input.Schema()[p.Order[0].Col].Name)
	late, err := b.lateConfig(from, p.Input.Schema(), label)
	if err != nil {
		return 0, err
	}
	op := exec.OperatorSpec{Kind: "over_agg", Label: label, Config: exec.MustConfig(operators.OverAggConfig{Window: cfg, Late: late}), Out: p.Out}
	node := b.partitioned(op, from, p.Partition)
	b.lateNode(node, late)
	return node, nil
}

// overWindow plans window p over node from, a stream, as kind
// "over_window": an updating OVER aggregation of ROWS frames, or RANGE ones
// over one order key, which keeps every row of a partition (a retraction
// brings older rows back into the frames after it) and sends the changes of
// the rows a change reaches.
func (b *builder) overWindow(p *sql.Window, from int) (int, error) {
	for _, f := range p.Funcs {
		if !f.Frame.Rows && len(p.Order) != 1 {
			return 0, sql.Errorf(sql.ErrUnsupported, 0, "%s OVER a stream whose rows change with a RANGE frame needs one ORDER BY column", strings.ToUpper(f.Func))
		}
	}
	cfg, fns := windowConfig(p)
	var order []string
	for _, k := range p.Order {
		dir := ""
		if k.Desc {
			dir = " desc"
		}
		order = append(order, p.Input.Schema()[k.Col].Name+dir)
	}
	label := fmt.Sprintf("over_window %s partition=%s order=%s (keeps every row)", strings.Join(fns, ", "),
		colNames(p.Input.Schema(), p.Partition), strings.Join(order, ","))
	op := exec.OperatorSpec{Kind: "over_window", Label: label, Config: exec.MustConfig(operators.OverWindowConfig{Window: cfg}), Out: p.Out}
	node := b.partitioned(op, from, p.Partition)
	b.updates[node] = true
	return node, nil
}

// partitioned adds op over node from: one task without a partition,
// otherwise one per parallel instance, rows hashed by partition.
func (b *builder) partitioned(op exec.OperatorSpec, from int, partition []int) int {
	if len(partition) == 0 {
		return b.add(op, 1, 1, in(from, gatherOrForward(b.par(from))))
	}
	return b.add(op, b.opts.Parallelism, 0, in(from, exec.Hash, partition...))
}

// overFunc refuses a window function over a stream that an OVER
// aggregation does not compute: over_agg's frames end at the current row;
// over_window's (over an input that changes, changing) are ROWS frames,
// which may end before it.
func overFunc(f sql.WindowCall, changing bool) error {
	switch f.Func {
	case "count", "sum", "avg", "min", "max":
	default:
		return errWindowOverStream()
	}
	fr := f.Frame
	if changing {
		if fr.StartUnbounded || fr.EndUnbounded || fr.Rows && (fr.Start > fr.End || fr.End > 0) || !fr.Rows && fr.EndOffset {
			return sql.Errorf(sql.ErrUnsupported, 0,
				"%s OVER a stream whose rows change (an aggregation or a Top-N over a stream, say) needs a frame from a bounded way back "+
					"to at most the current row, as ROWS BETWEEN 10 PRECEDING AND CURRENT ROW or RANGE BETWEEN INTERVAL '10' SECOND PRECEDING AND CURRENT ROW: "+
					"each change recomputes the rows whose frames reach it", strings.ToUpper(f.Func))
		}
		return nil
	}
	if fr.StartUnbounded || fr.EndUnbounded || fr.Rows && (fr.End != 0 || fr.Start > 0) || !fr.Rows && fr.EndOffset {
		return sql.Errorf(sql.ErrUnsupported, 0,
			"%s OVER a stream needs a frame from a bounded way back to the current row, as ROWS BETWEEN 10 PRECEDING AND CURRENT ROW "+
				"or RANGE BETWEEN INTERVAL '10' SECOND PRECEDING AND CURRENT ROW: its state would grow without end", strings.ToUpper(f.Func))
	}
	return nil
}
