// Package latency is issue 5's end-to-end latency benchmark: time-stamped lines
// produced into Kafka at fixed rates go through a continuous Hummer job
//
//	INSERT INTO lout SELECT line FROM lin WHERE line LIKE 'ts=%'
//
// and are read back from its output topic; their latency is set against the
// broker's own produce -> consume round trip, measured in the same run in
// alternating segments. The broker is franz-go's kfake, in this process: an
// in-memory Kafka-protocol broker, so the figures measure clients and engine,
// not disks. Hummer is the real `hummer serve` binary, driven over the
// PostgreSQL wire protocol.
package latency

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/hummer-db/hummer/bench/procstat"
)

// Config is what to run.
type Config struct {
	Hummer      string        // the hummer binary
	Work        string        // scratch directory: the server's data directory and log
	Rates       []int         // lines per second
	Warmup      time.Duration // per rate and path, not measured
	Measure     time.Duration // per rate and path, in Rounds segments
	Rounds      int           // segments per rate and path; the paths alternate
	Parallelism string        // the job's SET parallelism ("auto" or a number)
	// Drain bounds how long a segment waits, after its last line was sent, for
	// its lines to come back; anything missing then counts as lost.
	Drain time.Duration
	// Startup bounds the first warm-up's drain, which waits for the job to start.
	Startup time.Duration
	Version string // git describe of the Hummer repository
	Log     func(format string, args ...any)
}

// Topics on the broker: Hummer reads topicIn and writes topicOut; the raw round
// trip produces into and consumes from topicRaw. One partition each.
const (
	topicIn  = "in"
	topicOut = "out"
	topicRaw = "raw"
)

// Query is the continuous job: a filter that keeps every line, so that the job
// runs a real operator between source and sink.
const Query = `INSERT INTO lout SELECT line FROM lin WHERE line LIKE 'ts=%'`

const tablesSQL = `CREATE TABLE lin (line TEXT) ENGINE=kafka CONNECTION='kafka://%s/in'; ` +
	`CREATE TABLE lout (line TEXT) ENGINE=kafka CONNECTION='kafka://%s/out'`

// path is one way from the producer to a consumer.
type path struct {
	name  string
	topic string // where the producer sends
	t     *tracker
}

// Run runs the benchmark and returns its report. A run where lines were lost
// returns a report and an error.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	start := time.Now()
	rep := &Report{
		Date: start.UTC().Format(time.RFC3339),
		Setup: Setup{Rates: cfg.Rates, WarmupS: cfg.Warmup.Seconds(), MeasureS: cfg.Measure.Seconds(), Rounds: cfg.Rounds,
			Parallelism: cfg.Parallelism, Query: Query, Tables: fmt.Sprintf(tablesSQL, "ADDR", "ADDR")},
		Machine:  readMachine(),
		Versions: Versions{Hummer: cfg.Version, Go: runtime.Version(), FranzGo: moduleVersion("github.com/twmb/franz-go"), KFake: moduleVersion("github.com/twmb/franz-go/pkg/kfake")},
	}
	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topicIn, topicOut, topicRaw))
	if err != nil {
		return nil, err
	}
	defer broker.Close()
	addr := broker.ListenAddrs()[0]

	srv, err := startServer(ctx, cfg.Hummer, cfg.Work)
	if err != nil {
		return nil, err
	}
	defer srv.close()
	stmts := strings.Split(fmt.Sprintf(tablesSQL, addr, addr), "; ")
	stmts = append(stmts, "SET parallelism = "+cfg.Parallelism, Query)
	if err := srv.exec(ctx, stmts...); err != nil {
		return nil, err
	}

	clk := newClock()
	prod, err := newProducer(addr, clk)
	if err != nil {
		return nil, err
	}
	defer prod.close()
	paths := map[string]*path{
		PathHummer: {name: PathHummer, topic: topicIn, t: newTracker()},
		PathRaw:    {name: PathRaw, topic: topicRaw, t: newTracker()},
	}
	var consumers []*consumer
	defer func() { // on the error paths; the normal one closes them first
		for _, c := range consumers {
			c.close()
		}
	}()
	for topic, p := range map[string]*path{topicOut: paths[PathHummer], topicRaw: paths[PathRaw]} {
		c, err := startConsumer(addr, topic, p.t, clk)
		if err != nil {
			return nil, err
		}
		consumers = append(consumers, c)
	}

	meter, err := startMeter(srv.pid())
	if err != nil {
		return nil, err
	}
	m := &measurer{cfg: cfg, prod: prod, srv: srv, rep: rep}
	runErr := m.rates(ctx, paths)
	if err := meter.done(&rep.Machine); err != nil && runErr == nil {
		runErr = err
	}
	if job, err := srv.rows(ctx, "SHOW PROCESSLIST"); err == nil && len(job) > 0 {
		rep.Job = job[0]
	}
	rep.ServerWarnings, rep.ServerWarningsSample = warnings(srv.log.Name())
	for _, c := range consumers {
		if err := c.close(); err != nil && runErr == nil {
			runErr = fmt.Errorf("consumer: %w", err)
		}
	}
	if runErr != nil {
		return nil, runErr
	}
	for _, p := range paths {
		if p.t.bad > 0 {
			return nil, fmt.Errorf("%s: %d lines that were never sent came back, the first: %w", p.name, p.t.bad, p.t.firstBad)
		}
	}
	rep.summarise(paths, m.measured)
	rep.DurationS = round(time.Since(start).Seconds(), 1)
	if n := rep.Lost(); n > 0 {
		return rep, fmt.Errorf("%d measured lines never came back (see the table)", n)
	}
	return rep, nil
}

