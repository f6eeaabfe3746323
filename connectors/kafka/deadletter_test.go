package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/vector"
)

func TestDeadLetter(t *testing.T) {
	addr := newCluster(t, kfake.SeedTopics(1, "in", "in-bad")).ListenAddrs()[0]
	produceMessages(t, addr, "in",
		kafka.Message{Value: []byte(`{"id": 1, "name": "a"}`)},
		kafka.Message{Key: []byte("k2"), Value: []byte(`{"id": "x"}`), Headers: []kafka.Header{{Key: "trace", Value: []byte("t-2")}}},
		kafka.Message{Key: []byte("k3")}, // a tombstone, of a table without a key: bad
		kafka.Message{Value: []byte(`{"id": 4, "name": "d"}`)},
		kafka.Message{Value: []byte(`not json`)},
	)
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	c := exec.ConnectorSpec{Connector: Name, URL: "kafka://" + addr + "/in?format=json&dead_letter=in-bad", Schema: rowSchema}
	r := startSource(t, mem, c, 0, 1)
	waitFor(t, 5*time.Second, "2 rows and 3 dead letters", func() bool {
		return r.col.NumRows() == 2 && r.tc.Metrics.DeadLetters.Load() == 3
	})
	if rows := r.stop(); !slices.Equal(rows, []string{"1|a", "4|d"}) {
		t.Errorf("rows = %v", rows)
	}
	if bad := r.tc.Metrics.BadRecords.Load(); bad != 3 {
		t.Errorf("bad records = %d, want 3", bad)
	}

	var got []string
	for _, m := range readTopic(t, addr, "in-bad", 1, 3)[0] {
		s := fmt.Sprintf("key=%q value=%q", m.Key, m.Value)
		for _, h := range m.Headers {
			s += fmt.Sprintf(" %s=%q", h.Key, h.Value)
		}
		got = append(got, s)
	}
	want := []string{
		`key="k2" value="{\"id\": \"x\"}" trace="t-2" hummer-error="field id: invalid bigint \"x\"" hummer-topic="in" hummer-partition="0" hummer-offset="1"`,
		`key="k3" value="" hummer-error="a null value (a tombstone), which a table without a PRIMARY KEY has no row it deletes for" hummer-topic="in" hummer-partition="0" hummer-offset="2"`,
		`key="" value="not json" hummer-error="not a JSON object: \"not json\"" hummer-topic="in" hummer-partition="0" hummer-offset="4"`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("dead letters:\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(want, "\n     "))
	}
}

// A dead letter is never dropped: while its topic is missing the source waits,
// and then fails the job.
func TestDeadLetterTopicMissing(t *testing.T) {
	defer func(d time.Duration) { unknownTopicWait = d }(unknownTopicWait)
	unknownTopicWait = time.Second
	addr := cluster(t, "in", 1)
	produce(t, addr, "in", `{"id": 1}`, `{"id": "x"}`)
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	c := exec.ConnectorSpec{Connector: Name, URL: "kafka://" + addr + "/in?format=json&dead_letter=nowhere", Schema: rowSchema}
	r := startSource(t, mem, c, 0, 1)
	select {
	case err := <-r.done:
		t.Logf("Run: %v", err)
		if err == nil || errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "writing dead letters to topic nowhere: the topic does not exist") {
			t.Errorf("Run returned %v, want the dead-letter topic's absence", err)
		}
	case <-time.After(8 * time.Second):
		t.Fatal("Run did not fail")
	}
	r.cancel()
	if err := <-r.done; err != nil {
		t.Errorf("Close: %v", err)
	}
	if n, dead := r.col.NumRows(), r.tc.Metrics.DeadLetters.Load(); n != 0 || dead != 0 {
		t.Errorf("emitted %d rows and %d dead letters; the batch behind a dead letter that cannot be written must wait", n, dead)
	}
	r.col.Release()
}
