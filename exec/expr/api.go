package expr

// This file declares the package's entry points. The bodies live in the files
// named beside each; until they land, they are stubs that return errUnimplemented.

import (
	"errors"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec/types"
)

var errUnimplemented = errors.New("expr: not implemented yet")

// Signature is what Resolve decides for one call: the type each argument must be
// cast to before the call, and the call's result type.
type Signature struct {
	Args   []types.Type
	Result types.Type
}

var (
	// ResolveFunc is Resolve's implementation (resolve.go).
	resolveImpl func(name string, args []types.Type) (Signature, error)
	// evalImpl is Eval's implementation (eval.go).
	evalImpl func(e *Expr, b arrow.RecordBatch, mem memory.Allocator) (arrow.Array, error)
)

// Resolve type-checks a call of function name with arguments of the given types.
// It returns the types the arguments must be cast to and the result type, or an
// error wrapping ErrUnknownFunction or ErrArgumentType. Names are lower case.
func Resolve(name string, args []types.Type) (Signature, error) {
	if resolveImpl == nil {
		return Signature{}, errUnimplemented
	}
	return resolveImpl(name, args)
}

// Eval evaluates e over every row of b and returns a new array of e.Type's Arrow
// type with b.NumRows() entries, allocated from mem. The caller releases it.
func Eval(e *Expr, b arrow.RecordBatch, mem memory.Allocator) (arrow.Array, error) {
	if evalImpl == nil {
		return nil, errUnimplemented
	}
	return evalImpl(e, b, mem)
}
