package exec

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec/checkpoint"
)

// QueueCapacity is the number of messages a task's inbox holds before its
// producers block. Small, so backpressure reaches the sources quickly and the
// batches in flight stay in cache-sized numbers.
const QueueCapacity = 16

// TaskManagerConfig configures a TaskManager.
type TaskManagerConfig struct {
	// ID names the TaskManager in slot references and EXPLAIN ANALYZE.
	ID string
	// Slots is the number of tasks of one vertex it runs at once; 0 means one per core.
	Slots    int
	Registry *Registry
	// Alloc is the allocator every task gets; nil means a PoolAllocator.
	Alloc memory.Allocator
	Log   *slog.Logger
	// Data receives the network channels of tasks placed here from other
	// TaskManagers; nil in a single-TaskManager (local) deployment.
	Data *DataServer
	// Networks are further networks the TaskManager is on, each with its own data
	// server on its own interface (--network NAME=ADDR). A job on a named network
	// receives on that server and sends from that interface, so its traffic stays
	// on that network (the paper's per-edge network isolation).
	Networks map[string]*DataServer
}

// TaskManager owns one node's slots and runs the tasks deployed to it. As in the
// paper it is thin: it builds each task's operators through the registry, wires
// tasks with queues and runs each in a goroutine.
type TaskManager struct {
	cfg TaskManagerConfig
}

