package operators

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/state"
	"github.com/hummer-db/hummer/exec/vector"
)

// OverWindowConfig configures kind "over_window": the window functions of
// Window (count, sum, avg, min, max, each over a ROWS frame from a bounded
// number of rows before the current one to at most the current one, or a
// RANGE frame from an offset before the current row to its peers, ordered
// by one key) over an input whose rows change: it may delete or update rows
// (an aggregation or a Top-N over a stream feeds it), and its order keys
// need no watermark.
type OverWindowConfig struct {
	Window WindowConfig `json:"window"`
}

// overWindowOp is kind "over_window" (OverWindowConfig), an updating OVER
// aggregation: what Flink's OVER aggregation cannot do (FLINK-19059). Its
// output is the window's rows, the input's columns then the functions', as
// a changelog: when a row comes or goes, every row whose frame it is in
// gets its functions again, and a row whose output changed has the old one
// retracted (a Delete) and the new one inserted.
//
// Each partition keeps all its rows (a deleted row brings an older one back
// into the frames after it), sorted by their normalised sort key (sortkey.go),
// ties in order of arrival, in a topnList; each entry remembers the
// functions' values it last sent. A retraction removes the latest-arrived
// equal row of its partition, as topn does; one of a row not held is
// ignored. A batch only records where its partitions changed; the Flush (a
// Flusher, at latest at each barrier and at end of stream) recomputes, for
// each change at position p, the rows p to p+reach (reach: the most rows a
// frame reaches back), over the rows from reach before them, with the batch
// window operator's kernels (windowRun), so its values are the batch
// answer's by construction; then it sends the Deletes of the outputs that
// changed or whose row went, and the Inserts of the new ones. A RANGE frame
// reaches back by values, not rows: with one, a partition's rows from the
// first peer of its earliest change on are computed, over all its rows.
//
// State: rows gives each distinct input row an id, vals each distinct tuple
// of the functions' values (a row's output is its row and its values, and it
// changed when either id did); both count their holders and are rebuilt from
// the held ones when the others outnumber them. It is Checkpointed
// (over_window_state.go).
type overWindowOp struct {
	cfg     OverWindowConfig
	mem     memory.Allocator
	out     *arrow.Schema
	in      *arrow.Schema
	inTypes []arrow.DataType
	fnTypes []arrow.DataType
	reach   int
	ranges  bool // a RANGE frame: spans run to the partition's end

	parts      *state.KeyTable // partition key -> partition id; nil without PARTITION BY
	rows, vals *state.KeyTable
	rowRefs    []int32 // by row id: entries and pending retractions holding it
	valRefs    []int32 // by values id
	rowLive    int
	valLive    int
	ps         []*overPart
	dirty      []uint32 // partitions changed since the last flush
	gone       []overSent
	seq        uint64
	done       bool

	pkeys, full, fkeys state.RowKeys
	skeys              sortKeys
	pids, rids, vids   []uint32
}

// overPart is a partition: its rows in order, and where they changed since
// the last flush.
type overPart struct {
	entries topnList
	changes []overChange
	all     bool // recompute every row (restored with changes not flushed)
	dirty   bool
}

// overChange is an entry inserted or deleted: its key and arrival number
// find its position at the flush.
type overChange struct {
	key []byte
	seq uint64
}

// overSent is an output row: its input row and its functions' values.
type overSent struct{ rid, vid uint32 }

var (
	_ exec.Operator       = (*overWindowOp)(nil)
	_ exec.Flusher        = (*overWindowOp)(nil)
	_ exec.Checkpointed   = (*overWindowOp)(nil)
	_ exec.EndStateUnread = (*overWindowOp)(nil)
)

// EndStateUnread marks its state unread once its inputs have ended: it has
// sent all its changes by then.
func (o *overWindowOp) EndStateUnread() {}

