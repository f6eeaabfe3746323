package kafka

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/bits"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/hummer-db/hummer/exec"
)

// The exactly-once sink: with checkpoints, the sink writes the records it
// takes between two barriers, an epoch, in one Kafka transaction, and commits
// it when the checkpoint of the barrier that ended the epoch completes (a
// two-phase commit: the barrier is the prepare, the completion the commit).
// Readers with isolation.level=read_committed then see each record once.
//
// It uses franz-go's kgo rather than kafka-go, which has only the protocol's
// transaction requests, not a transactional producer: kgo keeps the producer
// ID and epoch, adds partitions to the transaction, sequences the records and
// ends the transaction, on brokers before and after KIP-890.
//
// One kgo client has one transaction open at a time, and the next epoch starts
// while the last awaits its checkpoint's completion, so the sink keeps a small
// pool of transactional clients, slots, with transactional IDs stable across
// restarts of the same task:
//
//	hummer-<job id>-<vertex>-<topic>-<subtask>-<slot>
//
// (the vertex is the task's name without its "[i/n]"). The first slot free is
// used, so the slots a task ever used are 0 to some n. A slot is free when it
// holds no transaction and no restorable checkpoint lists its last one.
//
// A task that restarts from checkpoint n gets the sink state of n: the
// transactions pending at n's barrier, with their producer IDs and epochs. As n
// completed, it commits them (again, harmlessly, if the old task had), then
// opens every other slot anew, which fences the old task's producer and aborts
// whatever it had open: epochs after n, replayed from n's source positions. It
// goes on past the slots n knew of until a transactional ID the brokers have
// never seen. A task starting without state does the same from slot 0, before
// its first record. A slot n's state lists is not reused until a later
// checkpoint completes, so that committing by producer ID and epoch after a
// restart can never commit a later transaction.

// txnTimeout is the transaction timeout of the sink's producers: the brokers
// abort a transaction left open longer. A transaction stays open from its
// epoch's first record until its checkpoint completes and, when the job fails,
// until the restarted task commits or fences it, so this must exceed a
// checkpoint interval plus a restart. It is the brokers' default maximum
// (transaction.max.timeout.ms); the price of a long timeout is that after a job
// is cancelled for good, read_committed readers of the partitions it wrote wait
// that long for its pending transactions.
const txnTimeout = 15 * time.Minute

// maxTxnSlots bounds a sink subtask's transactional producers: as many
// checkpoints as this may await completion at once. Three suffice when each
// completes before the next barrier after it.
const maxTxnSlots = 16

// endTimeout bounds aborting the open transaction as the sink closes.
const endTimeout = 5 * time.Second

// sinkStateVersion is the version of sinkState's encoding.
const sinkStateVersion = 1

// sinkState is what the transactional sink's SnapshotState returns, as JSON.
type sinkState struct {
	Version    int   `json:"version"`
	Checkpoint int64 `json:"checkpoint"`
	// Slots is how many slots the sink had: a restarted task fences these,
	// and any after them until one the brokers have never seen.
	Slots int `json:"slots"`
	// Pending are the transactions flushed at this or earlier barriers and
	// not yet committed: a restarted task commits them.
	Pending []pendingTxn `json:"pending,omitempty"`
}

// pendingTxn is a transaction flushed at checkpoint's barrier.
type pendingTxn struct {
	Slot            int    `json:"slot"`
	TransactionalID string `json:"transactional_id"`
	ProducerID      int64  `json:"producer_id"`
	ProducerEpoch   int16  `json:"producer_epoch"`
	Checkpoint      int64  `json:"checkpoint"`
}

type slotState uint8

const (
	slotIdle    slotState = iota // no transaction
	slotOpen                     // the current epoch's transaction
	slotPending                  // flushed at a barrier, awaiting its checkpoint's completion
)

// txnSlot is one transactional ID of the pool.
type txnSlot struct {
	index int
	id    string
	cl    *kgo.Client // nil until used in this incarnation
	state slotState
	txn   pendingTxn // while pending
	// listed says a restorable checkpoint, listedUntil or earlier, lists the
	// slot's transaction as pending: the slot may be reused only once a later
	// checkpoint completes.
	listed      bool
	listedUntil int64
}

func (s *txnSlot) free() bool { return s.state == slotIdle && !s.listed }

