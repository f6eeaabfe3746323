package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/jobmanager"
	"github.com/hummer-db/hummer/session"
)

// The JSON API the dashboard polls (a JobManager's endpoint only):
//
//	GET  /api/overview          the cluster and its jobs
//	GET  /api/jobs/{id}         one job: its graph, tasks, checkpoints
//	POST /api/jobs/{id}/cancel  KILL the job
//	POST /api/explain           EXPLAIN a query ({"sql": "..."}), its three graphs as text
//
// Counters are totals; the dashboard turns two polls into rates. Times are
// milliseconds since the epoch, durations milliseconds, watermarks
// microseconds since the epoch (as the runtime keeps them).

// overviewJSON is GET /api/overview.
type overviewJSON struct {
	Now          int64      `json:"now_ms"`
	Started      int64      `json:"started_ms"`
	TaskManagers []tmJSON   `json:"taskmanagers"`
	Jobs         []jobBrief `json:"jobs"`
}

type tmJSON struct {
	ID    string `json:"id"`
	Slots []bool `json:"slots"` // busy, by slot index
}

// jobBrief is a job as the overview lists it: SHOW PROCESSLIST's main columns.
type jobBrief struct {
	ID         string `json:"id"`
	Statement  string `json:"statement"`
	State      string `json:"state"`
	Started    int64  `json:"started_ms"`
	Ended      int64  `json:"ended_ms,omitempty"` // 0 while it runs
	RowsIn     int64  `json:"rows_in"`
	RowsOut    int64  `json:"rows_out"`
	Restarts   int    `json:"restarts"`
	Checkpoint int64  `json:"checkpoint"`
	// Error is why the job failed, or why it is restarting or waiting.
	Error string `json:"error,omitempty"`
	// Watermark is the least of the tasks' (microseconds), 0 for none.
	Watermark int64 `json:"watermark_us,omitempty"`
}

// jobJSON is GET /api/jobs/{id}.
type jobJSON struct {
	jobBrief
	Attempt     int            `json:"attempt"`
	Checkpoints checkpointJSON `json:"checkpoints"`
	History     []recordJSON   `json:"checkpoint_history"`
	Vertices    []vertexJSON   `json:"vertices"`
	Edges       []edgeJSON     `json:"edges"`
	BadRecords  int64          `json:"bad_records"`
	LateRows    int64          `json:"late_rows"`
}

type checkpointJSON struct {
	Completed    int64   `json:"completed"`
	Failed       int64   `json:"failed"`
	Last         int64   `json:"last"`
	RestoredFrom int64   `json:"restored_from"`
	LastMillis   float64 `json:"last_ms"`
	LastBytes    int64   `json:"last_bytes"`
	LastFailure  string  `json:"last_failure,omitempty"`
}

type recordJSON struct {
	ID      int64   `json:"id"`
	Started int64   `json:"started_ms"`
	Millis  float64 `json:"duration_ms"`
	Bytes   int64   `json:"bytes"`
	Align   float64 `json:"alignment_ms"`
	Failure string  `json:"failure,omitempty"`
}

type vertexJSON struct {
	ID          int           `json:"id"`
	Name        string        `json:"name"`
	Operators   []string      `json:"operators"` // the fused chain, each as EXPLAIN labels it
	Parallelism int           `json:"parallelism"`
	Subtasks    []subtaskJSON `json:"subtasks"`
}

type subtaskJSON struct {
	Subtask      int    `json:"subtask"`
	TaskManager  string `json:"taskmanager"`
	Slot         int    `json:"slot"`
	RowsIn       int64  `json:"rows_in"`
	RowsOut      int64  `json:"rows_out"`
	BatchesIn    int64  `json:"batches_in"`
	BatchesOut   int64  `json:"batches_out"`
	NetBytesOut  int64  `json:"net_bytes_out"`
	BusyNanos    int64  `json:"busy_ns"`
	IdleNanos    int64  `json:"idle_ns"`
	BlockedNanos int64  `json:"backpressured_ns"`
	Queue        int    `json:"queue"`
	QueueCap     int    `json:"queue_capacity"`
	Watermark    int64  `json:"watermark_us,omitempty"`
	Status       string `json:"status,omitempty"`
	// OperatorRows are the rows each operator of the chain emitted, in
	// chain order.
	OperatorRows []int64 `json:"operator_rows_out"`
	// Lag is the consumer lag of the task's source over its partitions
	// (Kafka), -1 when it reports none.
	Lag int64 `json:"lag"`
}

