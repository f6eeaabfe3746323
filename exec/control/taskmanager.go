package control

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/network"
	"github.com/hummer-db/hummer/exec/taskmanager"
)

// TaskManagerConfig configures a TaskManager process's side of the control plane.
type TaskManagerConfig struct {
	// JobManager is the JobManager's RPC address (host:port).
	JobManager string
	// TM runs the deployed tasks; its ID should be its data address.
	TM *taskmanager.TaskManager
	// Code gives an error its SQLSTATE, so a task's failure reaches the client
	// with the code it would have had in local mode.
	Code func(error) string
	// Registered, when set, is told true once the JobManager has answered
	// Register and false when that session ends: the TaskManager's readiness.
	Registered func(bool)
	Log        *slog.Logger
}

// RunTaskManager connects to the JobManager, registers and serves deployments
// until ctx is cancelled. When the JobManager goes away it cancels the tasks it
// runs and connects again, with backoff.
func RunTaskManager(ctx context.Context, cfg TaskManagerConfig) error {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Code == nil {
		cfg.Code = func(error) string { return "XX000" }
	}
	host, _, err := net.SplitHostPort(cfg.JobManager)
	if err != nil {
		return fmt.Errorf("control: --jobmanager %q: %w", cfg.JobManager, err)
	}
	useJSON()
	conn, err := grpc.NewClient(cfg.JobManager, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	backoff := 100 * time.Millisecond
	for {
		started := time.Now()
		err := serveSession(ctx, cfg, conn, host)
		if ctx.Err() != nil {
			return nil
		}
		cfg.Log.Warn("session with the JobManager ended; reconnecting", "err", err, "in", backoff)
		if time.Since(started) > 10*time.Second {
			backoff = 100 * time.Millisecond
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return nil
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// agent is one Session of a TaskManager with the JobManager.
type agent struct {
	cfg        TaskManagerConfig
	stream     grpc.ClientStream
	sendMu     sync.Mutex
	resultHost string

	mu   sync.Mutex
	jobs map[string]*exec.Deployment
	wg   sync.WaitGroup
}

func serveSession(ctx context.Context, cfg TaskManagerConfig, conn *grpc.ClientConn, jmHost string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := openSession(ctx, conn)
	if err != nil {
		return err
	}
	a := &agent{cfg: cfg, stream: stream, resultHost: jmHost, jobs: map[string]*exec.Deployment{}}
	defer a.stopAll()
	if err := a.send(&FromTaskManager{Register: &Register{
		ID: cfg.TM.ID(), Slots: len(cfg.TM.Slots()), DataAddrs: cfg.TM.DataAddrs(),
	}}); err != nil {
		return err
	}
	var first FromJobManager
	if err := stream.RecvMsg(&first); err != nil {
		return err
	}
	if first.Registered == nil {
		return errors.New("control: the JobManager did not answer Register")
	}
	reg := first.Registered
	cfg.Log.Info("registered with the JobManager", "jobmanager", cfg.JobManager)
	if cfg.Registered != nil {
		cfg.Registered(true)
		defer cfg.Registered(false)
	}
	go func() {
		t := time.NewTicker(time.Duration(reg.HeartbeatMillis) * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				if err := a.send(&FromTaskManager{Heartbeat: a.heartbeat()}); err != nil {
					cancel()
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	for {
		m := new(FromJobManager)
		if err := stream.RecvMsg(m); err != nil {
			return err
		}
		switch {
		case m.Deploy != nil:
			a.deploy(ctx, m.Deploy, net.JoinHostPort(a.resultHost, reg.ResultPort))
		case m.Checkpoint != nil:
			a.mu.Lock()
			d := a.jobs[m.Checkpoint.JobID]
			a.mu.Unlock()
			if d != nil {
				if m.Checkpoint.Trigger != 0 {
					d.TriggerCheckpoint(m.Checkpoint.Trigger)
				}
				if m.Checkpoint.Complete != 0 {
					d.CheckpointComplete(m.Checkpoint.Complete)
				}
			}
		case m.ReadView != nil:
			a.mu.Lock()
			d := a.jobs[m.ReadView.JobID]
			a.mu.Unlock()
			go func() { // a snapshot of a big view takes a while: not on the receive loop
				v := &ViewData{Request: m.ReadView.Request, NoView: true}
				if d != nil {
					data, err := d.ReadView(m.ReadView.Now)
					switch {
					case errors.Is(err, exec.ErrNoView):
					case errors.Is(err, exec.ErrViewNotReady):
						v.NoView, v.NotReady = false, true
					case err != nil:
						v.NoView, v.Error = false, err.Error()
					default:
						v.NoView, v.Data = false, data
					}
				}
				a.send(&FromTaskManager{ViewData: v})
			}()
		case m.Cancel != nil:
			a.mu.Lock()
			d := a.jobs[m.Cancel.JobID]
			a.mu.Unlock()
			if d != nil {
				d.Cancel(fmt.Errorf("%w: %s", exec.ErrJobCancelled, m.Cancel.Reason))
			}
		}
	}
}

func (a *agent) send(m *FromTaskManager) error {
	a.sendMu.Lock()
	defer a.sendMu.Unlock()
	return a.stream.SendMsg(m)
}

// deploy starts the tasks, answers the JobManager, and reports when they stop.
func (a *agent) deploy(ctx context.Context, m *Deploy, resultAddr string) {
	sink := &netResultSink{cfg: network.DialConfig{Addr: resultAddr, Key: m.ResultKey}}
	d, err := a.cfg.TM.Deploy(context.WithoutCancel(ctx), m.Graph, sink)
	if err != nil {
		a.send(&FromTaskManager{DeployAck: &DeployAck{Request: m.Request, Error: err.Error(), Code: a.cfg.Code(err)}})
		return
	}
	a.mu.Lock()
	a.jobs[m.Graph.RunID()] = d
	a.mu.Unlock()
	a.send(&FromTaskManager{DeployAck: &DeployAck{Request: m.Request}})
	// The tasks' checkpoint answers go to the JobManager, the last ones (that
	// tasks ended) before JobDone: the JobManager forgets the deployment at
	// JobDone, and the job's checkpoints wait for every task's answer.
	acksSent := make(chan struct{})
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer close(acksSent)
		send := func(ack exec.CheckpointAck) {
			a.send(&FromTaskManager{CheckpointAck: &CheckpointAck{JobID: m.Graph.RunID(), Ack: ack}})
		}
		for {
			select {
			case ack := <-d.Acks():
				send(ack)
			case <-d.Done():
				for {
					select {
					case ack := <-d.Acks():
						send(ack)
					default:
						return
					}
				}
			}
		}
	}()
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		<-d.Done()
		<-acksSent
		err := d.Err()
		if err == nil {
			err = sink.end(ctx)
		}
		sink.close()
		a.mu.Lock()
		delete(a.jobs, m.Graph.RunID())
		a.mu.Unlock()
		done := &JobDone{JobID: m.Graph.RunID(), Metrics: countersOf(d.Metrics())}
		if view, err := d.ReadView(true); err == nil {
			done.View = view
		}
		if err != nil {
			done.Error, done.Code = err.Error(), a.cfg.Code(err)
			done.Cancelled = errors.Is(err, exec.ErrJobCancelled)
		}
		a.send(&FromTaskManager{JobDone: done})
	}()
}

// heartbeat reports the counters of the running jobs' tasks.
func (a *agent) heartbeat() *Heartbeat {
	a.mu.Lock()
	defer a.mu.Unlock()
	h := &Heartbeat{}
	for id, d := range a.jobs {
		if h.Jobs == nil {
			h.Jobs = map[string][]TaskCounters{}
		}
		h.Jobs[id] = countersOf(d.Metrics())
	}
	return h
}

// stopAll cancels every running deployment (the JobManager is gone) and waits
// for them to stop.
func (a *agent) stopAll() {
	a.mu.Lock()
	for _, d := range a.jobs {
		d.Cancel(fmt.Errorf("%w: the JobManager went away", exec.ErrJobCancelled))
	}
	a.mu.Unlock()
	a.wg.Wait()
}

// netResultSink sends the rows of this TaskManager's result tasks to the
// JobManager over one network channel, which the first row (or the end) opens.
type netResultSink struct {
	cfg network.DialConfig
	mu  sync.Mutex
	s   *network.Sender
	err error
}

var _ exec.ResultSink = (*netResultSink)(nil)

// sender returns the connected channel. Lock should be held.
func (r *netResultSink) sender(ctx context.Context) (*network.Sender, error) {
	if r.s == nil && r.err == nil {
		r.s, r.err = network.Dial(ctx, r.cfg)
	}
	return r.s, r.err
}

func (r *netResultSink) Send(ctx context.Context, _ string, b exec.Batch) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, err := r.sender(ctx)
	if err != nil {
		return err
	}
	return s.Send(ctx, b, exec.Signal{})
}

// end sends the channel's end of stream, after every result task finished.
func (r *netResultSink) end(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, err := r.sender(ctx)
	if err != nil {
		return err
	}
	return s.Send(ctx, exec.Batch{}, exec.Signal{Kind: exec.EndOfStream})
}

func (r *netResultSink) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.s != nil {
		r.s.Close()
	}
}
