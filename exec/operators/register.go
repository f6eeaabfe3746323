// Package operators holds the built-in operators, one family per file: filter,
// project, unnest (string_split, regexp_split_to_table), hash aggregation
// (hashagg*.go, two-phase and updating), hash join, sort and top-N, limit,
// streaming Top-N and deduplication (topn*.go, window_topn.go), the
// values and snapshot sources, the view sink of a materialised view's job and
// the result sink of a query's. config.go holds the Config each kind's
// OperatorSpec carries, which the planner fills; Register adds them all to a
// Registry, explicitly, as cmd/hummer does once at start-up.
//
// An operator works on whole batches: its keyed state is exec/state's, its
// column kernels exec/vector's, its expressions exec/expr's. It may import
// those, exec and exec/types, and nothing that runs tasks.
package operators

import "github.com/hummer-db/hummer/exec"

// Register adds the built-in operator and source kinds of config.go to r;
// each factory decodes its kind's Config.
func Register(r *exec.Registry) {
	r.RegisterOperator("filter", newFilterOp)
	r.RegisterOperator("project", newProjectOp)
	r.RegisterOperator("unnest", newUnnestOp)
	r.RegisterOperator("series", newSeriesOp)
	r.RegisterOperator("hash_agg", newHashAggOp)
	r.RegisterOperator("hash_join", newHashJoinOp)
	r.RegisterOperator("upsert", newUpsertOp)
	r.RegisterOperator("stream_join", newStreamJoinOp)
	r.RegisterOperator("union", newUnionOp)
	r.RegisterOperator("max_one_row", newMaxOneRowOp)
	r.RegisterOperator("window", newWindowOp)
	r.RegisterOperator("over_agg", newOverAggOp)
	r.RegisterOperator("over_window", newOverWindowOp)
	r.RegisterOperator("interval_join", newIntervalJoinOp)
	r.RegisterOperator("sort", newSortOp)
	r.RegisterOperator("limit", newLimitOp)
	r.RegisterOperator("result", newResultOp)
	r.RegisterOperator("view", newViewOp)
	r.RegisterOperator("watermark", newWatermarkOp)
	r.RegisterOperator("window_agg", newWindowAggOp)
	r.RegisterOperator("window_join", newWindowJoinOp)
	r.RegisterOperator("session_agg", newSessionAggOp)
	r.RegisterOperator("topn", newTopNOp)
	r.RegisterOperator("window_topn", newWindowTopNOp)
	r.RegisterSourceKind("values", func(spec exec.OperatorSpec) (exec.Source, error) { return newValuesSource(spec) })
	r.RegisterSourceKind("snapshot", func(spec exec.OperatorSpec) (exec.Source, error) { return newSnapshotSource(spec) })
}
