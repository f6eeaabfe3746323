package disk

// WithoutCompactions returns o with pebble's background compactions off.
func WithoutCompactions(o Options) Options {
	o.noCompactions = true
	return o
}