// NewTaskManager returns a TaskManager.
func NewTaskManager(cfg TaskManagerConfig) *TaskManager {
	if cfg.Slots <= 0 {
		cfg.Slots = runtime.NumCPU()
	}
	if cfg.Alloc == nil {
		cfg.Alloc = defaultPool
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.ID == "" {
		cfg.ID = "local"
	}
	return &TaskManager{cfg: cfg}
}

// ID returns the TaskManager's name.
func (tm *TaskManager) ID() string { return tm.cfg.ID }

// Slots returns the TaskManager's slots.
func (tm *TaskManager) Slots() []SlotRef {
	s := make([]SlotRef, tm.cfg.Slots)
	for i := range s {
		s[i] = SlotRef{TaskManager: tm.cfg.ID, Index: i}
	}
	return s
}

// Deployment is the set of tasks of one job running on one TaskManager.
// TaskManager.Deploy makes one for tasks in this process; NewDeployment makes one
// whose tasks run elsewhere.
type Deployment struct {
	done    chan struct{}
	err     error // the first task failure; set before done closes
	cancel  context.CancelCauseFunc
	metrics map[TaskID]*TaskMetrics
	// Checkpoints: trigger asks the source tasks to inject a barrier, complete
	// tells every task a checkpoint is complete; the tasks' answers arrive on acks.
	trigger, complete func(id int64)
	acks              chan CheckpointAck
	// readView returns the rows of the job's view task here, if it has one
	// (ErrNoView otherwise); they stay readable after the tasks ended.
	readView func() ([]byte, error)
}

// NewDeployment returns a deployment of tasks that run out of this process:
// cancel asks them to stop, and the caller calls finish once, when they have
// stopped, with their error (nil when they finished). The counters of the
// tasks are fixed objects the caller updates as reports arrive (Metrics).
func NewDeployment(cancel func(cause error), tasks []TaskID) (d *Deployment, finish func(err error)) {
	d = newDeployment()
	for _, id := range tasks {
		d.metrics[id] = &TaskMetrics{}
	}
	d.cancel = func(cause error) { cancel(cause) }
	var once sync.Once
	finish = func(err error) {
		once.Do(func() {
			d.err = err
			close(d.done)
		})
	}
	return d, finish
}

func newDeployment() *Deployment {
	return &Deployment{done: make(chan struct{}), metrics: map[TaskID]*TaskMetrics{},
		trigger: func(int64) {}, complete: func(int64) {}, acks: make(chan CheckpointAck, 64),
		readView: func() ([]byte, error) { return nil, ErrNoView }}
}

// ErrNoView: the deployment has no view task.
var ErrNoView = errors.New("exec: no view task here")

// OnReadView sets how a deployment made by NewDeployment reads its view task.
func (d *Deployment) OnReadView(read func() ([]byte, error)) { d.readView = read }

// ReadView returns the current rows of the deployment's view task as an Arrow
// IPC stream (ViewState.Snapshot), or ErrNoView.
func (d *Deployment) ReadView() ([]byte, error) { return d.readView() }

// OnCheckpoint sets how a deployment made by NewDeployment passes checkpoint
// triggers and completions on to its tasks.
func (d *Deployment) OnCheckpoint(trigger, complete func(id int64)) {
	d.trigger, d.complete = trigger, complete
}

// TriggerCheckpoint asks the deployment's source tasks to inject checkpoint
// id's barrier.
func (d *Deployment) TriggerCheckpoint(id int64) { d.trigger(id) }

// CheckpointComplete tells the deployment's tasks that checkpoint id is complete.
func (d *Deployment) CheckpointComplete(id int64) { d.complete(id) }

// Acks delivers the tasks' answers to checkpoint barriers.
func (d *Deployment) Acks() <-chan CheckpointAck { return d.acks }

// Ack delivers a task's answer. It never blocks: with the queue full (nobody
// reading) the answer is dropped, and its checkpoint times out.
func (d *Deployment) Ack(a CheckpointAck) {
	select {
	case d.acks <- a:
	default:
	}
}

// Done is closed when every task has stopped.
func (d *Deployment) Done() <-chan struct{} { return d.done }

// Err returns the first task failure, once Done is closed.
func (d *Deployment) Err() error { return d.err }

// Cancel stops every task with the given cause.
func (d *Deployment) Cancel(cause error) { d.cancel(cause) }

// Metrics returns each task's counters. The map is fixed once the deployment
// exists; the counters change as the tasks run.
func (d *Deployment) Metrics() map[TaskID]*TaskMetrics { return d.metrics }

// DataAddrs returns, per network ("" for the default), the address other
// TaskManagers send this one's network channels to.
func (tm *TaskManager) DataAddrs() map[string]string {
	addrs := map[string]string{}
	if tm.cfg.Data != nil {
		addrs[""] = tm.cfg.Data.Addr().String()
	}
	for name, d := range tm.cfg.Networks {
		addrs[name] = d.Addr().String()
	}
	return addrs
}

// dataServer returns the data server of a network, and the local address senders
// on it leave from ("" for the default network: any).
func (tm *TaskManager) dataServer(network string) (*DataServer, string, error) {
	if network == "" {
		return tm.cfg.Data, "", nil
	}
	d, ok := tm.cfg.Networks[network]
	if !ok {
		return nil, "", fmt.Errorf("exec: TaskManager %s is not on network %q", tm.cfg.ID, network)
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
func (tm *TaskManager) Deploy(ctx context.Context, g *ExecutionGraph, results ResultSink) (*Deployment, error) {
	tasks := map[TaskID]*streamTask{}
	d := newDeployment()
	data, localAddr, err := tm.dataServer(g.Job.Network)
	if err != nil {
		return nil, err
	}
	var store *checkpoint.Store
	if g.CheckpointURL != "" {
		if store, err = checkpoint.Open(ctx, g.CheckpointURL); err != nil {
			return nil, err
		}
	}
	fail := func(err error) (*Deployment, error) {
		for _, built := range tasks {
			built.close(ctx)
		}
		if data != nil {
			data.CloseJob(g.RunID())
		}
		if store != nil {
			store.Close()
		}
		return nil, err
	}
	colocated := map[int]*Colocated{} // by vertex
	for _, et := range g.Tasks {
		if et.Slot.TaskManager != tm.cfg.ID {
			continue
		}
		t, err := tm.buildTask(g, et, results)
		if err != nil {
			return fail(err)
		}
		if colocated[et.ID.Vertex] == nil {
			colocated[et.ID.Vertex] = &Colocated{}
		}
		t.tc.Colocated = colocated[et.ID.Vertex]
		tasks[et.ID] = t
		d.metrics[et.ID] = t.tc.Metrics
		if t.view != nil {
			d.readView = t.view.Snapshot
		}
		if store != nil {
			t.tc.Checkpointing = true
			t.tc.CheckpointLock = new(sync.Mutex)
			t.ckpt = newTaskCheckpoints(store, g, et.ID, d.Ack)
		}
	}
	if store != nil {
		d.trigger = func(id int64) {
			for _, t := range tasks {
				if t.source != nil {
					offer(t.ckpt.triggers, id)
				}
			}
		}
		d.complete = func(id int64) {
			for _, t := range tasks {
				offer(t.ckpt.completes, id)
			}
		}
	}
	if len(tasks) == 0 {
		return nil, fmt.Errorf("exec: no task of job %s is placed on %s", g.JobID, tm.cfg.ID)
	}
	// Inputs from other TaskManagers: register the receiving inboxes first.
	var receivers []*NetReceiver
	for id, t := range tasks {
		for _, ee := range g.Inputs(id) {
			if _, local := tasks[ee.From]; local {
				continue
			}
			if data == nil {
				return fail(fmt.Errorf("exec: task %s has an input from another TaskManager, and %s has no data server", t.tc.TaskName, tm.cfg.ID))
			}
			r, err := data.Register(EdgeChannelKey(g.RunID(), ee), t.inbox, t.tc.Alloc)
			if err != nil {
				return fail(err)
			}
			receivers = append(receivers, r)
		}
	}
	// Outputs: each sender's edge writers point at local inboxes or network channels.
	for id, t := range tasks {
		v := g.Job.Vertices[id.Vertex]
		for _, je := range g.Job.Outputs(v.ID) {
			w := &edgeWriter{part: je.Partition}
			for _, ee := range g.Outputs(id) {
				if ee.To.Vertex != je.To || ee.Input != je.Input {
					continue
				}
				if to, local := tasks[ee.To]; local {
					w.targets = append(w.targets, channel{inbox: to.inbox, input: ee.Input, channel: ee.Channel})
					continue
				}
				addr, ok := g.DataAddrs[g.Task(ee.To).Slot.TaskManager]
				if !ok {
					return fail(fmt.Errorf("exec: no data address for TaskManager %s", g.Task(ee.To).Slot.TaskManager))
				}
				ns := &lazySender{cfg: DialConfig{Addr: addr, LocalAddr: localAddr, Key: EdgeChannelKey(g.RunID(), ee), From: id, Alloc: t.tc.Alloc},
					metrics: t.tc.Metrics}
				t.net = append(t.net, ns)
				if g.NetTask(id, je.To, je.Input) != nil {
					nt := &netTask{inbox: make(chan Message, QueueCapacity), out: ns, done: make(chan struct{})}
					t.netTasks = append(t.netTasks, nt)
					w.targets = append(w.targets, nt)
				} else {
					w.targets = append(w.targets, ns)
				}
			}
			t.out.edges = append(t.out.edges, w)
		}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	d.cancel = cancel
	var (
		wg       sync.WaitGroup
		once     sync.Once
		finished atomic.Bool // every task has stopped
	)
	failTask := func(err error) {
		once.Do(func() {
			if ctx.Err() != nil {
				err = context.Cause(ctx) // a cancellation, not this task's own failure
			}
			d.err = err
			cancel(err)
		})
	}
	for _, t := range tasks {
		for _, nt := range t.netTasks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := nt.run(ctx); err != nil {
					failTask(err)
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := t.run(ctx)
			if err != nil {
				failTask(err) // also stops this task's network tasks
			}
			for _, nt := range t.netTasks {
				select { // the network tasks send what the task queued, end of stream last
				case <-nt.done:
				case <-ctx.Done():
				}
			}
			t.closeNet()
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
		for _, t := range tasks {
			t.drain()
		}
		if store != nil {
			store.Close()
		}
		close(d.done)
	}()
	return d, nil
}

// netTask is a network task of its own (NetworkOwn): the producing task queues
// messages for it as for a local channel, and its goroutine writes them to the
// network channel, ending after the end of stream.
type netTask struct {
	inbox chan Message
	out   *lazySender
	done  chan struct{} // closed when run returns
}

func (n *netTask) send(ctx context.Context, b Batch, s Signal) error {
	select {
	case n.inbox <- Message{Batch: b, Signal: s}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (n *netTask) run(ctx context.Context) error {
	defer close(n.done)
	defer drainInbox(n.inbox) // what a failure or cancellation left queued (and see streamTask.drain)
	for {
		var m Message
		select {
		case m = <-n.inbox:
		case <-ctx.Done():
			return nil
		}
		if err := n.out.send(ctx, m.Batch, m.Signal); err != nil {
			if m.IsData() {
				m.Batch.Rec.Release()
			}
			return err
		}
		if m.Signal.Kind == EndOfStream {
			return nil
		}
	}
}

// lazySender is the sending end of a network channel, connected when the task
// first sends: TaskManagers deploy a job's tasks in no particular order, and the
// receiving TaskManager waits a while for its side to be registered.
type lazySender struct {
	cfg     DialConfig
	metrics *TaskMetrics // NetBytesOut grows by what each send writes
	mu      sync.Mutex
	s       *NetSender
}

func (l *lazySender) send(ctx context.Context, b Batch, sig Signal) error {
	if l.s == nil {
		s, err := DialChannel(ctx, l.cfg)
		if err != nil {
			return err
		}
		l.mu.Lock()
		l.s = s
		l.mu.Unlock()
	}
	before := l.s.Stats().Bytes.Load()
	err := l.s.send(ctx, b, sig)
	l.metrics.NetBytesOut.Add(l.s.Stats().Bytes.Load() - before)
	return err
}

// close closes the connection if it was made; safe from any goroutine.
func (l *lazySender) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.s != nil {
		l.s.Close()
	}
}

// buildTask builds the operators of one task and its inbox; the output edges are
// wired by Deploy once every task exists.
func (tm *TaskManager) buildTask(g *ExecutionGraph, et *ExecTask, results ResultSink) (*streamTask, error) {
	v := g.Job.Vertices[et.ID.Vertex]
	metrics := &TaskMetrics{}
	t := &streamTask{
		tc: &TaskContext{
			JobID:       g.JobID,
			TaskName:    et.Name,
			Subtask:     et.ID.Subtask,
			Parallelism: et.Parallelism,
			Alloc:       tm.cfg.Alloc,
			Log:         tm.cfg.Log.With("job", g.JobID, "task", et.Name),
			Results:     results,
			Metrics:     metrics,
		},
		out: &outputCollector{mem: tm.cfg.Alloc, metrics: metrics},
	}
	chain := v.Chain
	if v.IsSource() {
		src, err := tm.newSource(chain[0])
		if err != nil {
			return nil, err
		}
		t.source = src
		chain = chain[1:]
	} else {
		for _, e := range g.Inputs(et.ID) {
			for len(t.channels) <= e.Input {
				t.channels = append(t.channels, 0)
			}
			t.channels[e.Input]++
		}
		t.inbox = make(chan Message, QueueCapacity)
	}
	for _, spec := range chain {
		var (
			op  Operator
			err error
		)
		switch spec.Kind {
		case "sink":
			var c ConnectorSpec
			if c, err = decodeConnector(spec); err == nil {
				op, err = tm.cfg.Registry.NewSink(c)
			}
			if err == nil {
				op = &countingSink{Operator: op, metrics: metrics}
			}
		case "view":
			var v *viewOp
			if v, err = newViewOp(spec); err == nil {
				op, t.view = v, v.state
			}
		default:
			op, err = tm.cfg.Registry.NewOperator(spec)
		}
		if err != nil {
			return nil, fmt.Errorf("task %s: %w", et.Name, err)
		}
		t.chain = append(t.chain, op)
	}
	if t.source == nil && len(t.chain) == 0 {
		return nil, fmt.Errorf("exec: vertex %s has neither a source nor an operator", v.Name)
	}
	return t, nil
}

func (tm *TaskManager) newSource(spec OperatorSpec) (Source, error) {
	switch spec.Kind {
	case "values":
		return newValuesSource(spec)
	case "snapshot":
		return newSnapshotSource(spec)
	}
	c, err := decodeConnector(spec)
	if err != nil {
		return nil, err
	}
	return tm.cfg.Registry.NewSource(c)
}

// countingSink counts the rows a connector's sink takes, for SHOW PROCESSLIST
// and EXPLAIN ANALYZE. It passes checkpoints on to the sink.
type countingSink struct {
	Operator
	metrics *TaskMetrics
}

var (
	_ Checkpointed       = (*countingSink)(nil)
	_ CheckpointListener = (*countingSink)(nil)
)

func (s *countingSink) SnapshotState(ctx context.Context, id int64) ([]byte, error) {
	if c, ok := s.Operator.(Checkpointed); ok {
		return c.SnapshotState(ctx, id)
	}
	return nil, nil
}

func (s *countingSink) RestoreState(ctx context.Context, data []byte) error {
	if c, ok := s.Operator.(Checkpointed); ok {
		return c.RestoreState(ctx, data)
	}
	return nil
}

func (s *countingSink) NotifyCheckpointComplete(ctx context.Context, id int64) error {
	if l, ok := s.Operator.(CheckpointListener); ok {
		return l.NotifyCheckpointComplete(ctx, id)
	}
	return nil
}

func (s *countingSink) ProcessBatch(ctx context.Context, input int, b Batch, out Collector) error {
	if err := s.Operator.ProcessBatch(ctx, input, b, out); err != nil {
		return err
	}
	s.metrics.SinkRows.Add(int64(b.NumRows()))
	return nil
}