// txnWriter is the transactional sink's pool of producers. Like the sink it
// serves, it is used by one goroutine at a time.
type txnWriter struct {
	cfg    config
	prefix string // the transactional IDs' common part
	base   []kgo.Opt
	part   kgo.Partitioner
	log    *slog.Logger

	slots     []*txnSlot
	cur       *txnSlot // the open epoch's, nil before its first record
	recovered bool
	recs      []kgo.Record
	ptrs      []*kgo.Record
}

func newTxnWriter(cfg config, tc *exec.TaskContext, log *slog.Logger) *txnWriter {
	metrics := tc.Metrics
	if metrics == nil {
		metrics = &exec.TaskMetrics{}
	}
	w := &txnWriter{
		cfg:    cfg,
		prefix: txnPrefix(tc, cfg.topic),
		log:    log,
		part:   kgo.RoundRobinPartitioner(),
	}
	if len(cfg.key) > 0 {
		// murmur2 of the key, as the Java client and the non-transactional
		// sink's kafka-go Murmur2Balancer place keyed messages.
		w.part = kgo.StickyKeyPartitioner(nil)
	}
	hook := &statusHook{brokers: strings.Join(cfg.brokers, ","), what: "writing to topic " + cfg.topic, metrics: metrics, log: log}
	w.base = []kgo.Opt{kgo.SeedBrokers(cfg.brokers...), kgo.ClientID("hummer"), kgo.WithHooks(hook)}
	return w
}

// txnPrefix returns the transactional IDs' common part for the sink of topic
// in task tc: stable across restarts of the task as long as the job id is.
func txnPrefix(tc *exec.TaskContext, topic string) string {
	vertex := tc.TaskName
	if i := strings.LastIndexByte(vertex, '['); i > 0 {
		vertex = vertex[:i]
	}
	clean := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' {
				return r
			}
			return '_'
		}, s)
	}
	return fmt.Sprintf("hummer-%s-%s-%s-%d-", clean(tc.JobID), clean(vertex), topic, tc.Subtask)
}

func (w *txnWriter) id(slot int) string { return w.prefix + strconv.Itoa(slot) }

// client returns a transactional producer of id; it talks to the brokers on
// first use.
func (w *txnWriter) client(id string) (*kgo.Client, error) {
	return kgo.NewClient(append(slices.Clip(w.base),
		kgo.TransactionalID(id),
		kgo.TransactionTimeout(txnTimeout),
		kgo.DefaultProduceTopic(w.cfg.topic),
		kgo.RecordPartitioner(w.part),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		// ProduceSync waits for its records: lingering for more only adds latency.
		kgo.ProducerLinger(0),
	)...)
}

// recover readies the pool for a task that starts from st (nil: from no
// checkpoint): it commits st's pending transactions, then fences every
// transactional ID an earlier incarnation may have left a transaction open
// on. It runs once, before the first record.
func (w *txnWriter) recover(ctx context.Context, st *sinkState) error {
	w.recovered = true
	committed := map[int]bool{}
	known := 0
	if st != nil {
		if err := w.commitRestored(ctx, st.Pending); err != nil {
			return err
		}
		for _, p := range st.Pending {
			committed[p.Slot] = p.TransactionalID == w.id(p.Slot)
		}
		known = st.Slots
	}
	for i := 0; ; i++ {
		s := &txnSlot{index: i, id: w.id(i)}
		w.slots = append(w.slots, s)
		if committed[i] {
			// Just committed: nothing can be open on it (see listed), and
			// it stays out of use until a checkpoint of this incarnation
			// completes.
			s.listed, s.listedUntil = true, math.MinInt64
			continue
		}
		epoch, err := w.fence(ctx, s)
		if err != nil {
			return err
		}
		if i >= known && epoch == 0 || i >= max(known, maxTxnSlots) {
			// Epoch 0: the brokers had never seen this ID, nor, as slots
			// are taken in order, any after it.
			break
		}
	}
	w.log.Info("kafka sink ready for transactions", "transactional_ids", w.prefix+"*", "slots", len(w.slots), "restored_pending", len(committed))
	return nil
}

// fence opens slot s's producer, which aborts the transaction an earlier
// producer with its ID left open, and returns the producer's epoch: 0 when the
// brokers had never seen the ID.
func (w *txnWriter) fence(ctx context.Context, s *txnSlot) (int16, error) {
	cl, err := w.client(s.id)
	if err != nil {
		return 0, err
	}
	s.cl = cl
	_, epoch, err := cl.ProducerID(ctx)
	if err != nil {
		return 0, fmt.Errorf("kafka: fencing transactional id %s on brokers %s: %w", s.id, strings.Join(w.cfg.brokers, ","), err)
	}
	return epoch, nil
}

