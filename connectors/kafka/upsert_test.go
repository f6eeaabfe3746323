package kafka

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/segmentio/kafka-go"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/exec/vector"
)

func TestSinkUpsert(t *testing.T) {
	const parts = 3
	addr := cluster(t, "users", parts)
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	c := exec.ConnectorSpec{Connector: Name, URL: "kafka://" + addr + "/users?format=json", Schema: rowSchema, Key: []int{0}}
	k := openSink(t, mem, c)
	ctx := context.Background()

	first := batch(t, mem, `[{"id": 1, "name": "a"}, {"id": 2, "name": "b"}, {"id": 3, "name": "c"}]`)
	defer first.Release()
	if err := k.ProcessBatch(ctx, 0, exec.Batch{Rec: first}, nil); err != nil {
		t.Fatal(err)
	}
	second := batch(t, mem, `[{"id": 1, "name": "a"}, {"id": 1, "name": "a2"}, {"id": 2, "name": "b"}, {"id": 4, "name": null}]`)
	defer second.Release()
	ops := []exec.ChangeKind{exec.UpdateBefore, exec.UpdateAfter, exec.Delete, exec.Insert}
	if err := k.ProcessBatch(ctx, 0, exec.Batch{Rec: second, Ops: ops}, nil); err != nil {
		t.Fatal(err)
	}

	// Each key's messages, in order, all in the partition the Java client's
	// murmur2 partitioner gives the key.
	want := map[string][]string{
		`{"id":1}`: {`{"id":1,"name":"a"}`, `{"id":1,"name":"a2"}`},
		`{"id":2}`: {`{"id":2,"name":"b"}`, "<tombstone>"},
		`{"id":3}`: {`{"id":3,"name":"c"}`},
		`{"id":4}`: {`{"id":4,"name":null}`},
	}
	got := map[string][]string{}
	for p, msgs := range readTopic(t, addr, "users", parts, 6) {
		for _, m := range msgs {
			key := string(m.Key)
			if wantP := (kafka.Murmur2Balancer{}).Balance(kafka.Message{Key: m.Key}, 0, 1, 2); p != wantP {
				t.Errorf("key %s in partition %d, murmur2 says %d", key, p, wantP)
			}
			v := string(m.Value)
			if m.Value == nil {
				v = "<tombstone>"
			}
			got[key] = append(got[key], v)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("messages by key:\n got %v\nwant %v", got, want)
	}

	// A source of a keyed table reading the upsert topic reads its values as
	// upserts and its tombstone as the delete of its key (the key from the
	// message key, the other columns NULL), not as a bad record.
	res := consume(t, mem, exec.ConnectorSpec{Connector: Name, URL: c.URL, Schema: rowSchema, Key: []int{0}}, 1, 6)
	if wantRows := []string{"-2|NULL", "1|a", "1|a2", "2|b", "3|c", "4|NULL"}; !slices.Equal(res.rows, wantRows) || res.bad != 0 {
		t.Errorf("read back %v (%d bad), want %v and none bad", res.rows, res.bad, wantRows)
	}
}

func TestSinkUpsertCompositeKey(t *testing.T) {
	addr := cluster(t, "pairs", 1)
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	// The key's fields come in the PRIMARY KEY's order, which need not be the
	// table's; the value's names are the table's whatever the query called its
	// columns.
	schema := types.Schema{{Name: "id", Type: types.Type{ID: types.Int64}}, {Name: "Name", Type: types.Type{ID: types.String}}}
	k := openSink(t, mem, exec.ConnectorSpec{Connector: Name, URL: "kafka://" + addr + "/pairs?format=json", Schema: schema, Key: []int{1, 0}})
	rec := batch(t, mem, `[{"id": 7, "name": "x \"y\""}]`)
	defer rec.Release()
	if err := k.ProcessBatch(context.Background(), 0, exec.Batch{Rec: rec, Ops: []exec.ChangeKind{exec.Delete}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := k.ProcessBatch(context.Background(), 0, exec.Batch{Rec: rec, Ops: []exec.ChangeKind{exec.UpdateAfter}}, nil); err != nil {
		t.Fatal(err)
	}
	msgs := readTopic(t, addr, "pairs", 1, 2)[0]
	var got []string
	for _, m := range msgs {
		got = append(got, fmt.Sprintf("%s=%s(nil=%v)", m.Key, m.Value, m.Value == nil))
	}
	want := []string{`{"Name":"x \"y\"","id":7}=(nil=true)`, `{"Name":"x \"y\"","id":7}={"id":7,"Name":"x \"y\""}(nil=false)`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("messages:\n got %q\nwant %q", got, want)
	}
}

// TestSourceUpsertTombstoneKeys: a tombstone whose message key does not name
// its row (no key, not JSON, no key column) is a bad record; one that does is
// the delete of its key.
func TestSourceUpsertTombstoneKeys(t *testing.T) {
	addr := cluster(t, "keyed", 1)
	produceMessages(t, addr, "keyed",
		kafka.Message{Key: []byte(`{"id": 1}`), Value: []byte(`{"id": 1, "name": "a"}`)},
		kafka.Message{},                                 // no key
		kafka.Message{Key: []byte(`not json`)},          // not JSON
		kafka.Message{Key: []byte(`{"name": "a"}`)},     // no id
		kafka.Message{Key: []byte(`{"id": 1, "x": 2}`)}, // the delete of 1
	)
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	res := consume(t, mem, exec.ConnectorSpec{Connector: Name, URL: "kafka://" + addr + "/keyed?format=json", Schema: rowSchema, Key: []int{0}}, 1, 2)
	if want := []string{"-1|NULL", "1|a"}; !slices.Equal(res.rows, want) || res.bad != 3 {
		t.Errorf("read %v (%d bad), want %v and 3 bad", res.rows, res.bad, want)
	}
}