func newOverWindowOp(spec exec.OperatorSpec) (exec.Operator, error) {
	var cfg OverWindowConfig
	if err := json.Unmarshal(spec.Config, &cfg); err != nil {
		return nil, fmt.Errorf("over_window: bad config: %w", err)
	}
	w := cfg.Window
	o := &overWindowOp{cfg: cfg, out: spec.Out.Arrow()}
	nIn := len(spec.Out) - len(w.Funcs)
	if nIn <= 0 || len(w.Funcs) == 0 {
		return nil, fmt.Errorf("over_window: %d output columns for %d functions", len(spec.Out), len(w.Funcs))
	}
	o.in = arrow.NewSchema(o.out.Fields()[:nIn], nil)
	for _, f := range o.in.Fields() {
		o.inTypes = append(o.inTypes, f.Type)
	}
	for _, f := range o.out.Fields()[nIn:] {
		o.fnTypes = append(o.fnTypes, f.Type)
	}
	for _, c := range w.Partition {
		if c < 0 || c >= nIn {
			return nil, fmt.Errorf("over_window: partition column %d out of range (%d columns)", c, nIn)
		}
	}
	for _, k := range w.Order {
		if k.Col < 0 || k.Col >= nIn {
			return nil, fmt.Errorf("over_window: order column %d out of range (%d columns)", k.Col, nIn)
		}
	}
	for _, f := range w.Funcs {
		if err := overWindowFunc(f, nIn); err != nil {
			return nil, err
		}
		if f.Frame.Rows {
			o.reach = max(o.reach, int(-f.Frame.Start))
		} else {
			o.ranges = true
		}
	}
	if o.ranges && len(w.Order) != 1 {
		return nil, fmt.Errorf("over_window: a RANGE frame needs one order key")
	}
	return o, nil
}

// overWindowFunc checks that over_window computes f.
func overWindowFunc(f WindowFuncSpec, nIn int) error {
	switch f.Func {
	case "count", "sum", "avg", "min", "max":
	default:
		return fmt.Errorf("over_window: %s is not supported", f.Func)
	}
	for _, a := range f.Args {
		if a < 0 || a >= nIn {
			return fmt.Errorf("over_window: %s's argument column %d out of range (%d columns)", f.Func, a, nIn)
		}
	}
	fr := f.Frame
	if fr.StartUnbounded || fr.EndUnbounded || fr.Rows && (fr.Start > fr.End || fr.End > 0) || !fr.Rows && fr.EndOffset {
		return fmt.Errorf("over_window: %s's frame must be ROWS from a bounded number of rows before the current one to at most it, "+
			"or RANGE from an offset before the current row to its peers", f.Func)
	}
	return nil
}

func (o *overWindowOp) Open(ctx context.Context, tc *exec.TaskContext) error {
	o.mem = vector.TaskAlloc(tc)
	o.reset()
	return nil
}

// reset empties the state.
func (o *overWindowOp) reset() {
	o.release()
	if len(o.cfg.Window.Partition) > 0 {
		o.parts = state.NewKeyTable()
	}
	o.rows, o.vals = state.NewKeyTable(), state.NewKeyTable()
	o.rowRefs, o.valRefs, o.rowLive, o.valLive = nil, nil, 0, 0
	o.ps, o.dirty, o.gone, o.seq = nil, nil, nil, 0
}

func (o *overWindowOp) release() {
	for _, t := range []**state.KeyTable{&o.parts, &o.rows, &o.vals} {
		if *t != nil {
			(*t).Release()
			*t = nil
		}
	}
}

// ids sets o.pids, o.skeys and o.rids for rec's rows (rec of the input's
// columns, and maybe more).
func (o *overWindowOp) ids(rec arrow.RecordBatch) error {
	n := int(rec.NumRows())
	o.pids = vector.GrowSlice(o.pids, n)
	if o.parts == nil {
		clear(o.pids)
	} else {
		cols := make([]arrow.Array, len(o.cfg.Window.Partition))
		for i, c := range o.cfg.Window.Partition {
			cols[i] = rec.Column(c)
		}
		if err := o.pkeys.Encode(cols, nil, n); err != nil {
			return fmt.Errorf("over_window: %w", err)
		}
		o.parts.InsertRows(&o.pkeys, o.pids)
	}
	for len(o.ps) < o.partsLen() {
		o.ps = append(o.ps, &overPart{})
	}
	if err := o.skeys.encode(rec, o.cfg.Window.Order); err != nil {
		return err
	}
	if err := internRows(o.rows, &o.full, rec.Columns()[:len(o.inTypes)], n, &o.rids, &o.rowRefs); err != nil {
		return fmt.Errorf("over_window: %w", err)
	}
	return nil
}

