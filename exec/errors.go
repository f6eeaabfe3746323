package exec

import "errors"

// Sentinel errors of the runtime; wrap them with %w.
var (
	// ErrUnknownConnector: a JobGraph names a connector the registry lacks.
	ErrUnknownConnector = errors.New("unknown connector")
	// ErrUnknownOperator: a JobGraph names an operator kind the registry lacks.
	ErrUnknownOperator = errors.New("unknown operator")
	// ErrBadInput: a source met input it cannot read at all (a missing file, say).
	ErrBadInput = errors.New("bad input")
	// ErrJobCancelled: the job was cancelled (KILL, client gone, statement timeout).
	ErrJobCancelled = errors.New("job cancelled")
	// ErrOutOfMemory: the job was stopped because the process ran out of the
	// memory it may use (SQLSTATE 53200).
	ErrOutOfMemory = errors.New("out of memory")
)
