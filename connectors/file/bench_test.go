package file

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/connectors/internal/conntest"
	"github.com/hummer-db/hummer/exec"
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