// valIDs sets o.vids to the ids of the functions' values cols (n rows).
func (o *overWindowOp) valIDs(cols []arrow.Array, n int) error {
	if err := internRows(o.vals, &o.fkeys, cols, n, &o.vids, &o.valRefs); err != nil {
		return fmt.Errorf("over_window: %w", err)
	}
	return nil
}

func (o *overWindowOp) partsLen() int {
	if o.parts == nil {
		return 1
	}
	return o.parts.Len()
}

func holdID(refs []int32, live *int, id uint32, d int32) {
	if refs[id] == 0 {
		*live++
	}
	refs[id] += d
	if refs[id] == 0 {
		*live--
	}
}

func (o *overWindowOp) ProcessBatch(ctx context.Context, input int, b exec.Batch, out exec.Collector) error {
	n := b.NumRows()
	if n == 0 {
		return nil
	}
	if int(b.Rec.NumCols()) != len(o.inTypes) {
		return fmt.Errorf("over_window: a batch of %d columns, want %d", b.Rec.NumCols(), len(o.inTypes))
	}
	if err := o.ids(b.Rec); err != nil {
		return err
	}
	for i := range n {
		p := o.ps[o.pids[i]]
		key := o.skeys.key(i)
		switch b.Op(i) {
		case exec.Insert, exec.UpdateAfter:
			o.seq++
			e := topnEntry{key: bytes.Clone(key), rid: o.rids[i], seq: o.seq}
			p.entries.Insert(p.entries.bound(key, true), e)
			holdID(o.rowRefs, &o.rowLive, e.rid, 1)
			p.changes = append(p.changes, overChange{key: e.key, seq: e.seq})
		default:
			if !o.remove(p, key, o.rids[i]) {
				continue
			}
		}
		if !p.dirty {
			p.dirty = true
			o.dirty = append(o.dirty, o.pids[i])
		}
	}
	return nil
}

// remove takes the latest-arrived row equal to rid out of p; it reports
// whether p held one. Its output, if it sent one, is retracted at the flush.
func (o *overWindowOp) remove(p *overPart, key []byte, rid uint32) bool {
	at := -1
	var gone topnEntry
	p.entries.EachFrom(p.entries.bound(key, false), func(j int, e *topnEntry) bool {
		if !bytes.Equal(e.key, key) {
			return false
		}
		if e.rid == rid {
			at, gone = j, *e
		}
		return true
	})
	if at < 0 {
		return false
	}
	p.entries.Delete(at)
	p.changes = append(p.changes, overChange{key: gone.key, seq: gone.seq})
	if gone.out == 0 {
		holdID(o.rowRefs, &o.rowLive, rid, -1)
	} else {
		o.gone = append(o.gone, overSent{rid: rid, vid: gone.out - 1}) // its holds pass to the retraction
	}
	return true
}

// position returns where in p an entry of key and arrival seq is, or would
// be: entries order by key, then by arrival.
func (p *overPart) position(key []byte, seq uint64) int {
	pos := p.entries.bound(key, false)
	p.entries.EachFrom(pos, func(j int, e *topnEntry) bool {
		if !bytes.Equal(e.key, key) || e.seq >= seq {
			return false
		}
		pos = j + 1
		return true
	})
	return pos
}

// overSpan is a run of a partition's positions to compute: from start, the
// rows whose values may have changed from lo on (the rows before lo are the
// frames' context).
type overSpan struct {
	pid            uint32
	start, lo, end int
}

// spans appends the spans of partition pid's changes to dst, and forgets
// them.
func (o *overWindowOp) spans(dst []overSpan, pid uint32) []overSpan {
	p := o.ps[pid]
	n := p.entries.Len()
	defer func() { p.changes, p.all, p.dirty = p.changes[:0], false, false }()
	if n == 0 {
		return dst
	}
	if p.all {
		return append(dst, overSpan{pid: pid, start: 0, lo: 0, end: n})
	}
	if o.ranges {
		lo := n
		for _, c := range p.changes {
			lo = min(lo, p.entries.bound(c.key, false))
		}
		if lo == n {
			return dst
		}
		return append(dst, overSpan{pid: pid, start: 0, lo: lo, end: n})
	}
	at := make([]int, 0, len(p.changes))
	for _, c := range p.changes {
		if q := p.position(c.key, c.seq); q < n {
			at = append(at, q)
		}
	}
	slices.Sort(at)
	for i := 0; i < len(at); {
		lo, hi := at[i], at[i]+o.reach+1
		// A change whose rows' context overlaps these joins them.
		for i++; i < len(at) && at[i]-o.reach <= hi; i++ {
			hi = at[i] + o.reach + 1
		}
		dst = append(dst, overSpan{pid: pid, start: max(0, lo-o.reach), lo: lo, end: min(n, hi)})
	}
	return dst
}

