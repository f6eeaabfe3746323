package network

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/types"
)

// netTestWait bounds every wait on a condition in these tests.
const netTestWait = 10 * time.Second

// netTestNoLeaks returns a check, to defer first, that waits until the
// goroutines started since the call have exited.
func netTestNoLeaks(t *testing.T) func() {
	t.Helper()
	before := runtime.NumGoroutine()
	return func() {
		t.Helper()
		netWaitFor(t, "goroutines to exit", func() bool { return runtime.NumGoroutine() <= before })
	}
}

// netWaitFor polls cond until it holds, failing the test after netTestWait.
func netWaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(netTestWait)
	for !cond() {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("timed out waiting for %s\n%s", what, buf[:runtime.Stack(buf, true)])
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond) // a polling interval, not synchronisation
	}
}

// netRecv takes one message from inbox, failing the test after netTestWait.
func netRecv(t testing.TB, inbox <-chan exec.Message) exec.Message {
	t.Helper()
	select {
	case m := <-inbox:
		return m
	case <-time.After(netTestWait):
		t.Fatalf("no message within %v", netTestWait)
		return exec.Message{}
	}
}

// netWaitDone waits for a channel to close, failing the test after netTestWait.
func netWaitDone(t testing.TB, what string, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(netTestWait):
		buf := make([]byte, 1<<20)
		t.Fatalf("timed out waiting for %s\n%s", what, buf[:runtime.Stack(buf, true)])
	}
}

