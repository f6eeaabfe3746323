// Package network is the data plane between TaskManagers: network channels,
// which carry one ExecEdge's batches and signals as Arrow IPC over TCP
// (this file, ipc.go), their sending end (Sender, sender.go), the data server
// of a TaskManager that receives them into its tasks' inboxes (Server,
// server.go), and the paper's network tasks (task.go), which run the sending
// side of an edge beside its producer instead of in it.
//
// It may import exec and nothing else of Hummer's: what a channel writes to is
// a task's inbox, a chan exec.Message.
//
// An ExecEdge with Network set joins a sending task on one TaskManager to a
// receiving task on another. As in the paper, the edge becomes ordinary pieces on
// either side: on the sending TaskManager a Sender stands where the receiver's
// inbox would be (it has the Push method of a local channel), and on the receiving
// TaskManager a Server goroutine reads the socket and pushes into the
// receiving task's inbox, exactly as a local sender would. Neither task knows the
// edge crosses the network.
//
// # Wire format
//
// One TCP connection carries one channel, one way (plus one reply during the
// handshake). Everything on it is a frame:
//
//	[uint32 length, big-endian][uint8 kind][payload: length bytes]
//
// length counts the payload only and may not exceed MaxFrameSize (256 MiB); a
// larger claim is a protocol error before anything is allocated for it. Kinds:
//
//   - 1 hello (sender -> receiver, first frame): JSON
//     {"v":1,"job":..,"to":{"vertex":..,"subtask":..},"input":..,"channel":..,"from":{..}},
//     at most 64 KiB. It names the receiving end, so one listening port per
//     TaskManager accepts every incoming channel and routes each to its inbox.
//   - 2 ack (receiver -> sender, reply to hello): empty when the channel is
//     accepted, else a UTF-8 reason, after which the receiver closes.
//   - 3 batch: one Batch whose rows are all inserts (Ops nil), as an Arrow IPC
//     stream: schema message, one record batch message, end-of-stream marker.
//   - 4 batch with change kinds: [uint32 n, big-endian][n bytes, one ChangeKind
//     per row][Arrow IPC stream as in kind 3]; n equals the record's row count.
//     The change kinds travel in the frame rather than as an extra column, so the
//     receiver gets the record the sender had without rebuilding it.
//   - 5 signal: 17 bytes, [uint8 SignalKind][int64 watermark][int64 checkpoint],
//     big-endian. Signals travel in band, so they stay in order with the data;
//     EndOfStream is the last frame of a channel.
//
// Each batch frame is a complete IPC stream (schema included), so frames decode
// independently and a schema change needs nothing special; the schema costs a few
// hundred bytes per batch. The receiver reads each IPC message body straight from
// the socket's buffer into memory of the receiving task's allocator, and the
// decoded record's columns point into that memory (no further copy). Before
// arrow-go parses any metadata the receiver checks it (ipc.go): only flat
// schemas of the engine's types, every buffer inside the frame, so a corrupt or
// hostile frame is an error and never an allocation of what it claims.
//
// A sender splits a batch whose frame would exceed MaxFrameSize into row ranges;
// the receiver then sees several smaller batches, which no operator can tell
// from the original.
//
// # Flow control
//
// There is no credit protocol: the receiving goroutine pushes each decoded message
// into the task's bounded inbox with a blocking send and reads nothing more from
// the socket meanwhile. When the inbox is full the socket's receive buffer fills,
// TCP's window closes, the sender's socket buffer fills and the sending task's
// send blocks. Backpressure therefore crosses the network exactly as it crosses a
// local queue, with the kernel's socket buffers as extra slack.
package network

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
)

// MaxFrameSize bounds the payload length a frame may claim. A sender splits a
// batch whose encoding would exceed it; a receiver fails the channel on a larger
// claim instead of allocating it.
const MaxFrameSize = 256 << 20

const (
	netVersion    = 1
	maxHelloSize  = 64 << 10
	frameHdrSize  = 5
	signalPayload = 17
	// netBufSize is the size of the bufio buffers on both ends: big enough that a
	// signal or a small batch is one syscall, small beside a socket buffer.
	netBufSize = 64 << 10
)

// Frame kinds; see the wire format above.
const (
	frameHello    byte = 1
	frameAck      byte = 2
	frameBatch    byte = 3
	frameBatchOps byte = 4
	frameSignal   byte = 5
)

// ChannelKey names the receiving end of one network channel: the job, the
// receiving task, its input and the channel number the receiver knows the sender
// by (ExecEdge.Channel). The hello frame carries it so the receiving TaskManager
// can route the connection.
type ChannelKey struct {
	JobID   string      `json:"job"`
	To      exec.TaskID `json:"to"`
	Input   int         `json:"input"`
	Channel int         `json:"channel"`
}

// EdgeChannelKey returns the key of the channel an ExecEdge of job jobID describes.
func EdgeChannelKey(jobID string, e *exec.ExecEdge) ChannelKey {
	return ChannelKey{JobID: jobID, To: e.To, Input: e.Input, Channel: e.Channel}
}

func (k ChannelKey) String() string {
	return fmt.Sprintf("job %s task %s input %d channel %d", k.JobID, k.To, k.Input, k.Channel)
}

// Stats counts the traffic of one end of a network channel. Fields are
// updated atomically by the channel and may be read at any time (EXPLAIN ANALYZE).
type Stats struct {
	// Bytes counts every byte of every data and signal frame, headers included
	// (the handshake is not counted), so both ends of a channel agree.
	Bytes atomic.Int64
	// Batches counts batch frames (a batch split to fit MaxFrameSize counts once
	// per part), Rows their rows, Signals the signal frames.
	Batches atomic.Int64
	Rows    atomic.Int64
	Signals atomic.Int64
}

