package operators

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/state"
	"github.com/hummer-db/hummer/exec/vector"
)

// TopNConfig configures kind "topn": ROW_NUMBER() OVER (PARTITION BY
// Partition ORDER BY Order) kept between ranks Lo and Hi (1-based,
// inclusive), Flink's Rank operator. Rank adds the row number (or rank) as
// a last bigint column. Retracts says the input has retractions (Delete,
// UpdateBefore rows), so every row of a partition is kept, for a deleted top
// row to be replaced by the next; otherwise Hi rows per partition suffice.
// Final emits the rows once, at end of stream (a bounded input, or one
// window's rows); otherwise the operator emits changes as they happen.
// First is deduplication keeping the first row by event time (Lo and Hi 1,
// one ascending Order key, a timestamp with a watermark): each partition's
// row goes out once, as an Insert, when the watermark passes its time, and
// the partition's later rows are ignored; rows behind the watermark are
// late, dropped and counted (topn_first.go). It implies Final. Func is
// "row_number" (the default) or "rank": RANK() kept between Lo and Hi, rows
// of equal sort keys sharing a rank, so a top can hold more than Hi rows.
type TopNConfig struct {
	Partition []int         `json:"partition,omitempty"`
	Order     []SortKeySpec `json:"order"`
	Lo        int64         `json:"lo"`
	Hi        int64         `json:"hi"`
	Rank      bool          `json:"rank,omitempty"`
	Retracts  bool          `json:"retracts,omitempty"`
	Final     bool          `json:"final,omitempty"`
	First     bool          `json:"first,omitempty"`
	Func      string        `json:"func,omitempty"`
	// Late, with First, sends the late rows to the job's late-rows table.
	Late *LateConfig `json:"late,omitempty"`
	// StateBackend, "memory" or "disk" (SET state_backend), says where the
	// partitions' rows live (topn_disk.go); "" leaves it to the TaskManager.
	StateBackend string `json:"state_backend,omitempty"`
}

// topnOp is kind "topn" (TopNConfig). Each partition keeps its rows sorted by
// their normalised sort key (sortkey.go), ties in order of arrival. Without
// Final it is an updating operator (a Flusher, as hash_agg's updates mode):
// the partitions a batch changed are marked, and at a flush each one's top
// (ranks Lo to Hi) is compared with what it last emitted: the rows that left
// go out as Deletes, then those that entered as Inserts. With Rank a row
// whose number changed is both (Flink's retract mode), since its rank column
// changed; without it only rows entering and leaving the top go out. A
// retraction removes the latest-arrived equal row of the partition; one of a
// row not held is ignored.
//
// State: rows gives each distinct whole row an id (refs counts the entries
// and emitted tops that hold it; rows is rebuilt from the held ones when
// there are more others, as upsert does); each partition holds its entries
// and the top it last emitted. Its checkpoint (topn_state.go) is both, as
// two Arrow IPC streams: the entries in order, and the emitted rows with
// their rank; and First's state. On the disk backend (topn_disk.go) the
// partitions live in pebble and these tables are a bounded cache of them.
type topnOp struct {
	cfg      TopNConfig
	mem      memory.Allocator
	schema   *arrow.Schema // output
	inSchema *arrow.Schema
	inTypes  []arrow.DataType

	parts *state.KeyTable // partition key -> partition id; nil without PARTITION BY
	rows  *state.KeyTable
	refs  []int32 // by row id
	live  int     // row ids with refs > 0
	ps    []*topnPart
	dirty []uint32 // partitions changed since the last flush
	seq   uint64
	done  bool

	pkeys, full state.RowKeys
	skeys       sortKeys
	pids, rids  []uint32
	sel         []int32
	diff        map[topnOut]int

	first // First's state

	// disk is the state on the disk backend (topn_disk.go), nil on
	// memory's, where stateLimit bounds the partitions' rows
	// (TaskContext.StateLimit; 0: none).
	disk       *topnDisk
	stateLimit int64
	label      string
}

type topnPart struct {
	entries topnList // by (key, seq)
	emitted []topnOut
	dirty   bool
	pending bool // First: it holds a row not emitted yet
	closed  bool // First: its row went out
}

