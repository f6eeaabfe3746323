package network

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime/debug"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
)

// DefaultRegisterWait is how long, when the configuration leaves it zero, a hello
// for a channel not yet registered waits for its registration.
const DefaultRegisterWait = 10 * time.Second

// ServerConfig configures the receiving side of a TaskManager's network
// channels.
type ServerConfig struct {
	// Addr is the address to listen on (--data-addr), such as ":7100" or
	// "127.0.0.1:0". A TaskManager on several networks runs one Server per
	// network.
	Addr string
	// RegisterWait is how long a hello naming a channel that no task has
	// registered yet waits for the registration before it is refused. TaskManagers
	// deploy a job's tasks in no particular order, so a sender may dial before its
	// receiver is built; 0 means DefaultRegisterWait.
	RegisterWait time.Duration
	// HandshakeTimeout bounds how long a new connection may take to send its
	// hello; 0 means DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	Log              *slog.Logger
}

// Server accepts the incoming network channels of one TaskManager on one
// listening port, routes each by its hello to the receiver registered for it, and
// runs one goroutine per channel that decodes frames into the receiving task's
// inbox.
type Server struct {
	cfg  ServerConfig
	ln   net.Listener
	quit chan struct{} // closed by Close
	wg   sync.WaitGroup

	mu     sync.Mutex
	closed bool
	routes map[ChannelKey]*Receiver
	// registered is closed and replaced by every Register, waking the hellos
	// waiting for their channel.
	registered chan struct{}
	conns      map[net.Conn]struct{}
}

// Receiver is the receiving end of one network channel, registered on a
// Server. Its goroutine pushes every message of the channel into the inbox
// given to Register, blocking while the inbox is full.
type Receiver struct {
	key   ChannelKey
	inbox chan<- exec.Message
	mem   memory.Allocator
	stats Stats
	quit  chan struct{} // closed when the receiver is stopped (CloseJob, Close)
	done  chan struct{}
	err   error // set before done closes

	// Guarded by Server.mu.
	claimed bool     // a connection has been routed here
	stopped bool     // quit is closed
	conn    net.Conn // the claiming connection, while it is served
}

// Listen starts a Server listening on cfg.Addr.
func Listen(cfg ServerConfig) (*Server, error) {
	if cfg.RegisterWait <= 0 {
		cfg.RegisterWait = DefaultRegisterWait
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("exec: data address: %w", err)
	}
	s := &Server{
		cfg:        cfg,
		ln:         ln,
		quit:       make(chan struct{}),
		routes:     map[ChannelKey]*Receiver{},
		registered: make(chan struct{}),
		conns:      map[net.Conn]struct{}{},
	}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Addr returns the address the server listens on, for senders to dial.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Register makes the server deliver the channel named by key into inbox, decoding
// its batches with mem (the receiving task's allocator; nil means
// memory.DefaultAllocator). Register before the receiving task starts and before
// the sender is told to connect; a hello that arrives first waits up to
// RegisterWait. Each message delivered carries key.Input and key.Channel; the
// receiving task owns (releases) the batches it takes from the inbox.
func (s *Server) Register(key ChannelKey, inbox chan<- exec.Message, mem memory.Allocator) (*Receiver, error) {
	if inbox == nil {
		return nil, errors.New("exec: Register without an inbox")
	}
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("%w: the data server is closed", ErrChannelClosed)
	}
	if _, dup := s.routes[key]; dup {
		return nil, fmt.Errorf("exec: %s is already registered", key)
	}
	in := &Receiver{key: key, inbox: inbox, mem: mem, quit: make(chan struct{}), done: make(chan struct{})}
	s.routes[key] = in
	close(s.registered)
	s.registered = make(chan struct{})
	return in, nil
}

