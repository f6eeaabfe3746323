package kafka

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/segmentio/kafka-go"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/vector"
)

// committed returns the sum of group's committed offsets of topic's
// partitions 0 to parts-1 (a partition without one counts 0).
func committed(t *testing.T, addr, group, topic string, parts int) int64 {
	t.Helper()
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	c := &kafka.Client{Addr: kafka.TCP(addr), Transport: tr, Timeout: 5 * time.Second}
	req := &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: {}}}
	for p := range parts {
		req.Topics[topic] = append(req.Topics[topic], p)
	}
	res, err := c.OffsetFetch(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, p := range res.Topics[topic] {
		if p.Error != nil {
			t.Fatal(p.Error)
		}
		sum += max(p.CommittedOffset, 0)
	}
	return sum
}

func TestGroupResumes(t *testing.T) {
	const parts = 2
	addr := cluster(t, "events", parts)
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	values := func(from, to int) []string {
		var vs []string
		for i := from; i <= to; i++ {
			vs = append(vs, fmt.Sprintf("e%02d", i))
		}
		return vs
	}
	spec := func(group string) exec.ConnectorSpec {
		return exec.ConnectorSpec{Connector: Name, URL: "kafka://" + addr + "/events?group=" + group, Schema: textSchema}
	}

	// A job of two subtasks reads what there is and stops: closing commits.
	produce(t, addr, "events", values(1, 6)...)
	if got := consume(t, mem, spec("g1"), 2, 6); !slices.Equal(got.rows, values(1, 6)) {
		t.Fatalf("first job read %v, want %v", got.rows, values(1, 6))
	}
	if n := committed(t, addr, "g1", "events", parts); n != 6 {
		t.Fatalf("after the first job g1 committed up to %d records, want 6", n)
	}

	// The next job with the group, at another parallelism, reads only what
	// came after, and commits while it runs, not only when it stops.
	produce(t, addr, "events", values(7, 10)...)
	r := startSource(t, mem, spec("g1"), 0, 1)
	waitFor(t, 5*time.Second, "4 more rows", func() bool { return r.col.NumRows() >= 4 })
	waitFor(t, 5*time.Second, "g1 to commit 10 records while the job runs", func() bool { return committed(t, addr, "g1", "events", parts) == 10 })
	got := r.stop()
	slices.Sort(got)
	if !slices.Equal(got, values(7, 10)) {
		t.Errorf("second job with group g1 read %v, want %v", got, values(7, 10))
	}

	// Another group has committed nothing: it starts at the start option.
	if got := consume(t, mem, spec("g2"), 1, 10); !slices.Equal(got.rows, values(1, 10)) {
		t.Errorf("a job with group g2 read %v, want %v", got.rows, values(1, 10))
	}
}
