package file

import (
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/hummer-db/hummer/connectors/internal/records"
	"github.com/hummer-db/hummer/exec/types"
)

// What the sink writes, row by row, so that the source reads it back
// unchanged: values in PostgreSQL's text output (exec/types/text.go), which
// the source's parsers read (a TIMESTAMP as 2015-07-15 10:03:00.5, a DECIMAL
// exactly, a DOUBLE as the shortest text that reads back exactly).
//
//   - csv: RFC 4180 records. A field is quoted when it holds the delimiter, a
//     quote, a CR or LF, or is empty (an empty quoted field is the empty
//     string); NULL is an empty unquoted field. A header, when asked for, is
//     the column names.
//   - json: one object per line, keys the table's column names, NULL as null;
//     numbers and booleans bare, everything else a JSON string.
//   - text: the one column's value as a line; NULL as an empty line (text has
//     no NULL), and a value holding a line break is refused, as it would read
//     back as two rows.

// errLineBreak is the error for a format=text value that holds a line break.
var errLineBreak = errors.New("file: format=text cannot write a value holding a line break (it would read back as two rows; use format=csv or json)")

// appendRow appends row i of rec, the table's columns in order, as one record
// of the table's format with its line end.
func (cfg *config) appendRow(dst []byte, rec arrow.RecordBatch, i int) ([]byte, error) {
	switch cfg.format {
	case FormatText:
		col := rec.Column(0)
		if !col.IsNull(i) {
			v := col.(*array.String).Value(i)
			if strings.ContainsAny(v, "\r\n") {
				return dst, errLineBreak
			}
			dst = append(dst, v...)
		}
	case FormatJSON:
		dst = append(dst, '{')
		for j, col := range rec.Columns() {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = records.AppendJSONString(dst, cfg.schema[j].Name)
			dst = append(dst, ':')
			dst = records.AppendJSONValue(dst, col, cfg.schema[j].Type, i)
		}
		dst = append(dst, '}')
	default:
		for j, col := range rec.Columns() {
			if j > 0 {
				dst = append(dst, cfg.delim)
			}
			if col.IsNull(i) {
				continue // an empty unquoted field is NULL
			}
			start := len(dst)
			dst = records.AppendText(dst, col, cfg.schema[j].Type, i)
			dst = records.QuoteCSV(dst, start, cfg.delim)
		}
	}
	return append(dst, '\n'), nil
}

// appendHeader appends a CSV header: the column names as a record.
func (cfg *config) appendHeader(dst []byte) []byte {
	for j, f := range cfg.schema {
		if j > 0 {
			dst = append(dst, cfg.delim)
		}
		start := len(dst)
		dst = append(dst, f.Name...)
		dst = records.QuoteCSV(dst, start, cfg.delim)
	}
	return append(dst, '\n')
}

// hiveDefaultPartition names the directory of a NULL or empty partition
// value, as Hive and Flink name it.
const hiveDefaultPartition = "__HIVE_DEFAULT_PARTITION__"

// appendPartition appends the partition directories of row i of rec:
// col=value/ for each partition_by column, the value as records.AppendText writes it
// with the characters Hive escapes (path separators, '=', '%', control
// characters and a few more) as %XX. A ':' stays as it is (hm=10:03), as
// local paths allow it.
func (cfg *config) appendPartition(dst []byte, rec arrow.RecordBatch, i int) []byte {
	for _, j := range cfg.partition {
		dst = appendEscaped(dst, cfg.schema[j].Name)
		dst = append(dst, '=')
		col := rec.Column(j)
		start := len(dst)
		if !col.IsNull(i) {
			dst = records.AppendText(dst, col, cfg.schema[j].Type, i)
		}
		if len(dst) == start {
			dst = append(dst, hiveDefaultPartition...)
		} else if needsEscape(dst[start:]) {
			v := string(dst[start:])
			dst = appendEscaped(dst[:start], v)
		}
		dst = append(dst, '/')
	}
	return dst
}

// escapeChar says which bytes a partition directory name escapes: Hive's
// set (FileUtils.escapePathName) but ':'.
var escapeChar = func() (set [256]bool) {
	for c := range 0x20 {
		set[c] = true
	}
	for _, c := range []byte("\x7f\"#%'*/=?\\[]^{") {
		set[c] = true
	}
	return set
}()

func needsEscape(b []byte) bool {
	for _, c := range b {
		if escapeChar[c] {
			return true
		}
	}
	return false
}

func appendEscaped(dst []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		if c := s[i]; escapeChar[c] {
			dst = append(dst, '%', hex[c>>4], hex[c&0xf])
		} else {
			dst = append(dst, c)
		}
	}
	return dst
}

// partitionColumns returns the positions in schema of the comma-separated
// column names list (matched case-insensitively, as SQL names are).
func partitionColumns(list string, schema types.Schema) ([]int, error) {
	var cols []int
	for name := range strings.SplitSeq(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			return nil, fmt.Errorf("%q: an empty column name", list)
		}
		j := -1
		for k, f := range schema {
			if strings.EqualFold(f.Name, name) {
				j = k
				break
			}
		}
		if j < 0 {
			names := make([]string, len(schema))
			for k, f := range schema {
				names[k] = f.Name
			}
			return nil, fmt.Errorf("no column %q in the table (columns: %s)", name, strings.Join(names, ", "))
		}
		for _, c := range cols {
			if c == j {
				return nil, fmt.Errorf("column %s is named twice", schema[j].Name)
			}
		}
		cols = append(cols, j)
	}
	return cols, nil
}
