package kafka

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hummer-db/hummer/connectors/internal/records"
	"github.com/hummer-db/hummer/exec"
)

// sink writes each row to the topic as one message in the table's format:
// appended, or, for a table with a PRIMARY KEY, upserted by its key. Without
// checkpoints it writes with kafka-go, each batch as it comes; with them, in
// transactions committed as checkpoints complete (txn.go).
type sink struct {
	cfg       config
	transport *kafka.Transport // without checkpoints
	w         *kafka.Writer    // without checkpoints
	txn       *txnWriter       // with checkpoints
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

var (
	_ exec.Operator           = (*sink)(nil)
	_ exec.Checkpointed       = (*sink)(nil)
	_ exec.CheckpointListener = (*sink)(nil)
)

func newSink(cfg config) *sink { return &sink{cfg: cfg} }

// Open creates the writer; it connects on the first write. The sink has its
// own transport so that Close can drop its connections. With checkpoints it
// creates the pool of transactional producers instead, which first contacts
// the brokers in RestoreState or before the first record.
func (k *sink) Open(ctx context.Context, tc *exec.TaskContext) error {
	log := slog.New(slog.DiscardHandler)
	if tc.Log != nil {
		log = tc.Log.With("topic", k.cfg.topic)
	}
	k.what = "writing to topic " + k.cfg.topic
	if tc.Checkpointing {
		k.txn = newTxnWriter(k.cfg, tc, log)
		return nil
	}
	k.transport = newTransport()
	var balancer kafka.Balancer = &kafka.RoundRobin{}
	if k.upsert() {
		// The Java client's partitioner for keyed messages: a key's messages
		// stay in one partition, the one a Java producer would choose.
		balancer = &kafka.Murmur2Balancer{}
	}
	k.w = newWriter(k.cfg, k.cfg.topic, k.transport, balancer)
	k.calls = newRetrier(k.cfg, k.transport, tc.Metrics, log)
	return nil
}

func (k *sink) upsert() bool { return len(k.cfg.key) > 0 }

// ProcessBatch writes b's rows and returns once the brokers have them all,
// retrying while they cannot be reached; with checkpoints, in the open
// epoch's transaction.
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
	if len(k.spans) == 0 {
		return nil
	}
	if k.txn != nil {
		return k.produceTxn(ctx)
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
	if err := write(ctx, k.calls, k.what, k.w, k.msgs, k.upsert()); err != nil {
		return fmt.Errorf("kafka: writing %d rows to %s: %w", len(k.msgs), k.cfg.topic, err)
	}
	return nil
}

// produceTxn writes the messages of k.spans in the open epoch's transaction.
func (k *sink) produceTxn(ctx context.Context) error {
	if err := k.ready(ctx); err != nil {
		return err
	}
	w := k.txn
	// As with kafka-go, the records point into k.buf: ProduceSync is done
	// with them when it returns.
	w.recs = slices.Grow(w.recs[:0], len(k.spans))[:len(k.spans)]
	w.ptrs = w.ptrs[:0]
	for i, s := range k.spans {
		r := &w.recs[i]
		*r = kgo.Record{Topic: k.cfg.topic}
		if k.upsert() {
			r.Key = k.buf[s.start:s.keyEnd:s.keyEnd]
		}
		if !s.tombstone {
			r.Value = k.buf[s.keyEnd:s.end:s.end]
			if r.Value == nil {
				r.Value = []byte{} // an empty value (a NULL in format=text), not a tombstone
			}
		}
		w.ptrs = append(w.ptrs, r)
	}
	if err := w.produce(ctx, w.ptrs); err != nil {
		return fmt.Errorf("kafka: writing %d rows to %s in a transaction: %w", len(w.ptrs), k.cfg.topic, err)
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
		start := len(dst)
		dst = records.AppendText(dst, col, k.cfg.schema[j].Type, i)
		dst = records.QuoteCSV(dst, start, ',')
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
		dst = records.AppendJSONString(dst, k.cfg.schema[j].Name)
		dst = append(dst, ':')
		dst = records.AppendJSONValue(dst, rec.Column(j), k.cfg.schema[j].Type, i)
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

// ProcessSignal forwards signals: the sink consumes none of them. With
// checkpoints, a barrier first ends the epoch: its records are all on the
// brokers and its transaction awaits the checkpoint's completion. End of
// stream commits every transaction at once, as no checkpoint will complete
// after it.
func (k *sink) ProcessSignal(ctx context.Context, input int, s exec.Signal, out exec.Collector) error {
	if k.txn != nil && (s.Kind == exec.Barrier || s.Kind == exec.EndOfStream) {
		if err := k.ready(ctx); err != nil {
			return err
		}
		var err error
		if s.Kind == exec.Barrier {
			err = k.txn.barrier(ctx, s.Checkpoint)
		} else {
			err = k.txn.finish(ctx)
		}
		if err != nil {
			return err
		}
	}
	if out == nil {
		return nil
	}
	return out.CollectSignal(ctx, s)
}

// ready readies, once, the transactional producers of a task that restored
// no state (RestoreState readies them otherwise).
func (k *sink) ready(ctx context.Context) error {
	if k.txn.recovered {
		return nil
	}
	return k.txn.recover(ctx, nil)
}

// SnapshotState returns, with checkpoints, the transactions awaiting the
// completion of checkpoint or earlier ones, as JSON: a task restarting from
// checkpoint commits them. Without checkpoints it returns nil.
func (k *sink) SnapshotState(ctx context.Context, checkpoint int64) ([]byte, error) {
	if k.txn == nil {
		return nil, nil
	}
	return json.Marshal(k.txn.snapshot(checkpoint))
}

// RestoreState commits the transactions data lists, as their checkpoint
// completed, and aborts every other transaction an earlier incarnation of the
// task left open (txn.go). It is called after Open, before any input.
func (k *sink) RestoreState(ctx context.Context, data []byte) error {
	if k.txn == nil {
		return nil
	}
	var st sinkState
	if err := json.Unmarshal(data, &st); err != nil {
		return fmt.Errorf("kafka: restoring the sink of topic %s: %w", k.cfg.topic, err)
	}
	if st.Version != sinkStateVersion {
		return fmt.Errorf("kafka: restoring the sink of topic %s: state version %d, this release reads version %d", k.cfg.topic, st.Version, sinkStateVersion)
	}
	if k.txn.recovered {
		return fmt.Errorf("kafka: restoring the sink of topic %s after it started", k.cfg.topic)
	}
	return k.txn.recover(ctx, &st)
}

// NotifyCheckpointComplete commits, with checkpoints, the transactions of
// checkpoint and of the ones before it.
func (k *sink) NotifyCheckpointComplete(ctx context.Context, checkpoint int64) error {
	if k.txn == nil {
		return nil
	}
	if err := k.ready(ctx); err != nil {
		return err
	}
	return k.txn.complete(ctx, checkpoint)
}

// Close closes the writer and its connections; it is safe to call twice.
// With checkpoints it aborts the open epoch's transaction and leaves those
// awaiting their checkpoints to the task that restarts from one (txn.go).
func (k *sink) Close(ctx context.Context) error {
	if k.txn != nil {
		k.txn.close()
	}
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
