package control

import (
	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/network"
)

// The Session stream: a TaskManager opens it to the JobManager and keeps it open
// for its life. Only the TaskManager dials (it knows the JobManager's address;
// the JobManager learns the TaskManager's), and a broken stream is how either
// side learns the other is gone.

// FromTaskManager is one message on the stream from a TaskManager. Exactly one
// field is set.
type FromTaskManager struct {
	Register  *Register  `json:"register,omitempty"`
	Heartbeat *Heartbeat `json:"heartbeat,omitempty"`
	DeployAck *DeployAck `json:"deploy_ack,omitempty"`
	JobDone   *JobDone   `json:"job_done,omitempty"`
	// CheckpointAck is a task's answer to a checkpoint barrier.
	CheckpointAck *CheckpointAck `json:"checkpoint_ack,omitempty"`
	ViewData      *ViewData      `json:"view_data,omitempty"`
}

// FromJobManager is one message on the stream from the JobManager. Exactly one
// field is set.
type FromJobManager struct {
	Registered *Registered `json:"registered,omitempty"`
	Deploy     *Deploy     `json:"deploy,omitempty"`
	Cancel     *Cancel     `json:"cancel,omitempty"`
	Checkpoint *Checkpoint `json:"checkpoint,omitempty"`
	ReadView   *ReadView   `json:"read_view,omitempty"`
}

// ReadView asks for the rows of a job's view task (by RunID).
type ReadView struct {
	Request int    `json:"request"`
	JobID   string `json:"job"`
	Now     bool   `json:"now,omitempty"` // the rows even if the view has not caught up
}

// ViewData answers ReadView: the rows as an Arrow IPC stream, or an error.
type ViewData struct {
	Request int    `json:"request"`
	Data    []byte `json:"data,omitempty"`
	Error   string `json:"error,omitempty"`
	NoView  bool   `json:"no_view,omitempty"`
	// NotReady: the view has not caught up with its inputs yet.
	NotReady bool `json:"not_ready,omitempty"`
}

// Checkpoint asks a TaskManager's tasks of a job (by RunID) to inject a
// checkpoint's barrier (Trigger), or tells them one is complete (Complete).
type Checkpoint struct {
	JobID    string `json:"job"`
	Trigger  int64  `json:"trigger,omitempty"`
	Complete int64  `json:"complete,omitempty"`
}

// CheckpointAck carries a task's answer to a checkpoint barrier.
type CheckpointAck struct {
	JobID string             `json:"job"`
	Ack   exec.CheckpointAck `json:"ack"`
}

// Register is a TaskManager's first message.
type Register struct {
	// ID names the TaskManager in placements and EXPLAIN ANALYZE; it is its data
	// address, unique in the cluster.
	ID    string `json:"id"`
	Slots int    `json:"slots"`
	// DataAddrs maps each network the TaskManager is on ("" the default) to its
	// data address there.
	DataAddrs map[string]string `json:"data_addrs"`
}

// Registered answers Register.
type Registered struct {
	// HeartbeatMillis is how often the TaskManager must send a Heartbeat.
	HeartbeatMillis int `json:"heartbeat_ms"`
	// ResultPort is the port of the JobManager's data server, where result tasks
	// send their rows; its host is the one the TaskManager dialed.
	ResultPort string `json:"result_port"`
}

// Heartbeat says the TaskManager is alive, with the counters of the tasks of
// its running jobs, by job id, so that the JobManager shows them while they run.
type Heartbeat struct {
	Jobs map[string][]TaskCounters `json:"jobs,omitempty"`
}

// Deploy asks a TaskManager to run its tasks of Graph.
type Deploy struct {
	Request int                  `json:"request"`
	Graph   *exec.ExecutionGraph `json:"graph"`
	// ResultKey names the channel the TaskManager sends its result tasks' rows on,
	// to the JobManager's data server; it ends the channel with EndOfStream once
	// its tasks finished.
	ResultKey network.ChannelKey `json:"result_key"`
}

// DeployAck answers Deploy: Error is empty when the tasks started.
type DeployAck struct {
	Request int    `json:"request"`
	Error   string `json:"error,omitempty"`
	Code    string `json:"code,omitempty"`
}

// Cancel asks a TaskManager to stop its tasks of a job.
type Cancel struct {
	JobID  string `json:"job"`
	Reason string `json:"reason"`
}