type topnEntry struct {
	key []byte
	rid uint32
	out uint32 // over_window's: 1 + the id of the functions' values it last sent, 0 before it sent any
	seq uint64
}

type topnOut struct {
	rid  uint32
	rank int64
}

var (
	_ exec.Operator       = (*topnOp)(nil)
	_ exec.Flusher        = (*topnOp)(nil)
	_ exec.Checkpointed   = (*topnOp)(nil)
	_ exec.EndStateUnread = (*topnOp)(nil)
	_ exec.LateEmitter    = (*topnOp)(nil)
)

// EndStateUnread marks its state unread once its inputs have ended: it has
// sent all its changes by then.
func (o *topnOp) EndStateUnread() {}

func newTopNOp(spec exec.OperatorSpec) (exec.Operator, error) {
	var cfg TopNConfig
	if err := json.Unmarshal(spec.Config, &cfg); err != nil {
		return nil, fmt.Errorf("topn: bad config: %w", err)
	}
	return newTopN(cfg, spec)
}

func newTopN(cfg TopNConfig, spec exec.OperatorSpec) (*topnOp, error) {
	if cfg.Lo < 1 || cfg.Hi < cfg.Lo {
		return nil, fmt.Errorf("topn: ranks %d to %d", cfg.Lo, cfg.Hi)
	}
	if len(cfg.Order) == 0 {
		return nil, fmt.Errorf("topn: no ORDER BY")
	}
	switch cfg.Func {
	case "", "row_number":
		cfg.Func = ""
	case "rank":
		if cfg.First {
			return nil, fmt.Errorf("topn: first rows are by row number")
		}
	default:
		return nil, fmt.Errorf("topn: no Top-N of %s", cfg.Func)
	}
	if cfg.First {
		if cfg.Lo != 1 || cfg.Hi != 1 || len(cfg.Order) != 1 || cfg.Order[0].Desc || cfg.Retracts {
			return nil, fmt.Errorf("topn: first rows need rank 1, one ascending key and no retractions")
		}
		cfg.Final = true
	}
	o := &topnOp{cfg: cfg, schema: spec.Out.Arrow(), label: spec.Label}
	fields := o.schema.Fields()
	if cfg.Rank {
		if len(fields) == 0 || fields[len(fields)-1].Type.ID() != arrow.INT64 {
			return nil, fmt.Errorf("topn: the output's last column is not the bigint rank")
		}
		fields = fields[:len(fields)-1]
	}
	o.inSchema = arrow.NewSchema(fields, nil)
	for _, f := range fields {
		o.inTypes = append(o.inTypes, f.Type)
	}
	for _, c := range cfg.Partition {
		if c < 0 || c >= len(fields) {
			return nil, fmt.Errorf("topn: partition column %d out of range (%d columns)", c, len(fields))
		}
	}
	for _, k := range cfg.Order {
		if k.Col < 0 || k.Col >= len(fields) {
			return nil, fmt.Errorf("topn: order column %d out of range (%d columns)", k.Col, len(fields))
		}
	}
	return o, nil
}

func (o *topnOp) Open(ctx context.Context, tc *exec.TaskContext) error {
	o.mem = vector.TaskAlloc(tc)
	o.reset()
	o.startFirst(tc)
	return o.openDisk(tc)
}

// reset empties the state.
func (o *topnOp) reset() {
	o.release()
	if len(o.cfg.Partition) > 0 {
		o.parts = state.NewKeyTable()
	}
	o.rows = state.NewKeyTable()
	o.refs, o.ps, o.dirty, o.live, o.pending = nil, nil, nil, 0, nil
}

func (o *topnOp) release() {
	if o.parts != nil {
		o.parts.Release()
		o.parts = nil
	}
	if o.rows != nil {
		o.rows.Release()
		o.rows = nil
	}
}

// ids sets o.pids and o.rids to the partition and row ids of rec's rows
// (rec of the input's columns, and maybe more) and o.skeys to their sort
// keys.
func (o *topnOp) ids(rec arrow.RecordBatch) error {
	if err := o.partIDs(rec); err != nil {
		return err
	}
	return o.rowIDs(rec)
}

