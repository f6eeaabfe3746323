// Package expr holds the engine's scalar expressions: a serialisable tree that the
// binder builds, the planner rewrites and the runtime evaluates a whole Arrow batch
// at a time. It also owns the function catalog (Resolve), so that the binder's
// type checking and the evaluator agree on every function's argument and result
// types.
//
// It may import exec/types only: the SQL layer uses it too.
package expr

import (
	"fmt"
	"strings"

	"github.com/hummer-db/hummer/exec/types"
)

// Kind says what an Expr node is.
type Kind string

const (
	// KindColumn reads column Col of the input batch.
	KindColumn Kind = "col"
	// KindLiteral is the constant Value.
	KindLiteral Kind = "lit"
	// KindCall applies function Func to Args. Operators are functions too: see Resolve
	// for the names ("+", "=", "and", "like", "case", ...).
	KindCall Kind = "call"
	// KindCast converts Args[0] to Type.
	KindCast Kind = "cast"
	// KindParam is the n-th ($n, 1-based) statement parameter; it is replaced by a
	// literal before planning.
	KindParam Kind = "param"
)

// Expr is one node of an expression tree. Type is the result type, always set by
// the binder (after Resolve) so the evaluator never infers types.
//
// Contract for KindCall nodes built by the binder: every argument already has the
// type Resolve asked for (the binder wraps arguments in casts where needed), so the
// evaluator may assume, for example, that both sides of "+" have the same type.
type Expr struct {
	Kind  Kind        `json:"k"`
	Type  types.Type  `json:"t"`
	Col   int         `json:"c,omitempty"`
	Value types.Value `json:"v,omitempty"`
	Func  string      `json:"f,omitempty"`
	Args  []*Expr     `json:"a,omitempty"`
	Name  string      `json:"n,omitempty"` // display name of a column reference
	Param int         `json:"p,omitempty"`
}

// Column returns a reference to input column i of type t.
func Column(i int, t types.Type, name string) *Expr {
	return &Expr{Kind: KindColumn, Col: i, Type: t, Name: name}
}

// Literal returns a constant.
func Literal(v types.Value) *Expr { return &Expr{Kind: KindLiteral, Type: v.Type, Value: v} }

// Cast returns e converted to t, or e itself when it already has type t.
func Cast(e *Expr, t types.Type) *Expr {
	if e.Type == t {
		return e
	}
	return &Expr{Kind: KindCast, Type: t, Args: []*Expr{e}}
}

// Call returns a function call node of result type t. Use Resolve to find t and
// the argument types the function wants.
func Call(name string, t types.Type, args ...*Expr) *Expr {
	return &Expr{Kind: KindCall, Func: name, Type: t, Args: args}
}

// Columns appends to dst the input columns e reads, in tree order, with repeats.
func (e *Expr) Columns(dst []int) []int {
	if e.Kind == KindColumn {
		dst = append(dst, e.Col)
	}
	for _, a := range e.Args {
		dst = a.Columns(dst)
	}
	return dst
}

// Remap returns a copy of e whose column references i become m[i].
func (e *Expr) Remap(m map[int]int) *Expr {
	c := *e
	if c.Kind == KindColumn {
		c.Col = m[c.Col]
	}
	if len(e.Args) > 0 {
		c.Args = make([]*Expr, len(e.Args))
		for i, a := range e.Args {
			c.Args[i] = a.Remap(m)
		}
	}
	return &c
}

// IsConstant reports whether e reads no column and no parameter and calls
// nothing Volatile.
func (e *Expr) IsConstant() bool {
	if e.Kind == KindColumn || e.Kind == KindParam || e.Volatile() {
		return false
	}
	for _, a := range e.Args {
		if !a.IsConstant() {
			return false
		}
	}
	return true
}

// Volatile reports whether e is a call whose value changes from one
// evaluation to the next however its arguments are: proctime().
func (e *Expr) Volatile() bool { return e.Kind == KindCall && e.Func == "proctime" }

// Same reports whether e and o compute the same values of the same type from
// any input: the same tree, column references by position (display names
// aside), and no Volatile call in it.
func (e *Expr) Same(o *Expr) bool {
	if e.Kind != o.Kind || e.Type != o.Type || e.Col != o.Col || e.Value != o.Value ||
		e.Func != o.Func || e.Param != o.Param || len(e.Args) != len(o.Args) || e.Volatile() {
		return false
	}
	for i, a := range e.Args {
		if !a.Same(o.Args[i]) {
			return false
		}
	}
	return true
}

// String renders e as SQL-like text for EXPLAIN and error messages.
func (e *Expr) String() string {
	switch e.Kind {
	case KindColumn:
		if e.Name != "" {
			return e.Name
		}
		return fmt.Sprintf("$col%d", e.Col)
	case KindLiteral:
		return FormatValue(e.Value)
	case KindParam:
		return fmt.Sprintf("$%d", e.Param)
	case KindCast:
		return fmt.Sprintf("CAST(%s AS %s)", e.Args[0], e.Type)
	}
	args := make([]string, len(e.Args))
	for i, a := range e.Args {
		args[i] = a.String()
	}
	if isInfix(e.Func) && (len(args) == 2 || len(args) > 2 && (e.Func == "and" || e.Func == "or")) {
		return "(" + strings.Join(args, " "+strings.ToUpper(e.Func)+" ") + ")"
	}
	return e.Func + "(" + strings.Join(args, ", ") + ")"
}

func isInfix(f string) bool {
	switch f {
	case "+", "-", "*", "/", "%", "=", "<>", "<", "<=", ">", ">=", "and", "or", "like":
		return true
	}
	return false
}
