package sql

import (
	"errors"
	"fmt"
)

// Sentinel errors of the SQL layer. wire/ maps each to a SQLSTATE in one place.
var (
	ErrSyntax          = errors.New("syntax error")                // 42601
	ErrUnknownTable    = errors.New("unknown table")               // 42P01
	ErrDuplicateTable  = errors.New("table already exists")        // 42P07
	ErrUnknownColumn   = errors.New("unknown column")              // 42703
	ErrAmbiguousColumn = errors.New("ambiguous column")            // 42702
	ErrUnknownFunction = errors.New("unknown function")            // 42883
	ErrType            = errors.New("type mismatch")               // 42804
	ErrGrouping        = errors.New("grouping error")              // 42803
	ErrUnsupported     = errors.New("unsupported")                 // 0A000
	ErrInvalidValue    = errors.New("invalid parameter value")     // 22023
	ErrUnknownVariable = errors.New("unknown variable")            // 42704
	ErrTooDeep         = errors.New("stack depth limit")           // 54001
	ErrCantChange      = errors.New("parameter cannot be changed") // 55P02
	ErrWindowing       = errors.New("windowing error")             // 42P20
	ErrFrameSize       = errors.New("invalid frame offset")        // 22013

	ErrDuplicateColumn        = errors.New("duplicate column")         // 42701
	ErrInvalidColumnReference = errors.New("invalid column reference") // 42P10
	ErrWrongObjectType        = errors.New("wrong object type")        // 42809
	// ErrObjectState: the object cannot serve the statement in its state (a
	// view whose job was stopped).
	ErrObjectState = errors.New("object not in prerequisite state") // 55000

	ErrUnknownUser           = errors.New("unknown user")           // 42704
	ErrDuplicateUser         = errors.New("user already exists")    // 42710
	ErrInsufficientPrivilege = errors.New("insufficient privilege") // 42501

	// Transaction blocks and cursors (tx.go, session/tx.go).
	ErrNoTransaction       = errors.New("no transaction in progress")   // 25P01
	ErrInTransaction       = errors.New("transaction in progress")      // 25001
	ErrTransactionAborted  = errors.New("transaction aborted")          // 25P02
	ErrReadOnlyTransaction = errors.New("read-only transaction")        // 25006
	ErrUnknownSavepoint    = errors.New("unknown savepoint")            // 3B001
	ErrUnknownCursor       = errors.New("unknown cursor")               // 34000
	ErrDuplicateCursor     = errors.New("cursor already exists")        // 42P03
	ErrCursorState         = errors.New("cursor in the wrong state")    // 55000
	ErrWritesCommitted     = errors.New("writes committed as they ran") // 01000, a warning's
)

// Error is an error in a statement's text. Kind is one of the sentinels above;
// Pos is the 1-based character position in the query string the error points at,
// or 0 when no single place is to blame.
type Error struct {
	Kind error
	Msg  string
	Pos  int
	// Detail is the client's DETAIL line, "" for none.
	Detail string
	// Hint is the client's HINT line, "" for none.
	Hint string
}

func (e *Error) Error() string { return e.Msg }

// ErrorDetail returns the DETAIL line.
func (e *Error) ErrorDetail() string { return e.Detail }

// ErrorHint returns the HINT line.
func (e *Error) ErrorHint() string { return e.Hint }

// Unwrap lets errors.Is see the Kind.
func (e *Error) Unwrap() error { return e.Kind }

// Errorf returns an *Error of the given kind and position.
func Errorf(kind error, pos int, format string, args ...any) *Error {
	return &Error{Kind: kind, Pos: pos, Msg: fmt.Sprintf(format, args...)}
}
