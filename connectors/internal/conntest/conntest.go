// Package conntest holds what the connectors' tests share: a collector that keeps
// what a source emits, a task context, and a way to read batches back as text.
package conntest

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
)

// Collector keeps every batch collected, retained, and every signal. It is safe
// for concurrent use.
type Collector struct {
	mu      sync.Mutex
	Batches []exec.Batch
	Signals []exec.Signal
	// OnCollect, if set, runs after each batch is kept.
	OnCollect func(n int)
}

var _ exec.Collector = (*Collector)(nil)

// Collect retains b, and copies its change kinds: a batch is borrowed for
// the call, and a source reuses its Ops slice for the next batch (the Kafka
// source's tombstone, a Delete, once read back as an Insert here).
func (c *Collector) Collect(ctx context.Context, b exec.Batch) error {
	b.Rec.Retain()
	b.Ops = slices.Clone(b.Ops)
	c.mu.Lock()
	c.Batches = append(c.Batches, b)
	n := len(c.Batches)
	c.mu.Unlock()
	if c.OnCollect != nil {
		c.OnCollect(n)
	}
	return nil
}

// CollectSignal keeps s.
func (c *Collector) CollectSignal(ctx context.Context, s exec.Signal) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.Signals = append(c.Signals, s)
	return nil
}

// Release releases the batches kept.
func (c *Collector) Release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range c.Batches {
		b.Rec.Release()
	}
	c.Batches = nil
}

// Rows returns the rows kept, in order, as Rows formats them.
func (c *Collector) Rows() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Rows(c.Batches)
}

// NumRows returns the number of rows kept.
func (c *Collector) NumRows() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, b := range c.Batches {
		n += b.NumRows()
	}
	return n
}

// Rows formats each row of batches as its values (Arrow's ValueStr, NULL for a
// null) joined by "|", prefixed by "-" for a Delete or UpdateBefore and "+" for
// an UpdateAfter.
func Rows(batches []exec.Batch) []string {
	var rows []string
	var sb strings.Builder
	for _, b := range batches {
		for i := 0; i < b.NumRows(); i++ {
			sb.Reset()
			switch b.Op(i) {
			case exec.Delete, exec.UpdateBefore:
				sb.WriteByte('-')
			case exec.UpdateAfter:
				sb.WriteByte('+')
			}
			for j, col := range b.Rec.Columns() {
				if j > 0 {
					sb.WriteByte('|')
				}
				if col.IsNull(i) {
					sb.WriteString("NULL")
				} else {
					sb.WriteString(col.ValueStr(i))
				}
			}
			rows = append(rows, sb.String())
		}
	}
	return rows
}

// Strings returns the values of a TEXT column of every batch, in order.
func Strings(batches []exec.Batch, col int) []string {
	var out []string
	for _, b := range batches {
		a := b.Rec.Column(col).(*array.String)
		for i := 0; i < a.Len(); i++ {
			out = append(out, a.Value(i))
		}
	}
	return out
}

// TaskContext returns the context of subtask of parallelism, logging to t.
func TaskContext(t testing.TB, alloc memory.Allocator, subtask, parallelism int) *exec.TaskContext {
	return &exec.TaskContext{
		JobID:       "test",
		TaskName:    "source",
		Subtask:     subtask,
		Parallelism: parallelism,
		Alloc:       alloc,
		Log:         slog.New(slog.NewTextHandler(testWriter{t}, nil)),
		Metrics:     &exec.TaskMetrics{},
	}
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// StringBatch returns a batch of one TEXT column named name holding values.
func StringBatch(alloc memory.Allocator, name string, values ...string) arrow.RecordBatch {
	b := array.NewStringBuilder(alloc)
	defer b.Release()
	b.AppendValues(values, nil)
	col := b.NewArray()
	defer col.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: name, Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	return array.NewRecordBatch(schema, []arrow.Array{col}, int64(col.Len()))
}