// partIDs sets o.pids and o.skeys for rec's rows.
func (o *topnOp) partIDs(rec arrow.RecordBatch) error {
	n := int(rec.NumRows())
	o.pids = vector.GrowSlice(o.pids, n)
	if o.parts == nil {
		clear(o.pids)
	} else {
		cols := make([]arrow.Array, len(o.cfg.Partition))
		for i, c := range o.cfg.Partition {
			cols[i] = rec.Column(c)
		}
		if err := o.pkeys.Encode(cols, nil, n); err != nil {
			return fmt.Errorf("topn: %w", err)
		}
		o.parts.InsertRows(&o.pkeys, o.pids)
	}
	for len(o.ps) < o.partsLen() {
		o.ps = append(o.ps, &topnPart{})
	}
	return o.skeys.encode(rec, o.cfg.Order)
}

// rowIDs sets o.rids for rec's rows.
func (o *topnOp) rowIDs(rec arrow.RecordBatch) error {
	if err := internRows(o.rows, &o.full, rec.Columns()[:len(o.inTypes)], int(rec.NumRows()), &o.rids, &o.refs); err != nil {
		return fmt.Errorf("topn: %w", err)
	}
	return nil
}

// internRows sets *ids to the ids in t of the n rows of cols, adding those
// t lacks, and grows *refs (the ids' holders) to t's length. enc is scratch.
func internRows(t *state.KeyTable, enc *state.RowKeys, cols []arrow.Array, n int, ids *[]uint32, refs *[]int32) error {
	if err := enc.Encode(cols, nil, n); err != nil {
		return err
	}
	*ids = vector.GrowSlice(*ids, n)
	t.InsertRows(enc, *ids)
	for len(*refs) < t.Len() {
		*refs = append(*refs, 0)
	}
	return nil
}

func (o *topnOp) partsLen() int {
	if o.parts == nil {
		return 1
	}
	return o.parts.Len()
}

func (o *topnOp) ref(rid uint32, d int32) {
	if o.refs[rid] == 0 {
		o.live++
	}
	o.refs[rid] += d
	if o.refs[rid] == 0 {
		o.live--
	}
}

func (o *topnOp) ProcessBatch(ctx context.Context, input int, b exec.Batch, out exec.Collector) error {
	if err := o.apply(ctx, b); err != nil {
		return err
	}
	if o.disk != nil {
		return o.evictIfFull(ctx, out)
	}
	if o.stateLimit > 0 {
		if n := o.cacheBytes(); n > o.stateLimit {
			return o.errStateLimit(n)
		}
	}
	return nil
}

// apply applies batch b to the partitions.
func (o *topnOp) apply(ctx context.Context, b exec.Batch) error {
	n := b.NumRows()
	if n == 0 {
		return nil
	}
	if int(b.Rec.NumCols()) != len(o.inTypes) {
		return fmt.Errorf("topn: a batch of %d columns, want %d", b.Rec.NumCols(), len(o.inTypes))
	}
	cached := len(o.ps)
	if err := o.partIDs(b.Rec); err != nil {
		return err
	}
	if o.disk != nil {
		if err := o.loadParts(cached, n); err != nil {
			return err
		}
	}
	if !o.cfg.Retracts {
		for _, op := range b.Ops {
			if op == exec.Delete || op == exec.UpdateBefore {
				return fmt.Errorf("topn: a retraction in an input planned without them")
			}
		}
		// Rows that cannot enter a full top (it only gets harder within
		// the batch) are dropped before their whole rows are encoded.
		sel := o.sel[:0]
		if err := o.firstBatch(b.Rec); err != nil {
			return err
		}
		for i := range n {
			p := o.ps[o.pids[i]]
			if o.cfg.First && o.firstSkips(p, i) {
				continue
			}
			if int64(p.entries.Len()) < o.cfg.Hi || o.mayEnter(o.skeys.key(i), p.entries.Last().key) {
				sel = append(sel, int32(i))
			}
		}
		if err := o.firstLate(ctx, b); err != nil {
			return err
		}
		o.sel = sel
		if len(sel) == 0 {
			return nil
		}
		if len(sel) < n {
			return o.insertSome(b.Rec, sel)
		}
	}
	if err := o.rowIDs(b.Rec); err != nil {
		return err
	}
	for i := range n {
		p := o.ps[o.pids[i]]
		var changed bool
		switch b.Op(i) {
		case exec.Insert, exec.UpdateAfter:
			changed = o.add(p, o.skeys.key(i), o.rids[i])
		default:
			changed = o.remove(p, o.skeys.key(i), o.rids[i])
		}
		if changed {
			o.touched(o.pids[i])
		}
	}
	o.maybeCompact()
	return nil
}

