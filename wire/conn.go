package wire

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/jackc/pgx/v5/pgproto3"
)

// conn is one client connection. Its serve goroutine owns everything but the fields
// marked otherwise.
type conn struct {
	srv    *Server
	nc     net.Conn
	rd     *connReader
	be     *pgproto3.Backend
	log    *slog.Logger
	ctx    context.Context // cancelled when the client goes away or the server closes
	cancel context.CancelFunc
	pid    uint32  // BackendKeyData, set once during startup
	secret [4]byte // BackendKeyData, set once during startup

	sess Session

	// out holds encoded messages not yet written; flush writes them. Outgoing
	// messages bypass pgproto3.Backend's Send/Flush because Backend.Flush drops any
	// buffer over 1 KiB, which would cost a fresh large allocation for every batch
	// of rows; here the one buffer is kept for the connection's life.
	out      []byte
	writeErr error // first write failure: nothing more can reach the client

	// Scratch space of sendBatch, reused from batch to batch.
	appenders []textAppender
	nullable  []arrow.Array

	// ignoreTillSync: an extended-protocol message failed, so the following ones
	// are skipped until Sync, as the protocol prescribes.
	ignoreTillSync bool

	// The extended protocol's prepared statements and portals, by name ("" is the
	// unnamed one).
	stmts   map[string]*extStatement
	portals map[string]*extPortal

	mu       sync.Mutex
	stmtStop context.CancelFunc // cancels the running statement; nil when idle. mu.
}

// flushThreshold is how much encoded output a connection gathers before writing it
// to the socket in the middle of a batch of rows.
const flushThreshold = 256 << 10

// errTerminate ends a connection normally.
var errTerminate = errors.New("client terminated the connection")

// serve runs the connection: startup, then one message at a time until the client
// leaves, the server closes or the protocol breaks.
func (c *conn) serve() {
	defer func() {
		c.cancel()
		c.nc.Close()
		c.rd.close()
	}()
	defer func() {
		// One recover at the connection boundary: a panic in a session or in this
		// package must not take the whole server down. The session's state is
		// unknown afterwards, so the connection ends.
		if r := recover(); r != nil {
			c.log.Error("panic serving connection", "panic", r, "stack", string(debug.Stack()))
			c.out = c.out[:0] // may end in half a message
			c.send(fatalResponse(codeInternalError, internalErrorMessage))
			c.flush()
		}
	}()

	c.be = pgproto3.NewBackend(c.rd, c.nc)
	c.be.SetMaxBodyLen(c.srv.opts.MaxMessageSize)

	c.nc.SetReadDeadline(time.Now().Add(c.srv.opts.StartupTimeout))
	user, database, err := c.startup()
	if err != nil {
		if !c.rd.failed() {
			c.log.Debug("startup failed", "err", err)
		}
		return
	}
	c.nc.SetReadDeadline(time.Time{})

	c.log = c.log.With("pid", c.pid, "user", user, "database", database)
	c.log.Debug("connection ready")
	c.sess = c.srv.backend.NewSession(user, database)
	defer c.sess.Close()
	defer c.closePortals() // before the session closes
	c.readyForQuery()
	if c.flush() != nil {
		return
	}

	for {
		msg, err := c.be.Receive()
		if err != nil {
			if !c.rd.failed() {
				// The bytes arrived but do not make a message: a protocol violation.
				c.log.Warn("bad message from client", "err", err)
				c.send(fatalResponse(codeProtocolViolation, err.Error()))
				c.flush()
			}
			return
		}
		if err := c.handle(msg); err != nil {
			if !errors.Is(err, errTerminate) && c.writeErr == nil {
				c.log.Debug("closing connection", "err", err)
			}
			return
		}
	}
}

// startup answers encryption requests and cancel requests and performs the startup
// handshake of a connection, accepting any user. It returns the user and database
// the client asked for.
func (c *conn) startup() (user, database string, err error) {
	for {
		msg, err := c.be.ReceiveStartupMessage()
		if err != nil {
			return "", "", err
		}
		switch m := msg.(type) {
		case *pgproto3.SSLRequest, *pgproto3.GSSEncRequest:
			// No encryption: 'N' tells the client to go on in plain text.
			if _, err := c.nc.Write([]byte{'N'}); err != nil {
				return "", "", err
			}
		case *pgproto3.CancelRequest:
			c.srv.cancelRequest(m.ProcessID, m.SecretKey)
			return "", "", errors.New("cancel request served")
		case *pgproto3.StartupMessage:
			return c.handleStartup(m)
		default:
			return "", "", fmt.Errorf("unexpected startup message %T", msg)
		}
	}
}