// Flush recomputes the rows the changes since the last flush may have
// changed and sends the differences: Deletes of the outputs that went, then
// Inserts of the new ones.
func (o *overWindowOp) Flush(ctx context.Context, out exec.Collector) error {
	if len(o.dirty) == 0 && len(o.gone) == 0 {
		return nil
	}
	dels, ins := o.gone, []overSent(nil)
	o.gone = nil
	var spans []overSpan
	rows := 0
	for i, pid := range o.dirty {
		before := len(spans)
		spans = o.spans(spans, pid)
		for _, s := range spans[before:] {
			rows += s.end - s.start
		}
		if rows >= vector.OutBatchRows || i == len(o.dirty)-1 {
			var err error
			if dels, ins, err = o.compute(spans, rows, dels, ins); err != nil {
				return err
			}
			spans, rows = spans[:0], 0
		}
	}
	o.dirty = o.dirty[:0]
	if err := o.emit(ctx, out, dels, exec.Delete); err != nil {
		return err
	}
	if err := o.emit(ctx, out, ins, exec.Insert); err != nil {
		return err
	}
	// The retracted outputs' holds go once they are sent.
	for _, s := range dels {
		holdID(o.valRefs, &o.valLive, s.vid, -1)
		holdID(o.rowRefs, &o.rowLive, s.rid, -1)
	}
	o.maybeCompact()
	return nil
}

// compute computes the functions over spans (rows rows in all), and
// appends to dels and ins the outputs that changed.
func (o *overWindowOp) compute(spans []overSpan, rows int, dels, ins []overSent) ([]overSent, []overSent, error) {
	if len(spans) == 0 {
		return dels, ins, nil
	}
	rids := make([]uint32, 0, rows)
	w := &windowRun{o: &windowOp{cfg: o.cfg.Window, mem: o.mem}, perm: make([]int32, rows),
		partStart: make([]int, rows), partEnd: make([]int, rows), peerStart: make([]int, rows), peerEnd: make([]int, rows)}
	var keys [][]byte // with a RANGE frame, each row's order key: peers are equal ones
	for _, s := range spans {
		from := len(rids)
		o.ps[s.pid].entries.EachFrom(s.start, func(j int, e *topnEntry) bool {
			if j >= s.end {
				return false
			}
			rids = append(rids, e.rid)
			if o.ranges {
				keys = append(keys, e.key)
			}
			return true
		})
		for q := from; q < len(rids); q++ {
			w.perm[q], w.partStart[q], w.partEnd[q], w.peerStart[q], w.peerEnd[q] = int32(q), from, len(rids), q, q+1
			if o.ranges && q > from && bytes.Equal(keys[q], keys[q-1]) {
				w.peerStart[q] = w.peerStart[q-1]
			}
		}
		for q := len(rids) - 2; o.ranges && q >= from; q-- {
			if bytes.Equal(keys[q], keys[q+1]) {
				w.peerEnd[q] = w.peerEnd[q+1]
			}
		}
	}
	cols, err := o.rows.DecodeKeys(o.mem, o.inTypes, state.GroupIDs(rids))
	if err != nil {
		return nil, nil, fmt.Errorf("over_window: %w", err)
	}
	rec, err := vector.MakeRecord(o.in, cols, rows)
	if err != nil {
		return nil, nil, fmt.Errorf("over_window: %w", err)
	}
	defer rec.Release()
	w.rec = rec
	results := make([]arrow.Array, 0, len(o.cfg.Window.Funcs))
	defer func() { vector.ReleaseArrays(results) }()
	for _, f := range o.cfg.Window.Funcs {
		a, err := w.compute(f)
		if err != nil {
			return nil, nil, fmt.Errorf("over_window: %s: %w", f.Func, err)
		}
		results = append(results, a)
	}
	if err := o.valIDs(results, rows); err != nil {
		return nil, nil, err
	}
	q := 0
	for _, s := range spans {
		q += s.lo - s.start
		o.ps[s.pid].entries.EachFrom(s.lo, func(j int, e *topnEntry) bool {
			if j >= s.end {
				return false
			}
			vid := o.vids[q]
			q++
			if e.out == vid+1 {
				return true
			}
			if e.out != 0 {
				// The old output's holds pass to its retraction; the row is
				// held again for the entry.
				dels = append(dels, overSent{rid: e.rid, vid: e.out - 1})
				holdID(o.rowRefs, &o.rowLive, e.rid, 1)
			}
			e.out = vid + 1
			holdID(o.valRefs, &o.valLive, vid, 1)
			ins = append(ins, overSent{rid: e.rid, vid: vid})
			return true
		})
	}
	return dels, ins, nil
}

