package file

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/types"
)

// A file's estimated rows are its size over its first lines' mean length:
// exact for lines of one length, beyond the 64 KiB sampled too.
func TestEstimateRows(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.csv")
	if err := os.WriteFile(path, []byte(strings.Repeat("12345,abcd\n", 20000)), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := exec.ConnectorSpec{Connector: Name, URL: "file://" + path + "?format=csv",
		Schema: types.Schema{{Name: "a", Type: types.Int64Type}, {Name: "b", Type: types.StringType}}}
	n, ok := EstimateRows(spec)
	if !ok || n < 19999 || n > 20001 {
		t.Errorf("EstimateRows = %v, %v; want 20000", n, ok)
	}
	spec.URL = "file://" + filepath.Join(dir, "missing.csv") + "?format=csv"
	if _, ok := EstimateRows(spec); ok {
		t.Error("a missing file was estimated")
	}
	// A directory table: its files' sizes over the first one's lines, the
	// hidden ones left out; before anything was written, no estimate.
	tdir := filepath.Join(dir, "t")
	for name, lines := range map[string]int{"a.csv": 1000, "p=1/b.csv": 3000, ".c.csv.inprogress": 50000} {
		p := filepath.Join(tdir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.Repeat("12345,abcd\n", lines)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	spec.URL = "file://" + tdir + "/?format=csv"
	if n, ok := EstimateRows(spec); !ok || n < 3999 || n > 4001 {
		t.Errorf("EstimateRows of a directory = %v, %v; want 4000", n, ok)
	}
	spec.URL = "file://" + filepath.Join(dir, "none") + "/?format=csv"
	if _, ok := EstimateRows(spec); ok {
		t.Error("a missing directory was estimated")
	}
}

// Distinct values from a file's first lines: all of a column of few values,
// a key's scaled to the file's rows.
func TestEstimateDistinct(t *testing.T) {
	var sb strings.Builder
	sb.WriteString("id,nation,name\n")
	for i := 0; i < 100000; i++ {
		fmt.Fprintf(&sb, "%d,%d,name%d\n", i, i%25, i)
	}
	path := filepath.Join(t.TempDir(), "t.csv")
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := exec.ConnectorSpec{Connector: Name, URL: "file://" + path + "?format=csv&header=true",
		Schema: types.Schema{{Name: "id", Type: types.Int64Type}, {Name: "nation", Type: types.Int64Type}, {Name: "name", Type: types.StringType}}}
	if d, ok := EstimateDistinct(spec, 1); !ok || d != 25 {
		t.Errorf("nation: %v %v, want 25", d, ok)
	}
	if d, ok := EstimateDistinct(spec, 0); !ok || d < 80000 || d > 120000 {
		t.Errorf("id: %v %v, want about 100000", d, ok)
	}
}
