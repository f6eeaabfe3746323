package operators

import (
	"context"
	"testing"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/types"
)

// resultTestSink keeps the rows it is sent.
type resultTestSink struct {
	jobs []string
	rows []string
}

func (s *resultTestSink) Send(_ context.Context, jobID string, b exec.Batch) error {
	s.jobs = append(s.jobs, jobID)
	s.rows = append(s.rows, testkit.Rows(b)...)
	return nil
}

func TestResult(t *testing.T) {
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	s := types.Schema{{Name: "w", Type: types.StringType}, {Name: "n", Type: types.Int64Type}}
	bs := testkit.Batches(t, mem, s, `[{"w": "a", "n": 1}]`, `[]`, `[{"w": null, "n": 2}]`)
	defer testkit.Release(bs)
	op := opTestNew(t, "result", ResultConfig{}, s)
	ctx := context.Background()
	if err := op.Open(ctx, testkit.TaskContext(mem)); err == nil {
		t.Errorf("Open without a result sink: no error")
	}
	sink := &resultTestSink{}
	tc := testkit.TaskContext(mem)
	tc.Results = sink
	if err := op.Open(ctx, tc); err != nil {
		t.Fatal(err)
	}
	c := &testkit.Collector{T: t}
	for _, b := range bs {
		if err := op.ProcessBatch(ctx, 0, b, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := op.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, c); err != nil {
		t.Fatal(err)
	}
	op.Close(ctx)
	op.Close(ctx)
	testkit.Equal(t, "sent", sink.rows, []string{`["a",1]`, `[null,2]`})
	if len(sink.jobs) != 2 || sink.jobs[0] != "job-test" {
		t.Errorf("jobs %v", sink.jobs)
	}
	if len(c.Rows) != 0 || len(c.Signals) != 0 {
		t.Errorf("result emitted %v %v", c.Rows, c.Signals)
	}
}
