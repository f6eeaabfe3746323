package wire

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/hummer-db/hummer/connectors/spec"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/jobmanager"
	"github.com/hummer-db/hummer/sql"
)

// This file is the one place that chooses the SQLSTATE a client sees for an error.
// In order:
//
//  1. A *sql.Error (anywhere in the chain) gives its Msg and Pos, and the code of
//     its Kind.
//  2. An error in the chain with a method SQLState() string gives that code and the
//     whole error text. Packages that wire does not import (connectors) attach
//     their codes this way.
//  3. A sentinel in the chain listed in sentinelCodes below gives its code and the
//     whole error text.
//  4. Anything else is an internal error: XX000 with a generic message; the error
//     itself goes only to the server log.

// SQLSTATE codes used by name in this package.
const (
	codeSuccessfulCompletion = "00000"
	codeProtocolViolation    = "08P01"
	codeFeatureNotSupported  = "0A000"
	codeInvalidAuthorization = "28000"
	codeTooManyConnections   = "53300"
	codeSyntaxErrorOrAccess  = "42000"
	codeSyntaxError          = "42601"
	codeQueryCanceled        = "57014"
	codeInternalError        = "XX000"
)

// internalErrorMessage is all a client learns about an error without a code.
const internalErrorMessage = "internal error"

// sqlStater is implemented by errors that know their own SQLSTATE.
type sqlStater interface {
	SQLState() string
}

// sentinelCodes maps sentinel errors, matched with errors.Is in this order, to
// their codes. exec.ErrBadInput and the cancellations need more than a code and are
// handled in pgErrorFields.
var sentinelCodes = []struct {
	err  error
	code string
}{
	{sql.ErrSyntax, "42601"},                 // syntax_error
	{sql.ErrUnknownTable, "42P01"},           // undefined_table
	{sql.ErrDuplicateTable, "42P07"},         // duplicate_table
	{sql.ErrUnknownColumn, "42703"},          // undefined_column
	{sql.ErrAmbiguousColumn, "42702"},        // ambiguous_column
	{sql.ErrUnknownFunction, "42883"},        // undefined_function
	{sql.ErrType, "42804"},                   // datatype_mismatch
	{sql.ErrGrouping, "42803"},               // grouping_error
	{sql.ErrUnsupported, "0A000"},            // feature_not_supported
	{sql.ErrInvalidValue, "22023"},           // invalid_parameter_value
	{sql.ErrUnknownVariable, "42704"},        // undefined_object
	{sql.ErrTooDeep, "54001"},                // statement_too_complex
	{sql.ErrCantChange, "55P02"},             // cant_change_runtime_param
	{sql.ErrWindowing, "42P20"},              // windowing_error
	{sql.ErrFrameSize, "22013"},              // invalid_preceding_or_following_size
	{sql.ErrDuplicateColumn, "42701"},        // duplicate_column
	{sql.ErrInvalidColumnReference, "42P10"}, // invalid_column_reference
	{sql.ErrWrongObjectType, "42809"},        // wrong_object_type
	{sql.ErrObjectState, "55000"},            // object_not_in_prerequisite_state
	{expr.ErrUnknownFunction, "42883"},       // undefined_function
	{expr.ErrArgumentType, "42883"},          // undefined_function: no such signature
	{expr.ErrDivisionByZero, "22012"},        // division_by_zero
	{expr.ErrInvalidCast, "22P02"},           // invalid_text_representation
	{expr.ErrOutOfRange, "22003"},            // numeric_value_out_of_range
	{expr.ErrTooLong, "22001"},               // string_data_right_truncation
	{expr.ErrInvalidArgument, "22023"},       // invalid_parameter_value
	{expr.ErrPowerArgument, "2201F"},         // invalid_argument_for_power_function
	{expr.ErrLogArgument, "2201E"},           // invalid_argument_for_logarithm
	{expr.ErrNullValue, "22004"},             // null_value_not_allowed
	{expr.ErrSubqueryRows, "21000"},          // cardinality_violation
	// expr.ErrBadExpression is a binder bug: internal, left to the default.
	{exec.ErrUnknownConnector, "42704"}, // undefined_object
	{spec.ErrBadOption, "22023"},        // invalid_parameter_value: a bad CONNECTION option
	{jobmanager.ErrNoSlots, "53000"},    // insufficient_resources

	{sql.ErrUnknownUser, "42704"},           // undefined_object
	{sql.ErrDuplicateUser, "42710"},         // duplicate_object
	{sql.ErrInsufficientPrivilege, "42501"}, // insufficient_privilege

	{sql.ErrNoTransaction, "25P01"},       // no_active_sql_transaction
	{sql.ErrInTransaction, "25001"},       // active_sql_transaction
	{sql.ErrTransactionAborted, "25P02"},  // in_failed_sql_transaction
	{sql.ErrReadOnlyTransaction, "25006"}, // read_only_sql_transaction
	{sql.ErrUnknownSavepoint, "3B001"},    // invalid_savepoint_specification
	{sql.ErrUnknownCursor, "34000"},       // invalid_cursor_name
	{sql.ErrDuplicateCursor, "42P03"},     // duplicate_cursor
	{sql.ErrCursorState, "55000"},         // object_not_in_prerequisite_state
	{sql.ErrWritesCommitted, "01000"},     // warning
	// exec.ErrUnknownOperator means the planner and the registry disagree: an
	// internal error, left to the default.
}

