package kafka

import (
	"context"
	"strconv"

	"github.com/segmentio/kafka-go"

	"github.com/hummer-db/hummer/exec"
)

// deadLetters holds the malformed records of a source subtask until flush
// writes them to the dead_letter topic, which the source does before its
// progress moves past them: a dead letter is never lost, at worst written twice.
type deadLetters struct {
	w       *kafka.Writer
	calls   *retrier
	what    string
	metrics *exec.TaskMetrics
	msgs    []kafka.Message
}

func newDeadLetters(cfg config, tr *kafka.Transport, calls *retrier) *deadLetters {
	// The original key decides the partition, as it did in the topic read.
	return &deadLetters{
		w:       newWriter(cfg, cfg.deadLetter, tr, &kafka.Murmur2Balancer{}),
		calls:   calls,
		what:    "writing dead letters to topic " + cfg.deadLetter,
		metrics: calls.metrics,
	}
}

// add holds m, which could not be read because of cause, for the next flush.
func (d *deadLetters) add(m kafka.Message, cause error) {
	h := make([]kafka.Header, 0, len(m.Headers)+4)
	h = append(h, m.Headers...)
	h = append(h,
		kafka.Header{Key: HeaderError, Value: []byte(cause.Error())},
		kafka.Header{Key: HeaderTopic, Value: []byte(m.Topic)},
		kafka.Header{Key: HeaderPartition, Value: strconv.AppendInt(nil, int64(m.Partition), 10)},
		kafka.Header{Key: HeaderOffset, Value: strconv.AppendInt(nil, m.Offset, 10)},
	)
	d.msgs = append(d.msgs, kafka.Message{Key: m.Key, Value: m.Value, Headers: h})
}

// len returns the number of dead letters held.
func (d *deadLetters) len() int {
	if d == nil {
		return 0
	}
	return len(d.msgs)
}

// flush writes the dead letters held, retrying while the brokers cannot take
// them, and counts them in the task's DeadLetters.
func (d *deadLetters) flush(ctx context.Context) error {
	if d.len() == 0 {
		return nil
	}
	n := len(d.msgs)
	if err := write(ctx, d.calls, d.what, d.w, d.msgs, true); err != nil {
		return err
	}
	d.metrics.DeadLetters.Add(int64(n))
	clear(d.msgs)
	d.msgs = d.msgs[:0]
	return nil
}

func (d *deadLetters) close() error { return d.w.Close() }