// emit sends outputs ss with change kind op, in batches.
func (o *overWindowOp) emit(ctx context.Context, out exec.Collector, ss []overSent, op exec.ChangeKind) error {
	return emitChunks(ctx, out, ss, op, o.record)
}

// record builds the output rows ss.
func (o *overWindowOp) record(ss []overSent) (arrow.RecordBatch, error) {
	rids, vids := make([]uint32, len(ss)), make([]uint32, len(ss))
	for i, s := range ss {
		rids[i], vids[i] = s.rid, s.vid
	}
	cols, fns, err := o.decode(rids, vids)
	if err != nil {
		return nil, err
	}
	rec, err := vector.MakeRecord(o.out, append(cols, fns...), len(ss))
	if err != nil {
		return nil, fmt.Errorf("over_window: %w", err)
	}
	return rec, nil
}

// decode returns the columns of input rows rids and of values vids.
func (o *overWindowOp) decode(rids, vids []uint32) (cols, fns []arrow.Array, err error) {
	cols, err = o.rows.DecodeKeys(o.mem, o.inTypes, state.GroupIDs(rids))
	if err != nil {
		return nil, nil, fmt.Errorf("over_window: %w", err)
	}
	fns, err = o.vals.DecodeKeys(o.mem, o.fnTypes, state.GroupIDs(vids))
	if err != nil {
		vector.ReleaseArrays(cols)
		return nil, nil, fmt.Errorf("over_window: %w", err)
	}
	return cols, fns, nil
}

// maybeCompact rebuilds a table when ids no longer held outnumber those
// held, and no retraction is pending.
func (o *overWindowOp) maybeCompact() {
	if len(o.gone) > 0 || len(o.dirty) > 0 {
		return
	}
	if o.rows.Len() > 2*o.rowLive+compactSlack {
		rows, refs, newID := compactKeys(o.rows, o.rowRefs)
		o.renumber(func(e *topnEntry) { e.rid = newID[e.rid] })
		o.rows.Release()
		o.rows, o.rowRefs = rows, refs
	}
	if o.vals.Len() > 2*o.valLive+compactSlack {
		vals, refs, newID := compactKeys(o.vals, o.valRefs)
		o.renumber(func(e *topnEntry) {
			if e.out != 0 {
				e.out = newID[e.out-1] + 1
			}
		})
		o.vals.Release()
		o.vals, o.valRefs = vals, refs
	}
}

// renumber calls f with every entry.
func (o *overWindowOp) renumber(f func(e *topnEntry)) {
	for _, p := range o.ps {
		p.entries.Each(func(_ int, e *topnEntry) bool {
			f(e)
			return true
		})
	}
}

func (o *overWindowOp) ProcessSignal(ctx context.Context, input int, s exec.Signal, out exec.Collector) error {
	switch s.Kind {
	case exec.Barrier:
		// The changes before the barrier go out before it, and the snapshot
		// taken after it has none pending.
		if err := o.Flush(ctx, out); err != nil {
			return err
		}
	case exec.EndOfStream:
		if o.done {
			return nil
		}
		o.done = true
		if err := o.Flush(ctx, out); err != nil {
			return err
		}
	}
	return out.CollectSignal(ctx, s)
}

// Close frees the state and the scratch beside it.
func (o *overWindowOp) Close(ctx context.Context) error {
	o.release()
	o.rowRefs, o.valRefs, o.ps, o.dirty, o.gone = nil, nil, nil, nil, nil
	o.pkeys, o.full, o.fkeys, o.skeys = state.RowKeys{}, state.RowKeys{}, state.RowKeys{}, sortKeys{}
	o.pids, o.rids, o.vids = nil, nil, nil
	return nil
}
