package kafka

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
)

// commitInterval is how often, at most, a source with the group option and
// without checkpoints commits its progress while it runs. A variable so that
// tests can shorten it.
var commitInterval = time.Second

// closeCommitTimeout bounds the last commit, when the source closes.
const closeCommitTimeout = 5 * time.Second

// listOffsets returns the earliest or latest offset (config.reset) of each of
// partitions.
func (s *source) listOffsets(ctx context.Context, partitions []int) (map[int]int64, error) {
	latest := s.cfg.reset() == StartLatest
	reqs := make([]kafka.OffsetRequest, len(partitions))
	for i, p := range partitions {
		reqs[i] = kafka.FirstOffsetOf(p)
		if latest {
			reqs[i] = kafka.LastOffsetOf(p)
		}
	}
	var offsets map[int]int64
	err := s.calls.do(ctx, "listing the "+s.cfg.reset()+" offsets of topic "+s.cfg.topic, func(ctx context.Context) error {
		res, err := s.client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{s.cfg.topic: reqs}})
		if err != nil {
			return err
		}
		got := map[int]int64{}
		for _, p := range res.Topics[s.cfg.topic] {
			if p.Error != nil {
				return fmt.Errorf("partition %d: %w", p.Partition, p.Error)
			}
			got[p.Partition] = p.FirstOffset
			if latest {
				got[p.Partition] = p.LastOffset
			}
		}
		for _, p := range partitions {
			if _, ok := got[p]; !ok {
				return fmt.Errorf("the brokers listed no offset for partition %d", p)
			}
		}
		offsets = got
		return nil
	})
	return offsets, err
}

// startOffsets returns where to start reading each of partitions: the offset
// of the checkpoint the job restarts from (RestoreState), else, with
// start=group, the group's committed offset, else the earliest or latest
// (config.reset). Without start=group the group's offsets are not read: they
// are some job's progress, perhaps another's.
func (s *source) startOffsets(ctx context.Context, partitions []int) (map[int]int64, error) {
	offsets := map[int]int64{}
	var rest []int
	for _, p := range partitions {
		if o, ok := s.restored[p]; ok {
			offsets[p] = o
		} else {
			rest = append(rest, p)
		}
	}
	if s.progress != nil && s.cfg.start == StartGroup && len(rest) > 0 {
		committed, err := s.progress.fetch(ctx, rest)
		if err != nil {
			return nil, err
		}
		maps.Copy(offsets, committed)
	}
	rest = slices.DeleteFunc(rest, func(p int) bool {
		_, ok := offsets[p]
		return ok
	})
	if len(rest) > 0 {
		listed, err := s.listOffsets(ctx, rest)
		if err != nil {
			return nil, err
		}
		maps.Copy(offsets, listed)
	}
	return offsets, nil
}

// progress is what a source subtask with the group option has handed
// downstream, and commits it to the group. It commits without joining the
// group (generation -1, no member id, as a consumer with manually assigned
// partitions does), so the engine, not the group, assigns partitions.
//
// Without checkpoints Run advances it after each batch and it commits about
// once a second and when the source closes; with checkpoints the source
// commits each completed checkpoint's offsets instead (source_checkpoint.go),
// possibly from another goroutine than Run's.
type progress struct {
	group  string
	topic  string
	client *kafka.Client
	calls  *retrier

	mu   sync.Mutex
	done map[int]int64 // by partition: the offset after the last record handed downstream

	// commitMu serialises commits and guards committed, what the group holds.
	commitMu  sync.Mutex
	committed map[int]int64
}

func newProgress(group, topic string, client *kafka.Client, calls *retrier) *progress {
	return &progress{group: group, topic: topic, client: client, calls: calls, done: map[int]int64{}, committed: map[int]int64{}}
}

// fetch returns the group's committed offsets of partitions; a partition
// without one is missing from the map.
func (g *progress) fetch(ctx context.Context, partitions []int) (map[int]int64, error) {
	var offsets map[int]int64
	err := g.calls.do(ctx, "fetching the offsets group "+g.group+" committed", func(ctx context.Context) error {
		res, err := g.client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: g.group, Topics: map[string][]int{g.topic: partitions}})
		if err != nil {
			return err
		}
		got := map[int]int64{}
		// A group that never committed is unknown to some brokers (kfake);
		// to Kafka it is a group without offsets.
		if res.Error != nil && !errors.Is(res.Error, kafka.GroupIdNotFound) {
			return res.Error
		}
		for _, p := range res.Topics[g.topic] {
			if p.Error != nil {
				return fmt.Errorf("partition %d: %w", p.Partition, p.Error)
			}
			if p.CommittedOffset >= 0 {
				got[p.Partition] = p.CommittedOffset
			}
		}
		offsets = got
		return nil
	})
	if err != nil {
		return nil, err
	}
	g.commitMu.Lock()
	g.committed = maps.Clone(offsets)
	g.commitMu.Unlock()
	return offsets, nil
}

// advance records that the records before offsets (by partition) have been
// handed downstream.
func (g *progress) advance(offsets map[int]int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	maps.Copy(g.done, offsets)
}

// run commits what advance recorded every commitInterval until ctx is done.
func (g *progress) run(ctx context.Context) error {
	t := time.NewTicker(commitInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := g.commit(ctx, g.handedOn()); err != nil {
				return err
			}
		}
	}
}

// handedOn returns a copy of what advance recorded.
func (g *progress) handedOn() map[int]int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return maps.Clone(g.done)
}

// commit commits offsets (by partition: the offset of the next record to
// read) where they differ from what the group holds, retrying while the
// group's coordinator cannot be reached.
func (g *progress) commit(ctx context.Context, offsets map[int]int64) error {
	g.commitMu.Lock()
	defer g.commitMu.Unlock()
	var todo []kafka.OffsetCommit
	for p, o := range offsets {
		if c, ok := g.committed[p]; !ok || c != o {
			todo = append(todo, kafka.OffsetCommit{Partition: p, Offset: o})
		}
	}
	if len(todo) == 0 {
		return nil
	}
	slices.SortFunc(todo, func(a, b kafka.OffsetCommit) int { return cmp.Compare(a.Partition, b.Partition) })
	err := g.calls.do(ctx, "committing offsets to group "+g.group, func(ctx context.Context) error {
		res, err := g.client.OffsetCommit(ctx, &kafka.OffsetCommitRequest{
			GroupID:      g.group,
			GenerationID: -1,
			Topics:       map[string][]kafka.OffsetCommit{g.topic: todo},
		})
		if err != nil {
			return err
		}
		for _, p := range res.Topics[g.topic] {
			if p.Error != nil {
				return fmt.Errorf("partition %d: %w", p.Partition, p.Error)
			}
		}
		return nil
	})
	if errors.Is(err, kafka.IllegalGeneration) || errors.Is(err, kafka.UnknownMemberId) {
		return fmt.Errorf("%w (group %s has members: the source commits without joining it, so give it a group no consumer is a member of)", err, g.group)
	}
	if err != nil {
		return err
	}
	for _, c := range todo {
		g.committed[c.Partition] = c.Offset
	}
	return nil
}
