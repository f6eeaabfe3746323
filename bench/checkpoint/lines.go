package checkpoint

import (
	"context"
	"errors"
	"sort"
	"sync"
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

// steadyProducer sends numbered, time-stamped lines at a fixed rate, line n
// into partition n % partitions, until stopped.
type steadyProducer struct {
	cl      *kgo.Client
	cancel  context.CancelFunc
	stopped chan struct{}
	sent    int64 // owned by the producing goroutine until stopped closes
	once    sync.Once
	mu      sync.Mutex
	err     error
}

// producerTick paces the producer: each tick sends the lines due by then.
const producerTick = time.Millisecond

func startProducer(addr, topic string, partitions, rate int, clk clock) (*steadyProducer, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &steadyProducer{cl: cl, cancel: cancel, stopped: make(chan struct{})}
	go func() {
		defer close(p.stopped)
		ticker := time.NewTicker(producerTick)
		defer ticker.Stop()
		start := time.Now()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
			due := int64(float64(rate) * time.Since(start).Seconds())
			for ; p.sent < due; p.sent++ {
				rec := &kgo.Record{Topic: topic, Partition: int32(p.sent % int64(partitions)),
					Value: appendLine(make([]byte, 0, 48), clk.Now(), p.sent)}
				// Not ctx: stop cancels it, and a record still buffered when
				// it is cancelled fails unsent, though counted as sent.
				cl.Produce(context.Background(), rec, p.promise)
			}
		}
	}()
	return p, nil
}

func (p *steadyProducer) promise(_ *kgo.Record, err error) {
	if err != nil {
		p.mu.Lock()
		if p.err == nil {
			p.err = err
		}
		p.mu.Unlock()
	}
}

// stop stops producing, waits for the lines sent to be on the broker and
// returns how many were sent. It is safe to call twice.
func (p *steadyProducer) stop() int64 {
	p.once.Do(func() {
		p.cancel()
		<-p.stopped
		p.cl.Flush(context.Background())
		p.cl.Close()
	})
	return p.sent
}

// failure returns the first produce error, if any.
func (p *steadyProducer) failure() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// producerEpoch identifies a Kafka producer incarnation: a transactional
// producer reopened by a restored task keeps its ID with a new epoch.
type producerEpoch struct {
	id    int64
	epoch int16
}

// arrival is one record as a reader got it.
type arrival struct {
	at       time.Time // when the poll returned it
	seq      int64
	latency  time.Duration // at − the line's production time
	producer producerEpoch
}

// recorder reads a topic from its start, read_committed or not, and keeps
// every record's arrival, in arrival order.
type recorder struct {
	cl       *kgo.Client
	done     chan struct{}
	mu       sync.Mutex
	arrivals []arrival
	counts   []uint8 // by seq, saturating
	bad      int
	changed  chan struct{}
}

func startRecorder(addr, topic string, committed bool, clk clock) (*recorder, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100 * time.Millisecond)}
	if committed {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	r := &recorder{cl: cl, done: make(chan struct{}), changed: make(chan struct{}, 1)}
	go func() {
		defer close(r.done)
		for {
			fs := cl.PollFetches(context.Background())
			if fs.IsClientClosed() {
				return
			}
			at, now := time.Now(), clk.Now()
			r.mu.Lock()
			fs.EachRecord(func(rec *kgo.Record) {
				ts, seq, err := parseLine(rec.Value)
				if err != nil || seq < 0 {
					r.bad++
					return
				}
				r.arrivals = append(r.arrivals, arrival{at: at, seq: seq, latency: time.Duration(now - ts),
					producer: producerEpoch{rec.ProducerID, rec.ProducerEpoch}})
				for int64(len(r.counts)) <= seq {
					r.counts = append(r.counts, 0)
				}
				if r.counts[seq] < 255 {
					r.counts[seq]++
				}
			})
			r.mu.Unlock()
			select {
			case r.changed <- struct{}{}:
			default:
			}
		}
	}()
	return r, nil
}

// waitFirst returns the first record that arrived at or after since and
// satisfies ok (nil: any), waiting until deadline for one.
func (r *recorder) waitFirst(since time.Time, ok func(arrival) bool, deadline time.Time) (arrival, error) {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	r.mu.Lock()
	i := sort.Search(len(r.arrivals), func(i int) bool { return !r.arrivals[i].at.Before(since) })
	r.mu.Unlock()
	for {
		r.mu.Lock()
		for ; i < len(r.arrivals); i++ {
			if a := r.arrivals[i]; ok == nil || ok(a) {
				r.mu.Unlock()
				return a, nil
			}
		}
		r.mu.Unlock()
		select {
		case <-r.changed:
		case <-timer.C:
			return arrival{}, errors.New("none arrived before the deadline")
		}
	}
}

// producers returns the producer epochs of every record so far.
func (r *recorder) producers() map[producerEpoch]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[producerEpoch]bool{}
	for _, a := range r.arrivals {
		seen[a.producer] = true
	}
	return seen
}

// maxSeqBefore returns the highest line number that arrived before t, -1 for none.
func (r *recorder) maxSeqBefore(t time.Time) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := int64(-1)
	for _, a := range r.arrivals {
		if !a.at.Before(t) {
			break
		}
		m = max(m, a.seq)
	}
	return m
}

// exactlyOnce waits until lines 0 to sent-1 have all arrived, or deadline,
// and returns how many are missing, how many extra copies arrived, and how
// many records were not lines of the producer's.
func (r *recorder) exactlyOnce(sent int64, deadline time.Time) (missing, dups, bad int64) {
	for {
		missing, dups = 0, 0
		r.mu.Lock()
		for seq := range int64(len(r.counts)) {
			switch c := r.counts[seq]; {
			case seq >= sent && c > 0:
				bad += int64(c)
			case c > 1:
				dups += int64(c - 1)
			}
		}
		missing = max(0, sent-int64(len(r.counts)))
		for _, c := range r.counts[:min(sent, int64(len(r.counts)))] {
			if c == 0 {
				missing++
			}
		}
		bad += int64(r.bad)
		r.mu.Unlock()
		if missing == 0 || time.Now().After(deadline) {
			return missing, dups, bad
		}
		bad = 0
		time.Sleep(50 * time.Millisecond)
	}
}

func (r *recorder) close() {
	r.cl.Close()
	<-r.done
}
