package network

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
)

// DefaultHandshakeTimeout bounds, when the configuration leaves it zero,
// connecting a network channel plus waiting for the receiver to accept it (on
// the sending side), or waiting for a new connection's hello (on the receiving
// side).
const DefaultHandshakeTimeout = 30 * time.Second

// aLongTimeAgo is a deadline in the past: setting it makes a blocked read or write
// return at once.
var aLongTimeAgo = time.Unix(1, 0)

// DialConfig says where and how the sending end of a network channel connects.
type DialConfig struct {
	// Addr is the data address (--data-addr) of the receiving TaskManager.
	Addr string
	// LocalAddr, when not empty, is the local IP ("10.1.0.5") or IP:port the
	// connection leaves from. It lets an edge use a chosen network interface, as
	// the paper's per-edge networks do (--network stream=ADDR --network batch=ADDR).
	LocalAddr string
	// Key names the receiving end; From is the sending task, for the receiver's logs.
	Key  ChannelKey
	From exec.TaskID
	// Alloc serves the scratch buffers the IPC writer needs (the sending task's
	// allocator); nil means memory.DefaultAllocator.
	Alloc memory.Allocator
	// HandshakeTimeout bounds connecting plus the receiver's acceptance, which may
	// include waiting for the receiving task to register; 0 means
	// DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
}

// Sender is the sending end of one network channel. It stands where a local
// channel's inbox would: a task writes to it through send, which has the
// contract of LocalChannel.Push. One goroutine sends at a time; Close and the
// counters may be used from any goroutine.
type Sender struct {
	key  ChannelKey
	conn net.Conn
	w    *bufio.Writer
	mem  memory.Allocator
	buf  bytes.Buffer // the batch frame being encoded, reused across sends
	// maxFrame is MaxFrameSize, lowered by tests of the splitting.
	maxFrame int
	stats    Stats
	// err is set once the connection is unusable (a failed or interrupted write
	// may have left half a frame on it); every later send returns it.
	err       error
	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// Dial connects to the receiving TaskManager, names the channel in a hello
// and waits for the receiver to accept it. ctx bounds the handshake only; each
// send obeys its own context.
func Dial(ctx context.Context, cfg DialConfig) (*Sender, error) {
	timeout := cfg.HandshakeTimeout
	if timeout <= 0 {
		timeout = DefaultHandshakeTimeout
	}
	d := net.Dialer{Timeout: timeout}
	if cfg.LocalAddr != "" {
		la, err := resolveLocalAddr(cfg.LocalAddr)
		if err != nil {
			return nil, fmt.Errorf("exec: local address for %s: %w", cfg.Key, err)
		}
		d.LocalAddr = la
	}
	conn, err := d.DialContext(ctx, "tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("exec: connecting %s to %s: %w", cfg.Key, cfg.Addr, err)
	}
	if err := handshake(ctx, conn, cfg, timeout); err != nil {
		conn.Close()
		return nil, err
	}
	mem := cfg.Alloc
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	return &Sender{key: cfg.Key, conn: conn, w: bufio.NewWriterSize(conn, netBufSize), mem: mem,
		maxFrame: MaxFrameSize}, nil
}

func resolveLocalAddr(a string) (*net.TCPAddr, error) {
	if _, _, err := net.SplitHostPort(a); err != nil {
		a = net.JoinHostPort(a, "0")
	}
	return net.ResolveTCPAddr("tcp", a)
}

// handshake sends the hello and reads the receiver's ack.
func handshake(ctx context.Context, conn net.Conn, cfg DialConfig, timeout time.Duration) error {
	hello, err := encodeHello(channelHello{Version: netVersion, ChannelKey: cfg.Key, From: cfg.From})
	if err != nil {
		return err
	}
	conn.SetDeadline(time.Now().Add(timeout))
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(aLongTimeAgo) })
	var (
		kind   byte
		reason []byte
	)
	_, err = conn.Write(hello)
	if err == nil {
		var n int
		if kind, n, err = readFrameHeader(conn, maxHelloSize); err == nil {
			reason = make([]byte, n)
			_, err = io.ReadFull(conn, reason)
		}
	}
	if !stop() {
		return context.Cause(ctx)
	}
	if err != nil {
		return fmt.Errorf("exec: handshake of %s with %s: %w", cfg.Key, cfg.Addr, err)
	}
	if kind != frameAck {
		return fmt.Errorf("%w: %s answered the hello with a frame of kind %d", ErrNetProtocol, cfg.Addr, kind)
	}
	if len(reason) > 0 {
		return fmt.Errorf("exec: %s refused %s: %s", cfg.Addr, cfg.Key, reason)
	}
	return conn.SetDeadline(time.Time{})
}

// Key returns the channel's key.
func (s *Sender) Key() ChannelKey { return s.key }

// Stats returns the channel's counters.
func (s *Sender) Stats() *Stats { return &s.stats }