func (c *conn) handleStartup(m *pgproto3.StartupMessage) (user, database string, err error) {
	if m.ProtocolVersion>>16 != 3 {
		c.send(fatalResponse(codeFeatureNotSupported, fmt.Sprintf(
			"unsupported frontend protocol %d.%d: server supports 3.0",
			m.ProtocolVersion>>16, m.ProtocolVersion&0xffff)))
		c.flush()
		return "", "", errors.New("unsupported protocol version")
	}
	// A newer 3.x minor version or protocol options ("_pq_.name") are declined with
	// NegotiateProtocolVersion, after which the client carries on with 3.0.
	var unknown []string
	for k := range m.Parameters {
		if strings.HasPrefix(k, "_pq_.") {
			unknown = append(unknown, k)
		}
	}
	if m.ProtocolVersion&0xffff != 0 || len(unknown) > 0 {
		c.send(&pgproto3.NegotiateProtocolVersion{NewestMinorProtocol: 0, UnrecognizedOptions: unknown})
	}

	user = m.Parameters["user"]
	if user == "" {
		c.send(fatalResponse(codeInvalidAuthorization, "no PostgreSQL user name specified in startup packet"))
		c.flush()
		return "", "", errors.New("no user name")
	}
	database = m.Parameters["database"]
	if database == "" {
		database = user
	}

	c.send(&pgproto3.AuthenticationOk{})
	for _, p := range [...][2]string{
		{"application_name", m.Parameters["application_name"]},
		// Only UTF8 is spoken, whatever the client asked for.
		{"client_encoding", "UTF8"},
		{"DateStyle", "ISO, MDY"},
		{"default_transaction_read_only", "off"},
		{"in_hot_standby", "off"},
		{"integer_datetimes", "on"},
		{"IntervalStyle", "postgres"},
		{"is_superuser", "off"},
		{"server_encoding", "UTF8"},
		{"server_version", c.srv.opts.ServerVersion},
		{"session_authorization", user},
		{"standard_conforming_strings", "on"},
		{"TimeZone", "UTC"},
	} {
		c.send(&pgproto3.ParameterStatus{Name: p[0], Value: p[1]})
	}
	c.srv.newBackendKey(c)
	c.send(&pgproto3.BackendKeyData{ProcessID: c.pid, SecretKey: c.secret[:]})
	return user, database, nil
}

// handle processes one message of a ready connection. An error ends the connection.
func (c *conn) handle(msg pgproto3.FrontendMessage) error {
	if c.ignoreTillSync {
		switch msg.(type) {
		case *pgproto3.Sync:
			c.ignoreTillSync = false
			c.closePortals()
			c.readyForQuery()
			return c.flush()
		case *pgproto3.Terminate:
			return errTerminate
		}
		return nil
	}
	switch m := msg.(type) {
	case *pgproto3.Query:
		// As in PostgreSQL, a simple query ends the implicit transaction of the
		// extended protocol and replaces the unnamed statement.
		c.closePortals()
		delete(c.stmts, "")
		c.simpleQuery(m.String)
		c.readyForQuery()
		err := c.flush()
		if cap(c.out) > idleBufferLimit {
			c.out = nil
		}
		return err
	case *pgproto3.Terminate:
		return errTerminate
	case *pgproto3.Parse, *pgproto3.Bind, *pgproto3.Describe, *pgproto3.Execute, *pgproto3.Close:
		c.extended(msg)
		// Replies wait for Sync or Flush, but a large output buffer goes now.
		if len(c.out) >= flushThreshold {
			return c.flush()
		}
		return c.writeErr
	case *pgproto3.Sync:
		c.closePortals()
		c.readyForQuery()
		return c.flush()
	case *pgproto3.Flush:
		return c.flush()
	case *pgproto3.FunctionCall:
		c.send(&pgproto3.ErrorResponse{
			Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: codeFeatureNotSupported,
			Message: "function calls are not supported",
		})
		c.readyForQuery()
		return c.flush()
	case *pgproto3.CopyData, *pgproto3.CopyDone, *pgproto3.CopyFail:
		// Outside COPY these are ignored, as the protocol asks.
		return nil
	}
	c.send(fatalResponse(codeProtocolViolation, fmt.Sprintf("unexpected message %T", msg)))
	c.flush()
	return fmt.Errorf("unexpected message %T", msg)
}

// readyForQuery queues ReadyForQuery. The engine has no transactions, so the
// connection is always idle between queries.
func (c *conn) readyForQuery() {
	c.send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
}

// cancelStatement cancels the running statement, if any. It may be called from any
// goroutine.
func (c *conn) cancelStatement() {
	c.mu.Lock()
	stop := c.stmtStop
	c.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// setStatement records how to cancel the running statement (nil: none runs).
func (c *conn) setStatement(stop context.CancelFunc) {
	c.mu.Lock()
	c.stmtStop = stop
	c.mu.Unlock()
}

// kill cancels whatever the connection does and closes its socket, so that serve
// returns soon. Server.Close calls it from another goroutine.
func (c *conn) kill() {
	c.cancel()
	c.nc.Close()
	c.rd.close()
}

// send queues msg for the next flush.
func (c *conn) send(msg pgproto3.BackendMessage) {
	out, err := msg.Encode(c.out)
	if err != nil {
		// Only messages over the protocol's limits fail to encode; nothing about
		// them can be sent, and the stream must stay well formed.
		c.log.Error("cannot encode message", "type", fmt.Sprintf("%T", msg), "err", err)
		return
	}
	c.out = out
}

// flush writes the queued messages. After a write fails every later flush fails
// with the same error: the client is gone.
func (c *conn) flush() error {
	if c.writeErr != nil {
		return c.writeErr
	}
	if len(c.out) == 0 {
		return nil
	}
	_, err := c.nc.Write(c.out)
	c.out = c.out[:0]
	if err != nil {
		c.writeErr = err
		c.cancel() // stop whatever still produces output for nobody
	}
	return err
}
