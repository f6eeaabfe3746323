package web

import (
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/hummer-db/hummer/exec/jobmanager"
)

// Metrics is a process's Prometheus registry, served at /metrics: the Go
// runtime's and the process's collectors; the PostgreSQL port's connections and
// statements once WatchPG has made their observer; and, once WatchJobs has named
// a JobManager, its cluster and jobs.
//
// Labels are bounded: a job's series carry its id (job_id: Prometheus keeps
// "job" for the scrape job's name), a task's also its vertex (index and
// name) and subtask; no label holds a key, a row or a client address. A job's
// series go when the JobManager forgets the job.
//
// Job and task series are read from the counters the runtime keeps anyway
// (exec.TaskMetrics, updated per batch) when Prometheus scrapes; only the
// checkpoint histograms and the PostgreSQL port's series are kept here.
type Metrics struct {
	reg *prometheus.Registry
}

// NewMetrics returns a registry with the runtime and process collectors.
func NewMetrics() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry returns the registry, for a caller adding its own collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// PGMetrics counts what the PostgreSQL port does: it is the wire server's
// Observer.
type PGMetrics struct {
	connsOpen  prometheus.Gauge
	connsTotal prometheus.Counter
	statements prometheus.Histogram
	errors     *prometheus.CounterVec
}

// WatchPG adds the PostgreSQL port's series, and returns what counts them.
func (m *Metrics) WatchPG() *PGMetrics {
	p := &PGMetrics{
		connsOpen: prometheus.NewGauge(prometheus.GaugeOpts{Name: "hummer_pg_connections",
			Help: "Open connections to the PostgreSQL port."}),
		connsTotal: prometheus.NewCounter(prometheus.CounterOpts{Name: "hummer_pg_connections_total",
			Help: "Connections accepted on the PostgreSQL port."}),
		statements: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "hummer_pg_statement_duration_seconds",
			Help:    "Time from a statement's start (a simple query or an Execute) to its last row sent.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hummer_pg_errors_total",
			Help: "Errors answered to clients, by SQLSTATE class (its first two characters)."}, []string{"class"}),
	}
	m.reg.MustRegister(p.connsOpen, p.connsTotal, p.statements, p.errors)
	return p
}

// Connection counts a connection opening or closing (wire.Observer).
func (p *PGMetrics) Connection(open bool) {
	if open {
		p.connsOpen.Inc()
		p.connsTotal.Inc()
	} else {
		p.connsOpen.Dec()
	}
}

// Statement observes a statement's time (wire.Observer).
func (p *PGMetrics) Statement(d time.Duration) { p.statements.Observe(d.Seconds()) }

// Error counts an error answered to a client (wire.Observer).
func (p *PGMetrics) Error(code string) {
	if len(code) >= 2 {
		code = code[:2]
	}
	p.errors.WithLabelValues(code).Inc()
}

// WatchJobs adds the cluster's and the jobs' series of jm.
func (m *Metrics) WatchJobs(jm *jobmanager.JobManager) {
	c := newJobCollector(jm)
	jm.OnCheckpoint(c.observe)
	m.reg.MustRegister(c)
}

// jobCollector makes the job, task and cluster series at each scrape from the
// JobManager's state.
type jobCollector struct {
	jm *jobmanager.JobManager
	// The checkpoint histograms are observed as checkpoints end
	// (JobManager.OnCheckpoint); Collect drops the series of forgotten jobs.
	ckDuration, ckSize *prometheus.HistogramVec
	mu                 sync.Mutex
	seen               map[string]bool // jobs with histogram series
}

func newJobCollector(jm *jobmanager.JobManager) *jobCollector {
	return &jobCollector{jm: jm, seen: map[string]bool{},
		ckDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "hummer_job_checkpoint_duration_seconds",
			Help:    "Time from a checkpoint's trigger to its completion (completed checkpoints).",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}}, []string{"job_id"}),
		ckSize: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "hummer_job_checkpoint_size_bytes",
			Help:    "State a completed checkpoint stored, over all tasks.",
			Buckets: prometheus.ExponentialBuckets(1024, 4, 12)}, []string{"job_id"}),
	}
}

