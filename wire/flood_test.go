package wire

import (
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// floodHeapBound is what the malformed-frame flood may add to the heap in use
// (runtime.MemStats.HeapInuse, peak during the flood over the idle server's):
// 64 MiB. Each of the floodWorkers connections alive at once holds at most its
// 1 MiB read-ahead buffer, a body no larger than the bytes actually sent, and
// small change, so the expected growth is a few MiB. Allocating what headers
// claim instead would take floodWorkers x 16 MiB = 256 MiB for the frames
// claiming just under the limit, and gigabytes for the others.
const floodHeapBound = 64 << 20

const (
	floodWorkers = 16
	floodConns   = 150 // per worker: 2400 connections
)

// TestMalformedFrameFlood sends thousands of malformed frames (random bytes,
// truncated messages, lengths of gigabytes or just under the limit, startup
// packets too long, messages out of order) over many connections, then checks
// that the server still answers psql and pgx, that the heap in use stayed
// within floodHeapBound of the idle server's, and that the goroutine count came
// back to where it was.
func TestMalformedFrameFlood(t *testing.T) {
	ts := startServerWith(t, Options{MaxConnections: 64, StartupTimeout: 5 * time.Second})
	// One client first, so that everything initialised lazily is in the baseline.
	connect(t, ts, "").Close(testCtx(t))

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	baseHeap := ms.HeapInuse
	baseGoroutines := waitGoroutinesAtMost(t, -1)

	var peak atomic.Uint64
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stopSampling:
				return
			case <-tick.C:
			}
		}
	}()

	var frames atomic.Int64
	var wg sync.WaitGroup
	for w := range floodWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 8))
			for range floodConns {
				n, err := floodOnce(ts.addr, rng)
				frames.Add(int64(n))
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stopSampling)
	<-sampled
	t.Logf("%d malformed frames over %d connections; heap in use %.1f MiB idle, %.1f MiB at the peak",
		frames.Load(), floodWorkers*floodConns, float64(baseHeap)/(1<<20), float64(peak.Load())/(1<<20))
	if grew := int64(peak.Load()) - int64(baseHeap); grew > floodHeapBound {
		t.Errorf("heap in use grew by %.1f MiB during the flood, over the bound of %d MiB", float64(grew)/(1<<20), floodHeapBound>>20)
	}
	if frames.Load() < 5000 {
		t.Errorf("only %d frames sent", frames.Load())
	}
	waitGoroutinesAtMost(t, baseGoroutines)

	// The server still answers, psql and pgx alike.
	if out, _ := psql(t, ts, "-A", "-t", "-c", "SELECT 1"); out != "1\n" {
		t.Errorf("psql after the flood: %q", out)
	}
	var one int64
	if err := connect(t, ts, "").QueryRow(testCtx(t), "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Errorf("pgx after the flood: %d, %v", one, err)
	}
}

// waitGoroutinesAtMost waits until no more than n goroutines run (n < 0: until
// the count stops changing) and returns the count.
func waitGoroutinesAtMost(t *testing.T, n int) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	last := -1
	for {
		now := runtime.NumGoroutine()
		if n >= 0 && now <= n || n < 0 && now == last {
			return now
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, want at most %d:\n%s", now, n, buf[:runtime.Stack(buf, true)])
		}
		last = now
		time.Sleep(20 * time.Millisecond) // polling interval, not synchronisation
	}
}

// floodOnce opens one connection, sends it a random malformed sequence, half
// closes it and reads whatever the server says until it hangs up. It returns
// the number of frames sent; an error is a server that did not hang up.
func floodOnce(addr string, rng *rand.Rand) (int, error) {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	var out []byte
	frames := 0
	frame := func(b []byte) {
		out = append(out, b...)
		frames++
	}
	startup := func() {
		b, _ := (&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30,
			Parameters: map[string]string{"user": "flood"}}).Encode(nil)
		frame(b)
	}
	header := func(typ byte, n uint32) []byte {
		h := []byte{typ, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(h[1:], n)
		return h
	}
	randomBytes := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	types := []byte("BCDEFfdcHPQSXpz\x00")
	malformed := func() {
		switch rng.IntN(8) {
		case 0: // random type and length, random body
			frame(append(header(types[rng.IntN(len(types))], rng.Uint32()), randomBytes(rng.IntN(64))...))
		case 1: // a length of gigabytes
			frame(append(header('Q', 0x40000000+rng.Uint32N(0x3fffffff)), "SELECT"...))
		case 2: // just under the limit, then only a little of it
			frame(append(header('Q', DefaultMaxMessageSize), randomBytes(rng.IntN(8192))...))
		case 3: // negative or too small
			frame(header('B', uint32(rng.IntN(4))))
		case 4: // out of order: Execute/Bind/Describe of nothing, Sync, Copy outside COPY
			for range 1 + rng.IntN(4) {
				msgs := []pgproto3.FrontendMessage{&pgproto3.Execute{Portal: "p"}, &pgproto3.Bind{PreparedStatement: "s"},
					&pgproto3.Describe{ObjectType: 'P', Name: "x"}, &pgproto3.Sync{}, &pgproto3.CopyDone{},
					&pgproto3.CopyData{Data: randomBytes(10)}, &pgproto3.Close{ObjectType: 'S'}, &pgproto3.Flush{}}
				b, _ := msgs[rng.IntN(len(msgs))].Encode(nil)
				frame(b)
			}
		case 5: // a well-framed message with a malformed body
			typ := []byte("PBDECQ")[rng.IntN(6)]
			body := randomBytes(rng.IntN(32))
			frame(append(header(typ, uint32(len(body)+4)), body...))
		case 6: // truncated: a header and part of its body, then the end
			frame(append(header('P', 100), "abc"...))
		default: // random bytes
			frame(randomBytes(1 + rng.IntN(4096)))
		}
	}
	switch rng.IntN(6) {
	case 0: // garbage instead of a startup packet
		frame(randomBytes(1 + rng.IntN(512)))
	case 1: // startup packets that are too long, or claim gigabytes
		n := []uint32{10001, 1 << 20, 0x7fffffff, 0xffffffff}[rng.IntN(4)]
		frame(append(binary.BigEndian.AppendUint32(nil, n), 0, 3, 0, 0))
	case 2: // SSLRequest, then garbage
		frame(binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, 8), codeSSLRequest))
		frame(randomBytes(1 + rng.IntN(256)))
	case 3: // cancel requests with made-up keys
		b, _ := (&pgproto3.CancelRequest{ProcessID: rng.Uint32(), SecretKey: randomBytes(4)}).Encode(nil)
		frame(b)
	default: // a proper startup, then malformed frames
		startup()
		for range 1 + rng.IntN(6) {
			malformed()
		}
	}
	nc.Write(out) // the server may hang up before reading it all
	if tcp, ok := nc.(*net.TCPConn); ok {
		tcp.CloseWrite()
	}
	if _, err := io.Copy(io.Discard, nc); err != nil && !isReset(err) {
		return frames, err
	}
	return frames, nil
}

// isReset reports whether err is the server resetting the connection, which
// closing a socket with unread input does.
func isReset(err error) bool { return errors.Is(err, syscall.ECONNRESET) }
