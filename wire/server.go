package wire

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hummer-db/hummer/session"
)

// ErrServerClosed is returned by Serve after Close. It wraps net.ErrClosed, so
// callers that treat a closed listener as a normal end need no special case.
var ErrServerClosed = fmt.Errorf("wire: server closed: %w", net.ErrClosed)

// Options configure a Server. The zero value is usable.
type Options struct {
	// Log receives connection and error events; nil discards them.
	Log *slog.Logger
	// ServerVersion is reported to clients as server_version. Clients read its
	// leading "major.minor" to decide which features to use, so it should name a
	// PostgreSQL version whose behaviour the server imitates. Empty means
	// DefaultServerVersion.
	ServerVersion string
	// MaxMessageSize bounds the body of one client message (a query string, say);
	// a longer one ends the connection with an error. 0 means
	// DefaultMaxMessageSize (16 MiB). Memory for a body is allocated as its bytes
	// arrive, never on the word of its header.
	MaxMessageSize int
	// StartupTimeout bounds the time from accepting a connection to the end of its
	// startup handshake, TLS and authentication included; 0 means one minute
	// (PostgreSQL's authentication_timeout).
	StartupTimeout time.Duration

	// Auth is how clients prove who they are; the zero value, AuthTrust, takes
	// their word for it.
	Auth AuthMethod
	// Users is consulted at every login: the user must exist, and its verifier
	// checks the password. Nil accepts every user name under AuthTrust and
	// refuses every login under the password methods.
	Users Users

	// TLS, when set, answers a client's SSLRequest with TLS (its certificate
	// also gives SCRAM-SHA-256-PLUS its channel binding); nil declines TLS.
	TLS *tls.Config
	// TLSRequired refuses clients that do not use TLS (28000). Cancel requests,
	// which libpq sends in plain text, are still served.
	TLSRequired bool

	// MaxConnections bounds the connections served at once; further ones are
	// told 53300 too_many_connections. 0 means DefaultMaxConnections.
	MaxConnections int
	// SuperuserReservedConnections of the MaxConnections are kept for
	// superusers, as PostgreSQL's superuser_reserved_connections: another
	// user is refused (53300) once MaxConnections minus these are open, so
	// a superuser can still get in to KILL what holds them. 0: none; it must
	// be less than MaxConnections.
	SuperuserReservedConnections int

	// Observer, when set, is told of connections, statements and errors.
	Observer Observer
}

// DefaultServerVersion is the server_version reported when Options leave it empty.
const DefaultServerVersion = session.DefaultServerVersion

// Server accepts PostgreSQL client connections and runs their queries in sessions
// opened by a Backend. Its methods are safe for concurrent use.
type Server struct {
	backend Backend
	opts    Options
	log     *slog.Logger

	// wg counts running Serve loops and every connection's goroutines, so that Close
	// can wait for all of them.
	wg sync.WaitGroup

	// mockSecret derives the fake SCRAM salts of unknown users.
	mockSecret [32]byte
	// tlsBinding is the tls-server-end-point channel binding data of
	// opts.TLS's certificate, nil when SCRAM-SHA-256-PLUS is not offered.
	tlsBinding []byte
	cancels    cancelLimiter // failed cancel requests, by host

	mu        sync.Mutex
	closed    bool                      // mu.
	done      chan struct{}             // closed by Close.
	listeners map[net.Listener]struct{} // mu.
	conns     map[*conn]struct{}        // mu.
	byPID     map[uint32]*conn          // connections by BackendKeyData process ID. mu.
	admitted  int                       // connections counted against MaxConnections. mu.
	rejecting int                       // connections beyond it, being refused. mu.

	// internalErrors counts the statements answered XX000 and the panics
	// recovered: each is a bug (InternalErrors).
	internalErrors atomic.Int64

	// onPanic, when set (by tests), is told of every panic a connection
	// recovers from.
	onPanic func(any)
	// onStarve, when set (by tests), becomes every connection reader's onStarve.
	onStarve func()
}

// NewServer returns a server that opens a session on backend for each connection.
func NewServer(backend Backend, opts Options) *Server {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.ServerVersion == "" {
		opts.ServerVersion = DefaultServerVersion
	}
	if opts.MaxMessageSize <= 0 {
		opts.MaxMessageSize = DefaultMaxMessageSize
	}
	if opts.StartupTimeout <= 0 {
		opts.StartupTimeout = time.Minute
	}
	if opts.MaxConnections <= 0 {
		opts.MaxConnections = DefaultMaxConnections
	}
	opts.SuperuserReservedConnections = min(max(opts.SuperuserReservedConnections, 0), opts.MaxConnections-1)
	s := &Server{
		backend:    backend,
		opts:       opts,
		log:        opts.Log,
		tlsBinding: endPointBinding(opts.TLS),
		done:       make(chan struct{}),
		listeners:  make(map[net.Listener]struct{}),
		conns:      make(map[*conn]struct{}),
		byPID:      make(map[uint32]*conn),
	}
	rand.Read(s.mockSecret[:])
	return s
}

