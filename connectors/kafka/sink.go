package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/segmentio/kafka-go"

	"github.com/hummer-db/hummer/exec"
)

// errRetraction is returned for a Delete or UpdateBefore row: an append-only
// topic cannot take one back.
var errRetraction = errors.New("kafka: append-only sink got a retraction")

// sink appends each row to the topic as one message in the table's format.
type sink struct {
	cfg       config
	transport *kafka.Transport
	w         *kafka.Writer
	msgs      []kafka.Message
	buf       []byte
}

var _ exec.Operator = (*sink)(nil)

func newSink(cfg config) *sink { return &sink{cfg: cfg} }

// Open creates the writer; it connects on the first write. The sink has its
// own transport so that Close can drop its connections.
func (k *sink) Open(ctx context.Context, tc *exec.TaskContext) error {
	k.transport = &kafka.Transport{}
	k.w = &kafka.Writer{
		Addr:         kafka.TCP(k.cfg.brokers...),
		Topic:        k.cfg.topic,
		Balancer:     &kafka.RoundRobin{},
		RequiredAcks: kafka.RequireAll,
		BatchSize:    batchRows,
		// WriteMessages is synchronous: waiting for more messages than the call
		// gives only adds latency.
		BatchTimeout: time.Millisecond,
		Transport:    k.transport,
	}
	if tc.Log != nil {
		k.w.ErrorLogger = kafka.LoggerFunc(func(format string, args ...any) {
			tc.Log.Warn("kafka writer: "+fmt.Sprintf(format, args...), "topic", k.cfg.topic)
		})
	}
	return nil
}

// ProcessBatch writes b's rows and returns once the brokers have them all.
func (k *sink) ProcessBatch(ctx context.Context, input int, b exec.Batch, out exec.Collector) error {
	n := b.NumRows()
	if n == 0 {
		return nil
	}
	k.buf = k.buf[:0]
	ends := make([]int, 0, n)
	for i := range n {
		if op := b.Op(i); op == exec.Delete || op == exec.UpdateBefore {
			return errRetraction
		}
		var err error
		if k.buf, err = k.encode(k.buf, b.Rec, i); err != nil {
			return err
		}
		ends = append(ends, len(k.buf))
	}
	// The messages point into one buffer, kept until the next batch: the writer
	// is done with them when WriteMessages returns.
	k.msgs = k.msgs[:0]
	start := 0
	for _, e := range ends {
		k.msgs = append(k.msgs, kafka.Message{Value: k.buf[start:e:e]})
		start = e
	}
	if err := k.w.WriteMessages(ctx, k.msgs...); err != nil {
		return fmt.Errorf("kafka: writing %d rows to %s: %w", n, k.cfg.topic, err)
	}
	return nil
}

// encode appends row i of rec in the table's format.
func (k *sink) encode(dst []byte, rec arrow.RecordBatch, i int) ([]byte, error) {
	switch k.cfg.format {
	case FormatText:
		col := rec.Column(0)
		if col.IsNull(i) {
			return dst, nil // an empty message: text has no NULL
		}
		return append(dst, col.(*array.String).Value(i)...), nil
	case FormatJSON:
		dst = append(dst, '{')
		for j, col := range rec.Columns() {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = strconv.AppendQuote(dst, rec.ColumnName(j)) // ASCII-safe JSON for column names
			dst = append(dst, ':')
			dst = appendJSON(dst, col, i)
		}
		return append(dst, '}'), nil
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
	return dst, nil
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
