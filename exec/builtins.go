package exec

func registerBuiltins(r *Registry) {}