// channelHello is the payload of a hello frame.
type channelHello struct {
	Version int `json:"v"`
	ChannelKey
	From exec.TaskID `json:"from"`
}

func putFrameHeader(hdr []byte, kind byte, n int) {
	binary.BigEndian.PutUint32(hdr, uint32(n))
	hdr[4] = kind
}

// readFrameHeader reads a frame header and checks the claimed length against max.
// It returns io.EOF only when the stream ends cleanly between frames.
func readFrameHeader(r io.Reader, max int) (kind byte, n int, err error) {
	var hdr [frameHdrSize]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, 0, err
	}
	n64 := int64(binary.BigEndian.Uint32(hdr[:4]))
	if n64 > int64(max) {
		return 0, 0, fmt.Errorf("%w: frame of kind %d claims %d bytes, more than %d",
			ErrNetProtocol, hdr[4], n64, max)
	}
	return hdr[4], int(n64), nil
}

func encodeSignal(p []byte, s exec.Signal) {
	p[0] = byte(s.Kind)
	binary.BigEndian.PutUint64(p[1:], uint64(s.Watermark))
	binary.BigEndian.PutUint64(p[9:], uint64(s.Checkpoint))
}

func decodeSignal(p []byte) (exec.Signal, error) {
	s := exec.Signal{
		Kind:       exec.SignalKind(p[0]),
		Watermark:  int64(binary.BigEndian.Uint64(p[1:])),
		Checkpoint: int64(binary.BigEndian.Uint64(p[9:])),
	}
	if s.Kind < exec.Watermark || s.Kind > exec.Idle {
		return exec.Signal{}, fmt.Errorf("%w: unknown signal kind %d", ErrNetProtocol, p[0])
	}
	return s, nil
}

func encodeHello(h channelHello) ([]byte, error) {
	js, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	if len(js) > maxHelloSize {
		return nil, fmt.Errorf("exec: hello of %d bytes is too long", len(js))
	}
	frame := make([]byte, frameHdrSize+len(js))
	putFrameHeader(frame, frameHello, len(js))
	copy(frame[frameHdrSize:], js)
	return frame, nil
}

// readHello reads the first frame of a connection, which must be a hello.
func readHello(r io.Reader) (channelHello, error) {
	var h channelHello
	kind, n, err := readFrameHeader(r, maxHelloSize)
	if err != nil {
		return h, err
	}
	if kind != frameHello {
		return h, fmt.Errorf("%w: first frame has kind %d, not hello", ErrNetProtocol, kind)
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		return h, err
	}
	if err := json.Unmarshal(p, &h); err != nil {
		return h, fmt.Errorf("%w: bad hello: %v", ErrNetProtocol, err)
	}
	if h.Version != netVersion {
		return h, fmt.Errorf("%w: hello of protocol version %d, want %d", ErrNetProtocol, h.Version, netVersion)
	}
	return h, nil
}

// decodeBatch reads the payload (n bytes) of a batch frame of the given kind from
// r and decodes it into a Batch whose memory comes from mem. The caller owns the
// result. Every allocation is bounded by n, whatever the payload claims inside.
func decodeBatch(r *bufio.Reader, kind byte, n int, mem memory.Allocator) (b exec.Batch, err error) {
	lr := &io.LimitedReader{R: r, N: int64(n)}
	if kind == frameBatchOps {
		var cnt [4]byte
		if _, err := io.ReadFull(lr, cnt[:]); err != nil {
			return exec.Batch{}, fmt.Errorf("%w: batch frame: %w", ErrNetProtocol, truncated(err))
		}
		c := int64(binary.BigEndian.Uint32(cnt[:]))
		if c > lr.N {
			return exec.Batch{}, fmt.Errorf("%w: %d change kinds in a frame of %d bytes", ErrNetProtocol, c, n)
		}
		raw := make([]byte, c)
		if _, err := io.ReadFull(lr, raw); err != nil {
			return exec.Batch{}, fmt.Errorf("%w: batch frame: %w", ErrNetProtocol, truncated(err))
		}
		b.Ops = make([]exec.ChangeKind, c)
		for i, k := range raw {
			if exec.ChangeKind(k) > exec.UpdateAfter {
				return exec.Batch{}, fmt.Errorf("%w: unknown change kind %d", ErrNetProtocol, k)
			}
			b.Ops[i] = exec.ChangeKind(k)
		}
	}
	rd, err := ipc.NewReaderFromMessageReader(newNetMessageReader(lr, mem), ipc.WithAllocator(mem))
	if err != nil {
		return exec.Batch{}, fmt.Errorf("%w: batch frame: %w", ErrNetProtocol, err)
	}
	defer rd.Release()
	if !rd.Next() {
		if err := rd.Err(); err != nil {
			return exec.Batch{}, fmt.Errorf("%w: batch frame: %w", ErrNetProtocol, err)
		}
		return exec.Batch{}, fmt.Errorf("%w: batch frame without a record batch", ErrNetProtocol)
	}
	rec := rd.RecordBatch()
	if b.Ops != nil && int64(len(b.Ops)) != rec.NumRows() {
		return exec.Batch{}, fmt.Errorf("%w: %d change kinds for %d rows", ErrNetProtocol, len(b.Ops), rec.NumRows())
	}
	// What is left is the IPC end-of-stream marker (8 bytes) the sender writes.
	if lr.N > 8 {
		return exec.Batch{}, fmt.Errorf("%w: %d unexpected bytes after the record batch", ErrNetProtocol, lr.N)
	}
	if _, err := io.Copy(io.Discard, lr); err != nil {
		return exec.Batch{}, fmt.Errorf("%w: batch frame: %w", ErrNetProtocol, truncated(err))
	}
	rec.Retain()
	b.Rec = rec
	return b, nil
}

func truncated(err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return err
}
