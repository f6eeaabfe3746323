package exec

import (
	"fmt"
)

// TaskID names one parallel instance of a JobVertex.
type TaskID struct {
	Vertex  int `json:"vertex"`
	Subtask int `json:"subtask"`
}

func (id TaskID) String() string { return fmt.Sprintf("%d.%d", id.Vertex, id.Subtask) }

// SlotRef names one slot of one TaskManager.
type SlotRef struct {
	TaskManager string `json:"tm"`
	Index       int    `json:"index"`
}

func (s SlotRef) String() string { return fmt.Sprintf("%s/slot%d", s.TaskManager, s.Index) }

// ExecTask is one StreamTask of an ExecutionGraph: a parallel instance of a
// vertex, placed in a slot.
type ExecTask struct {
	ID          TaskID  `json:"id"`
	Name        string  `json:"name"`
	Parallelism int     `json:"parallelism"`
	Slot        SlotRef `json:"slot"`
}

// ExecEdge is one channel between two tasks. Channel numbers the senders of one
// input of the receiving task 0..n-1, so the receiver can tell its channels apart
// (end of stream is counted, and barriers aligned, per channel).
type ExecEdge struct {
	From      TaskID    `json:"from"`
	To        TaskID    `json:"to"`
	Input     int       `json:"input"`
	Channel   int       `json:"channel"`
	Partition Partition `json:"partition"`
	// Network is true when the two tasks are on different TaskManagers.
	Network bool `json:"network,omitempty"`
}

// ExecutionGraph is the JobGraph expanded to one task per parallel instance and
// one edge per channel, with every task placed in a slot.
type ExecutionGraph struct {
	JobID string      `json:"job_id"`
	Job   *JobGraph   `json:"job"`
	Tasks []*ExecTask `json:"tasks"`
	Edges []*ExecEdge `json:"edges"`
	// DataAddrs maps each TaskManager of the job to the address its network
	// channels are sent to, on the job's network (Job.Network).
	DataAddrs map[string]string `json:"data_addrs,omitempty"`
	// Attempt counts the job's restarts. Channels and deployments are keyed by
	// RunID, so a restarted job's channels never meet the last attempt's.
	Attempt int `json:"attempt,omitempty"`
	// CheckpointURL, when set, is the checkpoint store (exec/checkpoint) the
	// tasks write their state to: the job takes checkpoints.
	CheckpointURL string `json:"checkpoint_url,omitempty"`
	// RestoreFrom, when not 0, is the complete checkpoint the tasks start from.
	RestoreFrom int64 `json:"restore_from,omitempty"`
}

// RunID names this attempt of the job: the job id, then "#attempt" after a
// restart.
func (g *ExecutionGraph) RunID() string {
	if g.Attempt == 0 {
		return g.JobID
	}
	return fmt.Sprintf("%s#%d", g.JobID, g.Attempt)
}

// Task returns the task with the given id, or nil.
func (g *ExecutionGraph) Task(id TaskID) *ExecTask {
	for _, t := range g.Tasks {
		if t.ID == id {
			return t
		}
	}
	return nil
}

// BuildExecutionGraph expands job into tasks and channels and places the tasks
// on slots, given in order of preference (see PlaceSlots): subtask i of every
// vertex goes to slots[i]. With slots ordered round-robin over TaskManagers,
// replicas of one vertex spread over TaskManagers, and the slot holding subtask i
// of a source also holds subtask i of the operators fed by it forward, as Flink's
// slot sharing does. A vertex's parallelism may not exceed the number of slots;
// every vertex must have one (see JobGraph.WithParallelism).
func BuildExecutionGraph(jobID string, job *JobGraph, slots []SlotRef) (*ExecutionGraph, error) {
	if len(slots) == 0 {
		return nil, fmt.Errorf("%w: the cluster has no TaskManager slots", ErrNoSlots)
	}
	order := slots
	g := &ExecutionGraph{JobID: jobID, Job: job}
	for _, v := range job.Vertices {
		if v.Parallelism < 1 {
			return nil, fmt.Errorf("exec: vertex %d (%s) has parallelism %d", v.ID, v.Name, v.Parallelism)
		}
		if v.Parallelism > len(order) {
			return nil, fmt.Errorf("%w: vertex %s needs %d slots, the cluster has %d",
				ErrNoSlots, v.Name, v.Parallelism, len(order))
		}
		for i := 0; i < v.Parallelism; i++ {
			g.Tasks = append(g.Tasks, &ExecTask{
				ID:          TaskID{Vertex: v.ID, Subtask: i},
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
		if e.Partition.Kind == Forward && from.Parallelism != to.Parallelism {
			return nil, fmt.Errorf("exec: forward edge %d->%d joins parallelism %d and %d",
				e.From, e.To, from.Parallelism, to.Parallelism)
		}
		for s := 0; s < from.Parallelism; s++ {
			for r := 0; r < to.Parallelism; r++ {
				if e.Partition.Kind == Forward && s != r {
					continue
				}
				k := [3]int{e.To, r, e.Input}
				fromID, toID := TaskID{e.From, s}, TaskID{e.To, r}
				g.Edges = append(g.Edges, &ExecEdge{
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

// PlaceSlots orders slots for placement, as the paper places tasks: the free
// slots first, then those already running other jobs; within each, round-robin
// across TaskManagers (tm0 slot0, tm1 slot0, ..., tm0 slot1, ...) in the order
// the TaskManagers first appear.
func PlaceSlots(free, busy []SlotRef) []SlotRef {
	return append(interleaveSlots(free), interleaveSlots(busy)...)
}

// interleaveSlots orders slots round-robin across TaskManagers, keeping the order
// in which TaskManagers first appear.
func interleaveSlots(slots []SlotRef) []SlotRef {
	var tms []string
	byTM := map[string][]SlotRef{}
	for _, s := range slots {
		if _, ok := byTM[s.TaskManager]; !ok {
			tms = append(tms, s.TaskManager)
		}
		byTM[s.TaskManager] = append(byTM[s.TaskManager], s)
	}
	out := make([]SlotRef, 0, len(slots))
	for i := 0; len(out) < len(slots); i++ {
		for _, tm := range tms {
			if i < len(byTM[tm]) {
				out = append(out, byTM[tm][i])
			}
		}
	}
	return out
}

// Inputs returns the channels into task id, in (input, channel) order.
func (g *ExecutionGraph) Inputs(id TaskID) []*ExecEdge {
	var es []*ExecEdge
	for _, e := range g.Edges {
		if e.To == id {
			es = append(es, e)
		}
	}
	return es
}

// Outputs returns the channels out of task id.
func (g *ExecutionGraph) Outputs(id TaskID) []*ExecEdge {
	var es []*ExecEdge
	for _, e := range g.Edges {
		if e.From == id {
			es = append(es, e)
		}
	}
	return es
}