// insertSome inserts rows sel of append-only rec, whose o.pids and o.skeys
// are set.
func (o *topnOp) insertSome(rec arrow.RecordBatch, sel []int32) error {
	sub, err := vector.GatherRecord(o.mem, rec, sel)
	if err != nil {
		return fmt.Errorf("topn: %w", err)
	}
	err = o.rowIDs(sub)
	sub.Release()
	if err != nil {
		return err
	}
	for j, i := range sel {
		p := o.ps[o.pids[i]]
		if o.add(p, o.skeys.key(int(i)), o.rids[j]) {
			o.touched(o.pids[i])
		}
	}
	o.maybeCompact()
	return nil
}

// touched marks partition pid's top changed: for the next flush, or for
// First the next watermark.
func (o *topnOp) touched(pid uint32) {
	p := o.ps[pid]
	switch {
	case o.cfg.First:
		if !p.pending {
			p.pending = true
			o.pending = append(o.pending, pid)
		}
	case !o.cfg.Final && !p.dirty:
		p.dirty = true
		o.dirty = append(o.dirty, pid)
	}
}

// maybeCompact compacts rows when rows that never entered a top, or left
// it, outnumber the rows held, and no flush is pending.
func (o *topnOp) maybeCompact() {
	if len(o.dirty) == 0 && o.rows.Len() > 2*o.live+compactSlack {
		o.compact()
	}
}

// add inserts a row into p, after its equals; it reports whether p's top
// changed.
// Without retractions p keeps its first Hi rows only.
func (o *topnOp) add(p *topnPart, key []byte, rid uint32) bool {
	pos := p.entries.bound(key, true)
	// Its number: by row number its position; by rank that of the first
	// of its equals.
	at := int64(pos)
	if o.cfg.Func == "rank" {
		at = int64(p.entries.bound(key, false))
	}
	if !o.cfg.Retracts && at >= o.cfg.Hi {
		return false
	}
	o.seq++
	p.entries.Insert(pos, topnEntry{key: bytes.Clone(key), rid: rid, seq: o.seq})
	o.ref(rid, 1)
	if !o.cfg.Retracts {
		// The rows numbered past Hi go: by rank, those after the last
		// equal of the row at Hi - 1.
		cut := int(o.cfg.Hi)
		for o.cfg.Func == "rank" && cut < p.entries.Len() && bytes.Equal(p.entries.At(cut).key, p.entries.At(cut-1).key) {
			cut++
		}
		p.entries.Truncate(cut, func(e *topnEntry) { o.ref(e.rid, -1) })
	}
	return at < o.cfg.Hi
}

// mayEnter reports whether a row of sort key key may enter a top whose last
// row has sort key last: by rank, an equal of it may.
func (o *topnOp) mayEnter(key, last []byte) bool {
	c := bytes.Compare(key, last)
	return c < 0 || c == 0 && o.cfg.Func == "rank"
}

// remove takes the latest-arrived row equal to rid out of p; it reports
// whether that changed p's top.
func (o *topnOp) remove(p *topnPart, key []byte, rid uint32) bool {
	at := -1
	p.entries.EachFrom(p.entries.bound(key, false), func(j int, e *topnEntry) bool {
		if !bytes.Equal(e.key, key) {
			return false
		}
		if e.rid == rid {
			at = j
		}
		return true
	})
	if at < 0 {
		return false
	}
	o.ref(rid, -1)
	p.entries.Delete(at)
	// By rank the rows after it may move into the top: let the flush
	// compare.
	return int64(at) < o.cfg.Hi || o.cfg.Func == "rank"
}

