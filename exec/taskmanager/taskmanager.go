// Package taskmanager is the paper's TaskManager: it owns one node's slots and
// runs the tasks the JobManager deploys to it. As in the paper it is thin:
// Deploy builds each task's source and operators through the Registry, wires
// the tasks with queues (edges within the TaskManager) and network channels
// (edges to others, with their network tasks), and runs each task in a
// goroutine, reporting through the job's exec.Deployment.
//
// It may import exec, exec/task, exec/network, exec/vector and
// exec/checkpoint; the operators come through the Registry.
package taskmanager

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/checkpoint"
	"github.com/hummer-db/hummer/exec/network"
	"github.com/hummer-db/hummer/exec/state"
	"github.com/hummer-db/hummer/exec/task"
	"github.com/hummer-db/hummer/exec/vector"
)

// Config configures a TaskManager.
type Config struct {
	// ID names the TaskManager in slot references and EXPLAIN ANALYZE.
	ID string
	// Slots is the number of tasks of one vertex it runs at once; 0 means one per core.
	Slots    int
	Registry *exec.Registry
	// Alloc is the allocator every task gets; nil means a PoolAllocator.
	Alloc memory.Allocator
	Log   *slog.Logger
	// Data receives the network channels of tasks placed here from other
	// TaskManagers; nil in a single-TaskManager (local) deployment.
	Data *network.Server
	// WorkMem is the memory an operator's state may take before it spills
	// (TaskContext.WorkMem); 0 means a share of the process's memory limit
	// (DefaultWorkMem). SpillDir is where operators spill ("" for the
	// system's temporary directory).
	WorkMem int64
	// StateBackend is the default state backend of continuous jobs'
	// operators ("memory", the default, or "disk"; SET state_backend
	// overrides it per job), and StateMemory the memory the disk backend
	// may keep state in, shared by the slots (0: disk.DefaultMemory a slot).
	StateBackend string
	StateMemory  int64
	SpillDir     string
	// Networks are further networks the TaskManager is on, each with its own data
	// server on its own interface (--network NAME=ADDR). A job on a named network
	// receives on that server and sends from that interface, so its traffic stays
	// on that network (the paper's per-edge network isolation).
	Networks map[string]*network.Server
	// Advertise is the host other TaskManagers reach this one at, given for
	// data servers listening on every interface (0.0.0.0, ::): in a
	// container, the pod's IP. A data server on one address is reached there.
	Advertise string
	// NoTaskMetrics turns off its tasks' time accounting and per-operator
	// counts (exec.TaskContext.NoTaskMetrics; --task-metrics=false), for
	// every job; a job may turn them off for itself (JobGraph.NoTaskMetrics).
	NoTaskMetrics bool
}

// TaskManager owns one node's slots and runs the tasks deployed to it. As in the
// paper it is thin: it builds each task's operators through the registry, wires
// tasks with queues and runs each in a goroutine.
type TaskManager struct {
	cfg Config
	// running are its deployments, which the memory watchdog cancels the
	// newest of when the process runs out of memory (memory.go).
	running running
}

