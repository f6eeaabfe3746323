package operators

// Shared helpers of the operator tests: records from JSON literals, a collector
// that turns what an operator emits into comparable text rows, and a small
// driver.

import (
	"testing"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/types"
)

// opTestSpec builds an OperatorSpec.
func opTestSpec(kind string, cfg any, out types.Schema) exec.OperatorSpec {
	return exec.OperatorSpec{Kind: kind, Config: exec.MustConfig(cfg), Out: out}
}

// opTestNew builds an operator through the registry, as a TaskManager does.
func opTestNew(t testing.TB, kind string, cfg any, out types.Schema) exec.Operator {
	t.Helper()
	op, err := builtins().NewOperator(opTestSpec(kind, cfg, out))
	if err != nil {
		t.Fatalf("NewOperator(%s): %v", kind, err)
	}
	return op
}

// builtins returns a registry of the built-in operators, as a TaskManager has.
func builtins() *exec.Registry {
	r := exec.NewRegistry()
	Register(r)
	return r
}
