package session

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/types"
)

// textEncoder encodes each row of a one-column text batch as "value;" and counts
// its calls.
type textEncoder struct{ calls int }

func (e *textEncoder) encode(dst []byte, b arrow.RecordBatch) ([]byte, error) {
	e.calls++
	col := b.Column(0).(*array.String)
	for i := range col.Len() {
		dst = append(dst, col.Value(i)...)
		dst = append(dst, ';')
	}
	return dst, nil
}

func textBatch(mem memory.Allocator, vals ...string) arrow.RecordBatch {
	b := array.NewStringBuilder(mem)
	defer b.Release()
	b.AppendValues(vals, nil)
	col := b.NewArray()
	defer col.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	return array.NewRecordBatch(schema, []arrow.Array{col}, int64(len(vals)))
}

// send sends b to r as a result task does, and drops the caller's reference:
// Send keeps its own, or none once it encoded the rows.
func send(t *testing.T, r *jobRows, b exec.Batch) {
	t.Helper()
	err := r.Send(context.Background(), "job", b)
	b.Rec.Release()
	if err != nil {
		t.Fatal(err)
	}
}

// testRows returns a jobRows of one text column whose job has producers result
// tasks, and a checked allocator for its batches, which must all be released
// by the end of the test.
func testRows(t *testing.T, producers int32) (*jobRows, *memory.CheckedAllocator) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	r := newJobRows(types.Schema{{Name: "s", Type: types.StringType}})
	r.producers.Store(producers)
	return r, mem
}

// TestJobRowsEncodeWhereSent checks EncodingRows with several result tasks: a
// batch sent before EncodeWith is encoded by NextEncoded, one sent after it by
// Send, in the sender's goroutine, before it is queued; a batch that retracts
// rows is refused as Next refuses it; and every batch is released.
func TestJobRowsEncodeWhereSent(t *testing.T) {
	r, mem := testRows(t, 2)
	ctx := context.Background()

	send(t, r, exec.Batch{Rec: textBatch(mem, "a", "b")})
	var enc textEncoder
	if !r.EncodeWith(enc.encode) {
		t.Fatal("EncodeWith declined with two result tasks")
	}
	if enc.calls != 0 {
		t.Fatalf("EncodeWith encoded %d batches already queued", enc.calls)
	}
	send(t, r, exec.Batch{Rec: textBatch(mem, "c")})
	if enc.calls != 1 {
		t.Fatalf("a Send after EncodeWith made %d encoder calls, want 1", enc.calls)
	}
	send(t, r, exec.Batch{Rec: textBatch(mem, "x"), Ops: []exec.ChangeKind{exec.Delete}})
	if enc.calls != 1 {
		t.Fatalf("a retracting batch was encoded")
	}

	for _, want := range []struct {
		data string
		rows int64
	}{{"a;b;", 2}, {"c;", 1}} {
		data, n, err := r.NextEncoded(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if string(data) != want.data || n != want.rows {
			t.Errorf("NextEncoded: %q (%d rows), want %q (%d rows)", data, n, want.data, want.rows)
		}
	}
	if enc.calls != 2 {
		t.Errorf("%d encoder calls, want 2 (one by Send, one by NextEncoded)", enc.calls)
	}
	if _, _, err := r.NextEncoded(ctx); err == nil {
		t.Errorf("a batch that retracts rows was sent to the client")
	}
	putEncoded(r.last)
}

// TestJobRowsNextEncodedNeedsEncoder checks that NextEncoded without an encoder is
// an error, not a panic, and releases the batch it took.
func TestJobRowsNextEncodedNeedsEncoder(t *testing.T) {
	r, mem := testRows(t, 0)
	send(t, r, exec.Batch{Rec: textBatch(mem, "a")})
	if _, _, err := r.NextEncoded(context.Background()); err == nil {
		t.Fatal("NextEncoded without an encoder succeeded")
	}
}

// TestJobRowsOneProducer checks that with one result task EncodeWith declines,
// and the batches stay batches for Next.
func TestJobRowsOneProducer(t *testing.T) {
	r, mem := testRows(t, 1)
	ctx := context.Background()
	var enc textEncoder
	if r.EncodeWith(enc.encode) {
		t.Fatal("EncodeWith accepted an encoder with one result task")
	}
	send(t, r, exec.Batch{Rec: textBatch(mem, "a", "b")})
	got, err := r.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.NumRows() != 2 || enc.calls != 0 {
		t.Errorf("Next: %v rows, %d encoder calls; want 2, 0", got.NumRows(), enc.calls)
	}
	got.Release()
}

// TestRowsBoundedByBytes: a result whose client does not read holds about
// maxQueuedBytes of rows, not QueueCapacity batches of any size: past it a
// Send waits (here: its context ends first), and goes once the client reads.
func TestRowsBoundedByBytes(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := newJobRows(types.Schema{{Name: "s", Type: types.StringType}})
	big := strings.Repeat("x", 4<<20-4096) // a batch of just under 4 MiB
	ctx := context.Background()
	sent := 0
	for ; sent < exec.QueueCapacity; sent++ {
		if int64(sent+1)*int64(len(big)) > maxQueuedBytes {
			break
		}
		rec := textBatch(mem, big)
		if err := r.Send(ctx, "job", exec.Batch{Rec: rec}); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	if sent >= exec.QueueCapacity {
		t.Fatalf("the byte bound does not bind before the queue's length")
	}
	done, stop := context.WithCancel(ctx)
	stop()
	for range 20 { // without the bound a full queue's Send would race its cancellation
		rec := textBatch(mem, big)
		if err := r.Send(done, "job", exec.Batch{Rec: rec}); err == nil {
			t.Fatalf("a Send past %d MiB queued went through", r.queued.Load()>>20)
		}
		rec.Release()
	}
	// The client reads one: the next Send goes.
	it, err := r.next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	it.release()
	rec := textBatch(mem, big)
	if err := r.Send(ctx, "job", exec.Batch{Rec: rec}); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	for range sent {
		it, err := r.next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		it.release()
	}
	if q := r.queued.Load(); q != 0 {
		t.Errorf("%d bytes counted as queued with the queue empty", q)
	}
}
