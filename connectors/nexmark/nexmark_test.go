package nexmark

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/connectors/internal/conntest"
	"github.com/hummer-db/hummer/connectors/spec"
	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/types"
)

func schemaOf(k Kind) types.Schema {
	var s types.Schema
	for _, f := range Fields[k] {
		s = append(s, types.Field{Name: f.Name, Type: f.Type})
	}
	return s
}

// run reads a whole bounded table with the given parallelism and returns its
// rows, subtask by subtask.
func run(t *testing.T, c exec.ConnectorSpec, parallelism int) [][]string {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	out := make([][]string, parallelism)
	for i := range parallelism {
		cfg, err := parse(c)
		if err != nil {
			t.Fatal(err)
		}
		s := &source{cfg: cfg}
		if err := s.Open(context.Background(), conntest.TaskContext(t, mem, i, parallelism)); err != nil {
			t.Fatal(err)
		}
		var col conntest.Collector
		if err := s.Run(context.Background(), &col); err != nil {
			t.Fatal(err)
		}
		out[i] = col.Rows()
		col.Release()
		s.Close()
	}
	return out
}

// TestProportions: of every 50 events 1 is a person, 3 are auctions, 46 are
// bids; ids count up from 1000 without gaps; event time advances 100 µs an
// event from the base; and the fields keep to the generator's ranges.
func TestProportions(t *testing.T) {
	const events = 50 * 200
	base, _ := time.Parse(time.RFC3339, DefaultBase)
	rows := map[Kind][]string{}
	for k := range Fields {
		kind := Kind(k)
		rows[kind] = run(t, exec.ConnectorSpec{Connector: Name, URL: URL(kind, events, 0, 1), Schema: schemaOf(kind)}, 1)[0]
	}
	if len(rows[Person]) != 200 || len(rows[Auction]) != 600 || len(rows[Bid]) != 9200 {
		t.Fatalf("rows: %d people, %d auctions, %d bids; want 200, 600, 9200", len(rows[Person]), len(rows[Auction]), len(rows[Bid]))
	}
	for i, r := range rows[Person] {
		f := strings.Split(r, "|")
		if f[0] != strconv.Itoa(1000+i) {
			t.Fatalf("person %d has id %s", i, f[0])
		}
		// person i is event 50i
		at, err := time.Parse("2006-01-02T15:04:05.999999999", f[6])
		if want := base.Add(time.Duration(50*i) * 100 * time.Microsecond); err != nil || !at.Equal(want) {
			t.Fatalf("person %d at %s (%v), want %s", i, f[6], err, want)
		}
		if !strings.Contains(f[2], "@") || len(f[3]) != 19 {
			t.Fatalf("person %d: email %q, card %q", i, f[2], f[3])
		}
	}
	hot := 0
	for i, r := range rows[Auction] {
		f := strings.Split(r, "|")
		id, _ := strconv.Atoi(f[0])
		cat, _ := strconv.Atoi(f[8])
		seller, _ := strconv.Atoi(f[7])
		initial, _ := strconv.Atoi(f[3])
		reserve, _ := strconv.Atoi(f[4])
		switch {
		case id != 1000+i:
			t.Fatalf("auction %d has id %d", i, id)
		case cat < 10 || cat > 14:
			t.Fatalf("auction %d: category %d", i, cat)
		case seller < 1000 || seller > 1000+i/3+personIDLead+1:
			t.Fatalf("auction %d: seller %d before it exists", i, seller)
		case initial < 100 || reserve < initial || f[6] <= f[5]:
			t.Fatalf("auction %d: initial %d, reserve %d, from %s to %s", i, initial, reserve, f[5], f[6])
		}
	}
	channels := map[string]int{}
	for _, r := range rows[Bid] {
		f := strings.Split(r, "|")
		if a, _ := strconv.Atoi(f[0]); a%100 == 0 {
			hot++
		}
		p, _ := strconv.Atoi(f[2])
		if p < 100 || p > 100_000_000 {
			t.Fatalf("bid price %d", p)
		}
		if !strings.HasPrefix(f[4], "https://www.nexmark.com/") {
			t.Fatalf("bid url %q", f[4])
		}
		channels[f[3]]++
	}
	// Half of all bids go to the hot auction, the first of the newest
	// hundred (1000, 1100, ...); one in a hundred of the others too.
	if hot < 9200*45/100 || hot > 9200*55/100 {
		t.Errorf("%d of 9200 bids on the hot auction, want about half", hot)
	}
	if n := channels["Google"] + channels["Facebook"] + channels["Baidu"] + channels["Apple"]; n < 9200*45/100 || n > 9200*55/100 {
		t.Errorf("%d of 9200 bids through the hot channels, want about half", n)
	}
}

