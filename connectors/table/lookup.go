package table

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/exec/vector"
)

// Primary-key lookups. A scan of a table whose PRIMARY KEY is one bigint or
// timestamp column, under a filter that confines the key to values or ranges
// (key = c, key IN (c, ...), key BETWEEN a AND b, key < c ...), reads each
// segment through its key index: the segment's keys sorted, with the row of
// each. It reads only the record batches that hold a wanted key, and emits
// only those rows. A segment never changes, so its index is built the first
// time a lookup reads it, in the process that reads it (a TaskManager
// elsewhere builds its own), and kept in a bounded cache; writes cost
// nothing. The log's rows, few, are read whole.

// keyRange is a closed interval of key values.
type keyRange struct{ lo, hi int64 }

// lookupOf returns the ranges that cond's conjuncts confine column col, of
// type t, to; ok is false when none does.
func lookupOf(cond *expr.Expr, col int, t types.Type) (ranges []keyRange, ok bool) {
	if t.ID != types.Int64 && t.ID != types.Timestamp {
		return nil, false
	}
	ranges = []keyRange{{math.MinInt64, math.MaxInt64}}
	var walk func(e *expr.Expr)
	walk = func(e *expr.Expr) {
		if e == nil || e.Kind != expr.KindCall {
			return
		}
		if e.Func == "and" {
			for _, a := range e.Args {
				walk(a)
			}
			return
		}
		if r, applies := conjunctRanges(e, col, t); applies {
			ranges, ok = intersect(ranges, r), true
		}
	}
	walk(cond)
	return ranges, ok
}

// conjunctRanges returns the key ranges one conjunct allows.
func conjunctRanges(e *expr.Expr, col int, t types.Type) ([]keyRange, bool) {
	isKey := func(a *expr.Expr) bool { return a.Kind == expr.KindColumn && a.Col == col }
	value := func(a *expr.Expr) (int64, bool) {
		if a.Kind != expr.KindLiteral {
			return 0, false
		}
		return rangeValue(a.Value, t)
	}
	if e.Func == "in" && len(e.Args) > 1 && isKey(e.Args[0]) {
		var rs []keyRange
		for _, a := range e.Args[1:] {
			if a.Kind == expr.KindLiteral && a.Value.Null {
				continue // never equal
			}
			v, ok := value(a)
			if !ok {
				return nil, false
			}
			rs = append(rs, keyRange{v, v})
		}
		slices.SortFunc(rs, func(a, b keyRange) int { return cmpInt(a.lo, b.lo) })
		return slices.Compact(rs), true
	}
	if len(e.Args) != 2 {
		return nil, false
	}
	op, k, lit := e.Func, e.Args[0], e.Args[1]
	if !isKey(k) {
		k, lit = lit, k
		switch op { // constant <op> key: the key's side of it
		case "<":
			op = ">"
		case "<=":
			op = ">="
		case ">":
			op = "<"
		case ">=":
			op = "<="
		}
	}
	v, ok := value(lit)
	if !isKey(k) || !ok {
		return nil, false
	}
	switch op {
	case "=":
		return []keyRange{{v, v}}, true
	case "<":
		if v == math.MinInt64 {
			return nil, true
		}
		return []keyRange{{math.MinInt64, v - 1}}, true
	case "<=":
		return []keyRange{{math.MinInt64, v}}, true
	case ">":
		if v == math.MaxInt64 {
			return nil, true
		}
		return []keyRange{{v + 1, math.MaxInt64}}, true
	case ">=":
		return []keyRange{{v, math.MaxInt64}}, true
	}
	return nil, false
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// intersect returns the ranges in both a and b, each sorted and disjoint.
func intersect(a, b []keyRange) []keyRange {
	var out []keyRange
	for i, j := 0, 0; i < len(a) && j < len(b); {
		lo, hi := max(a[i].lo, b[j].lo), min(a[i].hi, b[j].hi)
		if lo <= hi {
			out = append(out, keyRange{lo, hi})
		}
		if a[i].hi < b[j].hi {
			i++
		} else {
			j++
		}
	}
	return out
}

// keyLookup returns the key column and ranges a scan of spec reads by the
// key index; ok false for a full scan.
func keyLookup(spec exec.ConnectorSpec) (col int, ranges []keyRange, ok bool) {
	if len(spec.Key) != 1 || spec.Filter == nil {
		return 0, nil, false
	}
	col = spec.Key[0]
	if col < 0 || col >= len(spec.Schema) {
		return 0, nil, false
	}
	ranges, ok = lookupOf(spec.Filter, col, spec.Schema[col].Type)
	return col, ranges, ok
}

// Lookup describes, for EXPLAIN, the primary-key lookup a stored table's scan
// of spec does: "" when it reads the whole table.
func Lookup(spec exec.ConnectorSpec) string {
	if spec.Connector != Name {
		return ""
	}
	col, ranges, ok := keyLookup(spec)
	if !ok {
		return ""
	}
	name := spec.Schema[col].Name
	if len(ranges) == 0 {
		return "(primary-key lookup: no key can match)"
	}
	var parts []string
	for _, r := range ranges {
		switch {
		case r.lo == r.hi:
			parts = append(parts, fmt.Sprint(r.lo))
		case r.lo == math.MinInt64:
			parts = append(parts, fmt.Sprintf("..%d", r.hi))
		case r.hi == math.MaxInt64:
			parts = append(parts, fmt.Sprintf("%d..", r.lo))
		default:
			parts = append(parts, fmt.Sprintf("%d..%d", r.lo, r.hi))
		}
	}
	return fmt.Sprintf("(primary-key lookup %s in %s)", name, strings.Join(parts, ", "))
}

// keyIndex is a segment's key index: its keys sorted, the row (within the
// segment) of each, and the first row of each record batch.
type keyIndex struct {
	keys   []int64
	rows   []uint32
	starts []int64
}

func (ix *keyIndex) size() int { return len(ix.keys) }

// indexCacheRows bounds the keys the cache of key indexes holds.
const indexCacheRows = 8 << 20

type indexID struct {
	path string
	col  int
	size int64
	mod  time.Time
}

var indexCache struct {
	sync.Mutex
	m    map[indexID]*keyIndex
	rows int
}

// segmentIndex returns the key index of column col of the segment file f
// (mapped as data), building it on first use; nil when the column is not
// one an index holds.
func segmentIndex(f *os.File, data []byte, col int) (*keyIndex, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	id := indexID{path: f.Name(), col: col, size: st.Size(), mod: st.ModTime()}
	indexCache.Lock()
	ix, ok := indexCache.m[id]
	indexCache.Unlock()
	if ok {
		return ix, nil
	}
	if ix, err = buildIndex(f, data, col); err != nil || ix == nil {
		return nil, err
	}
	indexCache.Lock()
	defer indexCache.Unlock()
	if indexCache.m == nil || indexCache.rows+ix.size() > indexCacheRows {
		indexCache.m, indexCache.rows = map[indexID]*keyIndex{}, 0 // start over
	}
	indexCache.m[id] = ix
	indexCache.rows += ix.size()
	return ix, nil
}

func buildIndex(f *os.File, data []byte, col int) (*keyIndex, error) {
	r, err := ipc.NewMappedFileReader(data)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	seg := mappedSegment{f: f, data: data}
	type entry struct {
		key int64
		row uint32
	}
	var entries []entry
	ix := &keyIndex{}
	var row int64
	for b := 0; b < r.NumRecords(); b++ {
		rec, err := r.RecordBatchAt(b)
		if err != nil {
			return nil, err
		}
		ix.starts = append(ix.starts, row)
		a, err := seg.copyArray(memory.DefaultAllocator, rec.Column(col))
		rec.Release()
		if err != nil {
			return nil, err
		}
		var vals []int64
		switch a := a.(type) {
		case *array.Int64:
			vals = a.Int64Values()
		case *array.Timestamp:
			vals = make([]int64, a.Len())
			for i, v := range a.TimestampValues() {
				vals[i] = int64(v)
			}
		default:
			a.Release()
			return nil, nil
		}
		for i, v := range vals {
			if a.IsValid(i) {
				entries = append(entries, entry{v, uint32(row + int64(i))})
			}
		}
		row += int64(a.Len())
		a.Release()
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].key < entries[j].key })
	ix.keys, ix.rows = make([]int64, len(entries)), make([]uint32, len(entries))
	for i, e := range entries {
		ix.keys[i], ix.rows[i] = e.key, e.row
	}
	return ix, nil
}

