package records

import (
	"fmt"

	"github.com/hummer-db/hummer/connectors/spec"
	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/types"
)

// The record formats the file and Kafka connectors share.
const (
	FormatText = "text"
	FormatCSV  = "csv"
	FormatJSON = "json"
)

// CheckSchema checks, at CREATE TABLE, that a table's columns suit the format:
// text needs exactly one TEXT column; csv and json read any of the engine's
// column types. A table therefore moves between connectors unchanged.
func CheckSchema(s *spec.Connector, format string, schema types.Schema) error {
	if format == FormatText {
		if len(schema) != 1 || schema[0].Type.ID != types.String {
			return s.Errorf("format=text needs exactly one TEXT column, the table has %v", schema)
		}
		return nil
	}
	if len(schema) == 0 {
		return s.Errorf("format=%s needs at least one column", format)
	}
	for _, f := range schema {
		switch f.Type.ID {
		case types.Bool, types.Int64, types.Float64, types.Decimal, types.String, types.Timestamp, types.Date:
		default:
			return s.Errorf("format=%s cannot read column %s of type %v", format, f.Name, f.Type)
		}
	}
	return nil
}

// Columns returns the table columns a source emits, in order: c.Columns (the
// query's projection) or, when nil, every column.
func Columns(c exec.ConnectorSpec) ([]int, error) {
	if c.Columns == nil {
		cols := make([]int, len(c.Schema))
		for i := range cols {
			cols[i] = i
		}
		return cols, nil
	}
	for _, col := range c.Columns {
		if col < 0 || col >= len(c.Schema) {
			return nil, fmt.Errorf("%s: projected column %d out of range for %d columns", c.Connector, col, len(c.Schema))
		}
	}
	return c.Columns, nil
}

// Unread returns the positions of a table's n columns that cols (those a
// query reads) leaves out, in order: a source still checks their values.
func Unread(n int, cols []int) []int {
	read := make([]bool, n)
	for _, c := range cols {
		read[c] = true
	}
	var out []int
	for c := range n {
		if !read[c] {
			out = append(out, c)
		}
	}
	return out
}