// JobDone reports that a TaskManager's tasks of a job have stopped.
type JobDone struct {
	JobID string `json:"job"`
	// View holds the final rows of the job's view task here, if it has one.
	View []byte `json:"view,omitempty"`
	// Error is empty when the tasks finished; Code is its SQLSTATE.
	Error     string         `json:"error,omitempty"`
	Code      string         `json:"code,omitempty"`
	Cancelled bool           `json:"cancelled,omitempty"`
	Metrics   []TaskCounters `json:"metrics,omitempty"`
}

// TaskCounters are one task's final exec.TaskMetrics.
type TaskCounters struct {
	Task       exec.TaskID   `json:"task"`
	RowsIn     int64         `json:"rows_in"`
	RowsOut    int64         `json:"rows_out"`
	BatchesIn  int64         `json:"batches_in"`
	BatchesOut int64         `json:"batches_out"`
	BadRecords int64         `json:"bad_records"`
	NetBytes   int64         `json:"net_bytes_out"`
	SinkRows   int64         `json:"sink_rows"`
	DeadLetter int64         `json:"dead_letters,omitempty"`
	LateRows   int64         `json:"late_rows,omitempty"`
	Watermark  int64         `json:"watermark,omitempty"`
	Status     string        `json:"status,omitempty"`
	Busy       int64         `json:"busy_ns,omitempty"`
	Idle       int64         `json:"idle_ns,omitempty"`
	Blocked    int64         `json:"backpressure_ns,omitempty"`
	Queue      int           `json:"queue,omitempty"`
	QueueCap   int           `json:"queue_cap,omitempty"`
	Lags       map[int]int64 `json:"lags,omitempty"`
	Chain      []int64       `json:"chain,omitempty"`
	ChainNanos []int64       `json:"chain_ns,omitempty"`
}

func countersOf(m map[exec.TaskID]*exec.TaskMetrics) []TaskCounters {
	out := make([]TaskCounters, 0, len(m))
	for id, t := range m {
		q, qcap := t.QueueFill()
		out = append(out, TaskCounters{Task: id, RowsIn: t.RowsIn.Load(), RowsOut: t.RowsOut.Load(),
			BatchesIn: t.BatchesIn.Load(), BatchesOut: t.BatchesOut.Load(), BadRecords: t.BadRecords.Load(),
			NetBytes: t.NetBytesOut.Load(), SinkRows: t.SinkRows.Load(),
			DeadLetter: t.DeadLetters.Load(), LateRows: t.LateRows.Load(), Watermark: t.Watermark.Load(), Status: t.Status(),
			Busy: t.BusyNanos.Load(), Idle: t.IdleNanos.Load(), Blocked: t.BackpressureNanos.Load(), Queue: q, QueueCap: qcap, Lags: t.Lags(), Chain: t.ChainRowsOut(),
			ChainNanos: t.ChainNanos()})
	}
	return out
}

// storeCounters updates the counters in m of the tasks in cs; tasks not in m
// are ignored.
func storeCounters(m map[exec.TaskID]*exec.TaskMetrics, cs []TaskCounters) {
	for _, c := range cs {
		t, ok := m[c.Task]
		if !ok {
			continue
		}
		t.RowsIn.Store(c.RowsIn)
		t.RowsOut.Store(c.RowsOut)
		t.BatchesIn.Store(c.BatchesIn)
		t.BatchesOut.Store(c.BatchesOut)
		t.BadRecords.Store(c.BadRecords)
		t.NetBytesOut.Store(c.NetBytes)
		t.SinkRows.Store(c.SinkRows)
		t.DeadLetters.Store(c.DeadLetter)
		t.LateRows.Store(c.LateRows)
		t.Watermark.Store(c.Watermark)
		t.SetStatus(c.Status)
		t.BusyNanos.Store(c.Busy)
		t.IdleNanos.Store(c.Idle)
		t.BackpressureNanos.Store(c.Blocked)
		t.SetQueueFill(c.Queue, c.QueueCap)
		if c.Chain != nil {
			t.SetChainRowsOut(c.Chain)
		}
		if c.ChainNanos != nil {
			t.SetChainNanos(c.ChainNanos)
		}
		for p, n := range c.Lags {
			t.SetLag(p, n)
		}
	}
}

// RemoteError is an error of a task that ran in another process, with the
// SQLSTATE it had there (the wire server honours SQLState()).
type RemoteError struct {
	Msg, Code string
}

func (e *RemoteError) Error() string { return e.Msg }

// SQLState returns the error's SQLSTATE.
func (e *RemoteError) SQLState() string { return e.Code }