// TestSplit: the events do not depend on how subtasks split the sequence,
// and the seed changes them.
func TestSplit(t *testing.T) {
	c := exec.ConnectorSpec{Connector: Name, URL: URL(Bid, 5000, 0, 7), Schema: schemaOf(Bid)}
	one := run(t, c, 1)[0]
	three := run(t, c, 3)
	var merged []string
	for _, r := range three {
		merged = append(merged, r...)
	}
	if len(merged) != len(one) {
		t.Fatalf("3 subtasks made %d rows, one made %d", len(merged), len(one))
	}
	sortStrings(merged)
	sorted := append([]string(nil), one...)
	sortStrings(sorted)
	for i := range sorted {
		if sorted[i] != merged[i] {
			t.Fatalf("row %d: one subtask %q, three %q", i, sorted[i], merged[i])
		}
	}
	other := run(t, exec.ConnectorSpec{Connector: Name, URL: URL(Bid, 5000, 0, 8), Schema: schemaOf(Bid)}, 1)[0]
	if other[10] == one[10] {
		t.Errorf("seeds 7 and 8 give the same bid: %s", one[10])
	}
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// TestProjection: a table declaring some fields, in its own order and
// spelling, gets those fields of the same events; leaving extra out changes
// nothing else.
func TestProjection(t *testing.T) {
	all := run(t, exec.ConnectorSpec{Connector: Name, URL: URL(Bid, 500, 0, 3), Schema: schemaOf(Bid)}, 1)[0]
	some := run(t, exec.ConnectorSpec{Connector: Name, URL: URL(Bid, 500, 0, 3), Schema: types.Schema{
		{Name: "dateTime", Type: types.TimestampType}, {Name: "price", Type: types.Int64Type}, {Name: "Channel", Type: types.StringType}}}, 1)[0]
	for i := range all {
		f := strings.Split(all[i], "|")
		if want := f[5] + "|" + f[2] + "|" + f[3]; some[i] != want {
			t.Fatalf("row %d: %q, want %q", i, some[i], want)
		}
	}
}

// TestValidate: bad URLs and columns are refused with spec.ErrBadOption.
func TestValidate(t *testing.T) {
	for _, c := range []struct{ url, col, typ, want string }{
		{"nexmark://bids", "price", "bigint", "person, auction or bid"},
		{"nexmark://bid?events=-1", "price", "bigint", "events"},
		{"nexmark://bid?rate=fast", "price", "bigint", "rate"},
		{"nexmark://bid?speed=1", "price", "bigint", "unknown option"},
		{"nexmark://bid?base=yesterday", "price", "bigint", "base"},
		{"nexmark://bid?events=10&continuous=yes", "price", "bigint", "continuous"},
		{"nexmark://bid", "cost", "bigint", "no such field"},
		{"nexmark://bid", "price", "text", "the field is bigint"},
	} {
		typ := types.Int64Type
		if c.typ == "text" {
			typ = types.StringType
		}
		err := Validate(exec.ConnectorSpec{Connector: Name, URL: c.url, Schema: types.Schema{{Name: c.col, Type: typ}}})
		if !errors.Is(err, spec.ErrBadOption) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s (%s %s): %v, want ErrBadOption about %q", c.url, c.col, c.typ, err, c.want)
		}
	}
	if Bounded(exec.ConnectorSpec{URL: "nexmark://bid"}) || !Bounded(exec.ConnectorSpec{URL: "nexmark://bid?events=10"}) ||
		Bounded(exec.ConnectorSpec{URL: "nexmark://bid?events=10&continuous=true"}) {
		t.Error("Bounded: want a table bounded exactly when it sets events, and not continuous")
	}
}