// commitRestored commits the transactions a restored checkpoint lists as
// pending, by producer ID and epoch, in checkpoint order.
func (w *txnWriter) commitRestored(ctx context.Context, pending []pendingTxn) error {
	if len(pending) == 0 {
		return nil
	}
	pending = slices.SortedFunc(slices.Values(pending), func(a, b pendingTxn) int { return cmp.Compare(a.Checkpoint, b.Checkpoint) })
	cl, err := kgo.NewClient(w.base...)
	if err != nil {
		return err
	}
	defer cl.Close()
	for _, p := range pending {
		if err := endTxn(ctx, cl, p); err != nil {
			return fmt.Errorf("kafka: committing transaction %s of checkpoint %d (producer id %d, epoch %d) on restore: %w",
				p.TransactionalID, p.Checkpoint, p.ProducerID, p.ProducerEpoch, err)
		}
		w.log.Info("committed the transaction of a restored checkpoint", "transactional_id", p.TransactionalID, "checkpoint", p.Checkpoint)
	}
	return nil
}

// endTxn commits p, retrying while the coordinator is busy or moving. The
// coordinator answers success to a commit of a transaction already committed
// with the same producer ID and epoch, so a restart after the commit is
// harmless. An abort instead means the brokers ended the transaction (its
// timeout passed): its records are lost, and the error says so.
func endTxn(ctx context.Context, cl *kgo.Client, p pendingTxn) error {
	backoff := minBackoff
	for {
		req := kmsg.NewPtrEndTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = p.TransactionalID, p.ProducerID, p.ProducerEpoch, true
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, kerr.InvalidTxnState), errors.Is(err, kerr.ProducerFenced),
			errors.Is(err, kerr.InvalidProducerEpoch), errors.Is(err, kerr.InvalidProducerIDMapping):
			return fmt.Errorf("the brokers no longer hold it open (its timeout of %v passed?), so the records of that checkpoint are lost: %w", txnTimeout, err)
		case !kerr.IsRetriable(err) && !errors.Is(err, kerr.ConcurrentTransactions):
			return err
		}
		if !sleep(ctx, backoff/2+rand.N(backoff/2+1)) {
			return ctx.Err()
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// produce writes recs in the open epoch's transaction, starting it if need
// be, and returns once the brokers have them all.
func (w *txnWriter) produce(ctx context.Context, recs []*kgo.Record) error {
	if w.cur == nil {
		if err := w.begin(); err != nil {
			return err
		}
	}
	return w.cur.cl.ProduceSync(ctx, recs...).FirstErr()
}

// begin opens a transaction for the epoch in the first free slot, adding one
// if none is free.
func (w *txnWriter) begin() error {
	var s *txnSlot
	for _, c := range w.slots {
		if c.free() {
			s = c
			break
		}
	}
	if s == nil {
		if len(w.slots) >= maxTxnSlots {
			return fmt.Errorf("kafka: %d checkpoints await completion, each with a transaction open on topic %s: the sink takes at most %d (are checkpoints failing?)", len(w.slots), w.cfg.topic, maxTxnSlots)
		}
		s = &txnSlot{index: len(w.slots), id: w.id(len(w.slots))}
		w.slots = append(w.slots, s)
	}
	if s.cl == nil {
		cl, err := w.client(s.id)
		if err != nil {
			return err
		}
		s.cl = cl
	}
	if err := s.cl.BeginTransaction(); err != nil {
		return fmt.Errorf("kafka: beginning a transaction as %s: %w", s.id, err)
	}
	s.state = slotOpen
	w.cur = s
	return nil
}

// barrier ends the epoch at checkpoint's barrier: its records are all on the
// brokers, its transaction pending until the checkpoint completes. The next
// record opens the next epoch's transaction in another slot.
func (w *txnWriter) barrier(ctx context.Context, checkpoint int64) error {
	if s := w.cur; s != nil {
		if err := s.cl.Flush(ctx); err != nil {
			return err
		}
		pid, epoch, err := s.cl.ProducerID(ctx)
		if err != nil {
			return fmt.Errorf("kafka: the producer of transaction %s failed: %w", s.id, err)
		}
		s.state = slotPending
		s.txn = pendingTxn{Slot: s.index, TransactionalID: s.id, ProducerID: pid, ProducerEpoch: epoch, Checkpoint: checkpoint}
		w.cur = nil
	}
	for _, s := range w.slots {
		if s.state == slotPending {
			s.listed, s.listedUntil = true, checkpoint
		}
	}
	return nil
}

// snapshot returns the state of checkpoint, whose barrier just passed.
func (w *txnWriter) snapshot(checkpoint int64) sinkState {
	st := sinkState{Version: sinkStateVersion, Checkpoint: checkpoint, Slots: len(w.slots)}
	for _, s := range w.slots {
		if s.state == slotPending {
			st.Pending = append(st.Pending, s.txn)
		}
	}
	return st
}

// complete commits the pending transactions of checkpoint and the ones
// before it, and frees the slots no restorable checkpoint lists any more.
func (w *txnWriter) complete(ctx context.Context, checkpoint int64) error {
	if err := w.commitPending(ctx, checkpoint); err != nil {
		return err
	}
	for _, s := range w.slots {
		if s.listed && s.listedUntil < checkpoint {
			s.listed = false
		}
	}
	return nil
}

// commitPending commits, in checkpoint order, the pending transactions of
// checkpoints up to upTo.
func (w *txnWriter) commitPending(ctx context.Context, upTo int64) error {
	var todo []*txnSlot
	for _, s := range w.slots {
		if s.state == slotPending && s.txn.Checkpoint <= upTo {
			todo = append(todo, s)
		}
	}
	slices.SortFunc(todo, func(a, b *txnSlot) int { return cmp.Compare(a.txn.Checkpoint, b.txn.Checkpoint) })
	for _, s := range todo {
		if err := s.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			return fmt.Errorf("kafka: committing transaction %s of checkpoint %d on topic %s: %w", s.id, s.txn.Checkpoint, w.cfg.topic, err)
		}
		s.state = slotIdle
	}
	return nil
}

