package operators

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/types"
)

// valuesSource is the source of kind "values": constant rows, emitted once by
// subtask 0.
type valuesSource struct {
	cfg ValuesConfig
	out types.Schema
	tc  *exec.TaskContext
}

var _ exec.Source = (*valuesSource)(nil)

func newValuesSource(spec exec.OperatorSpec) (*valuesSource, error) {
	s := &valuesSource{out: spec.Out}
	if err := json.Unmarshal(spec.Config, &s.cfg); err != nil {
		return nil, fmt.Errorf("exec: values config: %w", err)
	}
	return s, nil
}

func (s *valuesSource) Open(_ context.Context, tc *exec.TaskContext) error {
	s.tc = tc
	return nil
}

func (s *valuesSource) Run(ctx context.Context, out exec.Collector) error {
	if s.tc.Subtask != 0 || len(s.cfg.Rows) == 0 {
		return nil
	}
	rec, err := ValuesRecord(s.tc.Alloc, s.out, s.cfg.Rows)
	if err != nil {
		return err
	}
	defer rec.Release()
	return out.Collect(ctx, exec.Batch{Rec: rec})
}

func (s *valuesSource) Close() error { return nil }

// ValuesRecord builds a record of the given schema from rows of scalar values;
// each value must have its column's type or be NULL.
func ValuesRecord(mem memory.Allocator, schema types.Schema, rows [][]types.Value) (arrow.RecordBatch, error) {
	if len(schema) == 0 {
		// Rows of no columns (COUNT(*) over a SELECT without FROM): a builder
		// would count none of them.
		return array.NewRecordBatch(schema.Arrow(), nil, int64(len(rows))), nil
	}
	b := array.NewRecordBuilder(mem, schema.Arrow())
	defer b.Release()
	for _, row := range rows {
		if len(row) != len(schema) {
			return nil, fmt.Errorf("exec: values row has %d columns, want %d", len(row), len(schema))
		}
		for i, v := range row {
			if err := AppendValue(b.Field(i), v); err != nil {
				return nil, err
			}
		}
	}
	return b.NewRecordBatch(), nil
}

// AppendValue appends one scalar to an Arrow builder of the value's type.
func AppendValue(fb array.Builder, v types.Value) error {
	if v.Null || v.Type.ID == types.Null {
		fb.AppendNull()
		return nil
	}
	switch bb := fb.(type) {
	case *array.BooleanBuilder:
		bb.Append(v.Bool)
	case *array.Int64Builder:
		bb.Append(v.Int)
	case *array.Float64Builder:
		bb.Append(v.Float)
	case *array.StringBuilder:
		bb.Append(v.Str)
	case *array.TimestampBuilder:
		bb.Append(arrow.Timestamp(v.Int))
	case *array.Decimal128Builder:
		bb.Append(decimal128.Num(v.Decimal()))
	case *array.NullBuilder:
		bb.AppendNull()
	default:
		return fmt.Errorf("exec: cannot append %v to %T", v.Type, fb)
	}
	return nil
}
