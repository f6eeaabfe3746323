package wire

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// conn is one client connection. Its serve goroutine owns everything but the fields
// marked otherwise.
type conn struct {
	srv *Server
	raw net.Conn // the accepted socket; kill closes it from any goroutine
	// nc is what the protocol is spoken over: raw, or a TLS connection over it
	// once the client asked for TLS.
	nc      net.Conn
	tlsConn *tls.Conn // nil without TLS
	// admitted: the connection counts against Options.MaxConnections; if not,
	// it is read up to its startup packet and refused.
	admitted bool
	frames   frameReader // reads rd once startup is done
	log      *slog.Logger
	ctx      context.Context // cancelled when the client goes away or the server closes
	cancel   context.CancelFunc
	pid      uint32  // BackendKeyData, set once during startup
	secret   [4]byte // BackendKeyData, set once during startup

	sess Session

	// out holds encoded messages not yet written; flush writes them. Outgoing
	// messages bypass pgproto3.Backend's Send/Flush because Backend.Flush drops any
	// buffer over 1 KiB, which would cost a fresh large allocation for every batch
	// of rows; here the one buffer is kept while a result lasts, and a large one
	// goes back to outBufs when the connection is idle (smallOut).
	out      []byte
	writeErr error // first write failure: nothing more can reach the client

	enc rowEncoder // sendBatch's, reused from batch to batch

	// ignoreTillSync: an extended-protocol message failed, so the following ones
	// are skipped until Sync, as the protocol prescribes.
	ignoreTillSync bool

	// The extended protocol's prepared statements and portals, by name ("" is the
	// unnamed one).
	stmts   map[string]*extStatement
	portals map[string]*extPortal

	mu       sync.Mutex
	stmtStop context.CancelFunc // cancels the running statement; nil when idle. mu.
	// stmtStart is when the running statement started (setStatement).
	stmtStart time.Time
	rd        *connReader // reads nc after startup; nil before. Set under mu.
}

// flushThreshold is how much encoded output a connection gathers before writing it
// to the socket in the middle of a batch of rows.
const flushThreshold = 256 << 10

// errTerminate ends a connection normally.
var errTerminate = errors.New("client terminated the connection")

// serve runs the connection: startup (TLS, authentication), then one message
// at a time until the client leaves, the server closes or the protocol breaks.
func (c *conn) serve() {
	defer func() {
		c.cancel()
		c.nc.Close()
		c.raw.Close()
		if rd := c.reader(); rd != nil {
			rd.close()
		}
	}()
	defer func() {
		// One recover at the connection boundary: a panic in a session or in this
		// package must not take the whole server down. The session's state is
		// unknown afterwards, so the connection ends; the client learns only that
		// there was an internal error, the log gets the stack.
		if r := recover(); r != nil {
			n := c.srv.internalErrors.Add(1)
			c.log.Error("panic serving connection (a bug)", "panic", r, "internal_errors", n, "stack", string(debug.Stack()))
			if c.srv.onPanic != nil {
				c.srv.onPanic(r)
			}
			c.out = c.out[:0] // may end in half a message
			c.send(fatalResponse(codeInternalError, internalErrorMessage))
			c.flush()
		}
	}()

	// Startup is read synchronously, byte for byte, under one deadline that
	// covers TLS and authentication (PostgreSQL's authentication_timeout).
	c.raw.SetDeadline(time.Now().Add(c.srv.opts.StartupTimeout))
	user, database, err := c.startup()
	if err != nil {
		if !clientGone(err) && !errors.Is(err, errAuthFailed) {
			c.log.Debug("startup failed", "err", err)
		}
		return
	}
	c.raw.SetDeadline(time.Time{})

	// From here the socket is read on its own goroutine, so that a client that
	// goes away is noticed while a statement runs.
	rd := newConnReader(c.nc, c.cancel)
	rd.onStarve = c.srv.onStarve
	c.mu.Lock()
	c.rd = rd
	c.mu.Unlock()
	c.srv.wg.Add(1) // serve itself is counted, so Close cannot be past its Wait
	go func() {
		defer c.srv.wg.Done()
		rd.run()
	}()
	c.frames = frameReader{r: rd, max: c.srv.opts.MaxMessageSize}

	c.log = c.log.With("pid", c.pid, "user", user, "database", database)
	c.log.Debug("connection ready")
	defer c.sess.Close()   // started by handleStartup
	defer c.closePortals() // before the session closes
	c.readyForQuery()
	if c.flush() != nil {
		return
	}

	for {
		typ, body, err := c.frames.next()
		if err != nil {
			var fe *errFraming
			if errors.As(err, &fe) {
				// The stream cannot be split into messages any more. (Debug: a
				// flood of garbage must not become a flood of log lines.)
				c.log.Debug("bad message from client", "err", err)
				c.fatal(codeProtocolViolation, fe.msg)
			}
			return
		}
		if err := c.receive(typ, body); err != nil {
			if !errors.Is(err, errTerminate) && c.writeErr == nil {
				c.log.Debug("closing connection", "err", err)
			}
			return
		}
	}
}

