// Package blackhole is the blackhole connector: a sink that discards what it
// receives, as Flink's blackhole connector does, for benchmarks that measure a
// query rather than its output (the Nexmark suite writes every query into
// one).
//
//	CREATE TABLE nexmark_q0 (auction BIGINT, ...) ENGINE=blackhole CONNECTION='blackhole://';
//
// A table with a PRIMARY KEY takes a query's updates and deletes too (and
// discards them), as Flink's blackhole takes any changelog: the Nexmark
// queries whose results change (q4, q9, q15-q19) write into such tables.
//
// SHOW PROCESSLIST counts the rows it took (rows_out), as for any sink.
package blackhole

import (
	"context"

	"github.com/hummer-db/hummer/connectors/spec"
	"github.com/hummer-db/hummer/exec"
)

// Name is the connector's ENGINE name.
const Name = "blackhole"

// Spec describes the blackhole connector; it has no options.
func Spec() *spec.Connector {
	return &spec.Connector{
		Name:        Name,
		URL:         "blackhole://",
		Description: "A sink that discards every row (for benchmarks).",
		Sink:        true,
		Upsert:      true,
	}
}

// Register adds the blackhole sink to r.
func Register(r *exec.Registry) {
	r.RegisterSink(Name, func(c exec.ConnectorSpec) (exec.Operator, error) {
		if err := Validate(c); err != nil {
			return nil, err
		}
		return sink{}, nil
	})
}

// Validate checks a blackhole table at CREATE TABLE time: its URL is
// blackhole:// (or empty), with no options.
func Validate(c exec.ConnectorSpec) error {
	if c.URL != "" && c.URL != "blackhole://" {
		return Spec().Errorf("URL %q: want blackhole:// (it takes no options)", c.URL)
	}
	return nil
}

// sink discards batches and forwards signals.
type sink struct{}

func (sink) Open(context.Context, *exec.TaskContext) error { return nil }

func (sink) ProcessBatch(context.Context, int, exec.Batch, exec.Collector) error { return nil }

func (sink) ProcessSignal(ctx context.Context, _ int, s exec.Signal, out exec.Collector) error {
	if out == nil {
		return nil
	}
	return out.CollectSignal(ctx, s)
}

func (sink) Close(context.Context) error { return nil }