// Serve accepts connections on ln, each served on its own goroutine, until ln fails
// or Close is called; then it returns ErrServerClosed (after Close) or the accept
// error. Serve closes ln before returning. It may be called for several listeners.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	s.listeners[ln] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
		ln.Close()
		s.wg.Done()
	}()

	s.log.Debug("accepting PostgreSQL connections", "addr", ln.Addr().String())
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.isClosed() {
				return ErrServerClosed
			}
			// Running out of file descriptors and the like passes; wait and retry as
			// net/http does.
			var te interface{ Temporary() bool }
			if errors.As(err, &te) && te.Temporary() {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.log.Warn("accept failed; retrying", "err", err, "delay", backoff)
				t := time.NewTimer(backoff)
				select {
				case <-t.C:
				case <-s.done:
					t.Stop()
					return ErrServerClosed
				}
				continue
			}
			return err
		}
		backoff = 0
		s.startConn(nc)
	}
}

// Addr returns the address of a listener being served, or nil if there is none.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ln := range s.listeners {
		return ln.Addr()
	}
	return nil
}

// Close stops accepting connections, closes every open connection (cancelling the
// statements they run) and waits until all connection goroutines and Serve loops
// have returned. It is safe to call more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.done)
		for ln := range s.listeners {
			ln.Close()
		}
		for c := range s.conns {
			c.kill()
		}
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// startConn registers nc and starts serving it, or closes it if the server is
// closing or has too many connections already.
func (s *Server) startConn(nc net.Conn) {
	ctx, cancel := context.WithCancel(context.Background())
	c := &conn{
		srv:    s,
		raw:    nc,
		nc:     nc,
		ctx:    ctx,
		cancel: cancel,
		log:    s.log.With("remote", nc.RemoteAddr().String()),
	}

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		cancel()
		nc.Close()
		return
	}
	switch {
	case s.admitted < s.opts.MaxConnections:
		s.admitted++
		c.admitted = true
	case s.rejecting < maxRejecting:
		s.rejecting++ // served up to its startup packet, then refused
	default:
		s.mu.Unlock()
		cancel()
		nc.Close()
		s.log.Warn("connection refused: too many connections, and too many being refused", "remote", nc.RemoteAddr().String())
		return
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()

	s.observe(func(o Observer) { o.Connection(true) })
	go func() {
		defer s.wg.Done()
		defer s.observe(func(o Observer) { o.Connection(false) })
		defer s.forget(c)
		c.serve()
	}()
}

// reservedForSuperusers reports whether the connections open leave only the
// ones reserved for superusers (Options.SuperuserReservedConnections).
func (s *Server) reservedForSuperusers() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.admitted > s.opts.MaxConnections-s.opts.SuperuserReservedConnections
}

// unadmit stops counting c against MaxConnections: it is being refused.
func (s *Server) unadmit(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.admitted {
		c.admitted = false
		s.admitted--
		s.rejecting++
	}
}

// forget removes a finished connection.
func (s *Server) forget(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, c)
	if c.admitted {
		s.admitted--
	} else {
		s.rejecting--
	}
	if s.byPID[c.pid] == c {
		delete(s.byPID, c.pid)
	}
}

// newBackendKey picks c's BackendKeyData: a process ID unique among open
// connections and a random secret that a CancelRequest must repeat.
func (s *Server) newBackendKey(c *conn) {
	var b [8]byte
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		rand.Read(b[:])
		// Keep the ID positive as an int32: clients print it as a PID.
		pid := binary.BigEndian.Uint32(b[:4]) & 0x7fffffff
		if pid == 0 || s.byPID[pid] != nil {
			continue
		}
		c.pid = pid
		copy(c.secret[:], b[4:])
		s.byPID[pid] = c
		return
	}
}

// cancelRequest cancels the statement running on the connection whose
// BackendKeyData matches, if any. Like PostgreSQL it tells the requester
// nothing. Requests that match nothing are rate-limited by the host they come
// from (cancelLimiter).
func (s *Server) cancelRequest(from net.Addr, pid uint32, secret []byte) {
	host := limitKey(from)
	now := time.Now()
	if !s.cancels.allow(host, now) {
		s.log.Debug("cancel request ignored: too many failed cancel requests", "host", host)
		return
	}
	s.mu.Lock()
	c := s.byPID[pid]
	s.mu.Unlock()
	if c == nil || subtle.ConstantTimeCompare(c.secret[:], secret) != 1 {
		s.cancels.failed(host, now)
		s.log.Debug("cancel request matches no connection", "pid", pid, "host", host)
		return
	}
	c.cancelStatement()
}

// InternalErrors is how many statements this server has answered with XX000
// (internal_error) and how many panics its connections recovered from. Each is
// a bug: nothing a client sends should cause one. The log has each one's error
// chain, or the panic's stack.
func (s *Server) InternalErrors() int64 { return s.internalErrors.Load() }
