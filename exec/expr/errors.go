package expr

import (
	"errors"
	"fmt"
)

// Sentinel errors of the function catalog and the evaluator. The errors returned
// wrap one of them and carry PostgreSQL's message text, so that the wire layer
// can pick a SQLSTATE with errors.Is and still show the user PostgreSQL's wording.
var (
	// ErrUnknownFunction: no function of that name exists.
	ErrUnknownFunction = errors.New("function does not exist")
	// ErrArgumentType: the function exists but not for these argument types.
	ErrArgumentType = errors.New("function does not accept these argument types")
	// ErrDivisionByZero: "/", "%" or mod with a zero divisor.
	ErrDivisionByZero = errors.New("division by zero")
	// ErrSubqueryRows: a subquery used as an expression returned more than one
	// row (SQLSTATE 21000, cardinality_violation).
	ErrSubqueryRows = errors.New("more than one row returned by a subquery used as an expression")
	// ErrInvalidCast: a value cannot be converted to the target type, typically
	// text that does not parse.
	ErrInvalidCast = errors.New("invalid input syntax")
	// ErrOutOfRange: a result does not fit its type (integer overflow, a decimal
	// beyond its precision, a double too large for bigint).
	ErrOutOfRange = errors.New("value out of range")
	// ErrTooLong: text longer than the length of the character type it is
	// stored as (SQLSTATE 22001, string_data_right_truncation).
	ErrTooLong = errors.New("value too long")
	// ErrInvalidArgument: an argument value the function rejects, such as a
	// negative substring length or a malformed LIKE escape.
	ErrInvalidArgument = errors.New("invalid argument value")
	// ErrPowerArgument: power's or sqrt's argument has no real result
	// (SQLSTATE 2201F, invalid_argument_for_power_function).
	ErrPowerArgument = errors.New("invalid argument for power function")
	// ErrLogArgument: the logarithm of zero or of a negative number
	// (SQLSTATE 2201E, invalid_argument_for_logarithm).
	ErrLogArgument = errors.New("invalid argument for logarithm")
	// ErrNullValue: a NULL where a function takes none, such as format's %I.
	ErrNullValue = errors.New("null value not allowed")
	// ErrBadExpression: the tree breaks the binder's contract (an argument of the
	// wrong type, a column index outside the batch, an unknown node kind).
	ErrBadExpression = errors.New("malformed expression")
)

// sqlError is an error with PostgreSQL's message text that unwraps to a sentinel.
type sqlError struct {
	kind error
	msg  string
}

func (e *sqlError) Error() string { return e.msg }
func (e *sqlError) Unwrap() error { return e.kind }

// Message returns PostgreSQL's message of the expression error err wraps
// (what a function or cast failed with), without what the layers above
// added to it; ok is false when err wraps none.
func Message(err error) (msg string, ok bool) {
	var se *sqlError
	if !errors.As(err, &se) {
		return "", false
	}
	return se.msg, true
}

// Errorf is an error of kind whose message is PostgreSQL's text, for the
// operators that evaluate SQL functions themselves (generate_series).
func Errorf(kind error, format string, args ...any) error { return newError(kind, format, args...) }

func newError(kind error, format string, args ...any) error {
	return &sqlError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

var errDivisionByZero = newError(ErrDivisionByZero, "division by zero")