// reader returns the connection's socket reader, nil before startup ends.
func (c *conn) reader() *connReader {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rd
}

// receive decodes one message and handles it. A message that is well framed
// but malformed is an ERROR (08P01), after which the connection goes on as
// after any failed message: inside the extended protocol, messages are skipped
// until Sync. An unknown message type ends the connection, as in PostgreSQL.
func (c *conn) receive(typ byte, body []byte) error {
	if c.ignoreTillSync && typ != 'S' && typ != 'X' {
		if strings.IndexByte(frontendTypes, typ) >= 0 {
			return nil // skipped unread, as PostgreSQL skips them
		}
	}
	msg, known, err := decodeMessage(typ, body)
	if !known {
		c.log.Debug("bad message from client", "type", typ)
		c.fatal(codeProtocolViolation, fmt.Sprintf("invalid frontend message type %d", typ))
		return fmt.Errorf("invalid frontend message type %d", typ)
	}
	if err == nil {
		return c.handle(msg)
	}
	c.log.Debug("malformed message from client", "type", string(typ), "err", err)
	switch typ {
	case 'd', 'c', 'f':
		return nil // outside COPY these are ignored anyway
	case 'X':
		return errTerminate
	}
	c.send(&pgproto3.ErrorResponse{
		Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: codeProtocolViolation,
		Message: fmt.Sprintf("invalid %s message", messageName(typ)),
	})
	switch typ {
	case 'Q', 'F':
		c.readyForQuery()
	case 'S':
		c.ignoreTillSync = false
		c.endOfTransaction()
		c.readyForQuery()
	default: // Parse, Bind, Describe, Execute, Close, Flush
		c.ignoreTillSync = true
	}
	return c.flush()
}

// messageName names a frontend message type for errors.
func messageName(typ byte) string {
	switch typ {
	case 'B':
		return "Bind"
	case 'C':
		return "Close"
	case 'D':
		return "Describe"
	case 'E':
		return "Execute"
	case 'F':
		return "FunctionCall"
	case 'H':
		return "Flush"
	case 'P':
		return "Parse"
	case 'Q':
		return "Query"
	case 'S':
		return "Sync"
	}
	return fmt.Sprintf("type %d", typ)
}

// errCancelServed ends a connection that carried a CancelRequest.
var errCancelServed = errors.New("cancel request served")

// startup answers encryption requests and cancel requests and performs the startup
// handshake of a connection, authentication included. It returns the user and
// database the client asked for.
func (c *conn) startup() (user, database string, err error) {
	for {
		msg, err := readStartupPacket(c.nc)
		if err != nil {
			var uv *unsupportedVersion
			if errors.As(err, &uv) {
				c.fatal(codeFeatureNotSupported, uv.Error())
			}
			return "", "", err
		}
		switch m := msg.(type) {
		case *pgproto3.SSLRequest:
			if c.tlsConn != nil {
				return "", "", errors.New("SSLRequest inside TLS")
			}
			if c.srv.opts.TLS == nil {
				// No encryption: 'N' tells the client to go on in plain text.
				if _, err := c.nc.Write([]byte{'N'}); err != nil {
					return "", "", err
				}
				continue
			}
			if err := c.startTLS(); err != nil {
				return "", "", err
			}
		case *pgproto3.GSSEncRequest:
			if _, err := c.nc.Write([]byte{'N'}); err != nil {
				return "", "", err
			}
		case *pgproto3.CancelRequest:
			c.srv.cancelRequest(c.raw.RemoteAddr(), m.ProcessID, m.SecretKey)
			return "", "", errCancelServed
		case *pgproto3.StartupMessage:
			return c.handleStartup(m)
		}
	}
}

// startTLS accepts an SSLRequest and performs the TLS handshake; the rest of
// the connection is spoken over TLS.
func (c *conn) startTLS() error {
	if _, err := c.raw.Write([]byte{'S'}); err != nil {
		return err
	}
	tc := tls.Server(c.raw, c.srv.opts.TLS)
	if err := tc.Handshake(); err != nil {
		c.log.Debug("TLS handshake failed", "err", err)
		return err
	}
	c.nc, c.tlsConn = tc, tc
	return nil
}