// observe is the JobManager's checkpoint observer.
func (c *jobCollector) observe(j *jobmanager.Job, r jobmanager.CheckpointRecord) {
	if r.Failure != "" {
		return // counted by hummer_job_checkpoints_total
	}
	c.mu.Lock()
	c.seen[j.ID] = true
	c.mu.Unlock()
	c.ckDuration.WithLabelValues(j.ID).Observe(r.Duration.Seconds())
	c.ckSize.WithLabelValues(j.ID).Observe(float64(r.Bytes))
}

var (
	jobLabels  = []string{"job_id"}
	taskLabels = []string{"job_id", "vertex", "name", "subtask"}

	descTaskManagers = prometheus.NewDesc("hummer_taskmanagers", "TaskManagers registered with the JobManager.", nil, nil)
	descSlots        = prometheus.NewDesc("hummer_slots", "Task slots of the registered TaskManagers, busy (a running job has a task there) or free.", []string{"state"}, nil)

	descJobInfo       = prometheus.NewDesc("hummer_job_info", "A job the JobManager knows, with its state and statement (its first 120 characters).", []string{"job_id", "state", "statement"}, nil)
	descJobStart      = prometheus.NewDesc("hummer_job_start_time_seconds", "When the job was submitted, in seconds since the epoch.", jobLabels, nil)
	descJobIn         = prometheus.NewDesc("hummer_job_records_in_total", "Rows the job's sources read (SHOW PROCESSLIST's rows_in).", jobLabels, nil)
	descJobOut        = prometheus.NewDesc("hummer_job_records_out_total", "Rows the job's sinks wrote (SHOW PROCESSLIST's rows_out).", jobLabels, nil)
	descJobLate       = prometheus.NewDesc("hummer_job_late_rows_total", "Rows dropped because their window had closed.", jobLabels, nil)
	descJobBad        = prometheus.NewDesc("hummer_job_bad_records_total", "Malformed input records the job's sources skipped.", jobLabels, nil)
	descJobDead       = prometheus.NewDesc("hummer_job_dead_letters_total", "Malformed input records routed to a dead-letter destination.", jobLabels, nil)
	descJobRestarts   = prometheus.NewDesc("hummer_job_restarts_total", "Restarts of the job from a checkpoint.", jobLabels, nil)
	descJobCheckpoint = prometheus.NewDesc("hummer_job_checkpoints_total", "Checkpoints of the job, completed or failed.", []string{"job_id", "outcome"}, nil)
	descJobLastCk     = prometheus.NewDesc("hummer_job_last_checkpoint", "Id of the job's newest complete checkpoint.", jobLabels, nil)
	descJobWMLag      = prometheus.NewDesc("hummer_job_watermark_lag_seconds", "How far the job's watermark (the least of its tasks') is behind the wall clock.", jobLabels, nil)

	descTaskIn      = prometheus.NewDesc("hummer_task_records_in_total", "Rows into the task: read by its source, or taken from its inbox.", taskLabels, nil)
	descTaskOut     = prometheus.NewDesc("hummer_task_records_out_total", "Rows the task's chain emitted to its out edges.", taskLabels, nil)
	descTaskBIn     = prometheus.NewDesc("hummer_task_batches_in_total", "Batches into the task.", taskLabels, nil)
	descTaskBOut    = prometheus.NewDesc("hummer_task_batches_out_total", "Batches the task emitted.", taskLabels, nil)
	descTaskNetOut  = prometheus.NewDesc("hummer_task_network_bytes_out_total", "Bytes the task sent over network channels to other TaskManagers.", taskLabels, nil)
	descTaskSink    = prometheus.NewDesc("hummer_task_sink_records_total", "Rows the task's sink wrote.", taskLabels, nil)
	descTaskBusy    = prometheus.NewDesc("hummer_task_busy_seconds_total", "Time the task worked on its input (a source's reading included).", taskLabels, nil)
	descTaskIdle    = prometheus.NewDesc("hummer_task_idle_seconds_total", "Time the task waited on an empty inbox.", taskLabels, nil)
	descTaskBlocked = prometheus.NewDesc("hummer_task_backpressured_seconds_total", "Time the task was blocked on a full queue downstream.", taskLabels, nil)
	descTaskQueue   = prometheus.NewDesc("hummer_task_queue_length", "Messages waiting in the task's inbox.", taskLabels, nil)
	descTaskQueueC  = prometheus.NewDesc("hummer_task_queue_capacity", "Messages the task's inbox holds before its senders block.", taskLabels, nil)
	descTaskWMLag   = prometheus.NewDesc("hummer_task_watermark_lag_seconds", "How far the watermark the task last emitted is behind the wall clock.", taskLabels, nil)
	descOpOut       = prometheus.NewDesc("hummer_operator_records_out_total", "Rows an operator of a task's fused chain emitted (operator: its position in the chain, the source first).", append(taskLabels[:len(taskLabels):len(taskLabels)], "operator", "kind"), nil)
	descOpBusy      = prometheus.NewDesc("hummer_operator_busy_seconds_total", "Time an operator of a task's fused chain spent on its own work, not in the operators after it (operator: its position in the chain, the source first).", append(taskLabels[:len(taskLabels):len(taskLabels)], "operator", "kind"), nil)
	descSourceLag   = prometheus.NewDesc("hummer_source_consumer_lag_records", "Records a partition of the task's source (Kafka) holds past what the source fetched.", append(taskLabels[:len(taskLabels):len(taskLabels)], "partition"), nil)
	descTaskInfo    = prometheus.NewDesc("hummer_task_info", "Where a task of a running job runs.", []string{"job_id", "vertex", "name", "subtask", "taskmanager"}, nil)
)

