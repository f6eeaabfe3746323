package control

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/jobmanager"
	"github.com/hummer-db/hummer/exec/network"
)

// JobManagerConfig configures the JobManager's side of the control plane.
type JobManagerConfig struct {
	// JM is the JobManager the registered TaskManagers are added to.
	JM *jobmanager.JobManager
	// Data receives the rows of result tasks from the TaskManagers.
	Data *network.Server
	// HeartbeatInterval is how often TaskManagers send heartbeats (default 500ms);
	// a TaskManager silent for HeartbeatTimeout (default 3s) is declared lost and
	// its jobs fail.
	HeartbeatInterval, HeartbeatTimeout time.Duration
	Log                                 *slog.Logger
}

// JobManagerServer accepts TaskManagers: each opens a Session stream, registers,
// heartbeats and takes deployments over it. A TaskManager whose stream breaks or
// that stops heartbeating is removed and its jobs fail with a clear status.
type JobManagerServer struct {
	cfg  JobManagerConfig
	grpc *grpc.Server

	mu      sync.Mutex
	jobRefs map[string]int // deployments of each job still running on TaskManagers
}

// NewJobManagerServer returns a server; call Serve.
func NewJobManagerServer(cfg JobManagerConfig) *JobManagerServer {
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = 500 * time.Millisecond
	}
	if cfg.HeartbeatTimeout <= 0 {
		cfg.HeartbeatTimeout = 3 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	useJSON()
	s := &JobManagerServer{cfg: cfg, grpc: grpc.NewServer(), jobRefs: map[string]int{}}
	s.grpc.RegisterService(&jobManagerService, s)
	return s
}

// Serve accepts TaskManagers on ln until Close.
func (s *JobManagerServer) Serve(ln net.Listener) error { return s.grpc.Serve(ln) }

// Close stops the server and ends every Session.
func (s *JobManagerServer) Close() { s.grpc.Stop() }

// session serves one TaskManager for as long as it stays.
func (s *JobManagerServer) session(stream grpc.ServerStream) error {
	var first FromTaskManager
	if err := stream.RecvMsg(&first); err != nil {
		return err
	}
	if first.Register == nil || first.Register.ID == "" || first.Register.Slots < 1 {
		return errors.New("control: a session must start with a Register")
	}
	_, port, err := net.SplitHostPort(s.cfg.Data.Addr().String())
	if err != nil {
		return err
	}
	w := &remoteWorker{
		srv: s, reg: *first.Register, stream: stream,
		acks: map[int]chan *DeployAck{}, views: map[int]chan *ViewData{}, done: map[string]chan *JobDone{},
		running: map[string]map[exec.TaskID]*exec.TaskMetrics{}, deployed: map[string]*exec.Deployment{},
		lost: make(chan struct{}),
	}
	if err := w.send(&FromJobManager{Registered: &Registered{
		HeartbeatMillis: int(s.cfg.HeartbeatInterval / time.Millisecond), ResultPort: port,
	}}); err != nil {
		return err
	}
	log := s.cfg.Log.With("tm", w.reg.ID)
	log.Info("TaskManager registered", "slots", w.reg.Slots)
	s.cfg.JM.AddTaskManager(w)
	defer func() {
		s.cfg.JM.RemoveTaskManager(w.reg.ID)
		close(w.lost)
	}()

	msgs := make(chan *FromTaskManager)
	recvErr := make(chan error, 1)
	go func() {
		for {
			m := new(FromTaskManager)
			if err := stream.RecvMsg(m); err != nil {
				recvErr <- err
				return
			}
			select {
			case msgs <- m:
			case <-w.lost:
				return
			}
		}
	}()
	timer := time.NewTimer(s.cfg.HeartbeatTimeout)
	defer timer.Stop()
	for {
		select {
		case m := <-msgs:
			timer.Reset(s.cfg.HeartbeatTimeout)
			w.handle(m)
		case err := <-recvErr:
			w.fail(fmt.Errorf("TaskManager %s lost: %v", w.reg.ID, err))
			log.Warn("TaskManager lost", "err", err)
			return nil
		case <-timer.C:
			err := fmt.Errorf("TaskManager %s lost: no heartbeat for %s", w.reg.ID, s.cfg.HeartbeatTimeout)
			w.fail(err)
			log.Warn("TaskManager lost", "err", err)
			return err
		}
	}
}

// jobStarted and jobEnded count a job's deployments on TaskManagers; when the
// last ends, the result channels of the job are closed on the data server.
func (s *JobManagerServer) jobStarted(job string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.jobRefs[job]++
}

func (s *JobManagerServer) jobEnded(job string) {
	s.mu.Lock()
	s.jobRefs[job]--
	last := s.jobRefs[job] <= 0
	if last {
		delete(s.jobRefs, job)
	}
	s.mu.Unlock()
	if last {
		s.cfg.Data.CloseJob(job)
	}
}

