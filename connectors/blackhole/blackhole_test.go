package blackhole

import (
	"context"
	"errors"
	"testing"

	"github.com/hummer-db/hummer/connectors/spec"
	"github.com/hummer-db/hummer/exec"
)

func TestValidate(t *testing.T) {
	for _, u := range []string{"", "blackhole://"} {
		if err := Validate(exec.ConnectorSpec{URL: u}); err != nil {
			t.Errorf("%q: %v", u, err)
		}
	}
	if err := Validate(exec.ConnectorSpec{URL: "blackhole://x?y=1"}); !errors.Is(err, spec.ErrBadOption) {
		t.Errorf("an option: %v, want ErrBadOption", err)
	}
}

// TestSink: the sink takes batches and forwards signals.
func TestSink(t *testing.T) {
	r := exec.NewRegistry()
	Register(r)
	op, err := r.NewSink(exec.ConnectorSpec{Connector: Name, URL: "blackhole://"})
	if err != nil {
		t.Fatal(err)
	}
	var got []exec.Signal
	out := collector(func(s exec.Signal) { got = append(got, s) })
	if err := op.ProcessSignal(context.Background(), 0, exec.Signal{Kind: exec.EndOfStream}, out); err != nil || len(got) != 1 {
		t.Errorf("signals %v, %v", got, err)
	}
}

type collector func(exec.Signal)

func (c collector) Collect(context.Context, exec.Batch) error { return nil }
func (c collector) CollectSignal(_ context.Context, s exec.Signal) error {
	c(s)
	return nil
}
