package planner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/operators"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/sql"
)

// LateRows is a job's late-rows table (SET late_rows_table): the rows its
// windowed operators find behind the watermark go there besides being
// counted. Each column of the table is taken by name: late_watermark (a
// timestamp: the operator's watermark when the row came), late_operator
// (text: the operator's line in EXPLAIN), or a column of the rows the
// windowed operator reads, of the same type.
type LateRows struct {
	Table string
	Sink  exec.ConnectorSpec
	// Err, when set, says why the table cannot take late rows (it does not
	// exist, say): a job with a windowed operator is refused with it; a job
	// without one does not care.
	Err error
}

// The late-rows table's columns that are not the late row's own.
const (
	LateWatermarkColumn = "late_watermark"
	LateOperatorColumn  = "late_operator"
)

// windowedKinds are the operators that find rows late.
var windowedKinds = map[string]bool{"window_agg": true, "window_topn": true, "session_agg": true, "over_agg": true,
	"window_join": true, "interval_join": true}

// lateConfig returns the late-rows config of a windowed operator reading
// rows of schema in after node from, or nil when the job has no late-rows
// table or from follows a windowed operator (whose rows go out before the
// watermark passes them, so are never late); it marks the operator's node
// as one with late rows once added (lateNode).
func (b *builder) lateConfig(from int, in types.Schema, label string) (*operators.LateConfig, error) {
	if b.opts.Late == nil || b.afterWindow(from) {
		return nil, nil
	}
	t := b.opts.Late
	if t.Err != nil {
		return nil, t.Err
	}
	cfg := &operators.LateConfig{Out: t.Sink.Schema, Operator: label}
	for _, c := range t.Sink.Schema {
		switch {
		case c.Name == LateWatermarkColumn && c.Type.ID == types.Timestamp:
			cfg.Cols = append(cfg.Cols, operators.LateWatermark)
			continue
		case c.Name == LateOperatorColumn && c.Type.ID == types.String:
			cfg.Cols = append(cfg.Cols, operators.LateOperator)
			continue
		case c.Name == LateWatermarkColumn && !slices.ContainsFunc(in, func(f types.Field) bool { return f.Name == c.Name }):
			return nil, sql.Errorf(sql.ErrType, 0, "late_rows_table %s has column %s of type %s: it takes the watermark, a timestamp", t.Table, c.Name, c.Type)
		case c.Name == LateOperatorColumn && !slices.ContainsFunc(in, func(f types.Field) bool { return f.Name == c.Name }):
			return nil, sql.Errorf(sql.ErrType, 0, "late_rows_table %s has column %s of type %s: it takes the operator's name, a text", t.Table, c.Name, c.Type)
		}
		at := -1
		for i, f := range in {
			if f.Name == c.Name {
				at = i
				break
			}
		}
		if at < 0 {
			return nil, sql.Errorf(sql.ErrUnknownColumn, 0,
				"late_rows_table %s has column %s, which is not a column of the rows %s reads %s, nor %s or %s",
				t.Table, c.Name, strings.Fields(label)[0], names(in), LateWatermarkColumn, LateOperatorColumn)
		}
		if !sameType(in[at].Type, c.Type) {
			return nil, sql.Errorf(sql.ErrType, 0, "late_rows_table %s has column %s of type %s, but the late rows' %s is %s",
				t.Table, c.Name, c.Type, c.Name, in[at].Type)
		}
		cfg.Cols = append(cfg.Cols, at)
	}
	return cfg, nil
}

// lateEdge marks a late edge in EXPLAIN.
func lateEdge(late bool) string {
	if late {
		return " (late rows)"
	}
	return ""
}

// sameType reports whether a column of type a can be stored as type b
// without a cast.
func sameType(a, b types.Type) bool {
	return a.Arrow().ID() == b.Arrow().ID() && a.String() == b.String()
}

// lateNode notes that node, added with a late-rows config, sends its late
// rows to the late-rows table.
func (b *builder) lateNode(node int, cfg *operators.LateConfig) {
	if cfg != nil {
		b.late = append(b.late, node)
	}
}

// afterWindow reports whether node is, or reads from, a windowed operator.
func (b *builder) afterWindow(node int) bool {
	if windowedKinds[b.g.Nodes[node].Op.Kind] {
		return true
	}
	for _, e := range b.g.in(node) {
		if b.afterWindow(e.From) {
			return true
		}
	}
	return false
}

// addLateSink adds the late-rows table's sink, in one instance, fed by the
// late edges of the nodes with late rows.
func (b *builder) addLateSink() {
	if len(b.late) == 0 {
		return
	}
	t := b.opts.Late
	op := exec.OperatorSpec{Kind: "sink", Label: fmt.Sprintf("late rows: sink [%s] %s", t.Sink.Connector, t.Table),
		Config: exec.MustConfig(t.Sink), Out: t.Sink.Schema}
	sink := b.add(op, 1, 1)
	b.g.Nodes[sink].Kind = OneInputNode
	for _, n := range b.late {
		b.g.Edges = append(b.g.Edges, &StreamEdge{From: n, To: sink, Partition: exec.Partition{Kind: exec.Rebalance}, Late: true})
	}
}