// top appends p's rows of ranks Lo to Hi to dst.
func (o *topnOp) top(dst []topnOut, p *topnPart) []topnOut {
	var rank int64
	var prev []byte
	p.entries.Each(func(j int, e *topnEntry) bool {
		if o.cfg.Func != "rank" || j == 0 || !bytes.Equal(e.key, prev) {
			rank = int64(j) + 1
		}
		prev = e.key
		if rank > o.cfg.Hi {
			return false
		}
		if rank >= o.cfg.Lo {
			dst = append(dst, topnOut{rid: e.rid, rank: rank})
		}
		return true
	})
	return dst
}

// diffKey is what tells an emitted row from another: its rank too when the
// rank is a column.
func (o *topnOp) diffKey(r topnOut) topnOut {
	if !o.cfg.Rank {
		r.rank = 0
	}
	return r
}

// Flush emits the changes of the tops of the partitions changed since the
// last flush: Deletes of the rows that left, then Inserts of those that
// entered.
func (o *topnOp) Flush(ctx context.Context, out exec.Collector) error {
	if o.cfg.Final || len(o.dirty) == 0 {
		return nil
	}
	if o.diff == nil {
		o.diff = map[topnOut]int{}
	}
	var dels, ins []topnOut
	var next []topnOut
	for _, pid := range o.dirty {
		p := o.ps[pid]
		p.dirty = false
		next = o.top(next[:0], p)
		clear(o.diff)
		for _, r := range p.emitted {
			o.diff[o.diffKey(r)]++
		}
		for _, r := range next {
			o.diff[o.diffKey(r)]--
		}
		for _, r := range p.emitted {
			if k := o.diffKey(r); o.diff[k] > 0 {
				o.diff[k]--
				dels = append(dels, r)
			}
		}
		for _, r := range next {
			if k := o.diffKey(r); o.diff[k] < 0 {
				o.diff[k]++
				ins = append(ins, r)
			}
		}
		for _, r := range next {
			o.ref(r.rid, 1)
		}
		for _, r := range p.emitted {
			o.ref(r.rid, -1)
		}
		p.emitted = append(p.emitted[:0], next...)
		if len(next) == 0 {
			p.emitted = nil // a partition emptied holds nothing
		}
	}
	o.dirty = o.dirty[:0]
	// The deleted rows keep their ids until after they are decoded: rows is
	// compacted only below.
	if err := o.emitRows(ctx, out, dels, exec.Delete); err != nil {
		return err
	}
	if err := o.emitRows(ctx, out, ins, exec.Insert); err != nil {
		return err
	}
	if o.rows.Len() > 2*o.live+compactSlack {
		o.compact()
	}
	return nil
}

// emitRows sends rows rs with change kind op, in batches.
func (o *topnOp) emitRows(ctx context.Context, out exec.Collector, rs []topnOut, op exec.ChangeKind) error {
	return emitChunks(ctx, out, rs, op, func(chunk []topnOut) (arrow.RecordBatch, error) { return o.record(chunk, o.cfg.Rank, o.schema) })
}

