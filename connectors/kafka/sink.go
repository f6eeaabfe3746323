package kafka

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/segmentio/kafka-go"

	"github.com/hummer-db/hummer/exec"
)

// sink writes each row to the topic as one message in the table's format:
// appended, or, for a table with a PRIMARY KEY, upserted by its key.
type sink struct {
	cfg       config
	transport *kafka.Transport
	w         *kafka.Writer
	calls     *retrier
	what      string // the call, for status and errors
	msgs      []kafka.Message
	spans     []span
	buf       []byte
}

// span locates one message in sink.buf: its key is buf[start:keyEnd], its
// value buf[keyEnd:end], or null for a tombstone.
type span struct {
	start, keyEnd, end int
	tombstone          bool
}

var _ exec.Operator = (*sink)(nil)

func newSink(cfg config) *sink { return &sink{cfg: cfg} }

// Open creates the writer; it connects on the first write. The sink has its
// own transport so that Close can drop its connections.
func (k *sink) Open(ctx context.Context, tc *exec.TaskContext) error {
	k.transport = newTransport()
	var balancer kafka.Balancer = &kafka.RoundRobin{}
	if k.upsert() {
		// The Java client's partitioner for keyed messages: a key's messages
		// stay in one partition, the one a Java producer would choose.
		balancer = &kafka.Murmur2Balancer{}
	}
	k.w = newWriter(k.cfg, k.cfg.topic, k.transport, balancer)
	var log *slog.Logger
	if tc.Log != nil {
		log = tc.Log.With("topic", k.cfg.topic)
	}
	k.calls = newRetrier(k.cfg, k.transport, tc.Metrics, log)
	k.what = "writing to topic " + k.cfg.topic
	return nil
}

func (k *sink) upsert() bool { return len(k.cfg.key) > 0 }

// ProcessBatch writes b's rows and returns once the brokers have them all,
// retrying while they cannot be reached.
func (k *sink) ProcessBatch(ctx context.Context, input int, b exec.Batch, out exec.Collector) error {
	n := b.NumRows()
	if n == 0 {
		return nil
	}
	if got, want := int(b.Rec.NumCols()), len(k.cfg.schema); got != want {
		return fmt.Errorf("kafka: the sink got rows of %d columns, table %s has %d", got, k.cfg.topic, want)
	}
	k.buf, k.spans = k.buf[:0], k.spans[:0]
	for i := range n {
		op := b.Op(i)
		switch {
		case !k.upsert() && (op == exec.Delete || op == exec.UpdateBefore):
			return errRetraction
		case op == exec.UpdateBefore:
			continue // its UpdateAfter, next, overwrites the key
		}
		s := span{start: len(k.buf), tombstone: op == exec.Delete}
		if k.upsert() {
			k.buf = k.appendObject(k.buf, b.Rec, i, k.cfg.key)
		}
		s.keyEnd = len(k.buf)
		if !s.tombstone {
			k.buf = k.encode(k.buf, b.Rec, i)
		}
		s.end = len(k.buf)
		k.spans = append(k.spans, s)
	}
	// The messages point into one buffer, kept until the next batch: the writer
	// is done with them when WriteMessages returns.
	k.msgs = k.msgs[:0]
	for _, s := range k.spans {
		var m kafka.Message
		if k.upsert() {
			m.Key = k.buf[s.start:s.keyEnd:s.keyEnd]
		}
		if !s.tombstone {
			m.Value = k.buf[s.keyEnd:s.end:s.end]
			if m.Value == nil {
				m.Value = []byte{} // an empty value (a NULL in format=text), not a tombstone
			}
		}
		k.msgs = append(k.msgs, m)
	}
	if len(k.msgs) == 0 {
		return nil
	}
	if err := write(ctx, k.calls, k.what, k.w, k.msgs, k.upsert()); err != nil {
		return fmt.Errorf("kafka: writing %d rows to %s: %w", len(k.msgs), k.cfg.topic, err)
	}
	return nil
}

// encode appends row i of rec in the table's format.
func (k *sink) encode(dst []byte, rec arrow.RecordBatch, i int) []byte {
	switch k.cfg.format {
	case FormatText:
		col := rec.Column(0)
		if col.IsNull(i) {
			return dst // an empty message: text has no NULL
		}
		return append(dst, col.(*array.String).Value(i)...)
	case FormatJSON:
		return k.appendObject(dst, rec, i, nil)
	}
	for j, col := range rec.Columns() {
		if j > 0 {
			dst = append(dst, ',')
		}
		if col.IsNull(i) {
			continue // an empty unquoted field is NULL
		}
		dst = appendCSV(dst, valueStr(col, i))
	}
	return dst
}

// appendObject appends row i of rec as a JSON object of the columns at
// positions cols, or of every column when cols is nil, named as in the table
// (the query feeding the sink may have named them otherwise).
func (k *sink) appendObject(dst []byte, rec arrow.RecordBatch, i int, cols []int) []byte {
	dst = append(dst, '{')
	field := func(n, j int) {
		if n > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendQuote(dst, k.cfg.schema[j].Name) // ASCII-safe JSON for column names
		dst = append(dst, ':')
		dst = appendJSON(dst, rec.Column(j), i)
	}
	if cols == nil {
		for j := range len(k.cfg.schema) {
			field(j, j)
		}
	} else {
		for n, j := range cols {
			field(n, j)
		}
	}
	return append(dst, '}')
}

func valueStr(col arrow.Array, i int) string {
	if s, ok := col.(*array.String); ok {
		return s.Value(i)
	}
	return col.ValueStr(i)
}

func appendJSON(dst []byte, col arrow.Array, i int) []byte {
	if col.IsNull(i) {
		return append(dst, "null"...)
	}
	switch c := col.(type) {
	case *array.Boolean, *array.Int64, *array.Decimal128:
		return append(dst, c.ValueStr(i)...) // exact: a DECIMAL reads back unchanged
	case *array.Float64:
		f := c.Value(i)
		if b, err := json.Marshal(f); err == nil {
			return append(dst, b...)
		}
		return strconv.AppendQuote(dst, c.ValueStr(i)) // NaN and infinities are not JSON numbers
	}
	b, _ := json.Marshal(valueStr(col, i))
	return append(dst, b...)
}

// appendCSV appends one RFC 4180 field, quoted when it must be, and always
// when empty so that it does not read back as NULL.
func appendCSV(dst []byte, s string) []byte {
	if s != "" && !strings.ContainsAny(s, ",\"\r\n") {
		return append(dst, s...)
	}
	dst = append(dst, '"')
	dst = append(dst, strings.ReplaceAll(s, `"`, `""`)...)
	return append(dst, '"')
}

// ProcessSignal forwards signals: the sink consumes none of them.
func (k *sink) ProcessSignal(ctx context.Context, input int, s exec.Signal, out exec.Collector) error {
	if out == nil {
		return nil
	}
	return out.CollectSignal(ctx, s)
}

// Close closes the writer and its connections; it is safe to call twice.
func (k *sink) Close(ctx context.Context) error {
	var err error
	if k.w != nil {
		err = k.w.Close()
		k.w = nil
	}
	if k.transport != nil {
		k.transport.CloseIdleConnections()
		k.transport = nil
	}
	return err
}
