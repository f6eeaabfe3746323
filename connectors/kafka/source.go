package kafka

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"

	"github.com/hummer-db/hummer/connectors/internal/records"
	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/types"
)

// A batch is emitted when it holds batchRows rows, or as soon as the records
// fetched so far are taken in: under load batches fill up, and a quiet topic's
// records go on at once instead of waiting for more.
const batchRows = 4096

// A fetch asks for up to fetchMaxBytes of a partition and waits up to
// fetchMaxWait for its first record.
const (
	fetchMaxBytes = 10 << 20
	fetchMaxWait  = 500 * time.Millisecond
)

// maxLoggedBadRecords is how many bad records a subtask logs one by one; the
// rest are only counted.
const maxLoggedBadRecords = 5

// source reads this subtask's partitions of a topic. Open prepares the
// clients without contacting the brokers; Run reads; Close commits the
// progress (with the group option, without checkpoints) and closes the
// connections. source_checkpoint.go holds its part in checkpoints.
type source struct {
	cfg config
	out types.Schema // the projected columns
	log *slog.Logger
	tc  *exec.TaskContext
	// metrics are tc's, or a private set when tc has none.
	metrics *exec.TaskMetrics
	nbad    int64
	parser  *records.Parser
	// keyOut, for a keyed table whose key columns the query reads (the
	// planner reads such a table whole), holds their positions in out: the
	// source then emits a tombstone as the Delete of its key, and a value
	// as an upsert (Insert), for the planner's upsert operator to turn
	// into a changelog. ops are the change kinds of the rows built so far;
	// deletes says one of them is a Delete.
	keyOut  []int
	ops     []exec.ChangeKind
	deletes bool

	transport *kafka.Transport
	client    *kafka.Client
	calls     *retrier
	progress  *progress    // nil without the group option
	dead      *deadLetters // nil without the dead_letter option

	// marks are Run's partitions' watermarks (a table with a WATERMARK),
	// set and moved under the checkpoint lock; restoredMarks what
	// RestoreState gave.
	marks         *partitionMarks
	restoredMarks map[int]int64

	pos      positions        // what has been handed downstream, for SnapshotState
	restored map[int]int64    // by partition, where RestoreState says to start
	snaps    pendingSnapshots // with checkpoints and the group option: offsets to commit
}

var _ exec.Source = (*source)(nil)

func newSource(cfg config) *source {
	out := make(types.Schema, len(cfg.cols))
	for i, c := range cfg.cols {
		out[i] = cfg.schema[c]
	}
	s := &source{cfg: cfg, out: out}
	// A keyed table read whole is a changelog: tombstones are deletes.
	for _, k := range cfg.key {
		j := slices.Index(cfg.cols, k)
		if j < 0 {
			s.keyOut = nil
			break
		}
		s.keyOut = append(s.keyOut, j)
	}
	return s
}

// parseKey reads a tombstone's message key, a JSON object of the key columns,
// into a row whose other columns are NULL.
func (s *source) parseKey(key []byte, bb *records.Builder) error {
	if key == nil {
		return errors.New("a tombstone without a key")
	}
	bb.Reset()
	if err := s.parser.JSON().Parse(key, bb); err != nil {
		return fmt.Errorf("the key of a tombstone: %w", err)
	}
	for _, j := range s.keyOut {
		if bb.IsNull(j) {
			return fmt.Errorf("the key of a tombstone has no %s", s.out[j].Name)
		}
	}
	return nil
}

// Open prepares the clients; the brokers are contacted in Run, which retries
// while they are unreachable.
func (s *source) Open(ctx context.Context, tc *exec.TaskContext) error {
	s.tc = tc
	if s.metrics = tc.Metrics; s.metrics == nil {
		s.metrics = &exec.TaskMetrics{}
	}
	s.log = tc.Log
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.log = s.log.With("topic", s.cfg.topic)
	s.parser = records.NewParser(s.cfg.format, s.cfg.schema, s.cfg.cols)
	s.transport = newTransport()
	s.client = &kafka.Client{Addr: kafka.TCP(s.cfg.brokers...), Timeout: requestTimeout, Transport: s.transport}
	s.calls = newRetrier(s.cfg, s.transport, tc.Metrics, s.log)
	if s.cfg.group != "" {
		s.progress = newProgress(s.cfg.group, s.cfg.topic, s.client, s.calls)
	}
	if s.cfg.deadLetter != "" {
		s.dead = newDeadLetters(s.cfg, s.transport, s.calls)
	}
	return nil
}

