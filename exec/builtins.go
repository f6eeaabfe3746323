package exec

// registerBuiltins adds the built-in operator kinds of opspec.go; each factory
// decodes its kind's Config.
func registerBuiltins(r *Registry) {
	r.RegisterOperator("filter", newFilterOp)
	r.RegisterOperator("project", newProjectOp)
	r.RegisterOperator("unnest", newUnnestOp)
	r.RegisterOperator("hash_agg", newHashAggOp)
	r.RegisterOperator("hash_join", newHashJoinOp)
	r.RegisterOperator("sort", newSortOp)
	r.RegisterOperator("limit", newLimitOp)
	r.RegisterOperator("result", newResultOp)
}
