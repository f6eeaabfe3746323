package connectors

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/connectors/internal/conntest"
	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/operators"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/exec/vector"
)

var lines = types.Schema{{Name: "line", Type: types.StringType}}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		connector, url string
		err            error
		msg            string
	}{
		{connector: "file", url: "file:///data/kjv.txt"},
		{connector: "memory", url: "memory://t"},
		{connector: "kinesis", url: "kinesis://x", err: exec.ErrUnknownConnector, msg: `"kinesis" (connectors: file, kafka, memory, nexmark, blackhole, socket, hummer, hummer_changes)`},
		{connector: "file", url: "file:///data/kjv.txt?format=xml", err: ErrBadOption, msg: "not one of text, csv, json"},
		{connector: "memory", url: "memory://", err: ErrBadOption},
		{connector: "socket", url: "socket://localhost:9999"},
		{connector: "socket", url: "socket://localhost", err: ErrBadOption, msg: "want a host and a port"},
	} {
		err := Validate(exec.ConnectorSpec{Connector: tc.connector, URL: tc.url, Schema: lines})
		if tc.err == nil && err != nil || tc.err != nil && (!errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.msg)) {
			t.Errorf("%s %s: error %v, want %v with %q", tc.connector, tc.url, err, tc.err, tc.msg)
		}
	}
}

func TestMaxParallelism(t *testing.T) {
	two := types.Schema{{Name: "a", Type: types.Int64Type}, {Name: "b", Type: types.StringType}}
	for _, tc := range []struct {
		c    exec.ConnectorSpec
		want int
	}{
		{exec.ConnectorSpec{Connector: "file", URL: "file:///x", Schema: lines}, 0},
		{exec.ConnectorSpec{Connector: "file", URL: "file:///x?format=json", Schema: two}, 0},
		{exec.ConnectorSpec{Connector: "file", URL: "file:///x?format=csv", Schema: two}, 0},
		{exec.ConnectorSpec{Connector: "file", URL: "file:///x?format=csv&bad_rows=skip", Schema: two}, 1},
		{exec.ConnectorSpec{Connector: "memory", URL: "memory://t", Schema: two}, 0},
		{exec.ConnectorSpec{Connector: "socket", URL: "socket://localhost:9999", Schema: lines}, 1},
	} {
		if got := MaxParallelism(tc.c); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.c.URL, got, tc.want)
		}
	}
}

func TestUnbounded(t *testing.T) {
	for _, tc := range []struct {
		connector, url string
		want           bool
	}{
		{"kafka", "kafka://h:9092/t", true},
		{"socket", "socket://localhost:9999", true},
		{"nexmark", "nexmark://bid", true},
		{"nexmark", "nexmark://bid?events=10", false},
		{"nexmark", "nexmark://bid?events=10&continuous=true", true},
		{"file", "file:///x", false},
		{"memory", "memory://t", false},
	} {
		if got := Unbounded(tc.connector, tc.url); got != tc.want {
			t.Errorf("Unbounded(%s, %s) = %v, want %v", tc.connector, tc.url, got, tc.want)
		}
	}
}

func TestDescribe(t *testing.T) {
	var names []string
	for _, c := range Describe() {
		names = append(names, c.Name)
		if c.URL == "" || c.Description == "" {
			t.Errorf("%s: no URL or description", c.Name)
		}
		for _, o := range c.Options {
			if o.Description == "" || o.Type == "" {
				t.Errorf("%s: option %s undocumented", c.Name, o.Name)
			}
		}
	}
	if want := []string{"blackhole", "file", "hummer", "hummer_changes", "kafka", "memory", "nexmark", "socket"}; !slices.Equal(names, want) {
		t.Errorf("connectors %v, want %v", names, want)
	}
}

// TestRegister builds every connector through the registry and moves rows from
// a memory table through the memory sink into another.
func TestRegister(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	r := exec.NewRegistry()
	operators.Register(r)
	store := Register(r)
	defer store.Close()
	if got, want := r.Connectors(), []string{"blackhole", "file", "hummer", "hummer_changes", "kafka", "memory", "nexmark", "socket"}; !slices.Equal(got, want) {
		t.Errorf("registered %v, want %v", got, want)
	}
	if _, err := r.NewSink(exec.ConnectorSpec{Connector: "file", URL: "file:///x", Schema: lines}); !errors.Is(err, exec.ErrBadInput) {
		t.Errorf("file sink of a file, not a directory: %v, want ErrBadInput", err)
	}
	if _, err := r.NewSink(exec.ConnectorSpec{Connector: "file", URL: "file:///x/", Schema: lines}); err != nil {
		t.Errorf("file sink of a directory: %v", err)
	}
	if _, err := r.NewSource(exec.ConnectorSpec{Connector: "file", URL: "file:///x?format=xml", Schema: lines}); !errors.Is(err, ErrBadOption) {
		t.Errorf("file source with a bad option: %v", err)
	}

	in := exec.ConnectorSpec{Connector: "memory", URL: "memory://in", Schema: lines}
	out := exec.ConnectorSpec{Connector: "memory", URL: "memory://out", Schema: lines}
	b := conntest.StringBatch(mem, "line", "a", "b")
	if err := store.Put("in", lines, b); err != nil {
		t.Fatal(err)
	}
	b.Release()
	src, err := r.NewSource(in)
	if err != nil {
		t.Fatal(err)
	}
	sink, err := r.NewSink(out)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tc := conntest.TaskContext(t, mem, 0, 1)
	if err := src.Open(ctx, tc); err != nil {
		t.Fatal(err)
	}
	if err := sink.Open(ctx, tc); err != nil {
		t.Fatal(err)
	}
	if err := src.Run(ctx, sinkCollector{sink}); err != nil {
		t.Fatal(err)
	}
	src.Close()
	sink.Close(ctx)
	got, _ := store.Batches("out")
	defer func() {
		for _, b := range got {
			b.Rec.Release()
		}
	}()
	if rows := conntest.Rows(got); !slices.Equal(rows, []string{"a", "b"}) {
		t.Errorf("out holds %q", rows)
	}
}

// sinkCollector feeds what a source emits to a sink, as a fused chain would.
type sinkCollector struct{ op exec.Operator }

func (c sinkCollector) Collect(ctx context.Context, b exec.Batch) error {
	return c.op.ProcessBatch(ctx, 0, b, nil)
}

func (c sinkCollector) CollectSignal(ctx context.Context, s exec.Signal) error {
	return c.op.ProcessSignal(ctx, 0, s, nil)
}
