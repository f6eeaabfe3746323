package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/jackc/pgx/v5/pgproto3"
)

// This file reads the client's byte stream as messages. It replaces
// pgproto3.Backend's reading, which allocates the whole body a header claims
// before a byte of it arrived: here a body grows only as its bytes come, so a
// header claiming 16 MiB costs nothing until 16 MiB are actually sent.

// Limits of what a client may send.
const (
	// maxStartupPacket is PostgreSQL's MAX_STARTUP_PACKET_LENGTH.
	maxStartupPacket = 10000
	// maxAuthMessage bounds a password or SASL message during authentication.
	maxAuthMessage = 10000
	// DefaultMaxMessageSize is the default bound of one message body after
	// startup (Options.MaxMessageSize).
	DefaultMaxMessageSize = 16 << 20
	// keepBodyBuffer is the largest body buffer a connection keeps for the next
	// message; a bigger one, left by a large query, is dropped.
	keepBodyBuffer = 64 << 10
)

// Startup packet codes (the protocol version field of special packets).
const (
	codeCancelRequest = 80877102
	codeSSLRequest    = 80877103
	codeGSSENCRequest = 80877104
)

// errFraming is a byte stream that cannot be split into messages any more: the
// connection must end.
type errFraming struct{ msg string }

func (e *errFraming) Error() string { return e.msg }

// unsupportedVersion is a startup packet of a protocol other than 3.x.
type unsupportedVersion struct{ version uint32 }

func (e *unsupportedVersion) Error() string {
	return fmt.Sprintf("unsupported frontend protocol %d.%d: server supports 3.0", e.version>>16, e.version&0xffff)
}

// readStartupPacket reads one startup-phase packet (no type byte: a length then
// a code) and decodes it into a StartupMessage, SSLRequest, GSSEncRequest or
// CancelRequest. It reads exactly the packet's bytes and nothing after them, so
// that nothing sent in plain text after an SSLRequest can be taken for
// encrypted data.
func readStartupPacket(r io.Reader) (pgproto3.FrontendMessage, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := int(int32(binary.BigEndian.Uint32(hdr[:])))
	if n < 8 || n > maxStartupPacket {
		return nil, &errFraming{fmt.Sprintf("invalid length of startup packet: %d", n)}
	}
	body := make([]byte, n-4)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, unexpectedEOF(err)
	}
	code := binary.BigEndian.Uint32(body)
	switch code {
	case codeSSLRequest, codeGSSENCRequest:
		if n != 8 {
			return nil, &errFraming{"invalid length of encryption request"}
		}
		if code == codeSSLRequest {
			return &pgproto3.SSLRequest{}, nil
		}
		return &pgproto3.GSSEncRequest{}, nil
	case codeCancelRequest:
		m := &pgproto3.CancelRequest{}
		if err := m.Decode(body); err != nil {
			return nil, &errFraming{"invalid cancel request: " + err.Error()}
		}
		return m, nil
	}
	if code>>16 != 3 {
		return nil, &unsupportedVersion{code}
	}
	return decodeStartup(code, body[4:])
}

// decodeStartup reads a StartupMessage's parameters: name/value pairs of
// NUL-terminated strings, ended by one more NUL. Any 3.x version is read (the
// caller negotiates newer minor versions down to 3.0).
func decodeStartup(version uint32, b []byte) (*pgproto3.StartupMessage, error) {
	m := &pgproto3.StartupMessage{ProtocolVersion: version, Parameters: map[string]string{}}
	bad := &errFraming{"invalid startup packet layout: expected terminator as last byte"}
	for {
		if len(b) == 0 {
			return nil, bad
		}
		if b[0] == 0 {
			if len(b) != 1 {
				return nil, bad
			}
			return m, nil
		}
		k := bytes.IndexByte(b, 0)
		if k < 0 {
			return nil, bad
		}
		name := string(b[:k])
		b = b[k+1:]
		v := bytes.IndexByte(b, 0)
		if v < 0 {
			return nil, bad
		}
		m.Parameters[name] = string(b[:v])
		b = b[v+1:]
	}
}

