package file

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/connectors/internal/conntest"
	"github.com/hummer-db/hummer/connectors/tpch"
	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/types"
)

// discard drops what a source emits.
type discard struct{}

func (discard) Collect(context.Context, exec.Batch) error        { return nil }
func (discard) CollectSignal(context.Context, exec.Signal) error { return nil }

// BenchmarkText reads ten copies of the WordCount corpus (44 MB) as text with one
// subtask: the input path of WordCount. Recorded figures belong in bench/.
func BenchmarkText(b *testing.B) {
	kjv, err := os.ReadFile("../../data/kjv.txt")
	if err != nil {
		b.Skip("no corpus:", err)
	}
	path := filepath.Join(b.TempDir(), "kjv10.txt")
	if err := os.WriteFile(path, bytes.Repeat(kjv, 10), 0o644); err != nil {
		b.Fatal(err)
	}
	c := exec.ConnectorSpec{Connector: Name, URL: "file://" + path, Schema: lineSchema}
	b.SetBytes(int64(10 * len(kjv)))
	for b.Loop() {
		src, err := newSourceFor(c)
		if err != nil {
			b.Fatal(err)
		}
		if err := src.Open(context.Background(), conntest.TaskContext(b, memory.DefaultAllocator, 0, 1)); err != nil {
			b.Fatal(err)
		}
		if err := src.Run(context.Background(), discard{}); err != nil {
			b.Fatal(err)
		}
		src.Close()
	}
}

// BenchmarkCSVLineitem reads TPC-H's lineitem at scale factor 0.02 (about 120,000
// rows, 15 MB; a fifth of its lines quote a comment) as CSV with one subtask,
// reading four columns of sixteen (as TPC-H q21 does) and all of them: the
// parsing that CSV queries spend most of their time in.
func BenchmarkCSVLineitem(b *testing.B) {
	dir := b.TempDir()
	if err := tpch.Write(dir, 0.02); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, tpch.File("lineitem"))
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	var schema types.Schema
	for _, c := range tpch.Tables[7].Columns {
		t := types.Int64Type
		switch c.Type {
		case "TEXT":
			t = types.StringType
		case "DATE":
			t = types.DateType
		case "DECIMAL(15,2)":
			t = types.DecimalType(15, 2)
		}
		schema = append(schema, types.Field{Name: c.Name, Type: t})
	}
	for _, cols := range [][]int{{0, 2, 11, 12}, nil} {
		b.Run(fmt.Sprintf("columns=%d", max(len(cols), len(schema)*btoi(cols == nil))), func(b *testing.B) {
			c := exec.ConnectorSpec{Connector: Name, URL: "file://" + path + "?format=csv&header=true", Schema: schema, Columns: cols}
			b.SetBytes(st.Size())
			for b.Loop() {
				src, err := newSourceFor(c)
				if err != nil {
					b.Fatal(err)
				}
				if err := src.Open(context.Background(), conntest.TaskContext(b, memory.DefaultAllocator, 0, 1)); err != nil {
					b.Fatal(err)
				}
				if err := src.Run(context.Background(), discard{}); err != nil {
					b.Fatal(err)
				}
				src.Close()
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
