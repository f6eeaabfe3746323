package operators

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/state"
	"github.com/hummer-db/hummer/exec/vector"
)

// Deduplication keeping the first row by event time (TopNConfig.First,
// Flink's first-row deduplication on a rowtime attribute): a partition's
// first row is only known to be first once the watermark has passed its
// time, when no earlier row can come (rows behind the watermark are late).
// So the partition keeps its earliest row so far (a top of one), which goes
// out when the watermark reaches it, once: the output is append-only. The
// partition is then closed: its key is kept, its later rows are ignored. At
// end of stream the rows not yet emitted go out.

// first is First's state in a topnOp.
type first struct {
	mark    int64    // the watermark; math.MinInt64 before the first
	pending []uint32 // partitions holding a row not emitted yet
	times   []int64  // the time of each row of the batch being processed
	valid   func(i int) bool
	late    lateRows
	lateIdx []int32 // the late rows of the batch being processed
}

func (o *topnOp) startFirst(tc *exec.TaskContext) {
	o.mark = math.MinInt64
	if o.cfg.First {
		o.late = newLateRows(o.cfg.Late, tc)
	}
}

// EmitsLate reports whether the operator sends its late rows on.
func (o *topnOp) EmitsLate() bool { return o.cfg.First && o.cfg.Late != nil }

// firstLate counts the late rows of batch b that firstSkips found and
// sends them on.
func (o *topnOp) firstLate(ctx context.Context, b exec.Batch) error {
	if len(o.lateIdx) == 0 {
		return nil
	}
	err := o.late.emit(ctx, b, o.lateIdx, o.mark)
	o.lateIdx = o.lateIdx[:0]
	return err
}

// firstBatch reads the times of rec's rows, for firstSkips.
func (o *topnOp) firstBatch(rec arrow.RecordBatch) error {
	if !o.cfg.First {
		return nil
	}
	ts, ok := rec.Column(o.cfg.Order[0].Col).(*array.Timestamp)
	if !ok {
		return fmt.Errorf("topn: the first row's time is %s, not a timestamp", rec.Column(o.cfg.Order[0].Col).DataType())
	}
	vals := ts.TimestampValues()
	o.times = vector.GrowSlice(o.times, len(vals))
	for i, v := range vals {
		o.times[i] = int64(v)
	}
	o.valid = ts.IsValid
	return nil
}

// firstSkips reports whether row i of the batch, of partition p, is to be
// ignored: p is closed, or the row is late (counted).
func (o *topnOp) firstSkips(p *topnPart, i int) bool {
	if p.closed {
		return true
	}
	if o.valid(i) && o.times[i] <= o.mark {
		o.lateIdx = append(o.lateIdx, int32(i))
		return true
	}
	return false
}

// entryTime returns the time an entry's sort key encodes (sortkey.go: a
// marker, then the value big-endian with its sign bit flipped), and false
// for NULL.
func entryTime(key []byte) (int64, bool) {
	if len(key) != 9 || key[0] != markValue {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(key[1:]) ^ (1 << 63)), true
}

// firstAdvance takes watermark mark: the pending rows at or before it go
// out, and their partitions close.
func (o *topnOp) firstAdvance(ctx context.Context, mark int64, out exec.Collector) error {
	if mark <= o.mark {
		return nil
	}
	o.mark = mark
	var rs []topnOut
	var closing []*topnPart
	keep := o.pending[:0]
	for _, pid := range o.pending {
		p := o.ps[pid]
		t, ok := entryTime(p.entries.At(0).key)
		if !ok || t > mark {
			keep = append(keep, pid)
			continue
		}
		rs = append(rs, topnOut{rid: p.entries.At(0).rid, rank: 1})
		closing = append(closing, p)
		if o.disk != nil {
			o.changedPart(pid) // closed, written back as such
		}
	}
	o.pending = keep
	if err := o.emitRows(ctx, out, rs, exec.Insert); err != nil {
		return err
	}
	for _, p := range closing {
		o.ref(p.entries.At(0).rid, -1)
		p.entries.Clear()
		p.pending, p.closed = false, true
	}
	o.maybeCompact()
	return nil
}