// CloseJob stops every receiver of job jobID: it closes their connections (the
// senders' writes then fail), waits for their goroutines to exit and releases the
// batch each held undelivered. Batches already in an inbox belong to the
// receiving task, which drains its inbox. A receiver that never got a connection
// ends with ErrJobCancelled.
func (s *Server) CloseJob(jobID string) {
	s.mu.Lock()
	var wait []*Receiver
	for k, in := range s.routes {
		if k.JobID == jobID {
			delete(s.routes, k)
			if s.stopLocked(in) {
				wait = append(wait, in)
			}
		}
	}
	s.mu.Unlock()
	for _, in := range wait {
		<-in.done
	}
}

// stopLocked stops in and reports whether a goroutine is serving it (and will
// close done); otherwise done is closed here. Lock should be held.
func (s *Server) stopLocked(in *Receiver) (served bool) {
	if !in.stopped {
		in.stopped = true
		close(in.quit)
	}
	if in.claimed {
		if in.conn != nil {
			in.conn.Close()
		}
		return true
	}
	in.err = fmt.Errorf("%w: %s was never connected", exec.ErrJobCancelled, in.key)
	close(in.done)
	return false
}

// Close stops accepting, stops every receiver as CloseJob does, and waits for all
// the server's goroutines to exit.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.quit)
	for k, in := range s.routes {
		delete(s.routes, k)
		s.stopLocked(in)
	}
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	err := s.ln.Close()
	s.wg.Wait()
	return err
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			select {
			case <-s.quit:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of descriptors, say: back off rather than spin.
			s.cfg.Log.Warn("accepting a network channel", "err", err)
			t := time.NewTimer(50 * time.Millisecond)
			select {
			case <-t.C:
			case <-s.quit:
				t.Stop()
				return
			}
			continue
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			conn.Close()
			return
		}
		s.conns[conn] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(conn)
	}
}

// serve runs one incoming connection: handshake, then the channel's frames.
func (s *Server) serve(conn net.Conn) {
	defer s.wg.Done()
	defer func() {
		conn.Close()
		s.mu.Lock()
		delete(s.conns, conn)
		s.mu.Unlock()
	}()
	conn.SetDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
	r := bufio.NewReaderSize(conn, netBufSize)
	h, err := readHello(r)
	if err != nil {
		s.cfg.Log.Warn("bad network channel hello", "remote", conn.RemoteAddr(), "err", err)
		if errors.Is(err, ErrNetProtocol) {
			s.writeAck(conn, err.Error())
		}
		return
	}
	in, err := s.claim(h.ChannelKey, conn)
	if err != nil {
		s.cfg.Log.Warn("refused network channel", "remote", conn.RemoteAddr(), "from", h.From, "err", err)
		s.writeAck(conn, err.Error())
		return
	}
	// From here this goroutine owns in.done.
	if err = s.writeAck(conn, ""); err == nil {
		err = conn.SetDeadline(time.Time{})
	}
	if err == nil {
		err = in.run(r)
	}
	s.finish(in, err)
}

// claim finds the receiver registered for key, waiting up to RegisterWait for
// the registration, and routes conn to it.
func (s *Server) claim(key ChannelKey, conn net.Conn) (*Receiver, error) {
	t := time.NewTimer(s.cfg.RegisterWait)
	defer t.Stop()
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, fmt.Errorf("%w: the data server is closing", ErrChannelClosed)
		}
		if in := s.routes[key]; in != nil {
			defer s.mu.Unlock()
			if in.claimed {
				return nil, fmt.Errorf("%w: %s is already connected", ErrUnknownChannel, key)
			}
			in.claimed, in.conn = true, conn
			return in, nil
		}
		registered := s.registered
		s.mu.Unlock()
		select {
		case <-registered:
		case <-t.C:
			return nil, fmt.Errorf("%w: %s is not registered on this TaskManager", ErrUnknownChannel, key)
		case <-s.quit:
			return nil, fmt.Errorf("%w: the data server is closing", ErrChannelClosed)
		}
	}
}

