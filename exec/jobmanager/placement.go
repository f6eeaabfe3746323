package jobmanager

import (
	"errors"
	"fmt"

	"github.com/hummer-db/hummer/exec"
)

// BuildExecutionGraph expands job into tasks and channels and places the tasks
// on slots, given in order of preference (see PlaceSlots): subtask i of every
// vertex goes to slots[i]. With slots ordered round-robin over TaskManagers,
// replicas of one vertex spread over TaskManagers, and the slot holding subtask i
// of a source also holds subtask i of the operators fed by it forward, as Flink's
// slot sharing does. A vertex's parallelism may not exceed the number of slots;
// every vertex must have one (see JobGraph.WithParallelism).
func BuildExecutionGraph(jobID string, job *exec.JobGraph, slots []exec.SlotRef) (*exec.ExecutionGraph, error) {
	if len(slots) == 0 {
		return nil, fmt.Errorf("%w: the cluster has no TaskManager slots", ErrNoSlots)
	}
	order := slots
	g := &exec.ExecutionGraph{JobID: jobID, Job: job}
	for _, v := range job.Vertices {
		if v.Parallelism < 1 {
			return nil, fmt.Errorf("exec: vertex %d (%s) has parallelism %d", v.ID, v.Name, v.Parallelism)
		}
		if v.Parallelism > len(order) {
			return nil, fmt.Errorf("%w: vertex %s needs %d slots, the cluster has %d",
				ErrNoSlots, v.Name, v.Parallelism, len(order))
		}
		for i := 0; i < v.Parallelism; i++ {
			g.Tasks = append(g.Tasks, &exec.ExecTask{
				ID:          exec.TaskID{Vertex: v.ID, Subtask: i},
				Name:        fmt.Sprintf("%s[%d/%d]", v.Name, i+1, v.Parallelism),
				Parallelism: v.Parallelism,
				Slot:        order[i],
			})
		}
	}
	// Channels are numbered per receiving (task, input) in edge order, then by
	// sending subtask.
	next := map[[3]int]int{} // (vertex, subtask, input) -> next channel number
	for _, e := range job.Edges {
		from, to := job.Vertices[e.From], job.Vertices[e.To]
		if e.Partition.Kind == exec.Forward && from.Parallelism != to.Parallelism {
			return nil, fmt.Errorf("exec: forward edge %d->%d joins parallelism %d and %d",
				e.From, e.To, from.Parallelism, to.Parallelism)
		}
		for s := 0; s < from.Parallelism; s++ {
			for r := 0; r < to.Parallelism; r++ {
				if e.Partition.Kind == exec.Forward && s != r {
					continue
				}
				k := [3]int{e.To, r, e.Input}
				fromID, toID := exec.TaskID{Vertex: e.From, Subtask: s}, exec.TaskID{Vertex: e.To, Subtask: r}
				g.Edges = append(g.Edges, &exec.ExecEdge{
					From: fromID, To: toID, Input: e.Input, Channel: next[k],
					Partition: e.Partition,
					Network:   order[s].TaskManager != order[r].TaskManager,
				})
				next[k]++
			}
		}
	}
	return g, nil
}

// PlaceNetworkTasks decides, edge by edge, how the sending side of g's network
// channels runs, and places the network tasks, as the paper has it: a network
// task takes a slot of its own or is fused into its producer. free are the
// slots no job uses; those g's tasks leave are the spare ones. An edge with
// mode NetworkOwn gets a network task per producer with network channels on
// it, in a spare slot of the producer's TaskManager when there is one, else
// sharing the producer's; with NetworkAuto it gets them only if every such
// producer's TaskManager has a spare slot for it, else it is fused.
func PlaceNetworkTasks(g *exec.ExecutionGraph, free []exec.SlotRef) {
	used := map[exec.SlotRef]bool{}
	for _, t := range g.Tasks {
		used[t.Slot] = true
	}
	spare := map[string][]exec.SlotRef{} // by TaskManager, in placement order
	for _, s := range interleaveSlots(free) {
		if !used[s] {
			spare[s.TaskManager] = append(spare[s.TaskManager], s)
		}
	}
	mode := g.Job.NetworkTasks
	if mode == "" {
		mode = exec.NetworkAuto
	}
	g.NetTasks = nil
	if mode == exec.NetworkFused {
		return
	}
	for _, je := range g.Job.Edges {
		// The producers with network channels on the edge, in subtask order.
		var senders []*exec.ExecTask
		seen := map[exec.TaskID]bool{}
		for _, e := range g.Edges {
			if e.Network && e.From.Vertex == je.From && e.To.Vertex == je.To && e.Input == je.Input && !seen[e.From] {
				seen[e.From] = true
				senders = append(senders, g.Task(e.From))
			}
		}
		if len(senders) == 0 {
			continue
		}
		if mode == exec.NetworkAuto {
			need := map[string]int{}
			for _, s := range senders {
				need[s.Slot.TaskManager]++
			}
			enough := true
			for tm, n := range need {
				enough = enough && len(spare[tm]) >= n
			}
			if !enough {
				continue // fused
			}
		}
		for _, s := range senders {
			nt := &exec.ExecNetTask{From: s.ID, ToVertex: je.To, Input: je.Input, Slot: s.Slot,
				Name: fmt.Sprintf("network %s -> V%d", s.Name, je.To)}
			if free := spare[s.Slot.TaskManager]; len(free) > 0 {
				nt.Slot, nt.Own = free[0], true
				spare[s.Slot.TaskManager] = free[1:]
			}
			g.NetTasks = append(g.NetTasks, nt)
		}
	}
}

// PlaceSlots orders slots for placement, as the paper places tasks: the free
// slots first, then those already running other jobs; within each, round-robin
// across TaskManagers (tm0 slot0, tm1 slot0, ..., tm0 slot1, ...) in the order
// the TaskManagers first appear.
func PlaceSlots(free, busy []exec.SlotRef) []exec.SlotRef {
	return append(interleaveSlots(free), interleaveSlots(busy)...)
}

// interleaveSlots orders slots round-robin across TaskManagers, keeping the order
// in which TaskManagers first appear.
func interleaveSlots(slots []exec.SlotRef) []exec.SlotRef {
	var tms []string
	byTM := map[string][]exec.SlotRef{}
	for _, s := range slots {
		if _, ok := byTM[s.TaskManager]; !ok {
			tms = append(tms, s.TaskManager)
		}
		byTM[s.TaskManager] = append(byTM[s.TaskManager], s)
	}
	out := make([]exec.SlotRef, 0, len(slots))
	for i := 0; len(out) < len(slots); i++ {
		for _, tm := range tms {
			if i < len(byTM[tm]) {
				out = append(out, byTM[tm][i])
			}
		}
	}
	return out
}

// ErrNoSlots: the cluster has no free slot for a task.
var ErrNoSlots = errors.New("not enough free slots")
