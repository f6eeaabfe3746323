package kafka

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/hummer-db/hummer/connectors/internal/records"
	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/types"
)

// A batch is emitted when it holds batchRows rows, or flushInterval after its
// first row arrived, so that a quiet topic's records do not wait for a full batch.
const (
	batchRows     = 4096
	flushInterval = 100 * time.Millisecond
)

// Retrying an unreachable cluster backs off from minBackoff to maxBackoff.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// maxLoggedBadRecords is how many bad records a subtask logs one by one; the
// rest are only counted.
const maxLoggedBadRecords = 5

// source reads this subtask's partitions of a topic. Everything it opens, it
// opens and closes in Run.
type source struct {
	cfg    config
	out    types.Schema // the projected columns
	log    *slog.Logger
	tc     *exec.TaskContext
	nbad   int64
	csvRec csvRecord
	jsonP  *records.JSONParser
}

var _ exec.Source = (*source)(nil)

func newSource(cfg config) *source {
	out := make(types.Schema, len(cfg.cols))
	for i, c := range cfg.cols {
		out[i] = cfg.schema[c]
	}
	return &source{cfg: cfg, out: out}
}

// Open only records the task: the brokers are contacted in Run, which retries
// while they are unreachable.
func (s *source) Open(ctx context.Context, tc *exec.TaskContext) error {
	s.tc = tc
	s.log = tc.Log
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.log = s.log.With("topic", s.cfg.topic)
	if s.cfg.format == FormatJSON {
		s.jsonP = records.NewJSONParser(s.out)
	}
	return nil
}

// Close has nothing to release: Run closes its readers before returning.
func (s *source) Close() error { return nil }

// Run reads this subtask's partitions until ctx is cancelled, then returns
// ctx's error. Rows not yet emitted at that point are dropped; with checkpoints,
// the offsets committed will say where to resume.
func (s *source) Run(ctx context.Context, out exec.Collector) error {
	parts, err := s.partitions(ctx)
	if err != nil {
		return err
	}
	var mine []int
	for _, p := range parts {
		if p%s.tc.Parallelism == s.tc.Subtask {
			mine = append(mine, p)
		}
	}
	s.log.Info("kafka source reading", "partitions", mine)

	rctx, cancel := context.WithCancel(ctx)
	msgs := make(chan kafka.Message, batchRows)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	for _, p := range mine {
		r := kafka.NewReader(kafka.ReaderConfig{
			Brokers:        s.cfg.brokers,
			Topic:          s.cfg.topic,
			Partition:      p,
			MinBytes:       1,
			MaxBytes:       10 << 20,
			MaxWait:        flushInterval,
			ReadBackoffMin: minBackoff,
			ReadBackoffMax: maxBackoff,
			ErrorLogger: kafka.LoggerFunc(func(format string, args ...any) {
				s.log.Warn("kafka reader: "+fmt.Sprintf(format, args...), "partition", p)
			}),
		})
		if s.cfg.start == StartLatest {
			if err := r.SetOffset(kafka.LastOffset); err != nil {
				r.Close()
				return err
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer r.Close()
			s.read(rctx, r, p, msgs)
		}()
	}

	bb := records.NewBuilder(s.tc.Alloc, s.out)
	defer bb.Release()
	timer := time.NewTimer(flushInterval)
	timer.Stop()
	armed := false
	flush := func() error {
		if armed {
			timer.Stop()
			armed = false
		}
		rec := bb.Flush()
		defer rec.Release()
		return out.Collect(ctx, exec.Batch{Rec: rec})
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case m := <-msgs:
			if err := s.parse(m.Value, bb); err != nil {
				s.badRecord(m, err)
				continue
			}
			bb.Commit(len(m.Value))
			switch {
			case bb.Rows() >= batchRows:
				if err := flush(); err != nil {
					return err
				}
			case !armed:
				timer.Reset(flushInterval)
				armed = true
			}
		case <-timer.C:
			armed = false
			if bb.Rows() > 0 {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
}

// read hands partition p's messages to msgs until ctx is cancelled. The reader
// retries fetches itself, with backoff, while the partition's leader is
// unreachable.
func (s *source) read(ctx context.Context, r *kafka.Reader, p int, msgs chan<- kafka.Message) {
	backoff := minBackoff
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.log.Warn("kafka fetch failed, retrying", "partition", p, "err", err, "backoff", backoff)
			if !sleep(ctx, backoff) {
				return
			}
			backoff = min(2*backoff, maxBackoff)
			continue
		}
		backoff = minBackoff
		select {
		case msgs <- m:
		case <-ctx.Done():
			return
		}
	}
}

// parse fills the row bb is reading from one message value.
func (s *source) parse(v []byte, bb *records.Builder) error {
	bb.Reset()
	switch s.cfg.format {
	case FormatText:
		if len(s.out) == 1 {
			return bb.ParseField(0, v)
		}
		return nil
	case FormatJSON:
		if len(bytes.TrimSpace(v)) == 0 {
			return errors.New("empty message")
		}
		return s.jsonP.Parse(v, bb)
	}
	rec := &s.csvRec
	if err := rec.parse(v); err != nil {
		return err
	}
	if n := len(rec.fields); n != len(s.cfg.schema) {
		return fmt.Errorf("%d fields, the table has %d columns", n, len(s.cfg.schema))
	}
	for i, col := range s.cfg.cols {
		f := rec.fields[col]
		if len(f) == 0 && !rec.quoted[col] {
			bb.SetNull(i)
			continue
		}
		if err := bb.ParseField(i, f); err != nil {
			return fmt.Errorf("column %s: %w", s.out[i].Name, err)
		}
	}
	return nil
}

func (s *source) badRecord(m kafka.Message, err error) {
	s.tc.Metrics.BadRecords.Add(1)
	s.nbad++
	if s.nbad <= maxLoggedBadRecords {
		s.log.Warn("skipping bad record", "partition", m.Partition, "offset", m.Offset, "err", err)
	} else if s.nbad == maxLoggedBadRecords+1 {
		s.log.Warn("more bad records; counting them without logging each")
	}
}

// partitions lists the topic's partitions, retrying with backoff while no broker
// answers or the topic does not exist, until ctx is cancelled.
func (s *source) partitions(ctx context.Context) ([]int, error) {
	backoff := minBackoff
	for {
		parts, err := s.readPartitions(ctx)
		if err == nil && len(parts) == 0 {
			err = errors.New("the topic has no partitions")
		}
		if err == nil {
			return parts, nil
		}
		s.log.Warn("cannot list the topic's partitions, retrying", "brokers", s.cfg.brokers, "err", err, "backoff", backoff)
		if !sleep(ctx, backoff) {
			return nil, ctx.Err()
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

func (s *source) readPartitions(ctx context.Context) ([]int, error) {
	var errs []error
	for _, b := range s.cfg.brokers {
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		conn, err := kafka.DialContext(dctx, "tcp", b)
		cancel()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		ps, err := conn.ReadPartitions(s.cfg.topic)
		conn.Close()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", b, err))
			continue
		}
		ids := make([]int, len(ps))
		for i, p := range ps {
			ids[i] = p.ID
		}
		return ids, nil
	}
	return nil, errors.Join(errs...)
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
