package latency

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hummer-db/hummer/bench/stamped"
)

// The line format and clock are the shared stamped package's.
type clock = stamped.Clock

var (
	newClock   = stamped.NewClock
	appendLine = stamped.AppendLine
	parseLine  = stamped.ParseLine
)

// tracker is one path's ledger: which lines were sent, which came back and how
// late. Sequence numbers are dense and increase, so it keeps one slot per line.
type tracker struct {
	mu  sync.Mutex
	lat []int64 // by seq: latency in ns, or -1 while the line has not come back
	// segLo is where the segment being drained starts; segGot counts the lines
	// at or after it that came back (each once).
	segLo, segGot int64
	dups, bad     int64
	firstBad      error
	changed       chan struct{} // a token after each batch of arrivals
}

func newTracker() *tracker { return &tracker{changed: make(chan struct{}, 1)} }

// next allocates the sequence number of a line about to be sent.
func (t *tracker) next() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lat = append(t.lat, -1)
	return int64(len(t.lat) - 1)
}

// startSegment makes wait count the lines from lo on.
func (t *tracker) startSegment(lo int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.segLo, t.segGot = lo, 0
	for _, l := range t.lat[min(lo, int64(len(t.lat))):] {
		if l >= 0 {
			t.segGot++
		}
	}
}

// arrived records the lines of one poll, all received at recv.
func (t *tracker) arrived(values [][]byte, recv int64) {
	t.mu.Lock()
	for _, v := range values {
		ts, seq, err := parseLine(v)
		switch {
		case err != nil || seq < 0 || seq >= int64(len(t.lat)):
			if err == nil {
				err = fmt.Errorf("line %q: seq never sent", v)
			}
			t.bad++
			if t.firstBad == nil {
				t.firstBad = err
			}
		case t.lat[seq] >= 0:
			t.dups++
		default:
			t.lat[seq] = max(recv-ts, 0)
			if seq >= t.segLo {
				t.segGot++
			}
		}
	}
	t.mu.Unlock()
	select {
	case t.changed <- struct{}{}:
	default:
	}
}

// wait blocks until every line of [segLo, hi) has come back, ctx ends or
// deadline passes; it returns how many are still missing.
func (t *tracker) wait(ctx context.Context, hi int64, deadline time.Time) int64 {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for {
		t.mu.Lock()
		missing := hi - t.segLo - t.segGot
		t.mu.Unlock()
		if missing <= 0 {
			return 0
		}
		select {
		case <-t.changed:
		case <-timer.C:
			return missing
		case <-ctx.Done():
			return missing
		}
	}
}

// latencies returns the latencies of lines [lo, hi) that came back, and how many
// did not.
func (t *tracker) latencies(lo, hi int64) (lat []int64, lost int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, l := range t.lat[lo:hi] {
		if l < 0 {
			lost++
		} else {
			lat = append(lat, l)
		}
	}
	return lat, lost
}

// producer sends lines into Kafka at a fixed rate with one franz-go client for
// every path, so the raw round trip and Hummer's input go through the very same
// producer.
type producer struct {
	cl      *kgo.Client
	clk     clock
	failed  atomic.Int64
	lastErr atomic.Pointer[error]
}

// newProducer connects a producer that sends each record as soon as it has it:
// ProducerLinger(0) (franz-go's default lingers 10 ms to fill batches). It keeps
// the defaults otherwise: acks from all in-sync replicas, idempotent, up to 5
// requests in flight; what queues while a request is in flight goes in the next.
func newProducer(addr string, clk clock) (*producer, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerLinger(0))
	if err != nil {
		return nil, err
	}
	return &producer{cl: cl, clk: clk}, nil
}

// tick is the producer's pacing interval: a ticker at the rate itself (50 µs at
// 20k lines/s) would drop ticks, so each tick sends the lines due by then.
const tick = time.Millisecond

// run sends rate × d lines to topic, paced by a ticker: at each tick, the lines due
// by then (rate × time elapsed), each stamped with the time it is handed to the
// client. It returns the sequence numbers [lo, hi) it used.
func (p *producer) run(ctx context.Context, topic string, t *tracker, rate int, d time.Duration) (lo, hi int64, err error) {
	n := int64(float64(rate) * d.Seconds())
	lo = -1
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	start := time.Now()
	for sent := int64(0); sent < n; {
		select {
		case <-ctx.Done():
			return lo, lo + sent, ctx.Err()
		case <-ticker.C:
		}
		due := min(n, int64(float64(rate)*time.Since(start).Seconds()))
		for ; sent < due; sent++ {
			seq := t.next()
			if lo < 0 {
				lo = seq
			}
			rec := &kgo.Record{Topic: topic, Value: appendLine(make([]byte, 0, 48), p.clk.Now(), seq)}
			p.cl.Produce(ctx, rec, p.promise)
		}
	}
	return lo, lo + n, nil
}

func (p *producer) promise(_ *kgo.Record, err error) {
	if err != nil {
		p.failed.Add(1)
		p.lastErr.Store(&err)
	}
}

// err reports the produce requests that failed so far.
func (p *producer) err() error {
	if n := p.failed.Load(); n > 0 {
		return fmt.Errorf("%d lines failed to produce, the last: %w", n, *p.lastErr.Load())
	}
	return nil
}

func (p *producer) close() { p.cl.Close() }

// consumer reads one topic from its start and hands what arrives to a tracker,
// stamped with the time the poll returned.
type consumer struct {
	cl   *kgo.Client
	done chan error
	once sync.Once
	errs error // what close returns, set once
}

// fetchMaxWait bounds how long the broker holds a fetch when there is nothing to
// return; with the default minimum of 1 byte it answers as soon as a record
// arrives, so this only matters while a topic is idle.
const fetchMaxWait = 500 * time.Millisecond

func startConsumer(addr, topic string, t *tracker, clk clock) (*consumer, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(fetchMaxWait))
	if err != nil {
		return nil, err
	}
	c := &consumer{cl: cl, done: make(chan error, 1)}
	go func() {
		var values [][]byte
		var errs []error
		for {
			fs := cl.PollFetches(context.Background())
			recv := clk.Now()
			if fs.IsClientClosed() {
				c.done <- errors.Join(errs...)
				return
			}
			// The client retries what it can; what it reports is kept, and
			// fails the run, but reading goes on.
			fs.EachError(func(topic string, p int32, err error) {
				if len(errs) < 5 {
					errs = append(errs, fmt.Errorf("%s[%d]: %w", topic, p, err))
				}
			})
			values = values[:0]
			fs.EachRecord(func(r *kgo.Record) { values = append(values, r.Value) })
			if len(values) > 0 {
				t.arrived(values, recv)
			}
		}
	}()
	return c, nil
}

// close stops the consumer and returns the errors its fetches reported, if any.
// It is safe to call twice.
func (c *consumer) close() error {
	c.once.Do(func() {
		c.cl.Close()
		c.errs = <-c.done
	})
	return c.errs
}
