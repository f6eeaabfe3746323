package web

import (
	"context"
	"strings"
	"testing"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/jobmanager"
	"github.com/hummer-db/hummer/exec/operators"
	"github.com/hummer-db/hummer/exec/taskmanager"
	"github.com/hummer-db/hummer/exec/types"
)

// discard is a ResultSink that drops the rows.
type discard struct{}

func (discard) Send(context.Context, string, exec.Batch) error { return nil }

// TestJobSeriesGo: a job's series are there while the JobManager knows the
// job, with the rows its tasks counted, and go when it forgets it (bounded
// cardinality: a server running one-off queries all day does not grow its
// exposition).
func TestJobSeriesGo(t *testing.T) {
	reg := exec.NewRegistry()
	operators.Register(reg)
	jm := jobmanager.New(nil)
	jm.AddTaskManager(taskmanager.New(taskmanager.Config{ID: "local", Slots: 2, Registry: reg}))
	defer jm.Close()
	m := NewMetrics()
	m.WatchJobs(jm)

	schema := types.Schema{{Name: "x", Type: types.Int64Type}}
	rows := make([][]types.Value, 300)
	for i := range rows {
		rows[i] = []types.Value{types.IntValue(int64(i))}
	}
	job, err := jm.Submit("SELECT x FROM three_hundred", &exec.JobGraph{
		Vertices: []*exec.JobVertex{{ID: 0, Name: "values -> result", Parallelism: 1, Chain: []exec.OperatorSpec{
			{Kind: "values", Out: schema, Config: exec.MustConfig(operators.ValuesConfig{Rows: rows})},
			{Kind: "result", Out: schema}}}},
	}, discard{})
	if err != nil {
		t.Fatal(err)
	}
	<-job.Done()
	count := func(name string) (n int, sum float64) {
		fams, err := m.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fams {
			if f.GetName() != name {
				continue
			}
			for _, s := range f.GetMetric() {
				n++
				sum += s.GetCounter().GetValue() + s.GetGauge().GetValue()
			}
		}
		return n, sum
	}
	if n, rowsIn := count("hummer_task_records_in_total"); n != 1 || rowsIn != 300 {
		t.Errorf("hummer_task_records_in_total: %d series summing to %v, want 1 of 300 (the values' rows)", n, rowsIn)
	}
	if n, _ := count("hummer_job_info"); n != 1 {
		t.Errorf("%d hummer_job_info series, want 1", n)
	}
	jm.Forget(job.ID)
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if strings.HasPrefix(f.GetName(), "hummer_job_") || strings.HasPrefix(f.GetName(), "hummer_task_") {
			t.Errorf("after the job is forgotten, %s still has %d series", f.GetName(), len(f.GetMetric()))
		}
	}
	if n, slots := count("hummer_slots"); n != 2 || slots != 2 {
		t.Errorf("hummer_slots: %d series summing to %v, want busy and free summing to the 2 slots", n, slots)
	}
}
