package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/hummer-db/hummer/connectors/internal/conntest"
	"github.com/hummer-db/hummer/connectors/spec"
	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/types"
)

var (
	textSchema = types.Schema{{Name: "line", Type: types.Type{ID: types.String}}}
	rowSchema  = types.Schema{{Name: "id", Type: types.Type{ID: types.Int64}}, {Name: "name", Type: types.Type{ID: types.String}}}
)

// cluster starts a one-broker kfake cluster with topic of parts partitions.
func cluster(t *testing.T, topic string, parts int32) string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(parts, topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()[0]
}

// produce writes values to topic, spread round-robin over its partitions.
func produce(t *testing.T, addr, topic string, values ...string) {
	t.Helper()
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: topic, Balancer: &kafka.RoundRobin{}, BatchTimeout: time.Millisecond, Transport: tr}
	defer w.Close()
	msgs := make([]kafka.Message, len(values))
	for i, v := range values {
		msgs[i] = kafka.Message{Value: []byte(v)}
	}
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
}

// consume runs parallelism subtasks of the source of c until they have emitted
// want rows between them (or a deadline passes), stops them, checks each Run
// returned, and returns the rows and the bad records counted.
func consume(t *testing.T, mem memory.Allocator, c exec.ConnectorSpec, parallelism, want int) ([]string, int64) {
	t.Helper()
	cfg, err := parseConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reached := make(chan struct{})
	total := make(chan int, 1024)
	var cols []*conntest.Collector
	var tcs []*exec.TaskContext
	done := make(chan error, parallelism)
	for i := range parallelism {
		col := &conntest.Collector{}
		col.OnCollect = func(int) { total <- 0 }
		cols = append(cols, col)
		tc := conntest.TaskContext(t, mem, i, parallelism)
		tcs = append(tcs, tc)
		src := newSource(cfg)
		if err := src.Open(ctx, tc); err != nil {
			t.Fatal(err)
		}
		go func() {
			defer src.Close()
			done <- src.Run(ctx, col)
		}()
	}
	count := func() int {
		n := 0
		for _, c := range cols {
			n += c.NumRows()
		}
		return n
	}
	go func() {
		for range total {
			if count() >= want {
				close(reached)
				return
			}
		}
	}()
	select {
	case <-reached:
	case <-time.After(20 * time.Second):
		t.Errorf("got %d rows, want %d", count(), want)
	}
	cancel()
	for range parallelism {
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run returned %v, want context.Canceled", err)
		}
	}
	close(total) // every Run has returned: nothing collects any more
	var rows []string
	var bad int64
	for i, c := range cols {
		rows = append(rows, c.Rows()...)
		c.Release()
		bad += tcs[i].Metrics.BadRecords.Load()
	}
	slices.Sort(rows)
	return rows, bad
}

func TestSourceText(t *testing.T) {
	addr := cluster(t, "lines", 3)
	var want []string
	for i := range 100 {
		want = append(want, fmt.Sprintf("line %03d", i))
	}
	produce(t, addr, "lines", want...)
	for _, par := range []int{1, 2} {
		t.Run(fmt.Sprint("parallelism=", par), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			c := exec.ConnectorSpec{Connector: Name, URL: "kafka://" + addr + "/lines", Schema: textSchema}
			got, bad := consume(t, mem, c, par, len(want))
			if !slices.Equal(got, want) || bad != 0 {
				t.Errorf("got %d rows (%d bad), want each of %d once:\n%v", len(got), bad, len(want), got)
			}
		})
	}
}

