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

// ExecNetTask is the network task of one producing task on one JobGraph edge:
// it encodes the producer's batches for that edge's network channels and
// writes them, beside the producer rather than in it (PlaceNetworkTasks).
type ExecNetTask struct {
	From     TaskID `json:"from"`
	ToVertex int    `json:"to_vertex"`
	Input    int    `json:"input"`
	Name     string `json:"name"`
	// Slot is the network task's own slot, or its producer's when the
	// producer's TaskManager had none to spare.
	Slot SlotRef `json:"slot"`
	// Own says Slot is a slot of its own.
	Own bool `json:"own,omitempty"`
}

// ExecutionGraph is the JobGraph expanded to one task per parallel instance and
// one edge per channel, with every task placed in a slot.
type ExecutionGraph struct {
	JobID string      `json:"job_id"`
	Job   *JobGraph   `json:"job"`
	Tasks []*ExecTask `json:"tasks"`
	Edges []*ExecEdge `json:"edges"`
	// NetTasks are the network tasks of the edges whose sending side runs
	// apart from the producers; the other network channels are written by
	// their producers.
	NetTasks []*ExecNetTask `json:"net_tasks,omitempty"`
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

// PlaceNetworkTasks decides, edge by edge, how the sending side of g's network
// channels runs, and places the network tasks, as the paper has it: a network
// task takes a slot of its own or is fused into its producer. free are the
// slots no job uses; those g's tasks leave are the spare ones. An edge with
// mode NetworkOwn gets a network task per producer with network channels on
// it, in a spare slot of the producer's TaskManager when there is one, else
// sharing the producer's; with NetworkAuto it gets them only if every such
// producer's TaskManager has a spare slot for it, else it is fused.
func PlaceNetworkTasks(g *ExecutionGraph, free []SlotRef) {
	used := map[SlotRef]bool{}
	for _, t := range g.Tasks {
		used[t.Slot] = true
	}
	spare := map[string][]SlotRef{} // by TaskManager, in placement order
	for _, s := range interleaveSlots(free) {
		if !used[s] {
			spare[s.TaskManager] = append(spare[s.TaskManager], s)
		}
	}
	mode := g.Job.NetworkTasks
	if mode == "" {
		mode = NetworkAuto
	}
	g.NetTasks = nil
	if mode == NetworkFused {
		return
	}
	for _, je := range g.Job.Edges {
		// The producers with network channels on the edge, in subtask order.
		var senders []*ExecTask
		seen := map[TaskID]bool{}
		for _, e := range g.Edges {
			if e.Network && e.From.Vertex == je.From && e.To.Vertex == je.To && e.Input == je.Input && !seen[e.From] {
				seen[e.From] = true
				senders = append(senders, g.Task(e.From))
			}
		}
		if len(senders) == 0 {
			continue
		}
		if mode == NetworkAuto {
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
			nt := &ExecNetTask{From: s.ID, ToVertex: je.To, Input: je.Input, Slot: s.Slot,
				Name: fmt.Sprintf("network %s -> V%d", s.Name, je.To)}
			if free := spare[s.Slot.TaskManager]; len(free) > 0 {
				nt.Slot, nt.Own = free[0], true
				spare[s.Slot.TaskManager] = free[1:]
			}
			g.NetTasks = append(g.NetTasks, nt)
		}
	}
}

// NetTask returns the network task of producer from on the edge into input of
// vertex to, or nil when the producer writes that edge's channels itself.
func (g *ExecutionGraph) NetTask(from TaskID, to, input int) *ExecNetTask {
	for _, nt := range g.NetTasks {
		if nt.From == from && nt.ToVertex == to && nt.Input == input {
			return nt
		}
	}
	return nil
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
