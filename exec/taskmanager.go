package exec

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
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
	// Alloc is the allocator every task gets; nil means memory.DefaultAllocator.
	Alloc memory.Allocator
	Log   *slog.Logger
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
		cfg.Alloc = memory.DefaultAllocator
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
type Deployment struct {
	done    chan struct{}
	err     error // the first task failure; set before done closes
	cancel  context.CancelCauseFunc
	metrics map[TaskID]*TaskMetrics
}

// Done is closed when every task has stopped.
func (d *Deployment) Done() <-chan struct{} { return d.done }

// Err returns the first task failure, once Done is closed.
func (d *Deployment) Err() error { return d.err }

// Cancel stops every task with the given cause.
func (d *Deployment) Cancel(cause error) { d.cancel(cause) }

// Metrics returns each task's counters.
func (d *Deployment) Metrics() map[TaskID]*TaskMetrics { return d.metrics }

// Deploy builds the tasks of g placed on this TaskManager and starts them. Every
// task of g must be placed here (edges between TaskManagers need network tasks,
// which a local TaskManager does not build). If any operator fails to build,
// nothing starts. The tasks stop when they finish, fail, or ctx is cancelled.
func (tm *TaskManager) Deploy(ctx context.Context, g *ExecutionGraph, results ResultSink) (*Deployment, error) {
	tasks := map[TaskID]*streamTask{}
	d := &Deployment{done: make(chan struct{}), metrics: map[TaskID]*TaskMetrics{}}
	for _, et := range g.Tasks {
		if et.Slot.TaskManager != tm.cfg.ID {
			return nil, fmt.Errorf("exec: task %s is placed on %s, not on %s", et.Name, et.Slot.TaskManager, tm.cfg.ID)
		}
		t, err := tm.buildTask(g, et, results)
		if err != nil {
			for _, built := range tasks {
				built.close(ctx)
			}
			return nil, err
		}
		tasks[et.ID] = t
		d.metrics[et.ID] = t.tc.Metrics
	}
	// Wire the channels: each sender's edge writers point at the receivers' inboxes.
	for _, et := range g.Tasks {
		t := tasks[et.ID]
		v := g.Job.Vertices[et.ID.Vertex]
		for _, je := range g.Job.Outputs(v.ID) {
			w := &edgeWriter{part: je.Partition}
			for _, ee := range g.Outputs(et.ID) {
				if ee.To.Vertex != je.To || ee.Input != je.Input {
					continue
				}
				w.targets = append(w.targets, channel{inbox: tasks[ee.To].inbox, input: ee.Input, channel: ee.Channel})
			}
			t.out.edges = append(t.out.edges, w)
		}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	d.cancel = cancel
	var (
		wg   sync.WaitGroup
		once sync.Once
	)
	for _, t := range tasks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := t.run(ctx); err != nil {
				once.Do(func() {
					if ctx.Err() != nil {
						err = context.Cause(ctx) // a cancellation, not this task's own failure
					}
					d.err = err
					cancel(err)
				})
			}
		}()
	}
	go func() {
		wg.Wait()
		for _, t := range tasks {
			t.drain()
		}
		cancel(nil)
		close(d.done)
	}()
	return d, nil
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
		if spec.Kind == "sink" {
			var c ConnectorSpec
			if c, err = decodeConnector(spec); err == nil {
				op, err = tm.cfg.Registry.NewSink(c)
			}
		} else {
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
	if spec.Kind == "values" {
		return newValuesSource(spec)
	}
	c, err := decodeConnector(spec)
	if err != nil {
		return nil, err
	}
	return tm.cfg.Registry.NewSource(c)
}