// edgeJSON is a JobEdge: Kind is its partitioning (forward, hash[keys],
// rebalance, broadcast); Transport says how its channels go: "local" (queues
// in one TaskManager), "network" (some cross TaskManagers, sent by the
// producer) or "network task" (sent by network tasks of their own).
type edgeJSON struct {
	From      int    `json:"from"`
	To        int    `json:"to"`
	Input     int    `json:"input"`
	Kind      string `json:"kind"`
	Transport string `json:"transport"`
}

func (s *Server) overview(w http.ResponseWriter, r *http.Request) {
	eng := s.engine(w)
	if eng == nil {
		return
	}
	jm := eng.JobManager()
	busy := jm.BusySlots()
	out := overviewJSON{Now: time.Now().UnixMilli(), Started: s.started.UnixMilli(),
		TaskManagers: []tmJSON{}, Jobs: []jobBrief{}}
	for _, tm := range jm.TaskManagers() {
		t := tmJSON{ID: tm.ID(), Slots: []bool{}}
		for _, slot := range tm.Slots() {
			t.Slots = append(t.Slots, busy[slot])
		}
		out.TaskManagers = append(out.TaskManagers, t)
	}
	listed := map[string]bool{}
	for _, j := range jm.Jobs() {
		out.Jobs = append(out.Jobs, brief(j))
		listed[j.ID] = true
	}
	for _, wj := range eng.WaitingJobs() {
		if !listed[wj.ID] {
			out.Jobs = append(out.Jobs, jobBrief{ID: wj.ID, Statement: wj.Statement, State: string(jobmanager.JobWaitingForSlots),
				Started: wj.Since.UnixMilli(), Error: wj.Err.Error()})
		}
	}
	writeJSON(w, out)
}

// brief sums a job's counters as SHOW PROCESSLIST does.
func brief(j *jobmanager.Job) jobBrief {
	ck := j.Checkpoints()
	b := jobBrief{ID: j.ID, Statement: j.Statement, State: string(j.State()), Started: j.Started.UnixMilli(),
		Restarts: ck.Restarts, Checkpoint: ck.Last}
	if end := j.Ended(); !end.IsZero() {
		b.Ended = end.UnixMilli()
	}
	if err := j.Err(); err != nil {
		b.Error = err.Error()
	} else if err := j.Failure(); err != nil {
		b.Error = err.Error()
	}
	g := graphOf(j)
	for tid, m := range j.Metrics() {
		if g.Job.Vertices[tid.Vertex].IsSource() {
			b.RowsIn += m.RowsIn.Load()
		}
		b.RowsOut += m.SinkRows.Load()
		if w := m.Watermark.Load(); w > 0 && (b.Watermark == 0 || w < b.Watermark) {
			b.Watermark = w
		}
	}
	return b
}

// graphOf is the ExecutionGraph of the job's current attempt.
func graphOf(j *jobmanager.Job) *exec.ExecutionGraph {
	if g := j.Current(); g != nil {
		return g
	}
	return j.Graph
}

// findJob returns the job the path's {id} names, or answers 404.
func (s *Server) findJob(w http.ResponseWriter, r *http.Request) *jobmanager.Job {
	eng := s.engine(w)
	if eng == nil {
		return nil
	}
	id := r.PathValue("id")
	for _, j := range eng.JobManager().Jobs() {
		if j.ID == id {
			return j
		}
	}
	httpError(w, http.StatusNotFound, fmt.Sprintf("no job %s", id))
	return nil
}

