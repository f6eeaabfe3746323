package table

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

const (
	// sampleBatches is the most record batches of a table's segments that
	// distinctSample reads, spread evenly over them.
	sampleBatches = 32
	// sampleBatchRows is the rows it takes of each, spread evenly too.
	sampleBatchRows = 256
)

// distinctSample estimates the distinct values of column col of version v
// from rows spread over the whole table: up to sampleBatchRows rows at even
// strides in each of up to sampleBatches batches at even strides over its
// segments. A block of consecutive rows would say little of a column its
// rows are clustered by: the first 64k rows of TPC-H's lineitem, sorted by
// order, hold 16k of its 1.5M order keys, which made a join on the order key
// look as selective as one on a nation. From the d values seen among the n
// sampled rows, f1 of them once, of a table of N rows, it takes Haas and
// Stokes' Duj1 estimate, d / (1 - (1 - n/N) f1/n): about d when nearly every
// value recurs in the sample (a small domain), about N d/n when nearly none
// does (a key). A version with no segments, only log rows, is estimated
// from its first batch alike.
func (t *tableState) distinctSample(v *version, col int) float64 {
	var seen map[string]int
	var buf []byte
	sampled := 0
	take := func(rec arrow.RecordBatch) bool {
		if col >= int(rec.NumCols()) {
			return false
		}
		n := int(rec.NumRows())
		stride := max(1, n/sampleBatchRows)
		for row := 0; row < n; row += stride {
			buf = appendKey(buf[:0], rec, []int{col}, row)
			seen[string(buf)]++
			sampled++
		}
		return true
	}
	seen = map[string]int{}
	if len(v.Segments) == 0 {
		errFirst := errors.New("first batch read")
		ok := true
		t.scanVersion(v, memory.DefaultAllocator, func(rec arrow.RecordBatch) error {
			ok = take(rec)
			return errFirst
		})
		if !ok {
			return 0
		}
	} else if !t.sampleSegments(v, take) {
		return 0
	}
	if sampled == 0 {
		return 0
	}
	d, n, total := float64(len(seen)), float64(sampled), float64(v.rows())
	f1 := 0.0
	for _, c := range seen {
		if c == 1 {
			f1++
		}
	}
	q := min(n/max(total, n), 1)
	est := d / (1 - (1-q)*f1/n)
	return min(max(est, d), max(total, d))
}

// sampleSegments calls take with up to sampleBatches record batches spread
// evenly over v's segments (mapped: only the pages of the rows take reads
// are read), and reports whether every call took its batch and every read
// worked.
func (t *tableState) sampleSegments(v *version, take func(arrow.RecordBatch) bool) bool {
	type seg struct {
		f       *os.File
		r       *ipc.FileReader
		unmap   func() error
		batches int
	}
	segs := make([]seg, 0, len(v.Segments))
	defer func() {
		for _, s := range segs {
			s.r.Close()
			s.unmap()
			s.f.Close()
		}
	}()
	total := 0
	for _, sg := range v.Segments {
		f, err := os.Open(filepath.Join(t.dir, sg.File))
		if err != nil {
			return false
		}
		data, unmap, err := mapFile(f)
		if err != nil {
			f.Close()
			return false
		}
		r, err := ipc.NewMappedFileReader(data)
		if err != nil {
			unmap()
			f.Close()
			return false
		}
		segs = append(segs, seg{f: f, r: r, unmap: unmap, batches: r.NumRecords()})
		total += r.NumRecords()
	}
	picks := min(total, sampleBatches)
	for k := range picks {
		i := k * total / picks // the batch's place over all segments
		for _, s := range segs {
			if i >= s.batches {
				i -= s.batches
				continue
			}
			rec, err := s.r.RecordBatchAt(i)
			if err != nil {
				return false
			}
			ok := take(rec)
			rec.Release()
			if !ok {
				return false
			}
			break
		}
	}
	return true
}
