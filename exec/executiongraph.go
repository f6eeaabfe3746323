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
