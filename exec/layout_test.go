package exec_test

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// tiers is the module's layering, bottom first: a package may import only
// packages of lower tiers, so that no package imports one above it and
// packages of one tier (operators, network and task, say) not each other.
// A new package gets a tier here. The paper's pipeline reads bottom to top:
// the runtime (exec/...), then connectors and SQL, planning, sessions, the
// wire protocol and the binary.
var tiers = [][]string{
	{"exec/types", "exec/checkpoint", "connectors/spec", "connectors/tpch", "wire/scram", "images", "images/oci"},
	{"exec/expr"},
	{"exec"},
	{"exec/vector"},
	{"exec/state", "exec/internal/testkit"},
	{"exec/state/disk"},
	{"exec/operators", "exec/network", "exec/task"},
	{"exec/taskmanager", "exec/jobmanager"},
	{"exec/control"},
	{"connectors/internal/records", "connectors/internal/conntest", "sql"},
	{"connectors/file", "connectors/kafka", "connectors/memory", "connectors/nexmark", "connectors/blackhole", "connectors/socket", "connectors/table", "planner"},
	{"connectors", "session"},
	{"wire", "web"},
	{"cmd/hummer", "cmd/tpchgen"},
}

const module = "github.com/hummer-db/hummer/"

// moduleRoot returns the directory of the module's go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// TestImportsPointDown holds the layering of tiers with go list: every
// package of the module has a tier, imports (test imports aside) only from
// lower tiers, and only tests import exec/internal/testkit.
func TestImportsPointDown(t *testing.T) {
	tier := map[string]int{}
	for i, ps := range tiers {
		for _, p := range ps {
			tier[p] = i
		}
	}
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "./...")
	cmd.Dir = moduleRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	n := 0
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		pkg := strings.TrimPrefix(fields[0], module)
		n++
		from, ok := tier[pkg]
		if !ok {
			t.Errorf("%s has no tier in layout_test.go", pkg)
			continue
		}
		for _, imp := range fields[1:] {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			imp = strings.TrimPrefix(imp, module)
			if imp == "exec/internal/testkit" {
				t.Errorf("%s imports exec/internal/testkit, which only tests may", pkg)
			}
			if to, ok := tier[imp]; ok && to >= from {
				t.Errorf("%s (tier %d) imports %s (tier %d): imports must point down", pkg, from, imp, to)
			}
		}
	}
	if n < 20 {
		t.Fatalf("go list named %d packages", n)
	}
}

// TestFileSizes holds two rules of the layout: no non-test Go file is over
// 800 lines (past that a file does two jobs), and exec itself, the contracts
// every part shares, stays small enough to read in one sitting.
func TestFileSizes(t *testing.T) {
	root := moduleRoot(t)
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if lines := bytes.Count(data, []byte("\n")); lines > 800 {
			rel, _ := filepath.Rel(root, path)
			t.Errorf("%s has %d lines, over 800", rel, lines)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "exec", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	contracts := 0
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") {
			contracts++
		}
	}
	if contracts > 12 {
		t.Errorf("exec holds %d files; it is for the shared contracts only (at most about a dozen)", contracts)
	}
}
