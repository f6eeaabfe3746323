package table

import (
	"cmp"
	"errors"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// rangeSample is a sample of an integer column's rows (BIGINT, DATE,
// TIMESTAMP: Arrow int64 or timestamp), for the fraction of rows in a range.
// Each sampled row stands for the rows of its batch over the rows sampled
// of it, so that a short last batch does not count as a full one.
type rangeSample struct {
	sorted []int64   // the sampled non-NULL values, ascending
	cum    []float64 // cum[i]: the weight of sorted[:i]
	total  float64   // the weight of every sampled row, NULLs included
}

// sampled is one sampled value and its weight.
type sampled struct {
	v int64
	w float64
}

// RangeFraction estimates the fraction of the rows of table id whose column
// col, of Arrow int64 or timestamp storage, lies in [lo, hi], for the
// planner's join order (TPC-H q10's three months of orders keep a 28th of
// them, where two guessed conditions would keep a ninth). It counts the rows
// of the sample distinctSample reads, kept until the table's next version;
// ok is false for another column type, or when the table cannot be read.
func (s *Store) RangeFraction(id string, col int, lo, hi int64) (frac float64, ok bool) {
	t, err := s.table(id)
	if err != nil {
		return 0, false
	}
	t.mu.Lock()
	v := t.current
	if t.ndvVersion != v.Version {
		t.ndv, t.samples, t.ndvVersion = map[int]float64{}, map[int]*rangeSample{}, v.Version
	}
	rs, cached := t.samples[col]
	t.mu.Unlock()
	if !cached {
		rs = t.sampleColumn(v, col)
		t.mu.Lock()
		if t.ndvVersion == v.Version {
			t.samples[col] = rs
		}
		t.mu.Unlock()
	}
	if rs == nil || rs.total == 0 {
		return 0, false
	}
	from, _ := slices.BinarySearch(rs.sorted, lo)
	to := len(rs.sorted)
	if hi < math.MaxInt64 {
		to, _ = slices.BinarySearch(rs.sorted, hi+1)
	}
	in := 0.0
	if to > from {
		in = rs.cum[to] - rs.cum[from]
	}
	// Half a row's weight when none of the sample is in range: rare, not
	// absent.
	return max(in, 0.5*rs.total/float64(len(rs.cum))) / rs.total, true
}

// sampleColumn samples column col of version v as distinctSample does; nil
// when the column is not of int64 or timestamp storage or cannot be read.
func (t *tableState) sampleColumn(v *version, col int) *rangeSample {
	rs := &rangeSample{}
	var vals []sampled
	take := func(rec arrow.RecordBatch) bool {
		if col >= int(rec.NumCols()) {
			return false
		}
		var value func(row int) int64
		switch a := rec.Column(col).(type) {
		case *array.Int64:
			value = a.Value
		case *array.Timestamp:
			value = func(row int) int64 { return int64(a.Value(row)) }
		default:
			return false
		}
		a := rec.Column(col)
		n := int(rec.NumRows())
		stride := max(1, n/sampleBatchRows)
		w := float64(n) / float64((n+stride-1)/stride) // the batch's rows per sampled row
		for row := 0; row < n; row += stride {
			rs.total += w
			if a.IsValid(row) {
				vals = append(vals, sampled{value(row), w})
			}
		}
		return true
	}
	ok := true
	if len(v.Segments) == 0 {
		errFirst := errors.New("first batch read")
		t.scanVersion(v, memory.DefaultAllocator, func(rec arrow.RecordBatch) error {
			ok = take(rec)
			return errFirst
		})
	} else {
		ok = t.sampleSegments(v, take)
	}
	if !ok {
		return nil
	}
	slices.SortFunc(vals, func(a, b sampled) int { return cmp.Compare(a.v, b.v) })
	rs.sorted = make([]int64, len(vals))
	rs.cum = make([]float64, len(vals)+1)
	for i, x := range vals {
		rs.sorted[i] = x.v
		rs.cum[i+1] = rs.cum[i] + x.w
	}
	return rs
}