// Close commits, with the group option and without checkpoints, the progress
// Run made, then closes the connections. With checkpoints it commits nothing:
// the group holds the offsets of the last completed checkpoint. It is safe to
// call twice, and after a failed Open.
func (s *source) Close() error {
	var errs []error
	if s.progress != nil && !s.tc.Checkpointing {
		ctx, cancel := context.WithTimeout(context.Background(), closeCommitTimeout)
		if err := s.progress.commit(ctx, s.progress.handedOn()); err != nil {
			errs = append(errs, fmt.Errorf("kafka: committing the progress to group %s: %w", s.cfg.group, err))
		}
		cancel()
	}
	s.progress = nil
	if s.dead != nil {
		errs = append(errs, s.dead.close())
		s.dead = nil
	}
	if s.transport != nil {
		s.transport.CloseIdleConnections()
		s.transport = nil
	}
	return errors.Join(errs...)
}

// Run reads this subtask's partitions until ctx is cancelled, then returns
// ctx's error, or until the brokers answer with an error that retrying will
// not cure. Rows not yet emitted when it returns are dropped: with the group
// option or a checkpoint they are read again by the next job, as the offsets
// committed or snapshotted stop before them.
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
	if len(mine) == 0 {
		s.log.Info("kafka source has no partition to read", "partitions", len(parts))
		// It holds no watermark back (exec.Idle); under the checkpoint lock,
		// as everything a source emits.
		if lock := s.tc.CheckpointLock; lock != nil {
			lock.Lock()
		}
		err := out.CollectSignal(ctx, exec.Signal{Kind: exec.Idle})
		if lock := s.tc.CheckpointLock; lock != nil {
			lock.Unlock()
		}
		if err != nil {
			return err
		}
		<-ctx.Done()
		return ctx.Err()
	}
	start, err := s.startOffsets(ctx, mine)
	if err != nil {
		return err
	}
	s.pos.reset(start)
	s.log.Info("kafka source reading", "partitions", mine, "offsets", start, "group", s.cfg.group, "restored", len(s.restored) > 0)

	rctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	msgs := make(chan kafka.Message, batchRows)
	failed := make(chan error, len(mine)+1)
	for _, p := range mine {
		wg.Go(func() {
			if err := s.fetch(rctx, p, start[p], msgs); err != nil && rctx.Err() == nil {
				failed <- err
			}
		})
	}
	if s.progress != nil && !s.tc.Checkpointing {
		wg.Go(func() {
			if err := s.progress.run(rctx); err != nil && rctx.Err() == nil {
				failed <- err
			}
		})
	}

	bb := records.NewBuilder(s.tc.Alloc, s.out)
	defer bb.Release()
	// With a watermark, the partition of each row built (watermarks.go).
	var marks *partitionMarks
	var rowPart []int
	var idleTick <-chan time.Time
	if s.cfg.watermark != nil {
		marks = newPartitionMarks(s.cfg.watermark, s.cfg.idle, mine, time.Now())
		for _, p := range mine {
			if h, ok := s.restoredMarks[p]; ok {
				marks.high[p] = h
			}
		}
		if lock := s.tc.CheckpointLock; lock != nil {
			lock.Lock()
			s.marks = marks
			lock.Unlock()
		} else {
			s.marks = marks
		}
		if s.cfg.idle > 0 {
			t := time.NewTicker(max(s.cfg.idle/4, 10*time.Millisecond))
			defer t.Stop()
			idleTick = t.C
		}
	}
	emitMark := func() error {
		if sig, ok := marks.signal(time.Now()); ok {
			return out.CollectSignal(ctx, sig)
		}
		return nil
	}
	pending := map[int]int64{} // by partition: the offset after the last record taken in
	// flush hands on what the records taken in since the last flush gave: dead
	// letters to their topic, rows downstream; the position checkpoints take
	// moves past them as they go (see positions.snapshot), the progress
	// committed without checkpoints once they have gone.
	flush := func() error {
		if err := s.dead.flush(ctx); err != nil {
			return err
		}
		// The position moves and its batch goes out under the checkpoint lock,
		// so that a checkpoint's snapshot never falls between them.
		if lock := s.tc.CheckpointLock; lock != nil {
			s.pos.waiting.Store(true)
			lock.Lock()
			s.pos.waiting.Store(false)
			defer lock.Unlock()
		}
		s.pos.advance(pending)
		if bb.Rows() > 0 {
			b := exec.Batch{Rec: bb.Flush()}
			if s.deletes {
				b.Ops = s.ops
			}
			var err error
			if marks != nil {
				err = marks.observe(b.Rec, rowPart, s.tc.Alloc, time.Now())
				rowPart = rowPart[:0]
			}
			if err == nil {
				err = out.Collect(ctx, b)
			}
			b.Rec.Release()
			if err == nil && marks != nil {
				err = emitMark()
			}
			if err != nil {
				return err
			}
		}
		s.ops, s.deletes = s.ops[:0], false
		if s.progress != nil && !s.tc.Checkpointing {
			s.progress.advance(pending)
		}
		clear(pending)
		return nil
	}
	for {
		// Time waiting for records is idle, not busy (exec.TaskMetrics).
		var waiting time.Time
		if len(msgs) == 0 {
			waiting = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-failed:
			return err
		case <-idleTick:
			// A partition may have gone idle: the others' watermark goes on.
			if lock := s.tc.CheckpointLock; lock != nil {
				lock.Lock()
			}
			err := emitMark()
			if lock := s.tc.CheckpointLock; lock != nil {
				lock.Unlock()
			}
			if err != nil {
				return err
			}
		case m := <-msgs:
			if !waiting.IsZero() {
				s.metrics.IdleNanos.Add(time.Since(waiting).Nanoseconds())
			}
			pending[m.Partition] = m.Offset + 1
			switch {
			case m.Value == nil && s.keyOut != nil:
				// A tombstone of a keyed table: the delete of its key, which
				// the message key holds.
				if err := s.parseKey(m.Key, bb); err != nil {
					s.badRecord(m, err)
				} else {
					bb.Commit(len(m.Key))
					rowPart = append(rowPart, m.Partition)
					s.ops = append(s.ops, exec.Delete)
					s.deletes = true
				}
			case m.Value == nil:
				// A table without a key has no row a tombstone deletes.
				s.badRecord(m, errTombstone)
			default:
				if err := s.parser.Parse(m.Value, bb); err != nil {
					s.badRecord(m, err)
				} else {
					bb.Commit(len(m.Value))
					rowPart = append(rowPart, m.Partition)
					if s.keyOut != nil {
						s.ops = append(s.ops, exec.Insert)
					}
				}
			}
			if bb.Rows()+s.dead.len() >= batchRows || len(msgs) == 0 {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
}

// partitions lists the topic's partitions, retrying while the brokers cannot
// be reached or, for a while, the topic does not exist.
func (s *source) partitions(ctx context.Context) ([]int, error) {
	var ids []int
	err := s.calls.do(ctx, "reading the partitions of topic "+s.cfg.topic, func(ctx context.Context) error {
		md, err := s.client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{s.cfg.topic}})
		if err != nil {
			return err
		}
		for _, t := range md.Topics {
			if t.Name != s.cfg.topic {
				continue
			}
			if t.Error != nil {
				return t.Error
			}
			if len(t.Partitions) == 0 {
				return errors.New("the topic has no partitions")
			}
			ids = ids[:0]
			for _, p := range t.Partitions {
				ids = append(ids, p.ID)
			}
			slices.Sort(ids)
			return nil
		}
		return kafka.UnknownTopicOrPartition
	})
	return ids, err
}