// New returns a TaskManager.
func New(cfg Config) *TaskManager {
	if cfg.Slots <= 0 {
		cfg.Slots = runtime.NumCPU()
	}
	if cfg.Alloc == nil {
		cfg.Alloc = vector.DefaultPool
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.ID == "" {
		cfg.ID = "local"
	}
	if cfg.WorkMem <= 0 {
		cfg.WorkMem = DefaultWorkMem(cfg.Slots)
	}
	return &TaskManager{cfg: cfg}
}

// ID returns the TaskManager's name.
func (tm *TaskManager) ID() string { return tm.cfg.ID }

// Slots returns the TaskManager's slots.
func (tm *TaskManager) Slots() []exec.SlotRef {
	s := make([]exec.SlotRef, tm.cfg.Slots)
	for i := range s {
		s[i] = exec.SlotRef{TaskManager: tm.cfg.ID, Index: i}
	}
	return s
}

// stateMemory returns a task's share of StateMemory: a slot's (0 for the
// backend's default).
func (tm *TaskManager) stateMemory() int64 {
	if tm.cfg.StateMemory <= 0 {
		return 0
	}
	return max(tm.cfg.StateMemory/int64(max(tm.cfg.Slots, 1)), 1<<20)
}

// DataAddrs returns, per network ("" for the default), the address other
// TaskManagers send this one's network channels to.
func (tm *TaskManager) DataAddrs() map[string]string {
	addrs := map[string]string{}
	if tm.cfg.Data != nil {
		addrs[""] = AdvertisedAddr(tm.cfg.Data.Addr(), tm.cfg.Advertise)
	}
	for name, d := range tm.cfg.Networks {
		addrs[name] = AdvertisedAddr(d.Addr(), tm.cfg.Advertise)
	}
	return addrs
}

// AdvertisedAddr is the address others reach a listener on addr at: addr,
// or with host in place of an unspecified IP (0.0.0.0, ::) when host is set.
func AdvertisedAddr(addr net.Addr, host string) string {
	h, port, err := net.SplitHostPort(addr.String())
	if err != nil || host == "" {
		return addr.String()
	}
	if ip := net.ParseIP(h); ip == nil || !ip.IsUnspecified() {
		return addr.String()
	}
	return net.JoinHostPort(host, port)
}

// dataServer returns the data server of a network, and the local address senders
// on it leave from ("" for the default network: any).
func (tm *TaskManager) dataServer(name string) (*network.Server, string, error) {
	if name == "" {
		return tm.cfg.Data, "", nil
	}
	d, ok := tm.cfg.Networks[name]
	if !ok {
		return nil, "", fmt.Errorf("exec: TaskManager %s is not on network %q", tm.cfg.ID, name)
	}
	host, _, err := net.SplitHostPort(d.Addr().String())
	return d, host, err
}

// Deploy builds the tasks of g placed on this TaskManager and starts them. An edge
// between two tasks here is a queue; an edge to or from a task on another
// TaskManager is a network channel: the sending task dials the receiving
// TaskManager's data address (g.DataAddrs) when it starts, and the receiving task's
// inbox is registered on this TaskManager's data server before anything runs. If
// any operator fails to build, nothing starts. The tasks stop when they finish,
// fail, or ctx is cancelled.
func (tm *TaskManager) Deploy(ctx context.Context, g *exec.ExecutionGraph, results exec.ResultSink) (*exec.Deployment, error) {
	data, localAddr, err := tm.dataServer(g.Job.Network)
	if err != nil {
		return nil, err
	}
	var ids []exec.TaskID
	for _, et := range g.Tasks {
		if et.Slot.TaskManager == tm.cfg.ID {
			ids = append(ids, et.ID)
		}
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("exec: no task of job %s is placed on %s", g.JobID, tm.cfg.ID)
	}
	var store *checkpoint.Store
	if g.CheckpointURL != "" {
		if store, err = checkpoint.Open(ctx, g.CheckpointURL); err != nil {
			return nil, err
		}
	}
	var cancel context.CancelCauseFunc // set before Deploy returns d
	d, finish := exec.NewDeployment(func(cause error) { cancel(cause) }, ids)
	// placed is a task of the job here, with its network channels to other
	// TaskManagers, and the network tasks that feed them when they run on their
	// own (NetworkOwn).
	type placed struct {
		task     *task.StreamTask
		net      []*network.LazySender
		netTasks []*network.Task
	}
	tasks := map[exec.TaskID]*placed{}
	fail := func(err error) (*exec.Deployment, error) {
		for _, p := range tasks {
			p.task.Close(ctx)
		}
		if data != nil {
			data.CloseJob(g.RunID())
		}
		if store != nil {
			store.Close()
		}
		return nil, err
	}
	colocated := map[int]*exec.Colocated{} // by vertex
	for _, et := range g.Tasks {
		if et.Slot.TaskManager != tm.cfg.ID {
			continue
		}
		if colocated[et.ID.Vertex] == nil {
			colocated[et.ID.Vertex] = &exec.Colocated{}
		}
		tc := &exec.TaskContext{
			JobID:         g.JobID,
			TaskName:      et.Name,
			Subtask:       et.ID.Subtask,
			Parallelism:   et.Parallelism,
			Alloc:         tm.cfg.Alloc,
			Log:           tm.cfg.Log.With("job", g.JobID, "task", et.Name),
			Results:       results,
			Metrics:       d.Metrics()[et.ID],
			Colocated:     colocated[et.ID.Vertex],
			WorkMem:       tm.cfg.WorkMem,
			SpillDir:      tm.cfg.SpillDir,
			StateBackend:  tm.cfg.StateBackend,
			StateMemory:   tm.stateMemory(),
			StateLimit:    stateLimit(tm.cfg.Slots),
			NoTaskMetrics: tm.cfg.NoTaskMetrics || g.Job.NoTaskMetrics,
		}
		if store != nil {
			tc.Checkpointing = true
			tc.CheckpointLock = new(sync.Mutex)
			tc.StateFiles = store.Files(g.JobID, state.TaskKey(et.ID))
		}
		t, err := tm.buildTask(g, et, tc)
		if err != nil {
			return fail(err)
		}
		if store != nil {
			t.EnableCheckpoints(store, g, et.ID, d.Ack)
		}
		if v := t.ViewReader(); v != nil {
			d.OnReadView(v.ReadView)
		}
		tasks[et.ID] = &placed{task: t}
	}
	d.OnCheckpoint(func(id int64) {
		for _, p := range tasks {
			p.task.TriggerCheckpoint(id)
		}
	}, func(id int64) {
		for _, p := range tasks {
			p.task.CheckpointComplete(id)
		}
	})
	// Inputs from other TaskManagers: register the receiving inboxes first.
	var receivers []*network.Receiver
	for id, p := range tasks {
		for _, ee := range g.Inputs(id) {
			if _, local := tasks[ee.From]; local {
				continue
			}
			tc := p.task.Context()
			if data == nil {
				return fail(fmt.Errorf("exec: task %s has an input from another TaskManager, and %s has no data server", tc.TaskName, tm.cfg.ID))
			}
			r, err := data.Register(network.EdgeChannelKey(g.RunID(), ee), p.task.Inbox(), tc.Alloc)
			if err != nil {
				return fail(err)
			}
			receivers = append(receivers, r)
		}
	}
	// Outputs: each JobEdge out of a task spreads over local inboxes or network
	// channels.
	for id, p := range tasks {
		tc := p.task.Context()
		for _, je := range g.Job.Outputs(id.Vertex) {
			var targets []task.Sender
			for _, ee := range g.Outputs(id) {
				if ee.To.Vertex != je.To || ee.Input != je.Input {
					continue
				}
				if to, local := tasks[ee.To]; local {
					ch := task.LocalChannel{Inbox: to.task.Inbox(), Input: ee.Input, Channel: ee.Channel, Sender: tc.Metrics}
					if tc.NoTaskMetrics {
						ch.Sender = nil // its time blocked is not measured
					}
					targets = append(targets, ch)
					continue
				}
				addr, ok := g.DataAddrs[g.Task(ee.To).Slot.TaskManager]
				if !ok {
					return fail(fmt.Errorf("exec: no data address for TaskManager %s", g.Task(ee.To).Slot.TaskManager))
				}
				ns := network.NewLazySender(network.DialConfig{Addr: addr, LocalAddr: localAddr, Key: network.EdgeChannelKey(g.RunID(), ee), From: id, Alloc: tc.Alloc},
					tc.Metrics)
				p.net = append(p.net, ns)
				if g.NetTask(id, je.To, je.Input) != nil {
					nt := network.NewTask(ns)
					p.netTasks = append(p.netTasks, nt)
					targets = append(targets, nt)
				} else {
					targets = append(targets, ns)
				}
			}
			if je.Late {
				p.task.LateOutput().AddEdge(je.Partition, targets)
				continue
			}
			p.task.Output().AddEdge(je.Partition, targets)
		}
	}
	vector.JobStarted()
	tm.running.add(d, g.JobID)
	ctx, cancel = context.WithCancelCause(ctx)
	var (
		wg       sync.WaitGroup
		once     sync.Once
		firstErr error       // the first task failure, set in once
		finished atomic.Bool // every task has stopped
	)
	failTask := func(err error) {
		once.Do(func() {
			if ctx.Err() != nil {
				err = context.Cause(ctx) // a cancellation, not this task's own failure
			}
			firstErr = err
			cancel(err)
		})
	}
	for _, p := range tasks {
		for _, nt := range p.netTasks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := nt.Run(ctx); err != nil {
					failTask(err)
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := p.task.Run(ctx)
			if err != nil {
				failTask(err) // also stops this task's network tasks
			}
			for _, nt := range p.netTasks {
				select { // the network tasks send what the task queued, end of stream last
				case <-nt.Finished():
				case <-ctx.Done():
				}
			}
			// After the end of stream went out this is the channels' clean
			// end; after a failure the receivers see them break.
			for _, s := range p.net {
				s.Close()
			}
		}()
	}
	// A network channel that breaks before its end of stream (its sender's
	// TaskManager died, say) fails the job; otherwise its receiving task would wait
	// for that end of stream forever.
	var watchers sync.WaitGroup
	for _, r := range receivers {
		watchers.Add(1)
		go func() {
			defer watchers.Done()
			select {
			case <-r.Done():
				if err := r.Err(); err != nil && !finished.Load() {
					failTask(fmt.Errorf("%s: %w", r.Key(), err))
				}
			case <-ctx.Done():
			}
		}()
	}
	go func() {
		wg.Wait()
		finished.Store(true)
		if data != nil {
			data.CloseJob(g.RunID()) // stops receivers still waiting; then no one writes to an inbox
		}
		cancel(nil)
		watchers.Wait()
		// What stopped early left queued. A task that is cancelled may still
		// queue a batch for its network task after that one stopped (a select
		// takes either of its ready cases), so this waits for every task.
		for _, p := range tasks {
			p.task.Drain()
			for _, nt := range p.netTasks {
				nt.Drain()
			}
		}
		if store != nil {
			store.Close()
		}
		tm.running.remove(d)
		finish(firstErr)
		vector.JobEnded()
	}()
	return d, nil
}

// buildTask builds the source and operators of one task, in context tc; Deploy
// wires its output edges once every task exists.
func (tm *TaskManager) buildTask(g *exec.ExecutionGraph, et *exec.ExecTask, tc *exec.TaskContext) (*task.StreamTask, error) {
	v := g.Job.Vertices[et.ID.Vertex]
	chain := v.Chain
	var (
		source   exec.Source
		channels []int
	)
	if v.IsSource() {
		s, err := tm.cfg.Registry.BuildSource(chain[0])
		if err != nil {
			return nil, err
		}
		source, chain = s, chain[1:]
	} else {
		for _, e := range g.Inputs(et.ID) {
			for len(channels) <= e.Input {
				channels = append(channels, 0)
			}
			channels[e.Input]++
		}
	}
	var ops []exec.Operator
	for _, spec := range chain {
		var (
			op  exec.Operator
			err error
		)
		if spec.Kind == "sink" {
			var c exec.ConnectorSpec
			if c, err = exec.DecodeConnector(spec); err == nil {
				op, err = tm.cfg.Registry.NewSink(c)
			}
			if err == nil {
				op = &countingSink{Operator: op, metrics: tc.Metrics}
			}
		} else {
			op, err = tm.cfg.Registry.NewOperator(spec)
		}
		if err != nil {
			return nil, fmt.Errorf("task %s: %w", et.Name, err)
		}
		ops = append(ops, op)
	}
	if source == nil && len(ops) == 0 {
		return nil, fmt.Errorf("exec: vertex %s has neither a source nor an operator", v.Name)
	}
	return task.New(tc, source, ops, channels), nil
}

// countingSink counts the rows a connector's sink takes, for SHOW PROCESSLIST
// and EXPLAIN ANALYZE. It passes checkpoints on to the sink.
type countingSink struct {
	exec.Operator
	metrics *exec.TaskMetrics
}

var (
	_ exec.Checkpointed       = (*countingSink)(nil)
	_ exec.CheckpointListener = (*countingSink)(nil)
)

func (s *countingSink) SnapshotState(ctx context.Context, id int64) ([]byte, error) {
	if c, ok := s.Operator.(exec.Checkpointed); ok {
		return c.SnapshotState(ctx, id)
	}
	return nil, nil
}

func (s *countingSink) RestoreState(ctx context.Context, data []byte) error {
	if c, ok := s.Operator.(exec.Checkpointed); ok {
		return c.RestoreState(ctx, data)
	}
	return nil
}

func (s *countingSink) NotifyCheckpointComplete(ctx context.Context, id int64) error {
	if l, ok := s.Operator.(exec.CheckpointListener); ok {
		return l.NotifyCheckpointComplete(ctx, id)
	}
	return nil
}

func (s *countingSink) ProcessBatch(ctx context.Context, input int, b exec.Batch, out exec.Collector) error {
	if err := s.Operator.ProcessBatch(ctx, input, b, out); err != nil {
		return err
	}
	s.metrics.SinkRows.Add(int64(b.NumRows()))
	return nil
}
