package expr

// This file declares the package's entry points; the bodies live in the files
// named beside each.

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec/types"
)

// Signature is what Resolve decides for one call: the type each argument must be
// cast to before the call, and the call's result type.
type Signature struct {
	Args   []types.Type
	Result types.Type
}

// Resolve type-checks a call of function name with arguments of the given types.
// It returns the types the arguments must be cast to and the result type, or an
// error wrapping ErrUnknownFunction or ErrArgumentType. Names are lower case.
//
// NULL-typed arguments (the untyped NULL literal) are accepted wherever a value
// is: they take the type of the other arguments, or text when every argument is
// NULL (as PostgreSQL resolves "unknown"), or bigint in arithmetic. (resolve.go)
func Resolve(name string, args []types.Type) (Signature, error) {
	return resolve(name, args)
}

// Eval evaluates e over every row of b and returns a new array of e.Type's Arrow
// type with b.NumRows() entries, allocated from mem. The caller releases it.
// Errors (division by zero, a failed cast, a tree that breaks the binder's
// contract) are returned, never panicked. (eval.go)
func Eval(e *Expr, b arrow.RecordBatch, mem memory.Allocator) (arrow.Array, error) {
	return eval(e, b, mem)
}