// emitLookup emits the rows of one segment file whose keys lie in s.ranges,
// reading only the record batches that hold them, one batch of rows per
// record batch read. Batches a restore skips are counted, not emitted.
func (s *source) emitLookup(ctx context.Context, path string, ord int, out exec.Collector) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	bad := func(err error) error {
		return fmt.Errorf("%w: table %s: segment %s: %w", exec.ErrBadInput, s.loc.id, filepath.Base(path), err)
	}
	f, err := os.Open(path)
	if err != nil {
		return bad(err)
	}
	defer f.Close()
	seg, err := segmentMaps.acquire(path)
	if err != nil {
		return bad(err)
	}
	defer seg.release()
	ix, err := segmentIndex(f, seg.data, s.keyCol)
	if err != nil {
		return bad(err)
	}
	if ix == nil { // not a column an index holds: the whole segment
		n, subtask := s.n, s.subtask
		s.n, s.subtask = 1, 0
		_, err := s.emitFile(ctx, path, 0, ord, false, out)
		s.n, s.subtask = n, subtask
		return err
	}
	var rows []int64
	for _, r := range s.ranges {
		lo := sort.Search(len(ix.keys), func(i int) bool { return ix.keys[i] >= r.lo })
		hi := sort.Search(len(ix.keys), func(i int) bool { return ix.keys[i] > r.hi })
		for _, row := range ix.rows[lo:hi] {
			rows = append(rows, int64(row))
		}
	}
	if len(rows) == 0 {
		return nil
	}
	slices.Sort(rows)
	r, err := ipc.NewMappedFileReader(seg.data)
	if err != nil {
		return bad(err)
	}
	defer r.Close()
	for len(rows) > 0 {
		b := sort.Search(len(ix.starts), func(i int) bool { return ix.starts[i] > rows[0] }) - 1
		end := int64(math.MaxInt64)
		if b+1 < len(ix.starts) {
			end = ix.starts[b+1]
		}
		var idx []int32
		for len(rows) > 0 && rows[0] < end {
			idx = append(idx, int32(rows[0]-ix.starts[b]))
			rows = rows[1:]
		}
		if s.skip > 0 {
			s.skip--
			s.emitted++
			continue
		}
		rec, err := r.RecordBatchAt(b)
		if err != nil {
			return bad(err)
		}
		cols := make([]arrow.Array, 0, len(s.cols))
		for _, c := range s.cols {
			col := s.column(seg, rec, c, ord, ix.starts[b])
			g, err := vector.GatherArray(s.alloc, col, idx)
			col.Release()
			if err != nil {
				for _, c := range cols {
					c.Release()
				}
				rec.Release()
				return bad(err)
			}
			cols = append(cols, g)
		}
		rec.Release()
		batch := exec.Batch{Rec: array.NewRecordBatch(s.out, cols, int64(len(idx)))}
		for _, c := range cols {
			c.Release()
		}
		if err := s.collect(ctx, batch, out); err != nil {
			return err
		}
	}
	return nil
}
