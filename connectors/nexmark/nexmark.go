// Package nexmark is the Nexmark connector: a source generating the people,
// auctions and bids of the Nexmark benchmark's online auction site, as the
// nexmark/nexmark project's Flink generator does (model.go says where it
// differs), deterministic for a seed.
//
//	CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT, channel TEXT,
//	  url TEXT, date_time TIMESTAMP, extra TEXT)
//	  ENGINE=nexmark CONNECTION='nexmark://bid?events=1000000&rate=0';
//
// The URL's host names the table (person, auction or bid); its columns are any
// of Fields[kind], by name. events=N makes the sequence N events long (of all
// three kinds: the bid table holds 46 in 50 of them), so the table is bounded;
// without it the table is a stream that never ends. rate=R emits R events a
// second (all subtasks together), rate=0 as fast as it can; event time
// advances by 1/R a second per event (by 100 µs when rate=0, the Flink
// generator's default 10,000 a second; event_rate=E sets it apart from the
// pace), from base. Subtask i of p generates
// the events whose number is i modulo p; its position is checkpointed.
package nexmark

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/connectors/spec"
	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/types"
)

// Name is the connector's ENGINE name.
const Name = "nexmark"

// DefaultBase is the event time of event 0 unless base= says otherwise: a
// fixed instant, so the same URL always gives the same rows.
const DefaultBase = "2015-07-15T00:00:00Z"

// Spec describes the Nexmark connector and its options.
func Spec() *spec.Connector {
	return &spec.Connector{
		Name:        Name,
		URL:         "nexmark://person|auction|bid[?events=N&rate=R&seed=S&base=RFC3339|now]",
		Description: "Generates the Nexmark benchmark's people, auctions or bids (a stream; bounded with events=N).",
		Source:      true,
		Unbounded:   true,
		Options: []spec.Option{
			{Name: "events", Type: spec.String, Default: "0", Description: "events in the whole sequence (all three kinds), 0 for a stream without end"},
			{Name: "rate", Type: spec.String, Default: "10000", Description: "events per second, all subtasks together; 0 for as fast as it can"},
			{Name: "event_rate", Type: spec.String, Default: "", Description: "events per second of event time (the spacing of their times); default: rate, or 10000 when rate is 0"},
			{Name: "seed", Type: spec.String, Default: "0", Description: "the seed every event's fields are drawn with: the three tables over one seed describe one site"},
			{Name: "base", Type: spec.String, Default: DefaultBase, Description: "the event time of the first event (RFC 3339), or now: when the job starts"},
			{Name: "continuous", Type: spec.String, Default: "false", Description: "with events=N, plan queries over the table as over a stream without end (continuous jobs: stream joins, updating aggregations), as Flink's streaming mode runs its bounded generator, though the source still ends after N events (for benchmarks)"},
		},
	}
}

// Register adds the Nexmark source to r.
func Register(r *exec.Registry) {
	r.RegisterSource(Name, func(c exec.ConnectorSpec) (exec.Source, error) {
		cfg, err := parse(c)
		if err != nil {
			return nil, err
		}
		return &source{cfg: cfg}, nil
	})
}

// Validate checks a Nexmark table at CREATE TABLE time. Errors wrap
// spec.ErrBadOption.
func Validate(c exec.ConnectorSpec) error {
	_, err := parse(c)
	return err
}

// Bounded reports whether queries over the table are planned as over a
// table that ends: its URL sets events, and not continuous.
func Bounded(c exec.ConnectorSpec) bool {
	cfg, err := parse(c)
	return err == nil && cfg.events > 0 && !cfg.continuous
}

// config is a validated Nexmark table.
type config struct {
	kind   Kind
	events int64 // 0: unbounded
	// continuous plans a table of events > 0 as a stream (Bounded).
	continuous bool
	rate       float64 // of emission; 0: as fast as it can
	// eventRate is the events per second of event time: event n is at
	// base + n/eventRate.
	eventRate float64
	seed      int64
	base      time.Time // zero: now
	fields    []int     // per output column, its position in Fields[kind]
	out       *arrow.Schema
}

