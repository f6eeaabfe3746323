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
	// ErrNoSlots: the cluster has no free slot for a task.
	ErrNoSlots = errors.New("not enough free slots")

	// ErrNetProtocol: a peer sent something that is not a valid frame sequence
	// (bad kind, oversized length, undecodable batch, a hello for no channel).
	ErrNetProtocol = errors.New("network channel protocol error")
	// ErrChannelClosed: a network channel ended before its EndOfStream, or was
	// used after it failed or was closed.
	ErrChannelClosed = errors.New("network channel closed")
	// ErrUnknownChannel: a hello named a channel no task registered on the
	// receiving TaskManager within DataServerConfig.RegisterWait, or one that is
	// already connected.
	ErrUnknownChannel = errors.New("unknown network channel")
)
