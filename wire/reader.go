package wire

import (
	"io"
	"net"
	"sync"
)

// readAheadLimit bounds the bytes a connReader holds that the connection has not
// consumed yet: a client that pipelines more than this is simply not read further
// until the server catches up.
const readAheadLimit = 1 << 20

// connReader reads a client socket on its own goroutine and hands the bytes to the
// protocol decoder through Read.
//
// Why a goroutine: a streaming statement can run for hours without producing a row,
// and the only way to notice that its client went away is to keep reading the socket
// (PostgreSQL polls it for the same reason, see client_connection_check_interval).
// When the read fails, onClose cancels the connection's context and with it the
// running statement. Simple-protocol clients send nothing while a statement runs,
// so in practice the buffer holds at most a Terminate or a pipelined query.
type connReader struct {
	nc      net.Conn
	onClose func()

	mu      sync.Mutex
	cond    sync.Cond
	buf     []byte // read from the socket, not yet returned by Read. mu.
	err     error  // the error that ended reading. mu.
	closed  bool   // close was called. mu.
	waiting bool   // a Read waits for bytes with none buffered. mu.

	// onStarve, when set (by tests), is called with mu held whenever a Read
	// starts waiting for bytes: the connection has handled all it was sent.
	onStarve func()
}

func newConnReader(nc net.Conn, onClose func()) *connReader {
	r := &connReader{nc: nc, onClose: onClose}
	r.cond.L = &r.mu
	return r
}

// run reads the socket until it fails or close is called. It runs on its own
// goroutine.
func (r *connReader) run() {
	var chunk [16 << 10]byte
	for {
		r.mu.Lock()
		for len(r.buf) >= readAheadLimit && !r.closed {
			r.cond.Wait()
		}
		closed := r.closed
		r.mu.Unlock()
		if closed {
			return
		}

		n, err := r.nc.Read(chunk[:])

		r.mu.Lock()
		r.buf = append(r.buf, chunk[:n]...)
		if err != nil && r.err == nil {
			r.err = err
		}
		r.cond.Broadcast()
		r.mu.Unlock()
		if err != nil {
			r.onClose()
			return
		}
	}
}

// Read returns buffered bytes, waiting for some if there are none. After the socket
// failed it returns the buffered rest and then the failure.
func (r *connReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for len(r.buf) == 0 && r.err == nil && !r.closed {
		r.waiting = true
		if r.onStarve != nil {
			r.onStarve()
		}
		r.cond.Wait()
		r.waiting = false
	}
	if len(r.buf) > 0 {
		n := copy(p, r.buf)
		r.buf = r.buf[n:]
		if len(r.buf) == 0 {
			r.buf = r.buf[:0:0] // let the next append start a small buffer afresh
		}
		r.cond.Broadcast()
		return n, nil
	}
	if r.err != nil {
		return 0, r.err
	}
	return 0, io.ErrClosedPipe
}

// starving reports whether a Read waits for bytes the client has not sent
// (waiting is still set while a woken Read has not run yet: buf tells).
func (r *connReader) starving() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.waiting && len(r.buf) == 0 && r.err == nil
}

// failed reports whether reading the socket has failed, that is whether the client
// is gone (or Server.Close closed the socket).
func (r *connReader) failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err != nil || r.closed
}

// close stops run once the socket is closed too, and wakes any Read.
func (r *connReader) close() {
	r.mu.Lock()
	r.closed = true
	r.cond.Broadcast()
	r.mu.Unlock()
}