func parse(c exec.ConnectorSpec) (config, error) {
	s := Spec()
	rest, ok := strings.CutPrefix(c.URL, "nexmark://")
	if !ok {
		return config{}, s.Errorf("URL %q: want %s", c.URL, s.URL)
	}
	table, query, _ := strings.Cut(rest, "?")
	var cfg config
	switch strings.ToLower(table) {
	case "person":
		cfg.kind = Person
	case "auction":
		cfg.kind = Auction
	case "bid":
		cfg.kind = Bid
	default:
		return config{}, s.Errorf("URL %q: the table is person, auction or bid, not %q", c.URL, table)
	}
	q, err := spec.ParseQuery(query)
	if err != nil {
		return config{}, err
	}
	v, err := s.Parse(q)
	if err != nil {
		return config{}, err
	}
	if cfg.events, err = strconv.ParseInt(v.Get("events"), 10, 64); err != nil || cfg.events < 0 {
		return config{}, s.Errorf("option events: %q is not a count of events", v.Get("events"))
	}
	if cfg.rate, err = strconv.ParseFloat(v.Get("rate"), 64); err != nil || cfg.rate < 0 || cfg.rate > 1e12 {
		return config{}, s.Errorf("option rate: %q is not a number of events per second", v.Get("rate"))
	}
	cfg.eventRate = cfg.rate
	if r := v.Get("event_rate"); r != "" {
		if cfg.eventRate, err = strconv.ParseFloat(r, 64); err != nil || cfg.eventRate <= 0 || cfg.eventRate > 1e12 {
			return config{}, s.Errorf("option event_rate: %q is not a positive number of events per second", r)
		}
	}
	if cfg.eventRate == 0 {
		cfg.eventRate = 10000
	}
	if cfg.continuous, err = strconv.ParseBool(v.Get("continuous")); err != nil {
		return config{}, s.Errorf("option continuous: %q is not true or false", v.Get("continuous"))
	}
	if cfg.seed, err = strconv.ParseInt(v.Get("seed"), 10, 64); err != nil {
		return config{}, s.Errorf("option seed: %q is not an integer", v.Get("seed"))
	}
	if b := v.Get("base"); !strings.EqualFold(b, "now") {
		if cfg.base, err = time.Parse(time.RFC3339Nano, b); err != nil {
			return config{}, s.Errorf("option base: %q is neither an RFC 3339 time (%s) nor now", b, DefaultBase)
		}
	}
	for _, col := range c.Schema {
		i := fieldIndex(cfg.kind, col.Name)
		switch {
		case i < 0:
			return config{}, s.Errorf("column %s: a %s has no such field (it has %s)", col.Name, cfg.kind, fieldNames(cfg.kind))
		case !compatible(Fields[cfg.kind][i].Type, col.Type):
			return config{}, s.Errorf("column %s is %s: the field is %s", col.Name, col.Type, Fields[cfg.kind][i].Type)
		}
	}
	cols := c.Columns
	if cols == nil {
		cols = make([]int, len(c.Schema))
		for i := range cols {
			cols[i] = i
		}
	}
	fields := make([]arrow.Field, len(cols))
	for j, col := range cols {
		if col < 0 || col >= len(c.Schema) {
			return config{}, fmt.Errorf("nexmark: projected column %d out of range for %d columns", col, len(c.Schema))
		}
		cfg.fields = append(cfg.fields, fieldIndex(cfg.kind, c.Schema[col].Name))
		fields[j] = arrow.Field{Name: c.Schema[col].Name, Type: c.Schema[col].Type.Arrow(), Nullable: true}
	}
	cfg.out = arrow.NewSchema(fields, nil)
	return cfg, nil
}

// compatible says a column declared as decl can hold a field of type field:
// integers as BIGINT, text as TEXT/VARCHAR, times as TIMESTAMP.
func compatible(field, decl types.Type) bool { return field.ID == decl.ID }