func (c *conn) handleStartup(m *pgproto3.StartupMessage) (user, database string, err error) {
	// A newer 3.x minor version or protocol options ("_pq_.name") are declined with
	// NegotiateProtocolVersion, after which the client carries on with 3.0.
	var unknown []string
	for k := range m.Parameters {
		if strings.HasPrefix(k, "_pq_.") {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	if m.ProtocolVersion&0xffff != 0 || len(unknown) > 0 {
		c.send(&pgproto3.NegotiateProtocolVersion{NewestMinorProtocol: 0, UnrecognizedOptions: unknown})
	}

	user = m.Parameters["user"]
	if user == "" {
		c.fatal(codeInvalidAuthorization, "no PostgreSQL user name specified in startup packet")
		return "", "", errors.New("no user name")
	}
	database = m.Parameters["database"]
	if database == "" {
		database = user
	}
	if !c.admitted {
		c.fatal(codeTooManyConnections, "sorry, too many clients already")
		return "", "", errors.New("too many connections")
	}
	if c.srv.opts.TLSRequired && c.tlsConn == nil {
		c.fatal(codeInvalidAuthorization, "SSL required: this server accepts only encrypted connections (sslmode=require)")
		return "", "", errors.New("plain-text connection refused")
	}
	superuser, err := c.authenticate(user)
	if err != nil {
		return "", "", err
	}
	if !superuser && c.srv.reservedForSuperusers() {
		// Its slot is free before the client hears why, so that a
		// superuser it then makes way for finds it free.
		c.srv.unadmit(c)
		c.fatal(codeTooManyConnections, "remaining connection slots are reserved for roles with the SUPERUSER attribute")
		return "", "", errors.New("too many connections")
	}

	c.send(&pgproto3.AuthenticationOk{})
	// The key first: the session's pg_backend_pid() is its process ID. The
	// session applies the packet's settings (startup.go), and the client is
	// told the reported parameters' values, the settings' included.
	c.srv.newBackendKey(c)
	if err := c.startSession(m, user, database, superuser); err != nil {
		return "", "", err
	}
	c.reportParameters()
	c.send(&pgproto3.BackendKeyData{ProcessID: c.pid, SecretKey: c.secret[:]})
	return user, database, nil
}

// handle processes one message of a ready connection. An error ends the connection.
func (c *conn) handle(msg pgproto3.FrontendMessage) error {
	if c.ignoreTillSync {
		switch msg.(type) {
		case *pgproto3.Sync:
			c.ignoreTillSync = false
			c.endOfTransaction()
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
		// extended protocol and replaces the unnamed statement; one that
		// ends a block ends its portals.
		c.endOfTransaction()
		delete(c.stmts, "")
		c.simpleQuery(m.String)
		c.endOfTransaction()
		c.readyForQuery()
		err := c.flush()
		c.smallOut()
		return err
	case *pgproto3.Terminate:
		return errTerminate
	case *pgproto3.Parse, *pgproto3.Bind, *pgproto3.Describe, *pgproto3.Execute, *pgproto3.Close:
		c.extended(msg)
		// Replies wait for Sync or Flush, but a large output buffer goes now,
		// and so does an error: the Flush a client may send after it is
		// skipped with the rest up to Sync, and PostgreSQL flushes every ERROR
		// (pg-cursor waits for it before it sends Sync).
		if len(c.out) >= flushThreshold || c.ignoreTillSync {
			return c.flush()
		}
		return c.writeErr
	case *pgproto3.Sync:
		c.endOfTransaction()
		c.readyForQuery()
		err := c.flush()
		c.smallOut()
		return err
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

// readyForQuery queues ReadyForQuery with the session's transaction status,
// after the ParameterStatus of any reported parameter that changed.
func (c *conn) readyForQuery() {
	c.reportParameters()
	c.send(&pgproto3.ReadyForQuery{TxStatus: c.txStatus()})
}

// txStatus is the session's transaction status: 'I' idle, 'T' in a block,
// 'E' in a failed block; 'I' for sessions without blocks.
func (c *conn) txStatus() byte {
	if t, ok := c.sess.(Transactioner); ok {
		return t.TxStatus()
	}
	return 'I'
}

// failTransaction fails the session's block, if any: an error was reported.
func (c *conn) failTransaction() {
	if t, ok := c.sess.(Transactioner); ok {
		t.FailTransaction()
	}
}

// endOfTransaction closes the portals unless a transaction block is open:
// PostgreSQL keeps portals until their transaction ends, which outside a
// block is the next Sync (or simple Query). JDBC reads a result a fetch
// size at a time from a portal it executes again after each Sync.
func (c *conn) endOfTransaction() {
	if c.txStatus() == 'I' {
		c.closePortals()
	}
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
// The Observer is told each statement's time.
func (c *conn) setStatement(stop context.CancelFunc) {
	c.mu.Lock()
	c.stmtStop = stop
	c.mu.Unlock()
	if stop != nil {
		c.stmtStart = time.Now()
	} else {
		c.srv.observe(func(o Observer) { o.Statement(time.Since(c.stmtStart)) })
	}
}

// kill cancels whatever the connection does and closes its socket, so that serve
// returns soon. Server.Close calls it from another goroutine.
func (c *conn) kill() {
	c.cancel()
	c.raw.Close()
	if rd := c.reader(); rd != nil {
		rd.close()
	}
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
	err := c.write(c.out)
	c.out = c.out[:0]
	return err
}

// write writes p to the client, or fails as the first failed write did.
func (c *conn) write(p []byte) error {
	if c.writeErr != nil {
		return c.writeErr
	}
	if _, err := c.nc.Write(p); err != nil {
		c.writeErr = err
		c.cancel() // stop whatever still produces output for nobody
	}
	return c.writeErr
}