// Describe sends nothing: the collector is unchecked, its series come and go
// with jobs.
func (c *jobCollector) Describe(chan<- *prometheus.Desc) {}

func (c *jobCollector) Collect(ch chan<- prometheus.Metric) {
	busy := c.jm.BusySlots()
	nBusy := 0
	for _, b := range busy {
		if b {
			nBusy++
		}
	}
	ch <- prometheus.MustNewConstMetric(descTaskManagers, prometheus.GaugeValue, float64(len(c.jm.TaskManagers())))
	ch <- prometheus.MustNewConstMetric(descSlots, prometheus.GaugeValue, float64(nBusy), "busy")
	ch <- prometheus.MustNewConstMetric(descSlots, prometheus.GaugeValue, float64(len(busy)-nBusy), "free")

	now := time.Now()
	known := map[string]bool{}
	for _, j := range c.jm.Jobs() {
		known[j.ID] = true
		collectJob(ch, j, now)
	}
	c.mu.Lock()
	for job := range c.seen {
		if !known[job] { // forgotten: its histograms go after their last scrape
			c.ckDuration.DeleteLabelValues(job)
			c.ckSize.DeleteLabelValues(job)
			delete(c.seen, job)
		}
	}
	c.mu.Unlock()
	c.ckDuration.Collect(ch)
	c.ckSize.Collect(ch)
}