// measurer runs the segments.
type measurer struct {
	cfg     Config
	prod    *producer
	srv     *server
	rep     *Report
	started bool // the first segment, which waits for the job, has run
	// measured holds the sequence numbers [lo, hi) of each measured segment, by
	// rate and path, for the summary.
	measured map[string][][2]int64
}

// rates runs every rate: a warm-up per path, then Rounds segments per path,
// alternating which path goes first.
func (m *measurer) rates(ctx context.Context, paths map[string]*path) error {
	m.measured = map[string][][2]int64{}
	order := []*path{paths[PathHummer], paths[PathRaw]}
	seg := m.cfg.Measure / time.Duration(m.cfg.Rounds)
	for _, rate := range m.cfg.Rates {
		for _, p := range order {
			if m.cfg.Warmup <= 0 {
				break
			}
			if err := m.segment(ctx, p, rate, 0, m.cfg.Warmup); err != nil {
				return err
			}
		}
		for round := 1; round <= m.cfg.Rounds; round++ {
			for k := range order {
				if err := m.segment(ctx, order[(k+round+1)%len(order)], rate, round, seg); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// segment sends rate × d lines on p and waits for them to come back.
func (m *measurer) segment(ctx context.Context, p *path, rate, round int, d time.Duration) error {
	if exited, err := m.srv.exited(); exited {
		return fmt.Errorf("hummer serve exited (%v):\n%s", err, tail(m.srv.log.Name()))
	}
	cpu0, err := processCPU(m.srv.pid())
	if err != nil {
		return err
	}
	t0 := time.Now()
	p.t.startSegment(int64(len(p.t.lat)))
	lo, hi, err := m.prod.run(ctx, p.topic, p.t, rate, d)
	if err != nil {
		return err
	}
	drain := m.cfg.Drain
	if !m.started {
		drain, m.started = m.cfg.Startup, true
	}
	missing := p.t.wait(ctx, hi, time.Now().Add(drain))
	wall := time.Since(t0)
	cpu1, err := processCPU(m.srv.pid())
	if err != nil {
		return err
	}
	if err := m.prod.err(); err != nil {
		return err
	}
	lat, lost := p.t.latencies(lo, hi)
	s := Segment{Rate: rate, Path: p.name, Round: round, Lines: int(hi - lo), Lost: lost,
		WallS: round3(wall.Seconds()), HummerCPUS: round3((cpu1 - cpu0).Seconds()), Stats: stats(lat)}
	m.rep.Segments = append(m.rep.Segments, s)
	what := fmt.Sprintf("round %d/%d", round, m.cfg.Rounds)
	if round == 0 {
		what = "warm-up"
	} else {
		k := key(rate, p.name)
		m.measured[k] = append(m.measured[k], [2]int64{lo, hi})
	}
	m.cfg.Log("%6d lines/s %-6s %-11s %6d lines, %d lost: p50 %7.3f ms  p99 %7.3f ms  max %7.3f ms", rate, p.name, what, s.Lines, missing, s.P50Ms, s.P99Ms, s.MaxMs)
	return nil
}

func key(rate int, path string) string { return fmt.Sprintf("%d/%s", rate, path) }

func round3(x float64) float64 { return round(x, 3) }

// summarise fills the summary from the measured segments, whose lines are
// [lo, hi) in measured by rate and path, then judges the goals. Lost counts what
// is still missing at the end of the run: a line later than its segment's drain
// counts with its latency, not as lost.
func (r *Report) summarise(paths map[string]*path, measured map[string][][2]int64) {
	r.Summary, r.Duplicates = nil, 0
	for _, p := range paths {
		r.Duplicates += p.t.dups
	}
	for _, rate := range r.Setup.Rates {
		for _, name := range []string{PathHummer, PathRaw} {
			row := Row{Rate: rate, Path: name}
			var lat []int64
			for _, seqs := range measured[key(rate, name)] {
				l, lost := paths[name].t.latencies(seqs[0], seqs[1])
				lat = append(lat, l...)
				row.Lost += lost
			}
			var wall, cpu float64
			for _, s := range r.Segments {
				if s.Rate != rate || s.Path != name || s.Round == 0 {
					continue
				}
				row.Lines += s.Lines
				wall, cpu = wall+s.WallS, cpu+s.HummerCPUS
				if row.SegP99Min == 0 || s.P99Ms < row.SegP99Min {
					row.SegP99Min = s.P99Ms
				}
				row.SegP99Max = max(row.SegP99Max, s.P99Ms)
			}
			row.Stats = stats(lat)
			if name == PathHummer && wall > 0 {
				row.HummerCPUPct = round(100*cpu/wall, 1)
			}
			r.Summary = append(r.Summary, row)
		}
	}
	r.judge()
}

// warnings counts the WARN lines of the server's log and returns the first few:
// the kafka connector logs its clients' errors there (a fetch that timed out, a
// reconnection), which show in the latencies.
func warnings(logPath string) (int, []string) {
	b, err := os.ReadFile(logPath)
	if err != nil {
		return 0, nil
	}
	n, sample := 0, []string(nil)
	for line := range strings.Lines(string(b)) {
		if !strings.Contains(line, "level=WARN") {
			continue
		}
		n++
		if len(sample) < 5 {
			sample = append(sample, strings.TrimSpace(line))
		}
	}
	return n, sample
}

// moduleVersion returns the version of module path this binary was built with.
func moduleVersion(path string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	i := slices.IndexFunc(bi.Deps, func(m *debug.Module) bool { return m.Path == path })
	if i < 0 {
		return "unknown"
	}
	return bi.Deps[i].Version
}

func readMachine() Machine {
	return Machine{CPUs: runtime.NumCPU(), CPUModel: procstat.CPUModel(), Kernel: procstat.KernelRelease(), LoadAvg: loadAvg()}
}

// meter measures what the machine did while the segments ran.
type meter struct {
	start        time.Time
	hummer       int
	steal, wait  time.Duration
	self, server time.Duration
}

func startMeter(hummer int) (*meter, error) {
	m := &meter{start: time.Now(), hummer: hummer, self: selfCPU(), wait: cpuWait()}
	var err error
	if m.server, err = processCPU(hummer); err != nil {
		return nil, err
	}
	if m.steal, err = steal(); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *meter) done(out *Machine) error {
	st, err1 := steal()
	server, err2 := processCPU(m.hummer)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	out.RunsS = round(time.Since(m.start).Seconds(), 1)
	out.BenchCPUS = round((selfCPU() - m.self).Seconds(), 1)
	out.HummerCPUS = round((server - m.server).Seconds(), 1)
	out.StealS = round((st - m.steal).Seconds(), 1)
	out.CPUWaitS = -1
	if w := cpuWait(); w >= 0 && m.wait >= 0 {
		out.CPUWaitS = round((w - m.wait).Seconds(), 1)
	}
	out.LoadAvgAfter = loadAvg()
	return nil
}