// netReleaseAll releases the batches of every message queued in inbox.
func netReleaseAll(inbox chan exec.Message) {
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

func netTestServer(t testing.TB, cfg ServerConfig) *Server {
	t.Helper()
	cfg.Addr = "127.0.0.1:0"
	srv, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

func netTestDial(t testing.TB, srv *Server, key ChannelKey, mem memory.Allocator) *Sender {
	t.Helper()
	s, err := Dial(context.Background(), DialConfig{
		Addr: srv.Addr().String(), LocalAddr: "127.0.0.1", Key: key, Alloc: mem,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var netTestSchema = types.Schema{
	{Name: "i", Type: types.Int64Type},
	{Name: "f", Type: types.Float64Type},
	{Name: "d", Type: types.DecimalType(12, 3)},
	{Name: "s", Type: types.StringType},
	{Name: "b", Type: types.BoolType},
	{Name: "ts", Type: types.TimestampType},
	{Name: "n", Type: types.NullType},
}

const netTestRows = `[
	{"i": 1, "f": 1.5, "d": "12.345", "s": "héllo", "b": true, "ts": "2024-01-02T03:04:05.123456", "n": null},
	{"i": null, "f": null, "d": null, "s": null, "b": null, "ts": null, "n": null},
	{"i": -9223372036854775808, "f": -0.0, "d": "-999999999.999", "s": "", "b": false, "ts": 0, "n": null},
	{"i": 42, "f": 1e300, "d": "0.001", "s": "a longer string, to cross a word", "b": true, "ts": -1, "n": null}
]`

// netInt64Batch returns a one-column batch of rows values start, start+1, ...
func netInt64Batch(mem memory.Allocator, start, rows int) exec.Batch {
	b := array.NewInt64Builder(mem)
	defer b.Release()
	b.Reserve(rows)
	for i := range rows {
		b.UnsafeAppend(int64(start + i))
	}
	col := b.NewArray()
	defer col.Release()
	s := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	return exec.Batch{Rec: array.NewRecordBatch(s, []arrow.Array{col}, int64(rows))}
}

func TestNetChannelRoundTrip(t *testing.T) {
	defer netTestNoLeaks(t)()
	sendMem, recvMem := testkit.Mem(), testkit.Mem()
	defer sendMem.AssertSize(t, 0)
	defer recvMem.AssertSize(t, 0)

	srv := netTestServer(t, ServerConfig{})
	defer srv.Close()
	key := ChannelKey{JobID: "job-1", To: exec.TaskID{Vertex: 2, Subtask: 1}, Input: 1, Channel: 3}
	inbox := make(chan exec.Message, 64)
	rcv, err := srv.Register(key, inbox, recvMem)
	if err != nil {
		t.Fatal(err)
	}
	snd := netTestDial(t, srv, key, sendMem)
	defer snd.Close()

	rec := testkit.Record(t, sendMem, netTestSchema, netTestRows)
	defer rec.Release()
	sliced := rec.NewSlice(1, 4)
	defer sliced.Release()
	empty := rec.NewSlice(0, 0)
	defer empty.Release()
	sent := []exec.Message{
		{Batch: exec.Batch{Rec: rec}},
		{Signal: exec.Signal{Kind: exec.Watermark, Watermark: 1_700_000_000_000_000}},
		{Batch: exec.Batch{Rec: rec, Ops: []exec.ChangeKind{exec.Insert, exec.Delete, exec.UpdateBefore, exec.UpdateAfter}}},
		{Signal: exec.Signal{Kind: exec.Barrier, Checkpoint: 7}},
		{Batch: exec.Batch{Rec: sliced, Ops: []exec.ChangeKind{exec.Delete, exec.Insert, exec.UpdateAfter}}},
		{Batch: exec.Batch{Rec: sliced}},
		{Batch: exec.Batch{Rec: empty}},
		{Signal: exec.Signal{Kind: exec.Watermark, Watermark: -5}},
		{Signal: exec.Signal{Kind: exec.EndOfStream}},
	}
	ctx := context.Background()
	for i, m := range sent {
		if i == 2 {
			// send has LocalChannel.Push's contract: it consumes a reference on success.
			m.Batch.Rec.Retain()
			if err := snd.Push(ctx, m.Batch, m.Signal); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := snd.Send(ctx, m.Batch, m.Signal); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	for i, want := range sent {
		got := netRecv(t, inbox)
		if got.Input != key.Input || got.Channel != key.Channel {
			t.Errorf("message %d: input %d channel %d, want %d %d", i, got.Input, got.Channel, key.Input, key.Channel)
		}
		if got.Signal != want.Signal {
			t.Errorf("message %d: signal %+v, want %+v", i, got.Signal, want.Signal)
		}
		if want.IsData() {
			if !got.IsData() {
				t.Fatalf("message %d: no batch", i)
			}
			if !array.RecordEqual(got.Batch.Rec, want.Batch.Rec) {
				t.Errorf("message %d: got\n%v\nwant\n%v", i, got.Batch.Rec, want.Batch.Rec)
			}
			if fmt.Sprint(got.Batch.Ops) != fmt.Sprint(want.Batch.Ops) || (got.Batch.Ops == nil) != (want.Batch.Ops == nil) {
				t.Errorf("message %d: ops %v, want %v", i, got.Batch.Ops, want.Batch.Ops)
			}
			got.Batch.Rec.Release()
		}
	}
	netWaitDone(t, "the receiver", rcv.Done())
	if err := rcv.Err(); err != nil {
		t.Fatalf("receiver: %v", err)
	}
	ss, rs := snd.Stats(), rcv.Stats()
	if ss.Bytes.Load() != rs.Bytes.Load() || ss.Bytes.Load() == 0 {
		t.Errorf("bytes sent %d, received %d", ss.Bytes.Load(), rs.Bytes.Load())
	}
	if ss.Batches.Load() != 5 || rs.Batches.Load() != 5 || rs.Rows.Load() != 14 || rs.Signals.Load() != 4 {
		t.Errorf("stats: sent %d batches, received %d batches, %d rows, %d signals",
			ss.Batches.Load(), rs.Batches.Load(), rs.Rows.Load(), rs.Signals.Load())
	}
	if err := snd.Close(); err != nil {
		t.Fatal(err)
	}
	if err := snd.Send(ctx, exec.Batch{}, exec.Signal{Kind: exec.EndOfStream}); !errors.Is(err, ErrChannelClosed) {
		t.Errorf("send after close: %v", err)
	}
}

func TestNetChannelSplitsLargeBatches(t *testing.T) {
	defer netTestNoLeaks(t)()
	sendMem, recvMem := testkit.Mem(), testkit.Mem()
	defer sendMem.AssertSize(t, 0)
	defer recvMem.AssertSize(t, 0)
	srv := netTestServer(t, ServerConfig{})
	defer srv.Close()
	key := ChannelKey{JobID: "split", To: exec.TaskID{Vertex: 1, Subtask: 0}}
	inbox := make(chan exec.Message, 64)
	rcv, err := srv.Register(key, inbox, recvMem)
	if err != nil {
		t.Fatal(err)
	}
	snd := netTestDial(t, srv, key, sendMem)
	defer snd.Close()
	snd.maxFrame = 4 << 10 // about 500 rows of bigint per frame

	const rows = 10_000
	b := netInt64Batch(sendMem, 0, rows)
	defer b.Rec.Release()
	b.Ops = make([]exec.ChangeKind, rows)
	for i := range b.Ops {
		b.Ops[i] = exec.ChangeKind(i % 4)
	}
	ctx := context.Background()
	if err := snd.Send(ctx, b, exec.Signal{}); err != nil {
		t.Fatal(err)
	}
	if err := snd.Send(ctx, exec.Batch{}, exec.Signal{Kind: exec.EndOfStream}); err != nil {
		t.Fatal(err)
	}
	next := 0
	for {
		m := netRecv(t, inbox)
		if !m.IsData() {
			break
		}
		vals := m.Batch.Rec.Column(0).(*array.Int64).Int64Values()
		for i, v := range vals {
			if v != int64(next) || m.Batch.Op(i) != exec.ChangeKind(next%4) {
				t.Fatalf("row %d: value %d, op %v", next, v, m.Batch.Op(i))
			}
			next++
		}
		m.Batch.Rec.Release()
	}
	if next != rows {
		t.Fatalf("received %d rows of %d", next, rows)
	}
	if n := rcv.Stats().Batches.Load(); n < 16 {
		t.Errorf("the batch went in %d frames, want it split", n)
	}
	if err := rcv.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestNetChannelRouting(t *testing.T) {
	defer netTestNoLeaks(t)()
	mem := testkit.Mem()
	defer mem.AssertSize(t, 0)
	srv := netTestServer(t, ServerConfig{RegisterWait: 200 * time.Millisecond})
	defer srv.Close()

	// Task 1.0 has two inputs in one inbox; task 1.1 has its own.
	inboxA, inboxB := make(chan exec.Message, 16), make(chan exec.Message, 16)
	keys := []ChannelKey{
		{JobID: "j", To: exec.TaskID{Vertex: 1, Subtask: 0}, Input: 0, Channel: 0},
		{JobID: "j", To: exec.TaskID{Vertex: 1, Subtask: 0}, Input: 1, Channel: 0},
		{JobID: "j", To: exec.TaskID{Vertex: 1, Subtask: 1}, Input: 0, Channel: 1},
		{JobID: "other", To: exec.TaskID{Vertex: 1, Subtask: 0}, Input: 0, Channel: 0},
	}
	inboxes := []chan exec.Message{inboxA, inboxA, inboxB, inboxB}
	var rcvs []*Receiver
	for i, k := range keys {
		r, err := srv.Register(k, inboxes[i], mem)
		if err != nil {
			t.Fatal(err)
		}
		rcvs = append(rcvs, r)
	}
	if _, err := srv.Register(keys[0], inboxA, mem); err == nil {
		t.Error("registering a channel twice succeeded")
	}
	var snds []*Sender
	for _, k := range keys {
		snds = append(snds, netTestDial(t, srv, k, mem))
	}
	defer func() {
		for _, s := range snds {
			s.Close()
		}
	}()
	// A second connection for a connected channel, and one for a channel nobody
	// registers, are refused.
	_, err := Dial(context.Background(), DialConfig{Addr: srv.Addr().String(), Key: keys[0]})
	if err == nil || !strings.Contains(err.Error(), "already connected") {
		t.Errorf("second connection: %v", err)
	}
	_, err = Dial(context.Background(), DialConfig{Addr: srv.Addr().String(),
		Key: ChannelKey{JobID: "j", To: exec.TaskID{Vertex: 9, Subtask: 9}}})
	if err == nil || !strings.Contains(err.Error(), "not registered") {
		t.Errorf("unregistered channel: %v", err)
	}

	// Senders interleave; each channel's rows say which sender they came from.
	ctx := context.Background()
	for round := range 3 {
		for i, s := range snds {
			b := netInt64Batch(mem, 100*i+round, 1)
			if err := s.Push(ctx, b, exec.Signal{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, s := range snds {
		if err := s.Send(ctx, exec.Batch{}, exec.Signal{Kind: exec.EndOfStream}); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range rcvs {
		netWaitDone(t, "receivers", r.Done())
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
	}
	// check drains inbox; from maps (input, channel) to the sender it must come from.
	check := func(inbox chan exec.Message, from map[[2]int]int) {
		t.Helper()
		next := map[[2]int]int{}
		ends := 0
		for len(inbox) > 0 {
			m := <-inbox
			k := [2]int{m.Input, m.Channel}
			idx, ok := from[k]
			if !ok {
				t.Fatalf("message for input %d channel %d in the wrong inbox", m.Input, m.Channel)
			}
			if !m.IsData() {
				ends++
				continue
			}
			v := m.Batch.Rec.Column(0).(*array.Int64).Value(0)
			m.Batch.Rec.Release()
			if want := int64(100*idx + next[k]); v != want {
				t.Errorf("input %d channel %d: got %d, want %d", m.Input, m.Channel, v, want)
			}
			next[k]++
		}
		if ends != len(from) {
			t.Errorf("%d ends of stream, want %d", ends, len(from))
		}
	}
	check(inboxA, map[[2]int]int{{0, 0}: 0, {1, 0}: 1})
	check(inboxB, map[[2]int]int{{0, 1}: 2, {0, 0}: 3})
}

func TestNetChannelLateRegistration(t *testing.T) {
	defer netTestNoLeaks(t)()
	srv := netTestServer(t, ServerConfig{})
	defer srv.Close()
	key := ChannelKey{JobID: "late", To: exec.TaskID{Vertex: 1, Subtask: 0}}
	type dialed struct {
		s   *Sender
		err error
	}
	res := make(chan dialed, 1)
	go func() {
		s, err := Dial(context.Background(), DialConfig{Addr: srv.Addr().String(), Key: key})
		res <- dialed{s, err}
	}()
	// Register only once the hello is waiting on the server.
	netWaitFor(t, "the connection", func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return len(srv.conns) == 1
	})
	inbox := make(chan exec.Message, 1)
	rcv, err := srv.Register(key, inbox, nil)
	if err != nil {
		t.Fatal(err)
	}
	var d dialed
	select {
	case d = <-res:
	case <-time.After(netTestWait):
		t.Fatal("dial did not return")
	}
	if d.err != nil {
		t.Fatal(d.err)
	}
	defer d.s.Close()
	if err := d.s.Send(context.Background(), exec.Batch{}, exec.Signal{Kind: exec.EndOfStream}); err != nil {
		t.Fatal(err)
	}
	if m := netRecv(t, inbox); m.Signal.Kind != exec.EndOfStream {
		t.Fatalf("got %+v", m)
	}
	if err := rcv.Err(); err != nil {
		t.Fatal(err)
	}
}

// netBackpressureProducer sends n copies of b, counting the sends that
// returned, then an EndOfStream. Tests find it by name in goroutine stacks.
func netBackpressureProducer(ctx context.Context, s *Sender, b exec.Batch, n int, sent *atomic.Int64, done chan<- error) {
	for range n {
		if err := s.Send(ctx, b, exec.Signal{}); err != nil {
			done <- err
			return
		}
		sent.Add(1)
	}
	done <- s.Send(ctx, exec.Batch{}, exec.Signal{Kind: exec.EndOfStream})
}

// netProducerBlocked reports whether the netBackpressureProducer goroutine is
// parked waiting for its socket to become writable.
func netProducerBlocked() bool {
	buf := make([]byte, 1<<20)
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "netBackpressureProducer") {
			header, _, _ := strings.Cut(g, "\n")
			return strings.Contains(header, "[IO wait")
		}
	}
	return false
}

// netBackpressureSetup starts a channel whose inbox nobody drains and a producer
// of far more data than the inbox and both sockets can hold, and waits until the
// producer is blocked.
func netBackpressureSetup(t *testing.T, ctx context.Context, srv *Server, sendMem, recvMem memory.Allocator, n int) (
	inbox chan exec.Message, rcv *Receiver, snd *Sender, batch exec.Batch, sent *atomic.Int64, done chan error) {
	t.Helper()
	key := ChannelKey{JobID: "bp", To: exec.TaskID{Vertex: 1, Subtask: 0}}
	inbox = make(chan exec.Message, 2)
	rcv, err := srv.Register(key, inbox, recvMem)
	if err != nil {
		t.Fatal(err)
	}
	snd = netTestDial(t, srv, key, sendMem)
	batch = netInt64Batch(sendMem, 0, 1<<17) // 1 MiB
	sent, done = &atomic.Int64{}, make(chan error, 1)
	go netBackpressureProducer(ctx, snd, batch, n, sent, done)
	netWaitFor(t, "the producer to block", func() bool {
		return len(inbox) == cap(inbox) && netProducerBlocked()
	})
	return
}

func TestNetChannelBackpressure(t *testing.T) {
	defer netTestNoLeaks(t)()
	sendMem, recvMem := testkit.Mem(), testkit.Mem()
	defer sendMem.AssertSize(t, 0)
	defer recvMem.AssertSize(t, 0)
	srv := netTestServer(t, ServerConfig{})
	defer srv.Close()

	// 128 MiB: far beyond the inbox plus the kernel's socket buffers (here at
	// most 4 MiB to send and 32 MiB to receive).
	const n = 128
	inbox, rcv, snd, batch, sent, done := netBackpressureSetup(t, context.Background(), srv, sendMem, recvMem, n)
	defer snd.Close()
	defer batch.Rec.Release()

	// Nobody drains: the producer is blocked with at most the inbox, the batch
	// the receiver holds and the socket buffers' worth sent.
	select {
	case err := <-done:
		t.Fatalf("the producer finished (%v) though nobody drained the inbox", err)
	default:
	}
	if k := sent.Load(); k > int64(cap(inbox)+2+64) {
		t.Fatalf("%d MiB sent into an undrained inbox of %d", k, cap(inbox))
	}
	t.Logf("producer blocked after %d of %d batches", sent.Load(), n)

	// Draining lets it finish, every batch arriving in order.
	for i := range n {
		m := netRecv(t, inbox)
		if !m.IsData() || m.Batch.NumRows() != 1<<17 {
			t.Fatalf("message %d: %+v", i, m)
		}
		m.Batch.Rec.Release()
	}
	if m := netRecv(t, inbox); m.Signal.Kind != exec.EndOfStream {
		t.Fatalf("got %+v, want end of stream", m)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(netTestWait):
		t.Fatal("producer did not finish")
	}
	if err := rcv.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestNetChannelCancel(t *testing.T) {
	t.Run("receiver closes the job", func(t *testing.T) {
		defer netTestNoLeaks(t)()
		sendMem, recvMem := testkit.Mem(), testkit.Mem()
		defer sendMem.AssertSize(t, 0)
		defer recvMem.AssertSize(t, 0)
		srv := netTestServer(t, ServerConfig{})
		defer srv.Close()
		inbox, rcv, snd, batch, _, done := netBackpressureSetup(t, context.Background(), srv, sendMem, recvMem, 1<<20)
		defer batch.Rec.Release()
		defer snd.Close()

		srv.CloseJob("bp") // returns once the receiving goroutine is gone
		select {
		case <-rcv.Done():
		default:
			t.Fatal("CloseJob returned before the receiver ended")
		}
		if err := rcv.Err(); !errors.Is(err, exec.ErrJobCancelled) {
			t.Errorf("receiver: %v", err)
		}
		select {
		case err := <-done:
			if !errors.Is(err, ErrChannelClosed) {
				t.Errorf("sender: %v", err)
			}
		case <-time.After(netTestWait):
			t.Fatal("the blocked sender did not return")
		}
		netReleaseAll(inbox) // what the receiving task's drain does
	})
	t.Run("sender is cancelled", func(t *testing.T) {
		defer netTestNoLeaks(t)()
		sendMem, recvMem := testkit.Mem(), testkit.Mem()
		defer sendMem.AssertSize(t, 0)
		defer recvMem.AssertSize(t, 0)
		srv := netTestServer(t, ServerConfig{})
		defer srv.Close()
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		inbox, rcv, snd, batch, _, done := netBackpressureSetup(t, ctx, srv, sendMem, recvMem, 1<<20)
		defer batch.Rec.Release()

		cancel(exec.ErrJobCancelled)
		select {
		case err := <-done:
			if !errors.Is(err, exec.ErrJobCancelled) {
				t.Errorf("sender: %v", err)
			}
		case <-time.After(netTestWait):
			t.Fatal("the blocked sender did not return")
		}
		if err := snd.Send(context.Background(), exec.Batch{}, exec.Signal{Kind: exec.EndOfStream}); err == nil {
			t.Error("send on an interrupted channel succeeded")
		}
		snd.Close()
		// The receiver reads what was in flight, then finds the stream cut short.
		for {
			select {
			case m := <-inbox:
				if m.IsData() {
					m.Batch.Rec.Release()
				}
				continue
			case <-rcv.Done():
			case <-time.After(netTestWait):
				t.Fatal("the receiver did not end")
			}
			break
		}
		if err := rcv.Err(); err == nil {
			t.Error("a channel cut before its end of stream ended cleanly")
		}
		netReleaseAll(inbox)
		srv.CloseJob("bp") // nothing left to stop
	})
	t.Run("handshake is cancelled", func(t *testing.T) {
		defer netTestNoLeaks(t)()
		srv := netTestServer(t, ServerConfig{})
		defer srv.Close()
		ctx, cancel := context.WithCancel(context.Background())
		res := make(chan error, 1)
		go func() {
			_, err := Dial(ctx, DialConfig{Addr: srv.Addr().String(), Key: ChannelKey{JobID: "never"}})
			res <- err
		}()
		netWaitFor(t, "the connection", func() bool {
			srv.mu.Lock()
			defer srv.mu.Unlock()
			return len(srv.conns) == 1
		})
		cancel()
		select {
		case err := <-res:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("dial: %v", err)
			}
		case <-time.After(netTestWait):
			t.Fatal("the dial did not return")
		}
	})
	t.Run("registered, never connected", func(t *testing.T) {
		defer netTestNoLeaks(t)()
		srv := netTestServer(t, ServerConfig{})
		defer srv.Close()
		rcv, err := srv.Register(ChannelKey{JobID: "idle"}, make(chan exec.Message), nil)
		if err != nil {
			t.Fatal(err)
		}
		srv.CloseJob("idle")
		if err := rcv.Err(); !errors.Is(err, exec.ErrJobCancelled) {
			t.Errorf("receiver: %v", err)
		}
	})
}

// BenchmarkNetChannel measures the throughput of one channel over loopback: each
// operation streams 1M rows of (bigint, double), in batches of the given size,
// from encoding on the sender to a decoded batch taken from the inbox.
func BenchmarkNetChannel(b *testing.B) {
	const total = 1 << 20
	for _, rows := range []int{8192, total} {
		b.Run(fmt.Sprintf("rows_per_batch=%d", rows), func(b *testing.B) {
			mem := memory.NewGoAllocator()
			srv := netTestServer(b, ServerConfig{})
			defer srv.Close()
			key := ChannelKey{JobID: "bench", To: exec.TaskID{Vertex: 1, Subtask: 0}}
			inbox := make(chan exec.Message, exec.QueueCapacity)
			rcv, err := srv.Register(key, inbox, mem)
			if err != nil {
				b.Fatal(err)
			}
			snd := netTestDial(b, srv, key, mem)
			defer snd.Close()

			ib, fb := array.NewInt64Builder(mem), array.NewFloat64Builder(mem)
			for i := range rows {
				ib.Append(int64(i))
				fb.Append(float64(i) / 3)
			}
			ic, fc := ib.NewArray(), fb.NewArray()
			ib.Release()
			fb.Release()
			schema := arrow.NewSchema([]arrow.Field{
				{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
				{Name: "v", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
			}, nil)
			rec := array.NewRecordBatch(schema, []arrow.Array{ic, fc}, int64(rows))
			ic.Release()
			fc.Release()
			defer rec.Release()

			consumed := make(chan struct{})
			go func() {
				defer close(consumed)
				for m := range inbox {
					if !m.IsData() {
						return
					}
					m.Batch.Rec.Release()
				}
			}()
			ctx := context.Background()
			b.SetBytes(total * 16)
			b.ResetTimer()
			for range b.N {
				for range total / rows {
					if err := snd.Send(ctx, exec.Batch{Rec: rec}, exec.Signal{}); err != nil {
						b.Fatal(err)
					}
				}
			}
			if err := snd.Send(ctx, exec.Batch{}, exec.Signal{Kind: exec.EndOfStream}); err != nil {
				b.Fatal(err)
			}
			<-consumed
			b.StopTimer()
			if err := rcv.Err(); err != nil {
				b.Fatal(err)
			}
		})
	}
}