func fieldNames(k Kind) string {
	names := make([]string, len(Fields[k]))
	for i, f := range Fields[k] {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}

// throttle waits for timer, the time the next event is due, counting the wait
// as idle (exec.TaskMetrics): a paced source is not busy.
//
//go:noinline
func (s *source) throttle(ctx context.Context, timer *time.Timer) error {
	waited := time.Now()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
	}
	s.m.IdleNanos.Add(time.Since(waited).Nanoseconds())
	return nil
}

// batchRows is the most rows a batch holds; a paced source emits what is due.
const batchRows = 4096

// source generates one subtask's share of a table's events: the event numbers
// that are its subtask index modulo the parallelism.
type source struct {
	cfg   config
	gen   generator
	step  int64 // the parallelism
	alloc memory.Allocator
	lock  *sync.Mutex
	m     *exec.TaskMetrics

	// pos is the number of the next event this subtask generates (of any
	// kind: the others are skipped), and baseMs the event time of event 0;
	// both are the checkpointed state. posMu guards them for SnapshotState.
	posMu  sync.Mutex
	pos    int64
	baseMs int64
}

var (
	_ exec.Source       = (*source)(nil)
	_ exec.Checkpointed = (*source)(nil)
)

func (s *source) Open(ctx context.Context, tc *exec.TaskContext) error {
	s.step = int64(max(tc.Parallelism, 1))
	s.pos = int64(tc.Subtask)
	s.lock = tc.CheckpointLock
	if s.m = tc.Metrics; s.m == nil {
		s.m = &exec.TaskMetrics{}
	}
	if s.alloc = tc.Alloc; s.alloc == nil {
		s.alloc = memory.DefaultAllocator
	}
	base := s.cfg.base
	if base.IsZero() {
		base = time.Now()
	}
	s.baseMs = base.UnixMilli()
	delayUs := 1e6 / s.cfg.eventRate
	extra := false
	for _, f := range s.cfg.fields {
		extra = extra || Fields[s.cfg.kind][f].Name == "extra"
	}
	s.gen = generator{kind: s.cfg.kind, seed: s.cfg.seed, delayUs: delayUs, extra: extra}
	return nil
}

// state is what SnapshotState returns, as JSON.
type state struct {
	Next   int64 `json:"next"`
	BaseMs int64 `json:"base_ms"`
}

func (s *source) SnapshotState(ctx context.Context, checkpoint int64) ([]byte, error) {
	s.posMu.Lock()
	defer s.posMu.Unlock()
	return json.Marshal(state{Next: s.pos, BaseMs: s.baseMs})
}

func (s *source) RestoreState(ctx context.Context, data []byte) error {
	var st state
	if err := json.Unmarshal(data, &st); err != nil {
		return fmt.Errorf("nexmark: bad checkpoint state: %w", err)
	}
	s.posMu.Lock()
	defer s.posMu.Unlock()
	s.pos, s.baseMs = st.Next, st.BaseMs
	return nil
}

// Run generates batches until the sequence ends (events=N) or ctx is done.
func (s *source) Run(ctx context.Context, out exec.Collector) error {
	s.gen.baseMs = s.baseMs
	start, startPos := time.Now(), s.pos
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		end := int64(-1) // the first event number past this batch; -1: no limit
		if s.cfg.events > 0 {
			if s.pos >= s.cfg.events {
				return nil
			}
			end = s.cfg.events
		}
		if s.cfg.rate > 0 {
			// Event n is due rate events a second after the start, so this
			// subtask's share of events is due at its share of the rate.
			due := startPos + int64(time.Since(start).Seconds()*s.cfg.rate)
			if due < s.pos {
				wait := time.Duration(float64(s.pos-due+1) / s.cfg.rate * float64(time.Second))
				if timer == nil {
					timer = time.NewTimer(wait)
				} else {
					timer.Reset(wait)
				}
				if err := s.throttle(ctx, timer); err != nil {
					return err
				}
				continue
			}
			if end < 0 || due+1 < end {
				end = due + 1
			}
		}
		if err := s.emit(ctx, end, out); err != nil {
			return err
		}
	}
}