// finish records how in's channel ended and unregisters it.
func (s *Server) finish(in *Receiver, err error) {
	select {
	case <-in.quit:
		if err != nil {
			err = fmt.Errorf("%w: %s", exec.ErrJobCancelled, in.key)
		}
	default:
		if err != nil {
			s.cfg.Log.Warn("network channel failed", "job", in.key.JobID, "task", in.key.To,
				"input", in.key.Input, "channel", in.key.Channel, "err", err)
		}
	}
	s.mu.Lock()
	if s.routes[in.key] == in {
		delete(s.routes, in.key)
	}
	in.conn = nil
	s.mu.Unlock()
	in.err = err
	close(in.done)
}

// writeAck answers a hello: accepted when reason is empty, else refused.
func (s *Server) writeAck(conn net.Conn, reason string) error {
	// Waiting for the registration may have used up the hello's deadline.
	conn.SetWriteDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
	if len(reason) > maxHelloSize {
		reason = reason[:maxHelloSize]
	}
	frame := make([]byte, frameHdrSize+len(reason))
	putFrameHeader(frame, frameAck, len(reason))
	copy(frame[frameHdrSize:], reason)
	_, err := conn.Write(frame)
	return err
}

// Key returns the channel's key.
func (in *Receiver) Key() ChannelKey { return in.key }

// Stats returns the channel's counters.
func (in *Receiver) Stats() *Stats { return &in.stats }

// Done is closed when the channel has ended: after delivering its EndOfStream,
// on a failure, or when stopped by CloseJob or Close.
func (in *Receiver) Done() <-chan struct{} { return in.done }

// Err waits until Done is closed, then returns nil if the channel delivered its EndOfStream,
// else why it ended (ErrNetProtocol, ErrChannelClosed, ErrJobCancelled, a
// network error). The receiving task waits for EndOfStream on every channel, so
// a TaskManager must fail the task when Err is not nil.
func (in *Receiver) Err() error {
	<-in.done
	return in.err
}

// run decodes frames into the inbox until EndOfStream, a failure, or quit. The
// blocking push into the inbox is the channel's flow control: while it waits,
// nothing is read from the socket and TCP holds the sender back.
func (in *Receiver) run(r *bufio.Reader) (err error) {
	defer func() {
		// A decoder bug must fail this channel, not the TaskManager process.
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %s: internal error: %v\n%s", ErrNetProtocol, in.key, p, debug.Stack())
		}
	}()
	for {
		kind, n, err := readFrameHeader(r, MaxFrameSize)
		if err == io.EOF {
			return fmt.Errorf("%w: %s: the sender closed it before end of stream", ErrChannelClosed, in.key)
		}
		if err != nil {
			if errors.Is(err, ErrNetProtocol) {
				return err
			}
			return fmt.Errorf("%w: %s: %w", ErrChannelClosed, in.key, err)
		}
		m := exec.Message{Input: in.key.Input, Channel: in.key.Channel}
		switch kind {
		case frameBatch, frameBatchOps:
			if m.Batch, err = decodeBatch(r, kind, n, in.mem); err != nil {
				return err
			}
			in.stats.Batches.Add(1)
			in.stats.Rows.Add(int64(m.Batch.NumRows()))
		case frameSignal:
			if n != signalPayload {
				return fmt.Errorf("%w: signal frame of %d bytes", ErrNetProtocol, n)
			}
			var p [signalPayload]byte
			if _, err := io.ReadFull(r, p[:]); err != nil {
				return fmt.Errorf("%w: %s: %w", ErrChannelClosed, in.key, truncated(err))
			}
			if m.Signal, err = decodeSignal(p[:]); err != nil {
				return err
			}
			in.stats.Signals.Add(1)
		default:
			return fmt.Errorf("%w: unknown frame kind %d", ErrNetProtocol, kind)
		}
		in.stats.Bytes.Add(int64(frameHdrSize + n))
		select {
		case in.inbox <- m:
		case <-in.quit:
			if m.IsData() {
				m.Batch.Rec.Release()
			}
			return exec.ErrJobCancelled
		}
		if m.Signal.Kind == exec.EndOfStream {
			return nil
		}
	}
}