// remoteWorker is a TaskManager in another process, as the JobManager sees it.
type remoteWorker struct {
	srv    *JobManagerServer
	reg    Register
	stream grpc.ServerStream
	sendMu sync.Mutex

	mu     sync.Mutex
	nextID int
	acks   map[int]chan *DeployAck
	views  map[int]chan *ViewData
	done   map[string]chan *JobDone
	// running holds the task counters of the deployments still running, by
	// job, which heartbeats update.
	running map[string]map[exec.TaskID]*exec.TaskMetrics
	// deployed holds the running deployments by RunID, for checkpoint acks.
	deployed map[string]*exec.Deployment
	lost     chan struct{} // closed when the session ends
	err      error         // why the session ended; set before lost closes
}

var _ jobmanager.Worker = (*remoteWorker)(nil)

func (w *remoteWorker) ID() string                   { return w.reg.ID }
func (w *remoteWorker) DataAddrs() map[string]string { return w.reg.DataAddrs }

func (w *remoteWorker) Slots() []exec.SlotRef {
	s := make([]exec.SlotRef, w.reg.Slots)
	for i := range s {
		s[i] = exec.SlotRef{TaskManager: w.reg.ID, Index: i}
	}
	return s
}

func (w *remoteWorker) send(m *FromJobManager) error {
	w.sendMu.Lock()
	defer w.sendMu.Unlock()
	return w.stream.SendMsg(m)
}

func (w *remoteWorker) handle(m *FromTaskManager) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case m.DeployAck != nil:
		if ch, ok := w.acks[m.DeployAck.Request]; ok {
			ch <- m.DeployAck
			delete(w.acks, m.DeployAck.Request)
		}
	case m.JobDone != nil:
		if ch, ok := w.done[m.JobDone.JobID]; ok {
			ch <- m.JobDone
			delete(w.done, m.JobDone.JobID)
		}
	case m.ViewData != nil:
		if ch, ok := w.views[m.ViewData.Request]; ok {
			ch <- m.ViewData
			delete(w.views, m.ViewData.Request)
		}
	case m.CheckpointAck != nil:
		if d, ok := w.deployed[m.CheckpointAck.JobID]; ok {
			d.Ack(m.CheckpointAck.Ack)
		}
	case m.Heartbeat != nil:
		for job, cs := range m.Heartbeat.Jobs {
			if ms, ok := w.running[job]; ok {
				storeCounters(ms, cs)
			}
		}
	}
}

// fail ends every deployment still waiting on this TaskManager.
func (w *remoteWorker) fail(err error) {
	// Out of the schedule first, so that the jobs restarting from this failure
	// are not placed here again.
	w.srv.cfg.JM.RemoveTaskManager(w.reg.ID)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.err = err
	for job, ch := range w.done {
		ch <- &JobDone{JobID: job, Error: err.Error(), Code: "58000"} // system_error
		delete(w.done, job)
	}
}

// readView asks the TaskManager for the rows of job run's view task.
func (w *remoteWorker) readView(run string, now bool) ([]byte, error) {
	ch := make(chan *ViewData, 1)
	w.mu.Lock()
	w.nextID++
	req := w.nextID
	w.views[req] = ch
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.views, req)
		w.mu.Unlock()
	}()
	if err := w.send(&FromJobManager{ReadView: &ReadView{Request: req, JobID: run, Now: now}}); err != nil {
		return nil, err
	}
	select {
	case v := <-ch:
		switch {
		case v.NoView:
			return nil, exec.ErrNoView
		case v.NotReady:
			return nil, exec.ErrViewNotReady
		case v.Error != "":
			return nil, errors.New(v.Error)
		}
		return v.Data, nil
	case <-w.lost:
		return nil, w.err
	case <-time.After(30 * time.Second):
		return nil, fmt.Errorf("TaskManager %s did not send the view's rows within 30s", w.reg.ID)
	}
}

// resultChannel names the channel the TaskManager sends its result rows on: one
// per TaskManager of the job, numbered by the TaskManager's place in the sorted
// list of the job's TaskManagers.
func resultChannel(g *exec.ExecutionGraph, tm string) network.ChannelKey {
	var ids []string
	for id := range g.DataAddrs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return network.ChannelKey{JobID: g.RunID(), To: exec.TaskID{Vertex: -1, Subtask: sort.SearchStrings(ids, tm)}}
}