// fetch hands partition p's records from offset on to msgs until ctx is
// cancelled or a fetch fails for good.
func (s *source) fetch(ctx context.Context, p int, offset int64, msgs chan<- kafka.Message) error {
	what := fmt.Sprintf("fetching partition %d of topic %s", p, s.cfg.topic)
	var got []kafka.Message
	for {
		err := s.calls.do(ctx, what, func(ctx context.Context) error {
			res, err := s.client.Fetch(ctx, &kafka.FetchRequest{
				Topic: s.cfg.topic, Partition: p, Offset: offset,
				MinBytes: 1, MaxBytes: fetchMaxBytes, MaxWait: fetchMaxWait,
			})
			if err != nil {
				return err
			}
			if errors.Is(res.Error, kafka.OffsetOutOfRange) {
				// The records were deleted (retention), or the topic was
				// recreated: start again at the earliest or latest offset,
				// as a Kafka consumer's auto.offset.reset does.
				to, err := s.listOffsets(ctx, []int{p})
				if err != nil {
					return err
				}
				s.log.Warn("offset out of range; moving to the "+s.cfg.reset()+" offset", "partition", p, "offset", offset, "to", to[p])
				got, offset = got[:0], to[p]
				return nil
			}
			if res.Error != nil {
				return res.Error
			}
			recs, next, err := readRecords(res.Records, s.cfg.topic, p, offset, got[:0])
			if err != nil {
				return err
			}
			got, offset = recs, next
			if res.HighWatermark >= offset {
				s.metrics.SetLag(p, res.HighWatermark-offset)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, m := range got {
			select {
			case msgs <- m:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
}

// readRecords appends to dst the records of a fetch response at offset or
// after (a compressed batch may start before), and returns them with the offset
// to fetch next. Control records (transaction markers) move that offset on
// without being returned, so that a partition ending in one is not fetched
// again and again.
func readRecords(rr kafka.RecordReader, topic string, p int, offset int64, dst []kafka.Message) ([]kafka.Message, int64, error) {
	next := offset
	readers := []kafka.RecordReader{rr}
	if stream, ok := rr.(*protocol.RecordStream); ok {
		readers = stream.Records
	}
	for _, r := range readers {
		_, control := r.(*protocol.ControlBatch)
		for {
			rec, err := r.ReadRecord()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, 0, err
			}
			if rec.Offset < next || control {
				next = max(next, rec.Offset+1)
				closeRecord(rec)
				continue
			}
			next = rec.Offset + 1
			m, err := copyRecord(rec, topic, p)
			closeRecord(rec)
			if err != nil {
				return nil, 0, err
			}
			dst = append(dst, m)
		}
	}
	return dst, next, nil
}

// copyRecord returns rec as a message of its own: the response's buffers are
// reused once rec is closed.
func copyRecord(rec *kafka.Record, topic string, p int) (kafka.Message, error) {
	m := kafka.Message{Topic: topic, Partition: p, Offset: rec.Offset, Time: rec.Time}
	var err error
	if m.Key, err = kafka.ReadAll(rec.Key); err != nil {
		return m, err
	}
	if m.Value, err = kafka.ReadAll(rec.Value); err != nil {
		return m, err
	}
	for _, h := range rec.Headers {
		m.Headers = append(m.Headers, kafka.Header{Key: h.Key, Value: bytes.Clone(h.Value)})
	}
	return m, nil
}

// closeRecord releases rec's key and value. They reference the pages of the
// fetch response, which go back to kafka-go's pool only when every record's key
// and value is closed. A page not given back is garbage, and the next fetch
// allocates a new one (64 KiB): before records were closed, that was most of
// what a server running a continuous query allocated.
func closeRecord(rec *kafka.Record) {
	if rec.Key != nil {
		rec.Key.Close()
	}
	if rec.Value != nil {
		rec.Value.Close()
	}
}

// errTombstone is the bad record a message with a null value makes.
var errTombstone = errors.New("a null value (a tombstone), which a table without a PRIMARY KEY has no row it deletes for")

// badRecord counts m, which cause made unreadable, and holds it for the
// dead-letter topic if there is one.
func (s *source) badRecord(m kafka.Message, cause error) {
	s.tc.Metrics.NoteBadRecord(fmt.Sprintf("topic %s, partition %d, offset %d: %v", s.cfg.topic, m.Partition, m.Offset, cause))
	if s.dead != nil {
		s.dead.add(m, cause)
	}
	s.nbad++
	if s.nbad <= maxLoggedBadRecords {
		s.log.Warn("bad record", "partition", m.Partition, "offset", m.Offset, "err", cause, "dead_letter", s.cfg.deadLetter)
	} else if s.nbad == maxLoggedBadRecords+1 {
		s.log.Warn("more bad records; counting them without logging each")
	}
}
