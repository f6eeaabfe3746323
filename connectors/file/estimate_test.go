package file

import (
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
}
