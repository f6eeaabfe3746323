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

// overAgg plans window p over a stream, which is no Top-N, as Flink's OVER
// aggregation (kind "over_agg"): aggregates over frames from a bounded way
// before the current row to it, ordered by one time column with a
// watermark, ascending, over rows that are only inserted. Its rows go out
// as the watermark passes them, so it forwards the watermark and its output
// is append-only. Any other window over a stream is refused.
func (b *builder) overAgg(p *sql.Window) (int, error) {
	if len(p.Order) != 1 || p.Order[0].Desc || !eventTime(p.Input, p.Order[0].Col) {
		return 0, errWindowOverStream()
	}
	for _, f := range p.Funcs {
		if err := overFunc(f); err != nil {
			return 0, err
		}
	}
	from, err := b.build(p.Input)
	if err != nil {
		return 0, err
	}
	if b.updates[from] {
		return 0, sql.Errorf(sql.ErrUnsupported, 0,
			"an OVER aggregation over a stream reads rows that are only inserted, and its input changes its rows (an aggregation or a Top-N over a stream, say): "+
				"keep the result in a view and query it")
	}
	cfg, fns := windowConfig(p)
	label := fmt.Sprintf("over_agg %s order by %s", strings.Join(fns, ", "), p.Input.Schema()[p.Order[0].Col].Name)
	late, err := b.lateConfig(from, p.Input.Schema(), label)
	if err != nil {
		return 0, err
	}
	op := exec.OperatorSpec{Kind: "over_agg", Label: label, Config: exec.MustConfig(operators.OverAggConfig{Window: cfg, Late: late}), Out: p.Out}
	var node int
	if len(p.Partition) == 0 {
		node = b.add(op, 1, 1, in(from, gatherOrForward(b.par(from))))
	} else {
		node = b.add(op, b.opts.Parallelism, 0, in(from, exec.Hash, p.Partition...))
	}
	b.lateNode(node, late)
	return node, nil
}

// overFunc refuses a window function over a stream that an OVER
// aggregation does not compute.
func overFunc(f sql.WindowCall) error {
	switch f.Func {
	case "count", "sum", "avg", "min", "max":
	default:
		return errWindowOverStream()
	}
	fr := f.Frame
	if fr.StartUnbounded || fr.EndUnbounded || fr.Rows && (fr.End != 0 || fr.Start > 0) || !fr.Rows && fr.EndOffset {
		return sql.Errorf(sql.ErrUnsupported, 0,
			"%s OVER a stream needs a frame from a bounded way back to the current row, as ROWS BETWEEN 10 PRECEDING AND CURRENT ROW "+
				"or RANGE BETWEEN INTERVAL '10' SECOND PRECEDING AND CURRENT ROW: its state would grow without end", strings.ToUpper(f.Func))
	}
	return nil
}