// TestRestore: a source restored from a snapshot goes on with the event
// after the last it emitted before it, and paces its events at the rate.
func TestRestore(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	c := exec.ConnectorSpec{Connector: Name, URL: "nexmark://bid?rate=2000&seed=5", Schema: types.Schema{{Name: "price", Type: types.Int64Type}, {Name: "date_time", Type: types.TimestampType}}}
	cfg, err := parse(c)
	if err != nil {
		t.Fatal(err)
	}
	tc := conntest.TaskContext(t, mem, 0, 1)
	tc.CheckpointLock = new(sync.Mutex)
	s := &source{cfg: cfg}
	if err := s.Open(context.Background(), tc); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var col conntest.Collector
	var snap []byte
	col.OnCollect = func(n int) {
		if n == 3 {
			// Collect runs with the checkpoint lock held, as a snapshot does.
			snap, _ = s.SnapshotState(ctx, 1)
			cancel()
		}
	}
	start := time.Now()
	if err := s.Run(ctx, &col); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
	first := col.Rows()
	col.Release()
	// 2000 events a second: the rows emitted cannot be more than were due.
	if due := time.Since(start).Seconds()*2000 + 1; float64(len(first)) > due*46/50+1 {
		t.Errorf("%d bids emitted in %v at 2000 events a second", len(first), time.Since(start))
	}

	whole := run(t, exec.ConnectorSpec{Connector: Name, URL: "nexmark://bid?events=" + strconv.Itoa(len(first)*50/46+200) + "&rate=0&seed=5", Schema: c.Schema}, 1)[0]
	// rate=0 spaces event time at 100 µs, rate=2000 at 500 µs: compare prices.
	s2 := &source{cfg: cfg}
	if err := s2.Open(context.Background(), tc); err != nil {
		t.Fatal(err)
	}
	if err := s2.RestoreState(context.Background(), snap); err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	var col2 conntest.Collector
	col2.OnCollect = func(n int) { cancel2() }
	if err := s2.Run(ctx2, &col2); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run after restore: %v", err)
	}
	next := col2.Rows()
	col2.Release()
	price := func(r string) string { return strings.Split(r, "|")[0] }
	for i, r := range append(first, next...) {
		if i >= len(whole) {
			break
		}
		if price(r) != price(whole[i]) {
			t.Fatalf("bid %d: price %s, the whole sequence has %s", i, price(r), price(whole[i]))
		}
	}
	if len(next) == 0 {
		t.Fatal("nothing after the restore")
	}
}

// BenchmarkBids generates bids with every field, as q0 reads them.
func BenchmarkBids(b *testing.B) {
	cfg, err := parse(exec.ConnectorSpec{Connector: Name, URL: "nexmark://bid?rate=0", Schema: schemaOf(Bid)})
	if err != nil {
		b.Fatal(err)
	}
	s := &source{cfg: cfg}
	s.Open(context.Background(), conntest.TaskContext(b, memory.DefaultAllocator, 0, 1))
	var sink discard
	b.ResetTimer()
	for range b.N {
		if err := s.emit(context.Background(), -1, sink); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*batchRows)/b.Elapsed().Seconds(), "bids/s")
}

type discard struct{}

func (discard) Collect(context.Context, exec.Batch) error        { return nil }
func (discard) CollectSignal(context.Context, exec.Signal) error { return nil }
