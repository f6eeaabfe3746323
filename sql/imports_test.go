package sql

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoStorageDrivers holds the package doc's rule with go list: nothing sql
// depends on links an object storage driver (the catalog's store in object
// storage comes from the binary).
func TestNoStorageDrivers(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, driver := range []string{"gocloud.dev", "github.com/aws/", "cloud.google.com/", "github.com/Azure/"} {
			if strings.HasPrefix(dep, driver) {
				t.Errorf("sql depends on %s", dep)
			}
		}
	}
}
