package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/vector"
)

// restartable is a one-broker cluster that can be taken away and brought back
// on the same port with the same data, as a broker restarts.
type restartable struct {
	t      *testing.T
	opts   []kfake.Opt
	c      *kfake.Cluster
	addr   string
	closed bool
}

func newRestartable(t *testing.T, opts ...kfake.Opt) *restartable {
	r := &restartable{t: t, opts: append(opts, kfake.NumBrokers(1), kfake.DataDir(t.TempDir()))}
	var err error
	if r.c, err = kfake.NewCluster(r.opts...); err != nil {
		t.Fatal(err)
	}
	r.addr = r.c.ListenAddrs()[0]
	t.Cleanup(func() {
		if !r.closed {
			r.c.Close()
		}
	})
	return r
}

func (r *restartable) stop() {
	r.c.Close()
	r.closed = true
}

func (r *restartable) start() {
	var err error
	if r.c, err = kfake.NewCluster(append(r.opts, kfake.Ports(port(r.t, r.addr)))...); err != nil {
		r.t.Fatal(err)
	}
	r.closed = false
}

// reconnecting reports whether status says the task is retrying the brokers
// at addr.
func reconnecting(status, addr string) bool {
	return strings.HasPrefix(status, "reconnecting to kafka brokers "+addr+": ") && strings.Contains(status, " (attempt ")
}

func TestSourceReconnects(t *testing.T) {
	k := newRestartable(t, kfake.SeedTopics(1, "lines"))
	produce(t, k.addr, "lines", "a", "b")
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	r := startSource(t, mem, exec.ConnectorSpec{Connector: Name, URL: "kafka://" + k.addr + "/lines", Schema: textSchema}, 0, 1)
	waitFor(t, 5*time.Second, "the first rows", func() bool { return r.col.NumRows() == 2 })

	k.stop()
	waitFor(t, 5*time.Second, "the status to say the source is reconnecting", func() bool { return reconnecting(r.tc.Metrics.Status(), k.addr) })
	t.Logf("status: %s", r.tc.Metrics.Status())
	select {
	case err := <-r.done:
		t.Fatalf("Run returned %v while the broker was away", err)
	default:
	}

	k.start()
	produce(t, k.addr, "lines", "c", "d")
	waitFor(t, 8*time.Second, "the rows produced after the restart, and the status cleared", func() bool {
		return r.col.NumRows() == 4 && r.tc.Metrics.Status() == ""
	})
	if rows := r.stop(); !slices.Equal(rows, []string{"a", "b", "c", "d"}) {
		t.Errorf("rows = %v, want a to d once each", rows)
	}
}

func TestSinkReconnects(t *testing.T) {
	k := newRestartable(t, kfake.SeedTopics(2, "out"))
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	s := openSink(t, mem, exec.ConnectorSpec{Connector: Name, URL: "kafka://" + k.addr + "/out?format=json", Schema: rowSchema, Key: []int{0}})
	ctx := context.Background()
	first := batch(t, mem, `[{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]`)
	defer first.Release()
	if err := s.ProcessBatch(ctx, 0, exec.Batch{Rec: first}, nil); err != nil {
		t.Fatal(err)
	}

	k.stop()
	second := batch(t, mem, `[{"id": 1, "name": "a2"}, {"id": 3, "name": "c"}]`)
	defer second.Release()
	done := make(chan error, 1)
	go func() {
		done <- s.ProcessBatch(ctx, 0, exec.Batch{Rec: second, Ops: []exec.ChangeKind{exec.UpdateAfter, exec.Insert}}, nil)
	}()
	status := s.calls.metrics.Status
	waitFor(t, 5*time.Second, "the status to say the sink is reconnecting", func() bool { return reconnecting(status(), k.addr) })
	t.Logf("status: %s", status())

	k.start()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(8 * time.Second):
		t.Fatal("the write did not finish after the broker came back")
	}
	if st := status(); st != "" {
		t.Errorf("status %q after the write went through", st)
	}
	var got []string
	for _, msgs := range readTopic(t, k.addr, "out", 2, 4) {
		for _, m := range msgs {
			got = append(got, string(m.Value))
		}
	}
	slices.Sort(got)
	want := []string{`{"id":1,"name":"a"}`, `{"id":1,"name":"a2"}`, `{"id":2,"name":"b"}`, `{"id":3,"name":"c"}`}
	if !slices.Equal(got, want) {
		t.Errorf("topic holds %q, want %q", got, want)
	}
}

// deadAddr returns the address of a broker that is gone.
func deadAddr(t *testing.T) string {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	addr := c.ListenAddrs()[0]
	c.Close()
	return addr
}

