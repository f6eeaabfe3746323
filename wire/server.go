package wire

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"
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
	// 0 means 64 MiB.
	MaxMessageSize int
	// StartupTimeout bounds the time from accepting a connection to the end of its
	// startup handshake; 0 means one minute (PostgreSQL's authentication_timeout).
	StartupTimeout time.Duration
}

// DefaultServerVersion is the server_version reported when Options leave it empty.
const DefaultServerVersion = "15.0 (Hummer)"

// Server accepts PostgreSQL client connections and runs their queries in sessions
// opened by a Backend. Its methods are safe for concurrent use.
type Server struct {
	backend Backend
	opts    Options
	log     *slog.Logger

	// wg counts running Serve loops and every connection's goroutines, so that Close
	// can wait for all of them.
	wg sync.WaitGroup

	mu        sync.Mutex
	closed    bool                      // mu.
	done      chan struct{}             // closed by Close.
	listeners map[net.Listener]struct{} // mu.
	conns     map[*conn]struct{}        // mu.
	byPID     map[uint32]*conn          // connections by BackendKeyData process ID. mu.
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
		opts.MaxMessageSize = 64 << 20
	}
	if opts.StartupTimeout <= 0 {
		opts.StartupTimeout = time.Minute
	}
	return &Server{
		backend:   backend,
		opts:      opts,
		log:       opts.Log,
		done:      make(chan struct{}),
		listeners: make(map[net.Listener]struct{}),
		conns:     make(map[*conn]struct{}),
		byPID:     make(map[uint32]*conn),
	}
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

// startConn registers nc and starts its goroutines, or closes it if the server is
// closing.
func (s *Server) startConn(nc net.Conn) {
	ctx, cancel := context.WithCancel(context.Background())
	c := &conn{
		srv:    s,
		nc:     nc,
		ctx:    ctx,
		cancel: cancel,
		log:    s.log.With("remote", nc.RemoteAddr().String()),
	}
	c.rd = newConnReader(nc, cancel)

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		cancel()
		nc.Close()
		return
	}
	s.conns[c] = struct{}{}
	s.wg.Add(2)
	s.mu.Unlock()

	go func() {
		defer s.wg.Done()
		c.rd.run()
	}()
	go func() {
		defer s.wg.Done()
		defer s.forget(c)
		c.serve()
	}()
}

// forget removes a finished connection.
func (s *Server) forget(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, c)
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
// BackendKeyData matches, if any. Like PostgreSQL it tells the requester nothing.
func (s *Server) cancelRequest(pid uint32, secret []byte) {
	s.mu.Lock()
	c := s.byPID[pid]
	s.mu.Unlock()
	if c == nil || subtle.ConstantTimeCompare(c.secret[:], secret) != 1 {
		s.log.Debug("cancel request matches no connection", "pid", pid)
		return
	}
	c.cancelStatement()
}