// frameReader splits the stream after startup into typed messages.
type frameReader struct {
	r   io.Reader
	max int // largest body accepted
	hdr [5]byte
	buf []byte // body of the last message, reused
}

// next reads one message's type and body. The body is valid until the next
// call. An *errFraming means the stream cannot go on.
func (f *frameReader) next() (typ byte, body []byte, err error) {
	if _, err := io.ReadFull(f.r, f.hdr[:]); err != nil {
		return 0, nil, unexpectedEOF(err)
	}
	typ = f.hdr[0]
	n := int(int32(binary.BigEndian.Uint32(f.hdr[1:]))) - 4
	switch {
	case n < 0:
		return typ, nil, &errFraming{fmt.Sprintf("invalid message length %d", n+4)}
	case n > f.max:
		return typ, nil, &errFraming{fmt.Sprintf("message of %d bytes exceeds the limit of %d bytes", n, f.max)}
	}
	if cap(f.buf) > keepBodyBuffer {
		f.buf = nil
	}
	body, err = readGrowing(f.r, f.buf[:0], n)
	f.buf = body
	if err != nil {
		return typ, nil, unexpectedEOF(err)
	}
	return typ, body, nil
}

// readGrowing appends exactly n bytes from r to buf, growing buf only as the
// bytes arrive: at most twice what was received, plus 4 KiB.
func readGrowing(r io.Reader, buf []byte, n int) ([]byte, error) {
	for len(buf) < n {
		if len(buf) == cap(buf) {
			grow := min(n-len(buf), max(len(buf), 4<<10))
			buf = slices.Grow(buf, grow)
		}
		end := min(n, cap(buf))
		k, err := r.Read(buf[len(buf):end])
		buf = buf[:len(buf)+k]
		if err != nil && len(buf) < n {
			return buf, err
		}
	}
	return buf, nil
}

func unexpectedEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// frontendTypes are the message types a client may send after startup.
const frontendTypes = "BCDEFfdcHPQSX"

// decodeMessage turns a message read after startup into its pgproto3 value.
// An unknown type is nil, false; a body that does not decode is an error.
func decodeMessage(typ byte, body []byte) (msg pgproto3.FrontendMessage, known bool, err error) {
	switch typ {
	case 'B':
		msg = &pgproto3.Bind{}
	case 'C':
		msg = &pgproto3.Close{}
	case 'D':
		msg = &pgproto3.Describe{}
	case 'E':
		msg = &pgproto3.Execute{}
	case 'F':
		msg = &pgproto3.FunctionCall{}
	case 'f':
		msg = &pgproto3.CopyFail{}
	case 'd':
		msg = &pgproto3.CopyData{}
	case 'c':
		msg = &pgproto3.CopyDone{}
	case 'H':
		msg = &pgproto3.Flush{}
	case 'P':
		msg = &pgproto3.Parse{}
	case 'Q':
		msg = &pgproto3.Query{}
	case 'S':
		msg = &pgproto3.Sync{}
	case 'X':
		msg = &pgproto3.Terminate{}
	default:
		return nil, false, nil
	}
	return msg, true, msg.Decode(body)
}

// readAuthMessage reads the client's answer to an authentication request: a
// 'p' message of at most maxAuthMessage bytes.
func readAuthMessage(r io.Reader) ([]byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, unexpectedEOF(err)
	}
	if hdr[0] != 'p' {
		return nil, &errFraming{fmt.Sprintf("expected password response, got message type %d", hdr[0])}
	}
	n := int(int32(binary.BigEndian.Uint32(hdr[1:]))) - 4
	if n < 0 || n > maxAuthMessage {
		return nil, &errFraming{fmt.Sprintf("invalid password packet size %d", n+4)}
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, unexpectedEOF(err)
	}
	return body, nil
}
