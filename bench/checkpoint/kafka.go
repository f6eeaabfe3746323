package checkpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// admin is a plain client for the broker's metadata requests.
type admin struct{ cl *kgo.Client }

func newAdmin(addr string) (*admin, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return nil, err
	}
	return &admin{cl: cl}, nil
}

func (a *admin) close() { a.cl.Close() }

// createTopic creates topic with the given number of partitions.
func (a *admin) createTopic(ctx context.Context, topic string, partitions int) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = topic, int32(partitions), 1
	req.Topics = append(req.Topics, t)
	req.TimeoutMillis = 10000
	resp, err := req.RequestWith(ctx, a.cl)
	if err != nil {
		return fmt.Errorf("creating topic %s: %w", topic, err)
	}
	for _, t := range resp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return fmt.Errorf("creating topic %s: %w", topic, err)
		}
	}
	return nil
}

// deleteTopic deletes topic; errors are ignored, as it only frees memory.
func (a *admin) deleteTopic(ctx context.Context, topic string) {
	req := kmsg.NewPtrDeleteTopicsRequest()
	t := kmsg.NewDeleteTopicsRequestTopic()
	t.Topic = &topic
	req.Topics = append(req.Topics, t)
	req.TopicNames = append(req.TopicNames, topic)
	req.TimeoutMillis = 10000
	req.RequestWith(ctx, a.cl)
}

// endOffsets returns the sum over topic's partitions of the end offsets a
// reader at the isolation level sees: the high watermark for
// read_uncommitted, the last stable offset (before the first open
// transaction) for read_committed. Transaction markers take offsets too, so
// with transactions the sum exceeds the number of records.
func (a *admin) endOffsets(ctx context.Context, topic string, partitions int, committed bool) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	if committed {
		req.IsolationLevel = 1
	}
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = topic
	for p := range partitions {
		pp := kmsg.NewListOffsetsRequestTopicPartition()
		pp.Partition, pp.Timestamp, pp.CurrentLeaderEpoch = int32(p), -1, -1 // -1: the end
		t.Partitions = append(t.Partitions, pp)
	}
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, a.cl)
	if err != nil {
		return 0, err
	}
	var sum int64
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return 0, fmt.Errorf("end offset of %s[%d]: %w", topic, p.Partition, err)
			}
			sum += p.Offset
		}
	}
	return sum, nil
}

// preload writes copies × lines into topic, line i of each copy into
// partition i % partitions, and returns how many records it wrote.
func preload(ctx context.Context, addr, topic string, partitions int, lines []string, copies int) (int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedRecords(1<<16))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	var n int64
	var mu sync.Mutex
	var failed error
	for range copies {
		for _, l := range lines {
			r := &kgo.Record{Topic: topic, Partition: int32(n % int64(partitions)), Value: []byte(l)}
			cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err != nil && failed == nil {
					failed = err
				}
			})
			n++
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, err
	}
	mu.Lock()
	defer mu.Unlock()
	if failed != nil {
		return 0, fmt.Errorf("preloading %s: %w", topic, failed)
	}
	return n, nil
}

// poll waits up to d for records of cl.
func poll(ctx context.Context, cl *kgo.Client, d time.Duration) kgo.Fetches {
	pctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return cl.PollFetches(pctx)
}

// readCounts reads a WordCount upsert topic from its start, read_committed or
// not, and returns the table it holds: each key's last value, tombstones
// deleting. It stops once a poll has found nothing new for a second. Keys
// and values are read by hand (parseCount), millions of them.
func readCounts(ctx context.Context, addr, topic string, committed bool) (map[string]int64, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100 * time.Millisecond)}
	if committed {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	table := map[string]int64{}
	var bad error
	for got := false; ; {
		fs := poll(ctx, cl, time.Second)
		if fs.Empty() && got {
			return table, bad
		}
		fs.EachRecord(func(r *kgo.Record) {
			got = true
			word, n, err := parseCount(r.Key, r.Value)
			switch {
			case err != nil:
				bad = fmt.Errorf("%s: %w", topic, err)
			case r.Value == nil:
				delete(table, word)
			default:
				table[word] = n
			}
		})
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
}

// parseCount reads a WordCount upsert record as the kafka sink writes it: key
// {"word":W}, value {"word":W,"n":N} or null (a tombstone). Only a word with
// escapes goes through encoding/json.
func parseCount(key, value []byte) (string, int64, error) {
	w, ok := bytes.CutPrefix(key, []byte(`{"word":`))
	if w, ok = bytes.CutSuffix(w, []byte(`}`)); !ok {
		return "", 0, fmt.Errorf("key %q is not {\"word\":...}", key)
	}
	var word string
	if len(w) >= 2 && w[0] == '"' && w[len(w)-1] == '"' && !bytes.ContainsAny(w[1:len(w)-1], `"\\`) {
		word = string(w[1 : len(w)-1])
	} else if err := json.Unmarshal(w, &word); err != nil {
		return "", 0, fmt.Errorf("key %q: %w", key, err)
	}
	if value == nil {
		return word, 0, nil
	}
	i := bytes.LastIndex(value, []byte(`,"n":`))
	if i < 0 || value[len(value)-1] != '}' {
		return "", 0, fmt.Errorf("value %q has no \"n\"", value)
	}
	n, err := strconv.ParseInt(string(value[i+5:len(value)-1]), 10, 64)
	if err != nil {
		return "", 0, fmt.Errorf("value %q: %w", value, err)
	}
	return word, n, nil
}