// Deploy sends the TaskManager its tasks of g and returns once they started. Rows
// of its result tasks arrive on a network channel to the JobManager's data
// server and go on to results; the deployment ends when the TaskManager reports
// the job done and that channel has ended.
func (w *remoteWorker) Deploy(ctx context.Context, g *exec.ExecutionGraph, results exec.ResultSink) (*exec.Deployment, error) {
	key := resultChannel(g, w.reg.ID)
	inbox := make(chan exec.Message, exec.QueueCapacity)
	recv, err := w.srv.cfg.Data.Register(key, inbox, nil)
	if err != nil {
		return nil, err
	}
	run := g.RunID()
	w.srv.jobStarted(run)
	fwdCtx, stopFwd := context.WithCancelCause(context.Background())
	var tasks []exec.TaskID
	for _, et := range g.Tasks {
		if et.Slot.TaskManager == w.reg.ID {
			tasks = append(tasks, et.ID)
		}
	}
	d, finish := exec.NewDeployment(func(cause error) {
		stopFwd(cause)
		w.send(&FromJobManager{Cancel: &Cancel{JobID: run, Reason: cause.Error()}})
	}, tasks)
	d.OnCheckpoint(
		func(id int64) { w.send(&FromJobManager{Checkpoint: &Checkpoint{JobID: run, Trigger: id}}) },
		func(id int64) { w.send(&FromJobManager{Checkpoint: &Checkpoint{JobID: run, Complete: id}}) })
	var finalView []byte // the view's rows once the tasks ended
	var viewMu sync.Mutex
	ended := false
	d.OnReadView(func(now bool) ([]byte, error) {
		viewMu.Lock()
		if ended {
			defer viewMu.Unlock()
			if finalView == nil {
				return nil, exec.ErrNoView
			}
			return finalView, nil
		}
		viewMu.Unlock()
		return w.readView(run, now)
	})

	// The deployment is in deployed before the TaskManager hears of it: a
	// task that ends at once (a restored ended task) sends its answer right
	// behind the DeployAck, and handle would drop an answer for a deployment
	// it does not know, leaving every checkpoint waiting for that task.
	ack := make(chan *DeployAck, 1)
	done := make(chan *JobDone, 1)
	w.mu.Lock()
	w.nextID++
	req := w.nextID
	w.acks[req] = ack
	w.done[run] = done
	w.running[run] = d.Metrics()
	w.deployed[run] = d
	w.mu.Unlock()
	abandon := func(err error) (*exec.Deployment, error) {
		w.mu.Lock()
		delete(w.acks, req)
		delete(w.done, run)
		delete(w.running, run)
		delete(w.deployed, run)
		w.mu.Unlock()
		stopFwd(err)
		w.srv.jobEnded(run)
		return nil, err
	}
	if err := w.send(&FromJobManager{Deploy: &Deploy{Request: req, Graph: g, ResultKey: key}}); err != nil {
		return abandon(fmt.Errorf("deploying to TaskManager %s: %w", w.reg.ID, err))
	}
	select {
	case a := <-ack:
		if a.Error != "" {
			return abandon(&RemoteError{Msg: a.Error, Code: a.Code})
		}
	case <-w.lost:
		return abandon(w.err)
	case <-ctx.Done():
		return abandon(context.Cause(ctx))
	case <-time.After(30 * time.Second):
		return abandon(fmt.Errorf("TaskManager %s did not answer a deployment within 30s", w.reg.ID))
	}

	fwdErr := make(chan error, 1)
	go func() { fwdErr <- forwardResults(fwdCtx, run, inbox, recv, results) }()
	go func() {
		jd := <-done
		w.mu.Lock()
		delete(w.running, run)
		delete(w.deployed, run)
		w.mu.Unlock()
		storeCounters(d.Metrics(), jd.Metrics)
		viewMu.Lock()
		finalView, ended = jd.View, true
		viewMu.Unlock()
		var err error
		if jd.Error != "" {
			err = &RemoteError{Msg: jd.Error, Code: jd.Code}
			if jd.Cancelled {
				err = fmt.Errorf("%w: %s", exec.ErrJobCancelled, jd.Error)
			}
			stopFwd(err)
		}
		if ferr := <-fwdErr; err == nil {
			err = ferr
		}
		stopFwd(nil)
		w.srv.jobEnded(run)
		finish(err)
	}()
	return d, nil
}

// forwardResults hands the rows arriving on a result channel to results, until
// the channel's end of stream.
func forwardResults(ctx context.Context, job string, inbox chan exec.Message, recv *network.Receiver, results exec.ResultSink) error {
	deliver := func(m exec.Message) (end bool, err error) {
		if m.IsData() {
			err = results.Send(ctx, job, m.Batch)
			m.Batch.Rec.Release()
			return false, err
		}
		return m.Signal.Kind == exec.EndOfStream, nil
	}
	drain := func() {
		for {
			select {
			case m := <-inbox:
				if m.IsData() {
					m.Batch.Rec.Release()
				}
			default:
				return
			}
		}
	}
	for {
		select {
		case m := <-inbox:
			end, err := deliver(m)
			if err != nil {
				drain()
				return err
			}
			if end {
				return nil
			}
		case <-recv.Done():
			// The receiver pushed everything it read before it ended.
			for {
				select {
				case m := <-inbox:
					end, err := deliver(m)
					if err != nil || end {
						drain()
						return err
					}
					continue
				default:
				}
				break
			}
			if err := recv.Err(); err != nil {
				return err
			}
			return errors.New("control: result channel ended without end of stream")
		case <-ctx.Done():
			// Whatever still arrives is released until the receiver stops (at the
			// latest when the job's channels are closed on the data server).
			go func() {
				for {
					select {
					case m := <-inbox:
						if m.IsData() {
							m.Batch.Rec.Release()
						}
					case <-recv.Done():
						drain()
						return
					}
				}
			}()
			return context.Cause(ctx)
		}
	}
}
