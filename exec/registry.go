package exec

import (
	"encoding/json"
	"fmt"
	"sort"
)

// OperatorFactory builds an operator from its spec.
type OperatorFactory func(spec OperatorSpec) (Operator, error)

// SourceFactory builds a connector's source.
type SourceFactory func(spec ConnectorSpec) (Source, error)

// SinkFactory builds a connector's sink; a sink is an operator that emits nothing.
type SinkFactory func(spec ConnectorSpec) (Operator, error)

// SourceKindFactory builds a built-in source, one that reads no connector
// ("values", "snapshot"), from its spec.
type SourceKindFactory func(spec OperatorSpec) (Source, error)

// Registry maps the names in a JobGraph to the code that runs them. cmd/hummer fills
// one explicitly at start-up (no init side effects), and every TaskManager builds
// its tasks through it, so the graph a client plans is the graph a worker runs.
type Registry struct {
	operators   map[string]OperatorFactory
	sourceKinds map[string]SourceKindFactory
	sources     map[string]SourceFactory
	sinks       map[string]SinkFactory
}

// NewRegistry returns an empty registry: operators.Register adds the built-in
// operators, connectors.Register the connectors.
func NewRegistry() *Registry {
	r := &Registry{
		operators:   map[string]OperatorFactory{},
		sourceKinds: map[string]SourceKindFactory{},
		sources:     map[string]SourceFactory{},
		sinks:       map[string]SinkFactory{},
	}
	return r
}

// RegisterOperator adds a built-in operator kind.
func (r *Registry) RegisterOperator(kind string, f OperatorFactory) { r.operators[kind] = f }

// RegisterSourceKind adds a built-in source kind.
func (r *Registry) RegisterSourceKind(kind string, f SourceKindFactory) { r.sourceKinds[kind] = f }

// RegisterSource adds a connector's source.
func (r *Registry) RegisterSource(connector string, f SourceFactory) { r.sources[connector] = f }

// RegisterSink adds a connector's sink.
func (r *Registry) RegisterSink(connector string, f SinkFactory) { r.sinks[connector] = f }

// Connectors returns the names of connectors with a source or a sink, sorted.
func (r *Registry) Connectors() []string {
	seen := map[string]bool{}
	for n := range r.sources {
		seen[n] = true
	}
	for n := range r.sinks {
		seen[n] = true
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// BuildSource builds the source that starts a source vertex's chain: a
// connector's for kind "source", else a built-in source kind's.
func (r *Registry) BuildSource(spec OperatorSpec) (Source, error) {
	if spec.Kind != "source" {
		f, ok := r.sourceKinds[spec.Kind]
		if !ok {
			return nil, fmt.Errorf("%w: source kind %q", ErrUnknownOperator, spec.Kind)
		}
		return f(spec)
	}
	c, err := DecodeConnector(spec)
	if err != nil {
		return nil, err
	}
	return r.NewSource(c)
}

// NewSource builds the source a "source" OperatorSpec describes.
func (r *Registry) NewSource(c ConnectorSpec) (Source, error) {
	f, ok := r.sources[c.Connector]
	if !ok {
		return nil, fmt.Errorf("%w: no source for connector %q", ErrUnknownConnector, c.Connector)
	}
	return f(c)
}

// HasSink reports whether connector has a sink.
func (r *Registry) HasSink(connector string) bool {
	_, ok := r.sinks[connector]
	return ok
}

// NewSink builds the sink a "sink" OperatorSpec describes.
func (r *Registry) NewSink(c ConnectorSpec) (Operator, error) {
	f, ok := r.sinks[c.Connector]
	if !ok {
		return nil, fmt.Errorf("%w: no sink for connector %q", ErrUnknownConnector, c.Connector)
	}
	return f(c)
}

// NewOperator builds a built-in operator (not a source).
func (r *Registry) NewOperator(spec OperatorSpec) (Operator, error) {
	f, ok := r.operators[spec.Kind]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownOperator, spec.Kind)
	}
	return f(spec)
}

// DecodeConnector returns the ConnectorSpec a "source" or "sink" OperatorSpec
// carries as its Config.
func DecodeConnector(spec OperatorSpec) (ConnectorSpec, error) {
	var c ConnectorSpec
	if err := json.Unmarshal(spec.Config, &c); err != nil {
		return c, fmt.Errorf("exec: %s config: %w", spec.Kind, err)
	}
	return c, nil
}