func (s *Server) job(w http.ResponseWriter, r *http.Request) {
	j := s.findJob(w, r)
	if j == nil {
		return
	}
	g := graphOf(j)
	ck := j.Checkpoints()
	out := jobJSON{jobBrief: brief(j), Attempt: j.Attempt(), History: []recordJSON{}, Vertices: []vertexJSON{}, Edges: []edgeJSON{},
		Checkpoints: checkpointJSON{Completed: ck.Completed, Failed: ck.Failed, Last: ck.Last, RestoredFrom: ck.RestoredFrom,
			LastMillis: millis(ck.LastDuration), LastBytes: ck.LastBytes, LastFailure: ck.LastFailure}}
	for _, c := range j.CheckpointHistory() {
		out.History = append(out.History, recordJSON{ID: c.ID, Started: c.Started.UnixMilli(), Millis: millis(c.Duration),
			Bytes: c.Bytes, Align: millis(c.Align), Failure: c.Failure})
	}
	metrics := j.Metrics()
	for _, v := range g.Job.Vertices {
		vj := vertexJSON{ID: v.ID, Name: v.Name, Subtasks: []subtaskJSON{}}
		for _, op := range v.Chain {
			vj.Operators = append(vj.Operators, op.Label)
		}
		for _, t := range g.Tasks {
			if t.ID.Vertex != v.ID {
				continue
			}
			vj.Parallelism = t.Parallelism
			st := subtaskJSON{Subtask: t.ID.Subtask, TaskManager: t.Slot.TaskManager, Slot: t.Slot.Index, Lag: -1}
			if m := metrics[t.ID]; m != nil {
				st.RowsIn, st.RowsOut = m.RowsIn.Load(), m.RowsOut.Load()
				st.BatchesIn, st.BatchesOut = m.BatchesIn.Load(), m.BatchesOut.Load()
				st.NetBytesOut = m.NetBytesOut.Load()
				st.BusyNanos, st.IdleNanos, st.BlockedNanos = m.BusyNanos.Load(), m.IdleNanos.Load(), m.BackpressureNanos.Load()
				st.Queue, st.QueueCap = m.QueueFill()
				st.Watermark = max(m.Watermark.Load(), 0)
				st.Status = m.Status()
				st.OperatorRows = m.ChainRowsOut()
				if lags := m.Lags(); lags != nil {
					st.Lag = 0
					for _, n := range lags {
						st.Lag += n
					}
				}
				out.BadRecords += m.BadRecords.Load()
				out.LateRows += m.LateRows.Load()
			}
			vj.Subtasks = append(vj.Subtasks, st)
		}
		sort.Slice(vj.Subtasks, func(a, b int) bool { return vj.Subtasks[a].Subtask < vj.Subtasks[b].Subtask })
		out.Vertices = append(out.Vertices, vj)
	}
	for _, e := range g.Job.Edges {
		out.Edges = append(out.Edges, edgeJSON{From: e.From, To: e.To, Input: e.Input, Kind: e.Partition.String(),
			Transport: transport(g, e)})
	}
	writeJSON(w, out)
}

// transport says how the channels of JobEdge e go (edgeJSON.Transport).
func transport(g *exec.ExecutionGraph, e *exec.JobEdge) string {
	how := "local"
	for _, ee := range g.Edges {
		if ee.From.Vertex != e.From || ee.To.Vertex != e.To || ee.Input != e.Input {
			continue
		}
		if g.NetTask(ee.From, e.To, e.Input) != nil {
			return "network task"
		}
		from, to := g.Task(ee.From), g.Task(ee.To)
		if from != nil && to != nil && from.Slot.TaskManager != to.Slot.TaskManager {
			how = "network"
		}
	}
	return how
}

func (s *Server) cancelJob(w http.ResponseWriter, r *http.Request) {
	j := s.findJob(w, r)
	if j == nil {
		return
	}
	// KILL in a session of the user, so that it is authorised as in psql.
	if _, err := s.runSQL(r.Context(), s.eng.Load(), userOf(r), "KILL "+j.ID); err != nil {
		httpError(w, http.StatusForbidden, err.Error())
		return
	}
	writeJSON(w, map[string]string{"state": string(j.State())})
}

// explainRequest is the body of POST /api/explain.
type explainRequest struct {
	SQL string `json:"sql"`
}

func (s *Server) explain(w http.ResponseWriter, r *http.Request) {
	var req explainRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		httpError(w, http.StatusBadRequest, "want a JSON body {\"sql\": \"...\"}: "+err.Error())
		return
	}
	q := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(req.SQL), ";"))
	if q == "" {
		httpError(w, http.StatusBadRequest, "no query to explain")
		return
	}
	if !strings.HasPrefix(strings.ToUpper(q), "EXPLAIN") {
		q = "EXPLAIN " + q
	}
	eng := s.engine(w)
	if eng == nil {
		return
	}
	lines, err := s.runSQL(r.Context(), eng, userOf(r), q)
	if err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	writeJSON(w, map[string]string{"plan": strings.Join(lines, "\n")})
}

// runSQL runs one statement in a session of user ("" is the engine's own, with
// every privilege) and returns the first column of its rows as text.
func (s *Server) runSQL(ctx context.Context, eng *session.Engine, user, query string) ([]string, error) {
	var sess *session.Session
	if user == "" {
		sess = eng.NewSession()
	} else {
		sess = eng.NewUserSession(user)
	}
	defer sess.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var lines []string
	err := sess.Exec(ctx, query, func(res *session.Result) error {
		if res.Rows == nil {
			return nil
		}
		defer res.Rows.Close()
		for {
			b, err := res.Rows.Next(ctx)
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			if b.NumCols() > 0 {
				if col, ok := b.Column(0).(*array.String); ok {
					for i := 0; i < col.Len(); i++ {
						lines = append(lines, col.Value(i))
					}
				}
			}
			b.Release()
		}
	})
	return lines, err
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(v)
}

func httpError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
