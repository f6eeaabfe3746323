package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/jobmanager"
	"github.com/hummer-db/hummer/sql"
)

func TestPgErrorFields(t *testing.T) {
	for _, tc := range []struct {
		err      error
		code     string
		msg      string
		pos      int
		internal bool
	}{
		{sql.Errorf(sql.ErrSyntax, 7, "syntax error at or near %q", "FORM"), "42601", `syntax error at or near "FORM"`, 7, false},
		{sql.Errorf(sql.ErrUnknownTable, 15, "x"), "42P01", "x", 15, false},
		{sql.Errorf(sql.ErrDuplicateTable, 0, "x"), "42P07", "x", 0, false},
		{sql.Errorf(sql.ErrUnknownColumn, 1, "x"), "42703", "x", 1, false},
		{sql.Errorf(sql.ErrAmbiguousColumn, 1, "x"), "42702", "x", 1, false},
		{sql.Errorf(sql.ErrUnknownFunction, 1, "x"), "42883", "x", 1, false},
		{sql.Errorf(sql.ErrType, 1, "x"), "42804", "x", 1, false},
		{sql.Errorf(sql.ErrGrouping, 1, "x"), "42803", "x", 1, false},
		{sql.Errorf(sql.ErrUnsupported, 1, "x"), "0A000", "x", 1, false},
		{sql.Errorf(sql.ErrInvalidValue, 1, "x"), "22023", "x", 1, false},
		{sql.Errorf(sql.ErrUnknownVariable, 1, "x"), "42704", "x", 1, false},
		// A sql.Error deep in a chain still gives its message and position.
		{fmt.Errorf("planning: %w", sql.Errorf(sql.ErrUnknownColumn, 3, "column \"q\" does not exist")), "42703", "column \"q\" does not exist", 3, false},
		// An unknown kind of statement error is still the statement's fault.
		{&sql.Error{Kind: errors.New("other"), Msg: "m", Pos: 2}, "42000", "m", 2, false},
		{sql.Errorf(sql.ErrDuplicateColumn, 1, "x"), "42701", "x", 1, false},
		{sql.Errorf(sql.ErrInvalidColumnReference, 1, "x"), "42P10", "x", 1, false},
		{sql.Errorf(sql.ErrInsufficientPrivilege, 0, "permission denied for table t"), "42501", "permission denied for table t", 0, false},
		{sql.Errorf(sql.ErrUnknownUser, 0, "x"), "42704", "x", 0, false},
		{sql.Errorf(sql.ErrDuplicateUser, 0, "x"), "42710", "x", 0, false},
		// Bare sentinels, wrapped.
		{fmt.Errorf("%w", expr.ErrUnknownFunction), "42883", "function does not exist", 0, false},
		{fmt.Errorf("%w", expr.ErrArgumentType), "42883", "function does not accept these argument types", 0, false},
		{fmt.Errorf("%w", expr.ErrDivisionByZero), "22012", "division by zero", 0, false},
		{fmt.Errorf("%w", expr.ErrInvalidCast), "22P02", "invalid input syntax", 0, false},
		{fmt.Errorf("%w", expr.ErrOutOfRange), "22003", "value out of range", 0, false},
		{fmt.Errorf("%w", expr.ErrInvalidArgument), "22023", "invalid argument value", 0, false},
		{fmt.Errorf("%w", expr.ErrBadExpression), "XX000", "internal error", 0, true},
		{fmt.Errorf("binder: %w", sql.ErrUnsupported), "0A000", "binder: unsupported", 0, false},
		{&stateErr{"22P02", "invalid input syntax for type bigint: \"x\""}, "22P02", "invalid input syntax for type bigint: \"x\"", 0, false},
		{fmt.Errorf("kafka connector: %w", &stateErr{"22023", "bad option \"group\""}), "22023", "kafka connector: bad option \"group\"", 0, false},
		{fmt.Errorf("file: %w: %w", exec.ErrBadInput, os.ErrNotExist), "58P01", "file: bad input: file does not exist", 0, false},
		{fmt.Errorf("file: %w: %w", exec.ErrBadInput, os.ErrPermission), "42501", "file: bad input: permission denied", 0, false},
		{fmt.Errorf("csv line 3: %w", exec.ErrBadInput), "22000", "csv line 3: bad input", 0, false},
		{fmt.Errorf("job 4: %w", exec.ErrJobCancelled), "57014", "job 4: job cancelled", 0, false},
		{fmt.Errorf("source: %w", context.Canceled), "57014", "canceling statement due to user request", 0, false},
		{context.DeadlineExceeded, "57014", "canceling statement due to statement timeout", 0, false},
		{fmt.Errorf("%w", jobmanager.ErrNoSlots), "53000", "not enough free slots", 0, false},
		{fmt.Errorf("%w: print", exec.ErrUnknownConnector), "42704", "unknown connector: print", 0, false},
		{fmt.Errorf("%w: hashagg", exec.ErrUnknownOperator), "XX000", "internal error", 0, true},
		{errors.New("index out of range [3] with length 2"), "XX000", "internal error", 0, true},
	} {
		code, msg, pos, internal := pgErrorFields(tc.err)
		if code != tc.code || msg != tc.msg || pos != tc.pos || internal != tc.internal {
			t.Errorf("%v: got %s %q %d %v, want %s %q %d %v", tc.err, code, msg, pos, internal, tc.code, tc.msg, tc.pos, tc.internal)
		}
	}
}

func TestErrorChain(t *testing.T) {
	err := fmt.Errorf("planning: %w", errors.Join(io.EOF, fmt.Errorf("x: %w", expr.ErrBadExpression)))
	want := "*fmt.wrapError > *errors.joinError > [*errors.errorString] > [*fmt.wrapError > *errors.errorString]"
	if got := errorChain(err); got != want {
		t.Errorf("errorChain = %q, want %q", got, want)
	}
}

// TestErrorResponseExprContext: a function's or cast's error wrapped by the
// operator that ran it is sent with PostgreSQL's message, the operator in
// CONTEXT; an expression error alone keeps its message and no CONTEXT.
func TestErrorResponseExprContext(t *testing.T) {
	inner := expr.Errorf(expr.ErrOutOfRange, "integer out of range")
	resp, internal := errorResponse(fmt.Errorf("project: CAST((a + 1) AS integer): %w", inner))
	if internal || resp.Code != "22003" || resp.Message != "integer out of range" || resp.Where != "project: CAST((a + 1) AS integer)" {
		t.Errorf("wrapped: %+v", resp)
	}
	resp, _ = errorResponse(inner)
	if resp.Message != "integer out of range" || resp.Where != "" {
		t.Errorf("alone: %+v", resp)
	}
}
