package network

// Tests of the receiver against corrupt and hostile frames.

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/vector"
)

// netEncodeFrame returns the frame a Sender writes for b.
func netEncodeFrame(t testing.TB, b exec.Batch) []byte {
	t.Helper()
	s := &Sender{mem: memory.DefaultAllocator, maxFrame: MaxFrameSize}
	if err := s.encodeBatch(b); err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(s.buf.Bytes())
}

func netRawFrame(kind byte, payload []byte) []byte {
	f := make([]byte, frameHdrSize+len(payload))
	putFrameHeader(f, kind, len(payload))
	copy(f[frameHdrSize:], payload)
	return f
}

func TestNetChannelCorruptFrames(t *testing.T) {
	good := netInt64Batch(memory.DefaultAllocator, 0, 3)
	defer good.Rec.Release()
	goodFrame := netEncodeFrame(t, good)

	short := bytes.Clone(goodFrame)
	putFrameHeader(short, frameBatch, len(short)-frameHdrSize-40)

	opsPayload := binary.BigEndian.AppendUint32(nil, 2)
	opsPayload = append(opsPayload, 0, 1)
	opsPayload = append(opsPayload, goodFrame[frameHdrSize:]...)
	badOps := binary.BigEndian.AppendUint32(nil, 3)
	badOps = append(badOps, 0, 9, 1)
	badOps = append(badOps, goodFrame[frameHdrSize:]...)

	// Offsets that decrease: the IPC writer copies them as they are.
	offs := memory.NewBufferBytes(arrow.Int32Traits.CastToBytes([]int32{0, 3, 1}))
	strData := array.NewData(arrow.BinaryTypes.String, 2,
		[]*memory.Buffer{nil, offs, memory.NewBufferBytes([]byte("abc"))}, nil, 0, 0)
	strCol := array.MakeFromData(strData)
	strData.Release()
	strRec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String}}, nil),
		[]arrow.Array{strCol}, 2)
	strCol.Release()
	badStrings := netEncodeFrame(t, exec.Batch{Rec: strRec})
	strRec.Release()

	uint8Col := array.NewData(arrow.PrimitiveTypes.Uint8, 1,
		[]*memory.Buffer{nil, memory.NewBufferBytes([]byte{7})}, nil, 0, 0)
	u8 := array.MakeFromData(uint8Col)
	uint8Col.Release()
	u8Rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "u", Type: arrow.PrimitiveTypes.Uint8}}, nil),
		[]arrow.Array{u8}, 1)
	u8.Release()
	foreignType := netEncodeFrame(t, exec.Batch{Rec: u8Rec})
	u8Rec.Release()

	garbage := make([]byte, 200)
	for i := range garbage {
		garbage[i] = byte(i * 37)
	}
	cases := []struct {
		name  string
		bytes []byte
		want  error
	}{
		{"bad kind", netRawFrame(0x77, nil), ErrNetProtocol},
		{"huge length", []byte{0xff, 0xff, 0xff, 0xf0, frameBatch}, ErrNetProtocol},
		{"hello again", netRawFrame(frameHello, []byte(`{}`)), ErrNetProtocol},
		{"garbage ipc", netRawFrame(frameBatch, garbage), ErrNetProtocol},
		{"empty batch frame", netRawFrame(frameBatch, nil), ErrNetProtocol},
		{"ipc longer than its frame", short, ErrNetProtocol},
		{"trailing bytes", netRawFrame(frameBatch, append(goodFrame[frameHdrSize:], garbage...)), ErrNetProtocol},
		{"change kinds for other rows", netRawFrame(frameBatchOps, opsPayload), ErrNetProtocol},
		{"unknown change kind", netRawFrame(frameBatchOps, badOps), ErrNetProtocol},
		{"too many change kinds", netRawFrame(frameBatchOps, []byte{0xff, 0, 0, 0, 1}), ErrNetProtocol},
		{"decreasing string offsets", badStrings, ErrNetProtocol},
		{"type the engine lacks", foreignType, ErrNetProtocol},
		{"short signal", netRawFrame(frameSignal, []byte{3}), ErrNetProtocol},
		{"unknown signal", netRawFrame(frameSignal, make([]byte, signalPayload)), ErrNetProtocol},
		{"cut mid-frame", goodFrame[:len(goodFrame)-10], netErrCut},
		{"closed before end of stream", nil, ErrChannelClosed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer netTestNoLeaks(t)()
			mem := testkit.Mem()
			defer mem.AssertSize(t, 0)
			srv := netTestServer(t, ServerConfig{})
			defer srv.Close()
			inbox := make(chan exec.Message, 4)
			defer netReleaseAll(inbox)
			rcv := netTestRawChannel(t, srv, inbox, mem, c.bytes)
			netWaitDone(t, "the receiver to fail", rcv.Done())
			err := rcv.Err()
			t.Log(err)
			if c.want == netErrCut {
				if err == nil || !strings.Contains(err.Error(), "unexpected EOF") {
					t.Fatalf("got %v, want unexpected EOF", err)
				}
				return
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
	t.Run("bad hellos", func(t *testing.T) {
		defer netTestNoLeaks(t)()
		srv := netTestServer(t, ServerConfig{})
		defer srv.Close()
		for _, first := range [][]byte{
			netRawFrame(frameBatch, goodFrame),
			{0, 1, 0, 1, frameHello}, // longer than a hello may be
			netRawFrame(frameHello, []byte("not json")),
			netRawFrame(frameHello, []byte(`{"v": 99}`)),
		} {
			conn, err := net.Dial("tcp", srv.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			conn.SetDeadline(time.Now().Add(netTestWait))
			conn.Write(first)
			kind, n, err := readFrameHeader(conn, maxHelloSize)
			if err != nil || kind != frameAck || n == 0 {
				t.Errorf("first frame %x: got kind %d, %d bytes, %v; want a refusal", first[:5], kind, n, err)
			}
			conn.Close()
		}
	})
	t.Run("flipped bytes", func(t *testing.T) {
		// Whatever a corrupted batch frame holds, the channel either delivers a
		// batch or fails; it neither crashes nor leaks.
		defer netTestNoLeaks(t)()
		mem := testkit.Mem()
		defer mem.AssertSize(t, 0)
		srv := netTestServer(t, ServerConfig{})
		defer srv.Close()
		rec := testkit.Record(t, memory.DefaultAllocator, netTestSchema, netTestRows)
		frame := netEncodeFrame(t, exec.Batch{Rec: rec})
		rec.Release()
		rng := rand.New(rand.NewPCG(1, 2))
		failed := 0
		for i := range 300 {
			f := bytes.Clone(frame)
			for range 1 + rng.IntN(4) {
				f[frameHdrSize+rng.IntN(len(f)-frameHdrSize)] ^= byte(1 + rng.IntN(255))
			}
			f = append(f, netRawFrame(frameSignal, make([]byte, signalPayload))...) // unknown signal: always an error
			inbox := make(chan exec.Message, 4)
			rcv := netTestRawChannel(t, srv, inbox, mem, f, i)
			netWaitDone(t, "the receiver", rcv.Done())
			if rcv.Err() == nil {
				t.Fatal("an unknown signal was accepted")
			}
			if len(inbox) == 0 {
				failed++
			}
			netReleaseAll(inbox)
		}
		t.Logf("%d of 300 corrupted frames failed the channel at once", failed)
	})
}

// netErrCut marks the case whose error is a cut stream.
var netErrCut = errors.New("unexpected EOF")

// netTestRawChannel registers a channel, connects to it by hand with a valid
// hello and writes raw bytes after it, then closes the connection.
func netTestRawChannel(t testing.TB, srv *Server, inbox chan exec.Message, mem memory.Allocator, raw []byte, n ...int) *Receiver {
	t.Helper()
	key := ChannelKey{JobID: "raw", To: exec.TaskID{Vertex: 1, Subtask: 0}}
	if len(n) > 0 {
		key.Channel = n[0]
	}
	rcv, err := srv.Register(key, inbox, mem)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(netTestWait))
	hello, err := encodeHello(channelHello{Version: netVersion, ChannelKey: key})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write(hello); err != nil {
		t.Fatal(err)
	}
	if kind, n, err := readFrameHeader(conn, maxHelloSize); err != nil || kind != frameAck || n != 0 {
		t.Fatalf("ack: kind %d, %d bytes, %v", kind, n, err)
	}
	conn.Write(raw) // the receiver may already have hung up
	return rcv
}

// FuzzNetDecodeBatch feeds corrupted batch frames to the receiver's decoder: it
// must return a batch or an error, never panic or leak. (go test -fuzz
// FuzzNetDecodeBatch ./exec explores further than the seeds.)
func FuzzNetDecodeBatch(f *testing.F) {
	rec := testkit.Record(f, memory.DefaultAllocator, netTestSchema, netTestRows)
	defer rec.Release()
	sliced := rec.NewSlice(1, 3)
	defer sliced.Release()
	for _, b := range []exec.Batch{{Rec: rec}, {Rec: rec, Ops: []exec.ChangeKind{0, 1, 2, 3}}, {Rec: sliced}} {
		frame := netEncodeFrame(f, b)
		f.Add(frame[frameHdrSize-1:]) // kind, then payload
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		if len(frame) == 0 {
			return
		}
		mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
		defer mem.AssertSize(t, 0)
		kind := frameBatch
		if frame[0]%2 == 0 {
			kind = frameBatchOps
		}
		payload := frame[1:]
		b, err := decodeBatch(bufio.NewReader(bytes.NewReader(payload)), kind, len(payload), mem)
		if err != nil {
			if !errors.Is(err, ErrNetProtocol) {
				t.Fatalf("error outside ErrNetProtocol: %v", err)
			}
			return
		}
		testkit.Rows(b) // every value of what decoded can be read
		b.Rec.Release()
	})
}