func TestRetryStopsOnCancel(t *testing.T) {
	addr := deadAddr(t)
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	t.Run("source", func(t *testing.T) {
		r := startSource(t, mem, exec.ConnectorSpec{Connector: Name, URL: "kafka://" + addr + "/lines", Schema: textSchema}, 0, 1)
		// By attempt 5 the backoff is over a second: cancelling must not wait for it.
		waitFor(t, 5*time.Second, "attempt 5", func() bool { return strings.Contains(r.tc.Metrics.Status(), "(attempt 5)") })
		start := time.Now()
		r.stop()
		if d := time.Since(start); d > 500*time.Millisecond {
			t.Errorf("the source took %v to stop", d)
		}
	})
	t.Run("sink", func(t *testing.T) {
		s := openSink(t, mem, exec.ConnectorSpec{Connector: Name, URL: "kafka://" + addr + "/out?format=json", Schema: rowSchema})
		rec := batch(t, mem, `[{"id": 1, "name": "a"}]`)
		defer rec.Release()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.ProcessBatch(ctx, 0, exec.Batch{Rec: rec}, nil) }()
		waitFor(t, 5*time.Second, "attempt 5", func() bool { return strings.Contains(s.calls.metrics.Status(), "(attempt 5)") })
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("ProcessBatch returned %v, want context.Canceled", err)
			}
		case <-time.After(500 * time.Millisecond):
			t.Error("ProcessBatch went on retrying after its context was cancelled")
			<-done
		}
	})
}

func TestUnknownTopicFails(t *testing.T) {
	defer func(d time.Duration) { unknownTopicWait = d }(unknownTopicWait)
	unknownTopicWait = 500 * time.Millisecond
	addr := cluster(t, "other", 1)
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	const want = "the topic does not exist on brokers "

	r := startSource(t, mem, exec.ConnectorSpec{Connector: Name, URL: "kafka://" + addr + "/nope", Schema: textSchema}, 0, 1)
	select {
	case err := <-r.done:
		if err == nil || !strings.Contains(err.Error(), "reading the partitions of topic nope: "+want) {
			t.Errorf("source: Run returned %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("source: Run did not fail")
	}
	r.cancel()
	if err := <-r.done; err != nil {
		t.Errorf("Close: %v", err)
	}

	s := openSink(t, mem, exec.ConnectorSpec{Connector: Name, URL: "kafka://" + addr + "/nope?format=json", Schema: rowSchema})
	rec := batch(t, mem, `[{"id": 1, "name": "a"}]`)
	defer rec.Release()
	if err := s.ProcessBatch(context.Background(), 0, exec.Batch{Rec: rec}, nil); err == nil || !strings.Contains(err.Error(), "writing to topic nope: "+want) {
		t.Errorf("sink: ProcessBatch returned %v", err)
	}
}

// An error retrying cannot cure fails the job at once, with the broker's word.
func TestPermanentErrorFails(t *testing.T) {
	addr := newCluster(t, kfake.SeedTopics(1, "out"), kfake.BrokerConfigs(map[string]string{"message.max.bytes": "200"})).ListenAddrs()[0]
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	s := openSink(t, mem, exec.ConnectorSpec{Connector: Name, URL: "kafka://" + addr + "/out?format=json", Schema: rowSchema})
	rec := batch(t, mem, fmt.Sprintf(`[{"id": 1, "name": %q}]`, strings.Repeat("x", 1000)))
	defer rec.Release()
	start := time.Now()
	err := s.ProcessBatch(context.Background(), 0, exec.Batch{Rec: rec}, nil)
	t.Logf("ProcessBatch: %v", err)
	if !errors.Is(err, kafka.MessageSizeTooLarge) || !strings.Contains(err.Error(), "writing to topic out on brokers "+addr) {
		t.Errorf("ProcessBatch returned %v, want the broker's MESSAGE_TOO_LARGE", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v: a permanent error was retried", d)
	}
}

func TestTransient(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true},
		{fmt.Errorf("kafka.(*Client).Fetch: %w", io.ErrUnexpectedEOF), true},
		{&net.DNSError{Err: "no such host", Name: "broker", IsNotFound: true}, true},
		{kafka.LeaderNotAvailable, true},
		{fmt.Errorf("partition 0: %w", kafka.NotCoordinatorForGroup), true},
		{kafka.BrokerNotAvailable, true},
		{kafka.TopicAuthorizationFailed, false},
		{kafka.GroupAuthorizationFailed, false},
		{kafka.InvalidTopic, false},
		{kafka.MessageSizeTooLarge, false},
		{kafka.MessageTooLargeError{}, false},
	} {
		if got := transient(tc.err); got != tc.want {
			t.Errorf("transient(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
