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

// With start=group a job resumes where the group's last job committed.
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
		return exec.ConnectorSpec{Connector: Name, URL: "kafka://" + addr + "/events?start=group&group=" + group, Schema: textSchema}
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

// A job's progress belongs to that job: without start=group each job over a
// table with a group starts at the start option, whatever the group holds,
// and still commits its own progress to the group, where its lag shows.
func TestJobsOwnTheirProgress(t *testing.T) {
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
	spec := func(start string) exec.ConnectorSpec {
		return exec.ConnectorSpec{Connector: Name, URL: "kafka://" + addr + "/events?group=g" + start, Schema: textSchema}
	}
	produce(t, addr, "events", values(1, 6)...)
	for job := 1; job <= 2; job++ {
		if got := consume(t, mem, spec(""), job, 6); !slices.Equal(got.rows, values(1, 6)) {
			t.Fatalf("job %d read %v, want %v", job, got.rows, values(1, 6))
		}
		if n := committed(t, addr, "g", "events", parts); n != 6 {
			t.Fatalf("after job %d g committed up to %d records, want 6", job, n)
		}
	}

	// The group holds less than the topic's end: a start=latest job starts
	// at the end, not where the group is, and a start=group job there.
	commitGroup(t, addr, "g", "events", map[int]int64{0: 1, 1: 1})
	latest := startSource(t, mem, spec("&start=latest"), 0, 1)
	// The source has started once it has listed its offsets; what is
	// produced after that is new. Produce until it sees a record.
	news := 0
	waitFor(t, 8*time.Second, "a new record", func() bool {
		if latest.col.NumRows() > 0 {
			return true
		}
		produce(t, addr, "events", "new")
		news++
		return false
	})
	for _, row := range latest.stop() {
		if row != "new" {
			t.Errorf("a start=latest job read %q, want only records produced after it started", row)
		}
	}
	commitGroup(t, addr, "g", "events", map[int]int64{0: 1, 1: 1})
	// e01 and e02 are before the group's offsets (one in each partition).
	got := consume(t, mem, spec("&start=group"), 1, 4+news)
	if got.rows = slices.DeleteFunc(got.rows, func(r string) bool { return r == "new" }); !slices.Equal(got.rows, values(3, 6)) {
		t.Errorf("a start=group job read %v, want %v and the new records", got.rows, values(3, 6))
	}
}
