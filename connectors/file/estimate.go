package file

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"os"

	"github.com/hummer-db/hummer/exec"
)

// sampleBytes is how much of a file's start the estimates read.
const sampleBytes = 64 << 10

// EstimateRows estimates the rows of a file table, for the planner's join
// order: the file's size over the mean length of its first lines (up to
// 64 KiB of them). A file that cannot be read is not estimated.
func EstimateRows(c exec.ConnectorSpec) (float64, bool) {
	cfg, err := parseConfig(c)
	if err != nil {
		return 0, false
	}
	sample, size, ok := sampleOf(cfg)
	if !ok {
		return 0, false
	}
	return rowsOf(sample, size), true
}

// rowsOf estimates a file's rows from its size and the lines of its sample.
func rowsOf(sample []byte, size int64) float64 {
	if len(sample) == 0 {
		return 1
	}
	lines := bytes.Count(sample, []byte{'\n'})
	return float64(size) * float64(lines) / float64(len(sample))
}

// EstimateDistinct estimates the distinct values of column col of a file
// table from its first lines: d distinct among n sampled rows is d when d is
// at most n/2 (a column of few values, all of them seen), else d/n of the
// table's rows (a key-like column). A sorted column of many values (an order
// key repeated on its lines) is taken for one of few; the join order errs on
// the side of a bigger join for it.
func EstimateDistinct(c exec.ConnectorSpec, col int) (float64, bool) {
	cfg, err := parseConfig(c)
	if err != nil || col < 0 || col >= len(cfg.schema) {
		return 0, false
	}
	sample, size, ok := sampleOf(cfg)
	if !ok {
		return 0, false
	}
	rows := rowsOf(sample, size)
	seen := map[string]bool{}
	n := 0
	switch cfg.format {
	case "csv":
		r := csv.NewReader(bytes.NewReader(sample))
		r.Comma, r.FieldsPerRecord, r.LazyQuotes, r.ReuseRecord = rune(cfg.delim), -1, true, true
		for first := true; ; first = false {
			rec, err := r.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				return 0, false
			}
			if first && cfg.header || col >= len(rec) {
				continue
			}
			seen[rec[col]] = true
			n++
		}
	case "json":
		name := cfg.schema[col].Name
		for line := range bytes.Lines(sample) {
			var obj map[string]json.RawMessage
			if json.Unmarshal(line, &obj) != nil {
				continue
			}
			seen[string(obj[name])] = true
			n++
		}
	default: // text: the line is the one column
		for line := range bytes.Lines(sample) {
			seen[string(line)] = true
			n++
		}
	}
	if n == 0 {
		return 0, false
	}
	d := float64(len(seen))
	if d <= float64(n)/2 {
		return d, true
	}
	return max(d, rows*d/float64(n)), true
}

// sampleOf returns the sample of a file table (readSample), and its size:
// for a directory table, the sample of its first file and the size of all
// of them (none before anything was written).
func sampleOf(cfg config) ([]byte, int64, bool) {
	if !cfg.dir {
		return readSample(cfg.path)
	}
	files, err := listFiles(cfg.path)
	if err != nil || len(files) == 0 {
		return nil, 0, false
	}
	sample, total, ok := readSample(files[0])
	if !ok {
		return nil, 0, false
	}
	for _, f := range files[1:] {
		if st, err := os.Stat(f); err == nil {
			total += st.Size()
		}
	}
	return sample, total, true
}

// readSample returns the whole lines in the first sampleBytes of the file at
// path, and the file's size.
func readSample(path string) ([]byte, int64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return nil, 0, false // a directory table is not estimated
	}
	buf := make([]byte, sampleBytes)
	n, _ := io.ReadFull(f, buf)
	n = bytes.LastIndexByte(buf[:n], '\n') + 1 // whole lines only
	return buf[:n], st.Size(), true
}