// Send writes one message: the batch b when sig.Kind is 0, else the signal sig.
// The batch is borrowed: it is serialised during the call and the caller keeps
// its reference. Send returns once the frame is handed to the kernel; it blocks
// while the receiver applies backpressure, until ctx is cancelled. After a failed
// or interrupted write the channel is unusable and every later Send fails.
func (s *Sender) Send(ctx context.Context, b exec.Batch, sig exec.Signal) error {
	if s.err != nil {
		return s.err
	}
	if s.closed.Load() {
		return fmt.Errorf("%w: %s: send after Close", ErrChannelClosed, s.key)
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	var stop func() bool
	if ctx.Done() != nil {
		// A write blocked by backpressure returns when ctx is done.
		stop = context.AfterFunc(ctx, func() { s.conn.SetWriteDeadline(aLongTimeAgo) })
	}
	var err error
	if sig.Kind != 0 {
		err = s.writeSignal(sig)
	} else {
		err = s.writeBatch(b)
	}
	if stop != nil && !stop() {
		// The deadline is spoiled (or about to be); the connection is done for.
		s.fail(context.Cause(ctx))
		return context.Cause(ctx)
	}
	return err
}

// Push is Send with the ownership contract of LocalChannel.Push, so a Sender can
// stand where a local channel does: on success the caller's reference to b
// passes on (the batch is released once serialised, as the receiving task would
// release it); on failure the caller still holds it.
func (s *Sender) Push(ctx context.Context, b exec.Batch, sig exec.Signal) error {
	if err := s.Send(ctx, b, sig); err != nil {
		return err
	}
	if sig.Kind == 0 {
		b.Rec.Release()
	}
	return nil
}

// Close closes the connection. After an EndOfStream this is the channel's clean
// end; before it, the receiver fails the channel. Close may be called from any
// goroutine, also while a Send is blocked (which then fails), and twice.
func (s *Sender) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.closeErr = s.conn.Close()
	})
	return s.closeErr
}

// fail marks the connection unusable and closes it.
func (s *Sender) fail(err error) {
	if s.err == nil {
		s.err = fmt.Errorf("%w: %s: %w", ErrChannelClosed, s.key, err)
	}
	s.Close()
}

// writeFrame writes one whole frame and flushes it.
func (s *Sender) writeFrame(frame []byte) error {
	_, err := s.w.Write(frame)
	if err == nil {
		err = s.w.Flush()
	}
	if err != nil {
		s.fail(err)
		return s.err
	}
	s.stats.Bytes.Add(int64(len(frame)))
	return nil
}

func (s *Sender) writeSignal(sig exec.Signal) error {
	var frame [frameHdrSize + signalPayload]byte
	putFrameHeader(frame[:], frameSignal, signalPayload)
	encodeSignal(frame[frameHdrSize:], sig)
	if err := s.writeFrame(frame[:]); err != nil {
		return err
	}
	s.stats.Signals.Add(1)
	return nil
}

// writeBatch encodes b into one frame, or into several when its encoding would
// exceed MaxFrameSize (halving the rows until each part fits), and writes it.
func (s *Sender) writeBatch(b exec.Batch) error {
	if b.Rec == nil {
		return errors.New("exec: sending a batch without a record")
	}
	rows := b.NumRows()
	if b.Ops != nil && len(b.Ops) != rows {
		return fmt.Errorf("exec: batch of %d rows with %d change kinds", rows, len(b.Ops))
	}
	if err := s.encodeBatch(b); err != nil {
		return err
	}
	if s.buf.Len()-frameHdrSize > s.maxFrame {
		if rows < 2 {
			return fmt.Errorf("exec: one row encodes to %d bytes, more than a frame may hold (%d)",
				s.buf.Len()-frameHdrSize, s.maxFrame)
		}
		for _, r := range [2][2]int{{0, rows / 2}, {rows / 2, rows}} {
			part := exec.Batch{Rec: b.Rec.NewSlice(int64(r[0]), int64(r[1]))}
			if b.Ops != nil {
				part.Ops = b.Ops[r[0]:r[1]]
			}
			err := s.writeBatch(part)
			part.Rec.Release()
			if err != nil {
				return err
			}
		}
		return nil
	}
	if err := s.writeFrame(s.buf.Bytes()); err != nil {
		return err
	}
	s.stats.Batches.Add(1)
	s.stats.Rows.Add(int64(rows))
	return nil
}

// encodeBatch leaves in s.buf the whole frame of b, header included.
func (s *Sender) encodeBatch(b exec.Batch) error {
	s.buf.Reset()
	var hdr [frameHdrSize]byte
	s.buf.Write(hdr[:])
	kind := frameBatch
	if len(b.Ops) > 0 {
		kind = frameBatchOps
		var cnt [4]byte
		binary.BigEndian.PutUint32(cnt[:], uint32(len(b.Ops)))
		s.buf.Write(cnt[:])
		s.buf.Grow(len(b.Ops))
		for _, k := range b.Ops {
			s.buf.WriteByte(byte(k))
		}
	}
	w := ipc.NewWriter(&s.buf, ipc.WithSchema(b.Rec.Schema()), ipc.WithAllocator(s.mem))
	if err := w.Write(b.Rec); err != nil {
		w.Close()
		return fmt.Errorf("exec: encoding a batch for %s: %w", s.key, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("exec: encoding a batch for %s: %w", s.key, err)
	}
	if n := s.buf.Len() - frameHdrSize; n <= s.maxFrame {
		putFrameHeader(s.buf.Bytes(), kind, n)
	}
	return nil
}