// finish commits everything the sink wrote, as its input has ended: no
// barrier, and so no completed checkpoint, will follow to commit the last
// epochs. (A job that fails after this and restarts from an earlier
// checkpoint writes those epochs' records again.)
func (w *txnWriter) finish(ctx context.Context) error {
	if err := w.barrier(ctx, math.MaxInt64); err != nil {
		return err
	}
	return w.commitPending(ctx, math.MaxInt64)
}

// close aborts the open epoch's transaction and closes the producers. It
// leaves the pending transactions open: their checkpoints may have completed,
// and a restarted task commits them from its state, or aborts them by fencing.
func (w *txnWriter) close() {
	if s := w.cur; s != nil {
		ctx, cancel := context.WithTimeout(context.Background(), endTimeout)
		err := s.cl.AbortBufferedRecords(ctx)
		if err == nil {
			err = s.cl.EndTransaction(ctx, kgo.TryAbort)
		}
		cancel()
		if err != nil {
			// The restarted task's fencing aborts it, or the brokers after txnTimeout.
			w.log.Warn("aborting the open transaction", "transactional_id", s.id, "err", err)
		}
		s.state = slotIdle
		w.cur = nil
	}
	for _, s := range w.slots {
		if s.cl != nil {
			s.cl.Close()
			s.cl = nil
		}
	}
}

// statusHook reports in the task's status while kgo cannot reach the brokers
// (kgo retries by itself), as retrier does for kafka-go's calls.
type statusHook struct {
	brokers, what string
	metrics       *exec.TaskMetrics
	log           *slog.Logger
	failures      atomic.Int64
}

var _ kgo.HookBrokerConnect = (*statusHook)(nil)

func (h *statusHook) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err == nil {
		if n := h.failures.Swap(0); n > 0 {
			h.metrics.SetStatus("")
			h.log.Info("kafka brokers answer again", "call", h.what, "attempts", n+1)
		}
		return
	}
	n := h.failures.Add(1)
	h.metrics.SetStatus(fmt.Sprintf("reconnecting to kafka brokers %s: %s: %v (attempt %d)", h.brokers, h.what, err, n))
	if bits.OnesCount64(uint64(n)) == 1 {
		h.log.Warn("kafka connection failed, retrying", "call", h.what, "brokers", h.brokers, "attempt", n, "err", err)
	}
}
