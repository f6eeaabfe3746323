// Command nexmarkgo is the Nexmark suite's hand-written baseline, the machine's
// practical limit for the nexmark suite of bench/cmd/wordcount: Nexmark's q0 and
// q5 as plain Go over the very generator Hummer's ENGINE=nexmark tables run
// (package connectors/nexmark, driven through its exec.Source as Hummer's source
// tasks drive it: the same Arrow batches, from the same pool allocator as a
// TaskManager's, vector.DefaultPool), one goroutine per worker, each
// generating its share of the events as a source subtask does.
//
//		nexmarkgo -query q0|q5 -events N [-event-rate E] [-workers W]
//
//	  - q0 generates the bids (every column) and discards them.
//	  - q5 generates the bids' auction and dateTime, counts bids per auction in
//	    hopping windows of 10 s sliding by 2 s, takes each window's highest count
//	    and keeps the auctions that reach it, as the query does. Each worker
//	    counts its own share; the shares are merged at the end of the bounded
//	    input (a window's count is the sum of the workers' counts).
//
// It prints "events N", "bids B" and "rows R" (q5's output rows, q0's bids)
// on stdout.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/hummer-db/hummer/connectors/nexmark"
	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/exec/vector"
)

func main() {
	query := flag.String("query", "q0", "q0 or q5")
	events := flag.Int64("events", 10_000_000, "events in the sequence (all three kinds)")
	eventRate := flag.Float64("event-rate", 10_000_000, "events per second of event time (the tables' event_rate)")
	workers := flag.Int("workers", runtime.NumCPU(), "goroutines, each generating its share of the events")
	flag.Parse()
	bids, rows, err := run(*query, *events, *eventRate, *workers)
	if err != nil {
		fmt.Fprintln(os.Stderr, "nexmarkgo:", err)
		os.Exit(1)
	}
	fmt.Printf("events %d\nbids %d\nrows %d\n", *events, bids, rows)
}

// The columns of the bid table, as bench/nexmark/ddl.sql declares them.
var bidSchema = types.Schema{
	{Name: "auction", Type: types.Int64Type}, {Name: "bidder", Type: types.Int64Type},
	{Name: "price", Type: types.Int64Type}, {Name: "channel", Type: types.StringType},
	{Name: "url", Type: types.StringType}, {Name: "dateTime", Type: types.TimestampType},
	{Name: "extra", Type: types.StringType},
}

// q5's windows, in microseconds.
const (
	hopSlide = 2_000_000
	hopSize  = 10_000_000
)

func run(query string, events int64, eventRate float64, workers int) (bids, rows int64, err error) {
	spec := exec.ConnectorSpec{
		Connector: nexmark.Name,
		URL:       "nexmark://bid?events=" + strconv.FormatInt(events, 10) + "&rate=0&event_rate=" + strconv.FormatFloat(eventRate, 'f', -1, 64),
		Schema:    bidSchema,
	}
	var newSink func() sink
	switch query {
	case "q0":
		spec.Columns = []int{0, 1, 2, 5, 6} // auction, bidder, price, dateTime, extra: what the query reads
		newSink = func() sink { return &discard{} }
	case "q5":
		spec.Columns = []int{0, 5} // auction, dateTime: what the query reads
		newSink = func() sink { return &hopCounts{windows: map[int64]map[int64]int64{}} }
	default:
		return 0, 0, fmt.Errorf("-query %q: want q0 or q5", query)
	}
	reg := exec.NewRegistry()
	nexmark.Register(reg)
	sinks := make([]sink, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for i := range workers {
		sinks[i] = newSink()
		src, err := reg.NewSource(spec)
		if err != nil {
			return 0, 0, err
		}
		wg.Go(func() {
			ctx := context.Background()
			tc := &exec.TaskContext{JobID: "nexmarkgo", TaskName: "source", Subtask: i, Parallelism: workers,
				Alloc: vector.DefaultPool, Metrics: &exec.TaskMetrics{}}
			if errs[i] = src.Open(ctx, tc); errs[i] == nil {
				errs[i] = src.Run(ctx, sinks[i])
				src.Close()
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return 0, 0, err
		}
	}
	for _, s := range sinks {
		bids += s.bids()
	}
	switch query {
	case "q0":
		return bids, bids, nil
	default:
		hs := make([]*hopCounts, len(sinks))
		for i, s := range sinks {
			hs[i] = s.(*hopCounts)
		}
		return bids, hotItems(hs), nil
	}
}

// sink is a worker's end of the pipeline: an exec.Collector of the source's batches.
type sink interface {
	exec.Collector
	bids() int64
}

// discard is q0's sink: it counts the rows and drops them.
type discard struct{ n int64 }

func (d *discard) Collect(ctx context.Context, b exec.Batch) error {
	d.n += int64(b.NumRows())
	return nil
}
func (d *discard) CollectSignal(ctx context.Context, s exec.Signal) error { return nil }
func (d *discard) bids() int64                                            { return d.n }

// hopCounts is q5's first step for one worker: per window start, per auction,
// the worker's count of bids.
type hopCounts struct {
	n       int64
	windows map[int64]map[int64]int64
}

func (h *hopCounts) Collect(ctx context.Context, b exec.Batch) error {
	auction := b.Rec.Column(0).(*array.Int64).Int64Values()
	ts := b.Rec.Column(1).(*array.Timestamp).TimestampValues()
	h.n += int64(len(auction))
	var last int64 = -1
	var cur [hopSize / hopSlide]map[int64]int64 // the windows of the last start seen
	for i, a := range auction {
		t := int64(ts[i])
		first := floorDiv(t, hopSlide) * hopSlide // the latest window holding t starts here
		if first != last {
			for k := range cur {
				start := first - int64(k)*hopSlide
				m := h.windows[start]
				if m == nil {
					m = map[int64]int64{}
					h.windows[start] = m
				}
				cur[k] = m
			}
			last = first
		}
		for _, m := range cur {
			m[a]++
		}
	}
	return nil
}
func (h *hopCounts) CollectSignal(ctx context.Context, s exec.Signal) error { return nil }
func (h *hopCounts) bids() int64                                            { return h.n }

// hotItems merges the workers' counts and returns how many (auction, count)
// rows q5 emits: per window, the auctions whose count is the window's highest.
func hotItems(hs []*hopCounts) int64 {
	total := hs[0].windows
	for _, h := range hs[1:] {
		for start, m := range h.windows {
			t := total[start]
			if t == nil {
				total[start] = m
				continue
			}
			for a, n := range m {
				t[a] += n
			}
		}
	}
	var rows int64
	for _, m := range total {
		var top int64
		for _, n := range m {
			top = max(top, n)
		}
		for _, n := range m {
			if n >= top {
				rows++
			}
		}
	}
	return rows
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
