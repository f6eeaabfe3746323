package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/bits"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/hummer-db/hummer/exec"
)

// Retrying a call backs off from minBackoff, doubling to maxBackoff, each wait
// drawn between half and all of the current backoff so that subtasks that lost
// the brokers together do not call again in step.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// requestTimeout bounds one request, so that a broker that accepts connections
// but never answers counts as unreachable rather than hanging the task.
const requestTimeout = 30 * time.Second

// unknownTopicWait is how long a topic may be missing before the job fails: long
// enough for brokers that are starting to load it or for a pipeline's topics to
// be created, short enough that a misspelt name fails the job with a clear error
// instead of leaving it waiting unseen. A variable so that tests can shorten it.
var unknownTopicWait = 30 * time.Second

// retrier makes calls to one cluster, retrying while they fail with errors that
// time may cure (see transient), and reports the retrying in the task's status.
// It is safe for concurrent use.
type retrier struct {
	brokers   string // "host:port,host:port", for messages
	transport *kafka.Transport
	metrics   *exec.TaskMetrics
	log       *slog.Logger
}

// newRetrier returns a retrier of calls over tr that reports in metrics and log
// (either may be nil).
func newRetrier(cfg config, tr *kafka.Transport, metrics *exec.TaskMetrics, log *slog.Logger) *retrier {
	if metrics == nil {
		metrics = &exec.TaskMetrics{}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &retrier{brokers: strings.Join(cfg.brokers, ","), transport: tr, metrics: metrics, log: log}
}

// do calls f until it succeeds, fails with an error retrying will not cure, or
// ctx is done; then it returns f's error (wrapped, naming the call as what and
// the brokers) or ctx's. While it retries the task's status says so; a call that
// succeeds after failing clears it.
//
// f must be safe to call again after it failed: it keeps what it read or wrote
// in the caller only once it succeeds.
func (r *retrier) do(ctx context.Context, what string, f func(ctx context.Context) error) error {
	backoff := minBackoff
	var missingSince time.Time
	for attempt := 1; ; attempt++ {
		err := f(ctx)
		if err == nil {
			if attempt > 1 {
				r.metrics.SetStatus("")
				r.log.Info("kafka brokers answer again", "call", what, "attempts", attempt)
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, kafka.UnknownTopicOrPartition) {
			if missingSince.IsZero() {
				missingSince = time.Now()
			}
			if waited := time.Since(missingSince); waited >= unknownTopicWait {
				return fmt.Errorf("kafka: %s: the topic does not exist on brokers %s (waited %v): %w", what, r.brokers, waited.Round(time.Second), err)
			}
		} else if !transient(err) {
			return fmt.Errorf("kafka: %s on brokers %s: %w", what, r.brokers, err)
		}
		r.metrics.SetStatus(fmt.Sprintf("reconnecting to kafka brokers %s: %s: %v (attempt %d)", r.brokers, what, err, attempt))
		wait := backoff/2 + rand.N(backoff/2+1)
		if bits.OnesCount(uint(attempt)) == 1 { // attempts 1, 2, 4, 8...: the log shows the trouble without a line per retry
			r.log.Warn("kafka call failed, retrying", "call", what, "brokers", r.brokers, "attempt", attempt, "retry_in", wait, "err", err)
		}
		// Drop the connections and the cached cluster layout, so that the next
		// attempt dials again and reads fresh metadata: the brokers, the leaders
		// or the topic may have changed while they were away.
		r.transport.CloseIdleConnections()
		if !sleep(ctx, wait) {
			return ctx.Err()
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// transient reports whether a failed call may succeed if made again later.
//
// An error code a broker answered with is transient when Kafka documents it as
// retriable (a leader or coordinator moving, a broker starting or shutting down,
// too few in-sync replicas) or when it says a broker is not available. Other
// codes are the job's configuration or the cluster's policy (authorization
// failed, an invalid topic, a message larger than the brokers take, an
// unsupported version): retrying would not cure them, so they fail the job with
// the broker's message. A missing topic is retried for unknownTopicWait only
// (see retrier.do).
//
// Any other error is the connection: refused, reset, closed, timed out, a host
// name that does not resolve (yet: containers start in any order), or a response
// cut short. Those are retried for as long as the job runs, with the trouble in
// the task's status.
func transient(err error) bool {
	var code kafka.Error
	if errors.As(err, &code) {
		return code.Temporary() || code == kafka.BrokerNotAvailable || code == kafka.ReplicaNotAvailable
	}
	var tooLarge kafka.MessageTooLargeError
	return !errors.As(err, &tooLarge)
}

// sleep waits d, or less if ctx is cancelled first; it reports whether it
// waited d.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// newTransport returns the connections of one task to the brokers. Each task
// has its own so that closing the task, or a retry dropping the connections,
// affects no other.
func newTransport() *kafka.Transport {
	return &kafka.Transport{ClientID: "hummer"}
}

// newWriter returns a writer of topic over tr. It makes one attempt per call,
// leaving retries to write, which reports them; balancer spreads the messages
// over the topic's partitions.
func newWriter(cfg config, topic string, tr *kafka.Transport, balancer kafka.Balancer) *kafka.Writer {
	return &kafka.Writer{
		Addr:         kafka.TCP(cfg.brokers...),
		Topic:        topic,
		Balancer:     balancer,
		RequiredAcks: kafka.RequireAll,
		MaxAttempts:  1,
		// kafka-go allocates room for BatchSize messages per batch; a call's
		// messages go out in batches of this many.
		BatchSize: 256,
		// WriteMessages is synchronous: waiting for more messages than the call
		// gives only adds latency (each call's messages still go out together).
		BatchTimeout: time.Nanosecond,
		ReadTimeout:  requestTimeout,
		WriteTimeout: requestTimeout,
		Transport:    tr,
	}
}

// write writes msgs with w, retrying with r while the brokers cannot take them,
// and returns once the brokers have them all. A retry resends only what the
// brokers did not take, except that with keyed set it resends everything from
// the first message they did not take on, so that a key's later message never
// lands before its earlier one. msgs is reordered in place.
func write(ctx context.Context, r *retrier, what string, w *kafka.Writer, msgs []kafka.Message, keyed bool) error {
	return r.do(ctx, what, func(ctx context.Context) error {
		err := w.WriteMessages(ctx, msgs...)
		var failed kafka.WriteErrors
		if !errors.As(err, &failed) || len(failed) != len(msgs) {
			return err
		}
		// Keep what must be sent again; the first error decides whether to retry,
		// unless one of them is permanent.
		err, kept := nil, 0
		for i, e := range failed {
			if e != nil && (err == nil || transient(err) && !transient(e)) {
				err = e
			}
			if e != nil || keyed && kept > 0 {
				msgs[kept] = msgs[i]
				kept++
			}
		}
		msgs = msgs[:kept]
		return err
	})
}