// snapshotFirst returns First's state: the closed partitions (their key
// columns as an Arrow IPC stream, or one byte without PARTITION BY) and the
// watermark.
func (o *topnOp) snapshotFirst() ([]byte, []byte, error) {
	mark := binary.LittleEndian.AppendUint64(nil, uint64(o.mark))
	if o.parts == nil {
		closed := []byte{0}
		if len(o.ps) > 0 && o.ps[0].closed {
			closed[0] = 1
		}
		return closed, mark, nil
	}
	var ids []uint32
	for pid, p := range o.ps {
		if p.closed {
			ids = append(ids, uint32(pid))
		}
	}
	schema, typs := o.partSchema()
	var recs []arrow.RecordBatch
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	for lo := 0; lo < len(ids); lo += vector.OutBatchRows {
		chunk := ids[lo:min(len(ids), lo+vector.OutBatchRows)]
		cols, err := o.parts.DecodeKeys(o.mem, typs, state.GroupIDs(chunk))
		if err != nil {
			return nil, nil, fmt.Errorf("topn: snapshot: %w", err)
		}
		rec, err := vector.MakeRecord(schema, cols, len(chunk))
		if err != nil {
			return nil, nil, fmt.Errorf("topn: snapshot: %w", err)
		}
		recs = append(recs, rec)
	}
	data, err := state.WriteIPC(o.mem, schema, recs...)
	if err != nil {
		return nil, nil, fmt.Errorf("topn: snapshot: %w", err)
	}
	return data, mark, nil
}

// partSchema returns the schema and types of the partition key columns.
func (o *topnOp) partSchema() (*arrow.Schema, []arrow.DataType) {
	fields := make([]arrow.Field, len(o.cfg.Partition))
	typs := make([]arrow.DataType, len(o.cfg.Partition))
	for i, c := range o.cfg.Partition {
		fields[i] = o.inSchema.Field(c)
		typs[i] = fields[i].Type
	}
	return arrow.NewSchema(fields, nil), typs
}

// restoreFirst restores what snapshotFirst returned, after the entries.
func (o *topnOp) restoreFirst(closed, mark []byte) error {
	if len(mark) != 8 {
		return fmt.Errorf("topn: %w: a watermark of %d bytes", state.ErrBadState, len(mark))
	}
	o.mark = int64(binary.LittleEndian.Uint64(mark))
	if o.parts == nil {
		if len(closed) != 1 {
			return fmt.Errorf("topn: %w: a closed flag of %d bytes", state.ErrBadState, len(closed))
		}
		if closed[0] == 1 {
			if len(o.ps) == 0 {
				o.ps = append(o.ps, &topnPart{})
			}
			o.ps[0].closed = true
		}
		return nil
	}
	schema, recs, err := state.ReadIPC(o.mem, closed)
	if err != nil {
		return fmt.Errorf("topn: %w: %v", state.ErrBadState, err)
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	want, typs := o.partSchema()
	if schema.NumFields() != len(typs) {
		return fmt.Errorf("topn: %w: closed partitions %s, want %s", state.ErrBadState, schema, want)
	}
	for i, dt := range typs {
		if !arrow.TypeEqual(schema.Field(i).Type, dt) {
			return fmt.Errorf("topn: %w: closed partitions %s, want %s", state.ErrBadState, schema, want)
		}
	}
	for _, rec := range recs {
		n := int(rec.NumRows())
		if n == 0 {
			continue
		}
		if err := o.pkeys.Encode(rec.Columns(), nil, n); err != nil {
			return fmt.Errorf("topn: %w: %v", state.ErrBadState, err)
		}
		o.pids = vector.GrowSlice(o.pids, n)
		o.parts.InsertRows(&o.pkeys, o.pids)
		for len(o.ps) < o.parts.Len() {
			o.ps = append(o.ps, &topnPart{})
		}
		for _, pid := range o.pids[:n] {
			o.ps[pid].closed = true
		}
	}
	return nil
}