// emit generates the next batch, of the events of this subtask before end
// (end < 0: no limit), at most batchRows rows, and emits it under the
// checkpoint lock with the position it advances to.
func (s *source) emit(ctx context.Context, end int64, out exec.Collector) error {
	b := newBatchBuilder(s.alloc, s.cfg)
	defer b.release()
	var e event
	pos := s.pos
	for ; b.rows < batchRows && (end < 0 || pos < end); pos += s.step {
		if kindOf(pos) != s.cfg.kind {
			continue
		}
		s.gen.make(pos, &e)
		b.append(&e)
	}
	rec := b.record()
	defer rec.Release()
	if s.lock != nil {
		s.lock.Lock()
		defer s.lock.Unlock()
	}
	s.posMu.Lock()
	s.pos = pos
	s.posMu.Unlock()
	if rec.NumRows() == 0 {
		return nil
	}
	s.m.RowsOut.Add(rec.NumRows())
	s.m.BatchesOut.Add(1)
	return out.Collect(ctx, exec.Batch{Rec: rec})
}

func (s *source) Close() error { return nil }

// batchBuilder appends events' projected fields to one builder per column.
type batchBuilder struct {
	cfg      config
	builders []array.Builder
	rows     int64
}

func newBatchBuilder(alloc memory.Allocator, cfg config) *batchBuilder {
	b := &batchBuilder{cfg: cfg}
	for j, f := range cfg.out.Fields() {
		bb := array.NewBuilder(alloc, f.Type)
		bb.Reserve(batchRows)
		if sb, ok := bb.(*array.StringBuilder); ok {
			// Room for a batch of the field's usual length, so that the
			// value buffer is not grown and copied as the batch fills.
			per := 32
			switch Fields[cfg.kind][cfg.fields[j]].Name {
			case "extra":
				per = [...]int{Person: avgPersonBytes, Auction: avgAuctionBytes, Bid: avgBidBytes}[cfg.kind]
			case "url", "description":
				per = 96
			}
			sb.ReserveData(batchRows * per)
		}
		b.builders = append(b.builders, bb)
	}
	return b
}

func (b *batchBuilder) append(e *event) {
	for j, f := range b.cfg.fields {
		switch bb := b.builders[j].(type) {
		case *array.Int64Builder:
			bb.UnsafeAppend(e.ints[f])
		case *array.TimestampBuilder:
			bb.UnsafeAppend(arrow.Timestamp(e.ints[f]))
		case *array.StringBuilder:
			bb.BinaryBuilder.Append(e.strs[f])
		}
	}
	b.rows++
}

func (b *batchBuilder) record() arrow.RecordBatch {
	cols := make([]arrow.Array, len(b.builders))
	for j, bb := range b.builders {
		cols[j] = bb.NewArray()
	}
	rec := array.NewRecordBatch(b.cfg.out, cols, b.rows)
	for _, c := range cols {
		c.Release()
	}
	return rec
}

func (b *batchBuilder) release() {
	for _, bb := range b.builders {
		bb.Release()
	}
}

// URL returns the CONNECTION URL of a Nexmark table, for tests and benchmarks.
func URL(kind Kind, events int64, rate float64, seed int64) string {
	v := url.Values{}
	v.Set("events", strconv.FormatInt(events, 10))
	v.Set("rate", strconv.FormatFloat(rate, 'g', -1, 64))
	v.Set("seed", strconv.FormatInt(seed, 10))
	return "nexmark://" + kind.String() + "?" + v.Encode()
}

// EstimateRows is how many rows a bounded table's source emits, for the
// planner's join order; a stream's are infinite.
func EstimateRows(c exec.ConnectorSpec) (float64, bool) {
	cfg, err := parse(c)
	if err != nil {
		return 0, false
	}
	if cfg.events == 0 {
		return math.Inf(1), true
	}
	share := [...]float64{Person: personProportion, Auction: auctionProportion, Bid: bidProportion}[cfg.kind]
	return float64(cfg.events) * share / totalProportion, true
}
