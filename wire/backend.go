// Package wire serves Hummer over the PostgreSQL frontend/backend protocol (version
// 3.0), so psql, pgx, JDBC and every other PostgreSQL client can submit SQL and read
// results. It speaks the simple query protocol, and the extended one (extended.go)
// with sessions that also implement Preparer; statements run in a Session that
// this package only knows through the small interfaces below.
//
// Results travel as Arrow batches up to this package, which encodes them in
// PostgreSQL's text format (textfmt.go), or binary where an extended-protocol client
// asks for it (binary.go), straight into the socket's write buffer.
// Errors are given SQLSTATE codes in one place, sqlstate.go.
//
// The network is hostile: clients prove who they are as Options.Auth says
// (auth.go; SCRAM in package scram), optionally over TLS; what they send is read
// within limits (frame.go: startup packets, message sizes, memory allocated only
// as bytes arrive), connections are counted and cancel requests rate-limited
// (limits.go). FuzzConn fuzzes all of it.
package wire

import (
	"context"
	"time"

	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/session"
)

// Backend opens sessions, one per client connection. *session.Engine satisfies it
// through a small adapter in cmd/hummer.
type Backend interface {
	// NewSession starts the session of a client that logged in as st.User to
	// st.Database, having proved who it is as Options.Auth requires (under
	// AuthTrust without a Users directory, both are simply what the client
	// sent), with the startup packet's settings. An error (an unknown
	// parameter, a bad value) fails the connection, its SQLSTATE in a FATAL.
	NewSession(st session.Startup) (Session, error)
}

// Session is one client's connection state. The server calls it from one goroutine
// at a time.
type Session interface {
	// Exec runs every statement of a simple-protocol query string in order, calling
	// emit with each statement's result; emit drains or closes Result.Rows before it
	// returns. Exec stops at the first error (its own, or one emit returns) and
	// returns it. Exec must return promptly once ctx is cancelled: that is how a
	// CancelRequest, a client that went away and Server.Close stop a statement.
	Exec(ctx context.Context, query string, emit func(*session.Result) error) error
	// ParameterStatus returns the reported parameters (server_version,
	// TimeZone, ...) whose values the client has not been told: all of them
	// at the first call, after the startup packet's settings; later, those
	// that statements changed. The server sends them before ReadyForQuery.
	ParameterStatus() []session.Param
	// Close ends the session, stopping any job it still runs.
	Close()
}

// Zoner is implemented by sessions with a TimeZone setting: a timestamp
// with time zone's text is its wall time in that zone, with the offset.
type Zoner interface {
	// TimeZone returns the session's current TimeZone.
	TimeZone() *time.Location
}

// MessageFilter is implemented by sessions with a client_min_messages
// setting: a NOTICE goes to the client only at notice or a lower level
// (debug1-5, log), a WARNING unless it is error.
type MessageFilter interface {
	// ClientMinMessages returns the setting, in lower case.
	ClientMinMessages() string
}

// Transactioner is implemented by sessions with transaction blocks
// (BEGIN ... COMMIT). The server reports their status in ReadyForQuery and
// keeps portals open across Sync while a block is open.
type Transactioner interface {
	// TxStatus is 'I' outside a block, 'T' in one, 'E' in one that failed.
	TxStatus() byte
	// FailTransaction fails the open block, if any: the server reported an
	// error (in the extended protocol, an error before Sync fails the block
	// as in PostgreSQL).
	FailTransaction()
}

// CursorDescriber is implemented by sessions with SQL cursors (DECLARE c
// CURSOR FOR ...): a Describe of portal c describes the cursor's rows, as
// in PostgreSQL, where such a cursor is a portal of the protocol too.
type CursorDescriber interface {
	// CursorSchema returns the columns FETCH returns from the open cursor
	// name; ok is false when no cursor has that name.
	CursorSchema(name string) (schema types.Schema, ok bool)
}

// sends reports whether a message of severity (NOTICE or WARNING) goes to
// the client under the session's client_min_messages.
func (c *conn) sends(severity string) bool {
	f, ok := c.sess.(MessageFilter)
	if !ok {
		return true
	}
	switch f.ClientMinMessages() {
	case "error":
		return false
	case "warning":
		return severity == "WARNING"
	}
	return true
}

// timeZone returns the session's TimeZone, UTC for a session without one.
func (c *conn) timeZone() *time.Location {
	if z, ok := c.sess.(Zoner); ok {
		return z.TimeZone()
	}
	return time.UTC
}