// codeOf returns the code of the first sentinel or SQLState() error in err's chain,
// or "" when there is none.
// SQLState returns the SQLSTATE the server would answer err with; a TaskManager
// process uses it to report a task's failure to the JobManager with its code.
func SQLState(err error) string {
	code, _, _, _ := pgErrorFields(err)
	return code
}

func codeOf(err error) string {
	if err == nil {
		return ""
	}
	var s sqlStater
	if errors.As(err, &s) {
		if code := s.SQLState(); code != "" {
			return code
		}
	}
	for _, sc := range sentinelCodes {
		if errors.Is(err, sc.err) {
			return sc.code
		}
	}
	return ""
}

// pgErrorFields returns the SQLSTATE, message and 1-based character position
// (0 for none) a client is told for err, and whether err is internal (unexpected,
// worth logging in full).
func pgErrorFields(err error) (code, msg string, pos int, internal bool) {
	var se *sql.Error
	if errors.As(err, &se) {
		code = codeOf(se.Kind)
		if code == "" {
			code = codeSyntaxErrorOrAccess
		}
		return code, se.Msg, se.Pos, false
	}
	if code = codeOf(err); code != "" {
		return code, err.Error(), 0, false
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return codeQueryCanceled, "canceling statement due to statement timeout", 0, false
	case errors.Is(err, context.Canceled):
		return codeQueryCanceled, "canceling statement due to user request", 0, false
	case errors.Is(err, exec.ErrOutOfMemory):
		return "53200", err.Error(), 0, false // out_of_memory
	case errors.Is(err, exec.ErrJobCancelled):
		return codeQueryCanceled, err.Error(), 0, false
	case errors.Is(err, exec.ErrBadInput):
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return "58P01", err.Error(), 0, false // undefined_file
		case errors.Is(err, fs.ErrPermission):
			return "42501", err.Error(), 0, false // insufficient_privilege
		}
		return "22000", err.Error(), 0, false // data_exception
	}
	return codeInternalError, internalErrorMessage, 0, true
}

// errorDetailer is implemented by errors with a DETAIL line for the client
// (a constraint violation's key).
type errorDetailer interface {
	ErrorDetail() string
}

// errorHinter is implemented by errors with a HINT line for the client (the
// column a misspelt name perhaps meant).
type errorHinter interface {
	ErrorHint() string
}

// errorContexter is implemented by errors with a CONTEXT line for the client
// (the COPY line a bad value is on), which their message then leaves out.
type errorContexter interface {
	ErrorMessage() string
	ErrorContext() string
}

// errorResponse builds the ErrorResponse for a statement that failed with err.
func errorResponse(err error) (resp *pgproto3.ErrorResponse, internal bool) {
	code, msg, pos, internal := pgErrorFields(err)
	resp = &pgproto3.ErrorResponse{
		Severity:            "ERROR",
		SeverityUnlocalized: "ERROR",
		Code:                code,
		Message:             msg,
		Position:            int32(pos),
	}
	var d errorDetailer
	if errors.As(err, &d) && !internal {
		resp.Detail = d.ErrorDetail()
	}
	var h errorHinter
	if errors.As(err, &h) && !internal {
		resp.Hint = h.ErrorHint()
	}
	var ec errorContexter
	if errors.As(err, &ec) && !internal && ec.ErrorContext() != "" {
		resp.Message, resp.Where = ec.ErrorMessage(), ec.ErrorContext()
	} else if m, ok := expr.Message(err); ok && !internal && m != msg && strings.HasSuffix(msg, ": "+m) {
		// A function or cast that failed while a query ran: its message is
		// PostgreSQL's; the step that ran it (project: CAST(...)) goes to
		// CONTEXT, where PostgreSQL names the function a failure came from.
		resp.Message, resp.Where = m, strings.TrimSuffix(msg, ": "+m)
	}
	return resp, internal
}

// fatalResponse builds the FATAL ErrorResponse sent before the server closes a
// connection.
func fatalResponse(code, msg string) *pgproto3.ErrorResponse {
	return &pgproto3.ErrorResponse{
		Severity:            "FATAL",
		SeverityUnlocalized: "FATAL",
		Code:                code,
		Message:             msg,
	}
}

// logInternal logs an error answered with XX000 and counts it
// (Server.InternalErrors): a bug, so the log gets the type of every error in
// its chain, which says where it came from.
func (c *conn) logInternal(msg string, err error, args ...any) {
	n := c.srv.internalErrors.Add(1)
	c.log.Error(msg+" (a bug)", append([]any{"err", err, "chain", errorChain(err), "internal_errors", n}, args...)...)
}

// errorChain lists the types of the errors err wraps, outermost first.
func errorChain(err error) string {
	var types []string
	for err != nil {
		types = append(types, fmt.Sprintf("%T", err))
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				types = append(types, "["+errorChain(e)+"]")
			}
			break
		}
		err = errors.Unwrap(err)
	}
	return strings.Join(types, " > ")
}
