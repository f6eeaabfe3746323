package network

import "errors"

// Sentinel errors of the network channels; wrap them with %w.
var (
	// ErrNetProtocol: a peer sent something that is not a valid frame sequence
	// (bad kind, oversized length, undecodable batch, a hello for no channel).
	ErrNetProtocol = errors.New("network channel protocol error")
	// ErrChannelClosed: a network channel ended before its EndOfStream, or was
	// used after it failed or was closed.
	ErrChannelClosed = errors.New("network channel closed")
	// ErrUnknownChannel: a hello named a channel no task registered on the
	// receiving TaskManager within ServerConfig.RegisterWait, or one that is
	// already connected.
	ErrUnknownChannel = errors.New("unknown network channel")
)