// emitChunks sends items as batches of change kind op, each built by
// record from at most vector.OutBatchRows of them.
func emitChunks[T any](ctx context.Context, out exec.Collector, items []T, op exec.ChangeKind, record func([]T) (arrow.RecordBatch, error)) error {
	for lo := 0; lo < len(items); lo += vector.OutBatchRows {
		chunk := items[lo:min(len(items), lo+vector.OutBatchRows)]
		rec, err := record(chunk)
		if err != nil {
			return err
		}
		var ops []exec.ChangeKind
		if op != exec.Insert {
			ops = make([]exec.ChangeKind, len(chunk))
			for i := range ops {
				ops[i] = op
			}
		}
		err = out.Collect(ctx, exec.Batch{Rec: rec, Ops: ops})
		rec.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// record builds the rows rs, with their rank as a last column if rank.
func (o *topnOp) record(rs []topnOut, rank bool, schema *arrow.Schema) (arrow.RecordBatch, error) {
	ids := make([]uint32, len(rs))
	for i, r := range rs {
		ids[i] = r.rid
	}
	cols, err := o.rows.DecodeKeys(o.mem, o.inTypes, state.GroupIDs(ids))
	if err != nil {
		return nil, fmt.Errorf("topn: %w", err)
	}
	if rank {
		b := array.NewInt64Builder(o.mem)
		b.Reserve(len(rs))
		for _, r := range rs {
			b.UnsafeAppend(r.rank)
		}
		cols = append(cols, b.NewArray())
		b.Release()
	}
	rec, err := vector.MakeRecord(schema, cols, len(rs))
	if err != nil {
		return nil, fmt.Errorf("topn: %w", err)
	}
	return rec, nil
}

// compact rebuilds rows from the rows held.
func (o *topnOp) compact() {
	rows, refs, newID := compactKeys(o.rows, o.refs)
	for _, p := range o.ps {
		p.entries.Each(func(_ int, e *topnEntry) bool {
			e.rid = newID[e.rid]
			return true
		})
		for j := range p.emitted {
			p.emitted[j].rid = newID[p.emitted[j].rid]
		}
	}
	o.rows.Release()
	o.rows, o.refs = rows, refs
}

// compactSlack is how many ids no longer held a key table of topn or
// over_window keeps beyond twice those held before it is compacted: a
// compaction copies every key held, so it waits for a batch's worth. Tests
// set it to 0, for their small inputs to be compacted.
var compactSlack = vector.OutBatchRows

// compactKeys returns a table of the keys of t whose refs are above 0,
// their refs in it, and each old id's new one (newID[id] for a held id; the
// others map to 0). t stays as it was: the caller swaps the tables once it
// has renumbered its ids.
func compactKeys(t *state.KeyTable, refs []int32) (*state.KeyTable, []int32, []uint32) {
	var ids []uint32
	for id, r := range refs {
		if r > 0 {
			ids = append(ids, uint32(id))
		}
	}
	newID := make([]uint32, len(refs))
	held := make([]int32, len(ids))
	for i, id := range ids {
		newID[id], held[i] = uint32(i), refs[id]
	}
	return t.Compacted(ids), held, newID
}

func (o *topnOp) ProcessSignal(ctx context.Context, input int, s exec.Signal, out exec.Collector) error {
	switch s.Kind {
	case exec.Watermark:
		if o.cfg.First {
			if err := o.firstAdvance(ctx, s.Watermark, out); err != nil {
				return err
			}
		}
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
		if o.cfg.Final {
			if err := o.emitFinal(ctx, out); err != nil {
				return err
			}
		}
	}
	return out.CollectSignal(ctx, s)
}

// emitFinal sends every partition's top as Inserts.
func (o *topnOp) emitFinal(ctx context.Context, out exec.Collector) error {
	var rs []topnOut
	for _, p := range o.ps {
		rs = o.top(rs, p)
		if len(rs) >= vector.OutBatchRows {
			if err := o.emitRows(ctx, out, rs, exec.Insert); err != nil {
				return err
			}
			rs = rs[:0]
		}
	}
	return o.emitRows(ctx, out, rs, exec.Insert)
}

// Close frees the state and the scratch beside it (the encoders' buffers,
// the per-row and per-batch slices), which would otherwise stay as long as
// the operator is reachable (a finished job's tasks are, while it is listed).
func (o *topnOp) Close(ctx context.Context) error {
	o.closeDisk()
	o.release()
	o.refs, o.ps, o.dirty, o.live = nil, nil, nil, 0
	o.pkeys, o.full, o.skeys = state.RowKeys{}, state.RowKeys{}, sortKeys{}
	o.pids, o.rids, o.sel, o.diff = nil, nil, nil, nil
	o.pending, o.times, o.lateIdx = nil, nil, nil
	return nil
}