// collectJob sends the series of one job and its tasks.
func collectJob(ch chan<- prometheus.Metric, j *jobmanager.Job, now time.Time) {
	id := j.ID
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(descJobInfo, 1, id, string(j.State()), truncate(j.Statement, 120))
	gauge(descJobStart, float64(j.Started.UnixMilli())/1e3, id)
	ck := j.Checkpoints()
	counter(descJobRestarts, int64(ck.Restarts), id)
	counter(descJobCheckpoint, ck.Completed, id, "completed")
	counter(descJobCheckpoint, ck.Failed, id, "failed")
	if ck.Last > 0 {
		gauge(descJobLastCk, float64(ck.Last), id)
	}

	g := j.Current()
	if g == nil {
		g = j.Graph
	}
	var in, out, late, bad, dead int64
	wm := int64(-1)
	for tid, m := range j.Metrics() {
		v := g.Job.Vertices[tid.Vertex]
		// The sums are SHOW PROCESSLIST's (session/jobs.go showJobs).
		if v.IsSource() {
			in += m.RowsIn.Load()
		}
		out += m.SinkRows.Load()
		late += m.LateRows.Load()
		bad += m.BadRecords.Load()
		dead += m.DeadLetters.Load()
		w := m.Watermark.Load()
		if w > 0 && (wm < 0 || w < wm) {
			wm = w
		}

		labels := []string{id, strconv.Itoa(tid.Vertex), v.Name, strconv.Itoa(tid.Subtask)}
		counter(descTaskIn, m.RowsIn.Load(), labels...)
		counter(descTaskOut, m.RowsOut.Load(), labels...)
		counter(descTaskBIn, m.BatchesIn.Load(), labels...)
		counter(descTaskBOut, m.BatchesOut.Load(), labels...)
		counter(descTaskNetOut, m.NetBytesOut.Load(), labels...)
		counter(descTaskSink, m.SinkRows.Load(), labels...)
		ch <- prometheus.MustNewConstMetric(descTaskBusy, prometheus.CounterValue, float64(m.BusyNanos.Load())/1e9, labels...)
		ch <- prometheus.MustNewConstMetric(descTaskIdle, prometheus.CounterValue, float64(m.IdleNanos.Load())/1e9, labels...)
		ch <- prometheus.MustNewConstMetric(descTaskBlocked, prometheus.CounterValue, float64(m.BackpressureNanos.Load())/1e9, labels...)
		if n, capacity := m.QueueFill(); capacity > 0 {
			gauge(descTaskQueue, float64(n), labels...)
			gauge(descTaskQueueC, float64(capacity), labels...)
		}
		if w > 0 {
			gauge(descTaskWMLag, lagSeconds(now, w), labels...)
		}
		for i, n := range m.ChainRowsOut() {
			if i < len(v.Chain) {
				counter(descOpOut, n, append(labels, strconv.Itoa(i), v.Chain[i].Kind)...)
			}
		}
		for i, n := range m.ChainNanos() {
			if i < len(v.Chain) {
				ch <- prometheus.MustNewConstMetric(descOpBusy, prometheus.CounterValue, float64(n)/1e9, append(labels, strconv.Itoa(i), v.Chain[i].Kind)...)
			}
		}
		for p, n := range m.Lags() {
			gauge(descSourceLag, float64(n), append(labels, strconv.Itoa(p))...)
		}
		if t := g.Task(tid); t != nil {
			gauge(descTaskInfo, 1, append(labels, t.Slot.TaskManager)...)
		}
	}
	counter(descJobIn, in, id)
	counter(descJobOut, out, id)
	counter(descJobLate, late, id)
	counter(descJobBad, bad, id)
	counter(descJobDead, dead, id)
	if wm > 0 {
		gauge(descJobWMLag, lagSeconds(now, wm), id)
	}
}

// lagSeconds is how far watermark w (microseconds since the epoch) is behind now.
func lagSeconds(now time.Time, w int64) float64 {
	return float64(now.UnixMicro()-w) / 1e6
}

// truncate cuts s to n characters, marking the cut with an ellipsis.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// WatchTaskManager adds a TaskManager's own series: its slots, and whether it
// is registered with its JobManager (its tasks' series are the JobManager's,
// from the heartbeats).
func (m *Metrics) WatchTaskManager(slots int, registered func() bool) {
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "hummer_taskmanager_slots", Help: "Task slots of this TaskManager."},
			func() float64 { return float64(slots) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "hummer_taskmanager_registered",
			Help: "1 while this TaskManager is registered with its JobManager, else 0."},
			func() float64 {
				if registered() {
					return 1
				}
				return 0
			}))
}