func TestSourceJSONBadRecords(t *testing.T) {
	// One partition, so the records arrive in order and both bad ones are
	// counted by the time the last good one is emitted.
	addr := cluster(t, "rows", 1)
	produce(t, addr, "rows", `{"id": 1, "name": "a"}`, `{"id": 2`, `{"ID": 3}`, `{"id": "x"}`, `{"id": 4, "name": "d", "extra": true}`)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	c := exec.ConnectorSpec{Connector: Name, URL: "kafka://" + addr + "/rows?format=json", Schema: rowSchema}
	got, bad := consume(t, mem, c, 1, 3)
	want := []string{"1|a", "3|NULL", "4|d"}
	if !slices.Equal(got, want) {
		t.Errorf("rows = %v, want %v", got, want)
	}
	if bad != 2 {
		t.Errorf("bad records = %d, want 2", bad)
	}
}

func TestSinkRoundTrip(t *testing.T) {
	for _, format := range []string{FormatJSON, FormatCSV} {
		t.Run(format, func(t *testing.T) {
			topic := "out-" + format
			addr := cluster(t, topic, 3)
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			c := exec.ConnectorSpec{Connector: Name, URL: "kafka://" + addr + "/" + topic + "?format=" + format, Schema: rowSchema}
			cfg, err := parseConfig(c)
			if err != nil {
				t.Fatal(err)
			}
			k := newSink(cfg)
			ctx := context.Background()
			if err := k.Open(ctx, conntest.TaskContext(t, mem, 0, 1)); err != nil {
				t.Fatal(err)
			}
			defer k.Close(ctx)
			rec := batch(t, mem, `[{"id": 1, "name": "a,\"b\""}, {"id": 2, "name": ""}, {"id": null, "name": null}]`)
			defer rec.Release()
			if err := k.ProcessBatch(ctx, 0, exec.Batch{Rec: rec}, nil); err != nil {
				t.Fatal(err)
			}
			err = k.ProcessBatch(ctx, 0, exec.Batch{Rec: rec, Ops: []exec.ChangeKind{exec.Insert, exec.Delete, exec.Insert}}, nil)
			if err == nil || !strings.Contains(err.Error(), "append-only sink got a retraction") {
				t.Errorf("retraction: err = %v", err)
			}
			if err := k.Close(ctx); err != nil {
				t.Fatal(err)
			}
			got, bad := consume(t, mem, c, 1, 3)
			want := []string{`1|a,"b"`, "2|", "NULL|NULL"}
			if !slices.Equal(got, want) || bad != 0 {
				t.Errorf("read back %q (%d bad), want %q", got, bad, want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		url    string
		schema types.Schema
		want   string // "" for valid
	}{
		{"kafka://h:9092,h2:9092/t", textSchema, ""},
		{"kafka://h:9092/t?format=json&group=g&start=LATEST", rowSchema, ""},
		{"kafka://h:9092/t?format=csv", rowSchema, ""},
		{"kafka:///t", textSchema, "no brokers"},
		{"kafka://h/t", textSchema, "needs a port"},
		{"kafka://h:9092/", textSchema, "one topic name"},
		{"kafka://h:9092", textSchema, "one topic name"},
		{"file://h:9092/t", textSchema, "scheme must be kafka"},
		{"kafka://h:9092/t?format=xml", textSchema, `"xml" is not one of text, json, csv`},
		{"kafka://h:9092/t?start=now", textSchema, `"now" is not one of earliest, latest`},
		{"kafka://h:9092/t?format=text", rowSchema, "exactly one TEXT column"},
		{"kafka://h:9092/t?partition=1", textSchema, `unknown option "partition" (valid options: format, group, start)`},
	} {
		err := Validate(exec.ConnectorSpec{Connector: Name, URL: tc.url, Schema: tc.schema})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.url, err)
		case tc.want != "" && (err == nil || !errors.Is(err, spec.ErrBadOption) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: err = %v, want one with %q", tc.url, err, tc.want)
		}
	}
}

func batch(t *testing.T, mem memory.Allocator, rows string) arrow.RecordBatch {
	t.Helper()
	rec, _, err := array.RecordFromJSON(mem, rowSchema.Arrow(), strings.NewReader(rows))
	if err != nil {
		t.Fatal(err)
	}
	return rec
}
