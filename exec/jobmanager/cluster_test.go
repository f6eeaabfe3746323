package jobmanager

import (
	"fmt"
	"sort"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/network"
	"github.com/hummer-db/hummer/exec/taskmanager"
	"github.com/hummer-db/hummer/exec/vector"
)

// TestJobAcrossTaskManagers runs a job on three TaskManagers in one process, each
// with its own data server on loopback, so every edge between them is a network
// channel: the rows must arrive exactly as on one TaskManager, the hash exchange
// must route each row to its subtask, and no memory or connection may be left.
// With two slots per TaskManager the network tasks of NetworkOwn and
// NetworkAuto take spare slots.
func TestJobAcrossTaskManagers(t *testing.T) {
	for _, mode := range []string{exec.NetworkFused, exec.NetworkOwn, exec.NetworkAuto} {
		for _, slots := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/slots=%d", mode, slots), func(t *testing.T) { jobAcrossTaskManagers(t, mode, slots) })
		}
	}
}

func jobAcrossTaskManagers(t *testing.T, networkTasks string, slots int) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	jm := clusterInProcess(t, 3, slots, mem)
	sink := &collectSink{}
	g := valuesJob(5000, 3, "pass")
	g.NetworkTasks = networkTasks
	job, err := jm.Submit("test", g, sink)
	if err != nil {
		t.Fatal(err)
	}
	own := 0
	for _, nt := range job.Graph.NetTasks {
		if nt.Own {
			own++
		}
	}
	if slots == 2 && networkTasks != exec.NetworkFused && own == 0 {
		t.Errorf("no network task took a spare slot: %+v", job.Graph.NetTasks)
	}
	<-job.Done()
	if err := job.Err(); err != nil {
		t.Fatal(err)
	}
	crossing := 0
	for _, e := range job.Graph.Edges {
		if e.Network {
			crossing++
		}
	}
	if crossing == 0 {
		t.Fatal("no edge crossed TaskManagers")
	}
	sort.Slice(sink.vals, func(i, j int) bool { return sink.vals[i] < sink.vals[j] })
	if len(sink.vals) != 5000 {
		t.Fatalf("got %d rows, want 5000", len(sink.vals))
	}
	for i, v := range sink.vals {
		if v != int64(i) {
			t.Fatalf("row %d is %d", i, v)
		}
	}
}

// TestFailureAcrossTaskManagers: a task failing on one TaskManager fails the job
// and stops the tasks on the others.
func TestFailureAcrossTaskManagers(t *testing.T) {
	for _, mode := range []string{exec.NetworkFused, exec.NetworkOwn} {
		t.Run(mode, func(t *testing.T) { failureAcrossTaskManagers(t, mode) })
	}
}

func failureAcrossTaskManagers(t *testing.T, networkTasks string) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	jm := clusterInProcess(t, 2, 1, mem)
	g := valuesJob(1000, 2, "fail")
	g.NetworkTasks = networkTasks
	job, err := jm.Submit("test", g, &collectSink{})
	if err != nil {
		t.Fatal(err)
	}
	<-job.Done()
	if job.State() != JobFailed || job.Err() == nil || job.Err().Error() != "boom" {
		t.Fatalf("state %s err %v, want failed with boom", job.State(), job.Err())
	}
}

// clusterInProcess returns a JobManager with n TaskManagers of slots slots,
// each with its own data server on loopback; the servers close when the test
// ends.
func clusterInProcess(t *testing.T, n, slots int, mem memory.Allocator) *JobManager {
	t.Helper()
	jm := New(nil)
	for i := 0; i < n; i++ {
		data, err := network.Listen(network.ServerConfig{Addr: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { data.Close() })
		jm.AddTaskManager(taskmanager.New(taskmanager.Config{
			ID: fmt.Sprintf("tm%d", i), Slots: slots, Registry: testRegistry(), Alloc: mem, Data: data,
		}))
	}
	return jm
}
