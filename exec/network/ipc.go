package network

// Decoding the Arrow IPC stream of a batch frame without trusting it.
//
// arrow-go's IPC reader trusts the flatbuffer metadata it parses: a corrupt
// schema can make it allocate what a vector length claims (hundreds of GB, a
// fatal out-of-memory, not a recoverable panic) or follow offsets around a
// cycle. So the receiver reads the encapsulated messages itself and checks each
// one's metadata against the engine's type system before arrow-go sees it: flat
// schemas of the engine's column types only, every vector and string inside the
// buffer, every data buffer inside the message body and large enough for the
// row count. What passes can be parsed by arrow-go without surprises.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Values of the Arrow flatbuffer schema (format/Message.fbs, Schema.fbs).
const (
	fbMetadataV5 = 4

	fbHeaderSchema      = 1
	fbHeaderRecordBatch = 3

	fbTypeNull          = 1
	fbTypeInt           = 2
	fbTypeFloatingPoint = 3
	fbTypeUtf8          = 5
	fbTypeBool          = 6
	fbTypeDecimal       = 7
	fbTypeTimestamp     = 10

	fbPrecisionDouble = 2
	fbUnitMicrosecond = 2
)

// netMessageReader is the ipc.MessageReader of one batch frame: it yields the
// frame's schema message, then its record batch message, each checked first.
type netMessageReader struct {
	r    *io.LimitedReader // the rest of the frame's payload
	mem  memory.Allocator
	refs atomic.Int64
	cur  *ipc.Message
	// fields holds the type of each column once the schema is read.
	fields []byte
	n      int // messages read
}

// stringCheck locates, in a record batch's body, the offsets and data of a
// string column, whose contents must be checked before arrow-go builds the
// array (it panics on bad offsets, and leaks on that path).
type stringCheck struct {
	offsets, data [2]int64 // [offset, length) in the body
	rows          int64
}

var _ ipc.MessageReader = (*netMessageReader)(nil)

func newNetMessageReader(r *io.LimitedReader, mem memory.Allocator) *netMessageReader {
	m := &netMessageReader{r: r, mem: mem}
	m.refs.Add(1)
	return m
}

func (m *netMessageReader) Retain() { m.refs.Add(1) }

func (m *netMessageReader) Release() {
	if m.refs.Add(-1) == 0 && m.cur != nil {
		m.cur.Release()
		m.cur = nil
	}
}

// Message reads the next encapsulated message: continuation marker 0xFFFFFFFF,
// int32 metadata length, metadata flatbuffer, body.
func (m *netMessageReader) Message() (*ipc.Message, error) {
	if m.cur != nil {
		m.cur.Release()
		m.cur = nil
	}
	var hdr [8]byte
	if _, err := io.ReadFull(m.r, hdr[:]); err != nil {
		return nil, truncated(err)
	}
	if binary.LittleEndian.Uint32(hdr[:4]) != 0xFFFFFFFF {
		return nil, errors.New("IPC message without continuation marker")
	}
	size := int64(binary.LittleEndian.Uint32(hdr[4:]))
	if size == 0 {
		return nil, io.EOF
	}
	if size > m.r.N {
		return nil, fmt.Errorf("IPC metadata of %d bytes in %d", size, m.r.N)
	}
	meta := make([]byte, size)
	if _, err := io.ReadFull(m.r, meta); err != nil {
		return nil, truncated(err)
	}
	var (
		bodyLen int64
		strs    []stringCheck
		err     error
	)
	switch m.n {
	case 0:
		m.fields, bodyLen, err = checkSchemaMessage(meta)
	case 1:
		bodyLen, strs, err = checkRecordMessage(meta, m.fields)
	default:
		err = errors.New("more than one record batch")
	}
	m.n++
	if err != nil {
		return nil, err
	}
	if bodyLen > m.r.N {
		return nil, fmt.Errorf("IPC body of %d bytes in %d", bodyLen, m.r.N)
	}
	body := memory.NewResizableBuffer(m.mem)
	defer body.Release()
	body.Resize(int(bodyLen))
	if _, err := io.ReadFull(m.r, body.Bytes()); err != nil {
		return nil, truncated(err)
	}
	for _, sc := range strs {
		if err := sc.check(body.Bytes()); err != nil {
			return nil, err
		}
	}
	m.cur = ipc.NewMessage(memory.NewBufferBytes(meta), body)
	return m.cur, nil
}

// check accepts offsets that start at 0 or more, never decrease and stay
// inside the data.
func (sc stringCheck) check(body []byte) error {
	raw := body[sc.offsets[0] : sc.offsets[0]+4*(sc.rows+1)]
	prev := int32(0)
	for i := range sc.rows + 1 {
		o := int32(binary.LittleEndian.Uint32(raw[4*i:]))
		if o < prev {
			return fmt.Errorf("string offsets decrease or are negative")
		}
		prev = o
	}
	if int64(prev) > sc.data[1] {
		return fmt.Errorf("string offsets reach %d in %d bytes of data", prev, sc.data[1])
	}
	return nil
}

// fbCheck reads a flatbuffer with every access bounds-checked. The first failure
// sticks in err and later reads return zero, so checks read straight through.
type fbCheck struct {
	b   []byte
	err error
}

func (c *fbCheck) failf(format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf(format, args...)
	}
}

// at returns the n bytes at p, or nil (and fails) when they are not all inside.
func (c *fbCheck) at(p, n int) []byte {
	if c.err != nil {
		return nil
	}
	if p < 0 || n < 0 || p > len(c.b)-n {
		c.failf("flatbuffer access of %d bytes at %d outside %d bytes", n, p, len(c.b))
		return nil
	}
	return c.b[p : p+n]
}

func (c *fbCheck) u16(p int) int {
	if b := c.at(p, 2); b != nil {
		return int(binary.LittleEndian.Uint16(b))
	}
	return 0
}

func (c *fbCheck) i32(p int) int64 {
	if b := c.at(p, 4); b != nil {
		return int64(int32(binary.LittleEndian.Uint32(b)))
	}
	return 0
}

func (c *fbCheck) u32(p int) int {
	if b := c.at(p, 4); b != nil {
		return int(binary.LittleEndian.Uint32(b))
	}
	return 0
}

func (c *fbCheck) i64(p int) int64 {
	if b := c.at(p, 8); b != nil {
		return int64(binary.LittleEndian.Uint64(b))
	}
	return 0
}

// ref follows the unsigned offset stored at p.
func (c *fbCheck) ref(p int) int { return p + c.u32(p) }

// field returns the position of field slot of the table at t, or -1 if absent.
func (c *fbCheck) field(t, slot int) int {
	vt := int64(t) - c.i32(t)
	if vt < 0 || vt > int64(len(c.b)) {
		c.failf("flatbuffer vtable outside the buffer")
		return -1
	}
	vsize := c.u16(int(vt))
	if c.err != nil || 4+2*slot >= vsize {
		return -1
	}
	off := c.u16(int(vt) + 4 + 2*slot)
	if off == 0 {
		return -1
	}
	return t + off
}

// scalar reads a field of the given width (1, 2, 4 or 8 bytes), or def if absent.
func (c *fbCheck) scalar(t, slot, width int, def int64) int64 {
	p := c.field(t, slot)
	if p < 0 {
		return def
	}
	switch width {
	case 1:
		if b := c.at(p, 1); b != nil {
			return int64(b[0])
		}
	case 2:
		if b := c.at(p, 2); b != nil {
			return int64(int16(binary.LittleEndian.Uint16(b)))
		}
	case 4:
		return c.i32(p)
	case 8:
		return c.i64(p)
	}
	return 0
}

// table returns the position of the table a field refers to, or -1 if absent.
func (c *fbCheck) table(t, slot int) int {
	p := c.field(t, slot)
	if p < 0 {
		return -1
	}
	return c.ref(p)
}

// vector returns the first element and length of the vector a field refers to,
// checking that n elements of elem bytes fit; n is 0 when absent.
func (c *fbCheck) vector(t, slot, elem int) (start, n int) {
	p := c.field(t, slot)
	if p < 0 {
		return 0, 0
	}
	v := c.ref(p)
	n = c.u32(v)
	if c.at(v+4, n*elem) == nil {
		return 0, 0
	}
	return v + 4, n
}

// str checks the string a field refers to.
func (c *fbCheck) str(t, slot int) string {
	start, n := c.vector(t, slot, 1)
	if n == 0 {
		return ""
	}
	return string(c.b[start : start+n])
}

// keyValues checks a custom_metadata vector of KeyValue tables.
func (c *fbCheck) keyValues(t, slot int) {
	start, n := c.vector(t, slot, 4)
	for i := 0; i < n && c.err == nil; i++ {
		kv := c.ref(start + 4*i)
		c.str(kv, 0)
		c.str(kv, 1)
	}
}

// message checks the Message table at the root and returns the position of its
// header table and its body length.
func (c *fbCheck) message(wantHeader int64) (header int, bodyLen int64) {
	root := c.ref(0)
	if v := c.scalar(root, 0, 2, 0); v != fbMetadataV5 {
		c.failf("IPC metadata version %d", v)
	}
	if h := c.scalar(root, 1, 1, 0); h != wantHeader {
		c.failf("IPC message of type %d, want %d", h, wantHeader)
	}
	header = c.table(root, 2)
	if header < 0 {
		c.failf("IPC message without header")
	}
	bodyLen = c.scalar(root, 3, 8, 0)
	if bodyLen < 0 {
		c.failf("negative IPC body length")
	}
	c.keyValues(root, 4)
	return header, bodyLen
}

// checkSchemaMessage checks the metadata of a schema message: a flat,
// little-endian schema whose fields all have engine types. It returns the
// flatbuffer type of each field and the body length.
func checkSchemaMessage(meta []byte) ([]byte, int64, error) {
	c := &fbCheck{b: meta}
	schema, bodyLen := c.message(fbHeaderSchema)
	if c.scalar(schema, 0, 2, 0) != 0 {
		c.failf("big-endian schema")
	}
	start, n := c.vector(schema, 1, 4)
	fields := make([]byte, 0, n)
	for i := 0; i < n && c.err == nil; i++ {
		f := c.ref(start + 4*i)
		c.str(f, 0)
		typ := byte(c.scalar(f, 2, 1, 0))
		tt := c.table(f, 3)
		if tt < 0 {
			c.failf("field %d without a type", i)
		}
		if c.field(f, 4) >= 0 {
			c.failf("field %d is dictionary-encoded", i)
		}
		if _, nc := c.vector(f, 5, 4); nc > 0 {
			c.failf("field %d has children", i)
		}
		c.keyValues(f, 6)
		if c.err == nil {
			c.checkType(i, typ, tt)
		}
		fields = append(fields, typ)
	}
	c.keyValues(schema, 2)
	c.vector(schema, 3, 8)
	if c.err != nil {
		return nil, 0, c.err
	}
	return fields, bodyLen, nil
}

// checkType accepts exactly the Arrow types of types.Type.Arrow.
func (c *fbCheck) checkType(i int, typ byte, t int) {
	switch typ {
	case fbTypeNull, fbTypeUtf8, fbTypeBool:
	case fbTypeInt:
		if c.scalar(t, 0, 4, 0) != 64 || c.scalar(t, 1, 1, 0) != 1 {
			c.failf("field %d: integer other than int64", i)
		}
	case fbTypeFloatingPoint:
		if c.scalar(t, 0, 2, 0) != fbPrecisionDouble {
			c.failf("field %d: floating point other than double", i)
		}
	case fbTypeDecimal:
		p, s := c.scalar(t, 0, 4, 0), c.scalar(t, 1, 4, 0)
		if c.scalar(t, 2, 4, 128) != 128 || p < 1 || p > 38 || s < 0 || s > p {
			c.failf("field %d: decimal other than decimal128(1..38, 0..p)", i)
		}
	case fbTypeTimestamp:
		if c.scalar(t, 0, 2, 0) != fbUnitMicrosecond || c.str(t, 1) != "" {
			c.failf("field %d: timestamp other than microseconds without time zone", i)
		}
	default:
		c.failf("field %d: Arrow type %d is not an engine type", i, typ)
	}
}

// checkRecordMessage checks the metadata of a record batch message against the
// schema's field types: one node per field, the buffers arrow-go's loader will
// take for them, each inside the body and big enough for its rows, and no
// compression. It returns the body length and where the string columns are.
func checkRecordMessage(meta []byte, fields []byte) (int64, []stringCheck, error) {
	c := &fbCheck{b: meta}
	rb, bodyLen := c.message(fbHeaderRecordBatch)
	rows := c.scalar(rb, 0, 8, 0)
	nodes, nn := c.vector(rb, 1, 16)
	bufs, nb := c.vector(rb, 2, 16)
	if c.field(rb, 3) >= 0 {
		c.failf("compressed record batch")
	}
	if _, nv := c.vector(rb, 4, 8); nv > 0 {
		c.failf("record batch with variadic buffers")
	}
	if c.err == nil && nn != len(fields) {
		c.failf("%d field nodes for %d fields", nn, len(fields))
	}
	if rows < 0 || rows > math.MaxInt32 {
		c.failf("record batch of %d rows", rows)
	}
	var strs []stringCheck
	bi := 0
	// buffer checks buffer bi: inside the body, aligned, at least need bytes.
	buffer := func(need int64) (at [2]int64) {
		if bi >= nb {
			c.failf("too few buffers")
			return
		}
		off, n := c.i64(bufs+16*bi), c.i64(bufs+16*bi+8)
		bi++
		if off < 0 || n < 0 || off > bodyLen-n || off%8 != 0 {
			c.failf("buffer [%d, +%d) outside a body of %d bytes", off, n, bodyLen)
		} else if n < need {
			c.failf("buffer of %d bytes, need %d", n, need)
		}
		return [2]int64{off, n}
	}
	for i := 0; i < nn && c.err == nil; i++ {
		length, nulls := c.i64(nodes+16*i), c.i64(nodes+16*i+8)
		if length != rows || nulls < 0 || nulls > length {
			c.failf("field %d: node of %d rows and %d nulls in a batch of %d", i, length, nulls, rows)
			break
		}
		if fields[i] == fbTypeNull {
			continue
		}
		// The validity bitmap's buffer slot is always there; it is read only
		// when the node has nulls.
		if nulls > 0 {
			buffer((length + 7) / 8)
		} else {
			buffer(0)
		}
		switch fields[i] {
		case fbTypeBool:
			buffer((length + 7) / 8)
		case fbTypeInt, fbTypeFloatingPoint, fbTypeTimestamp:
			buffer(8 * length)
		case fbTypeDecimal:
			buffer(16 * length)
		case fbTypeUtf8:
			if length == 0 {
				buffer(0)
				buffer(0)
				break
			}
			sc := stringCheck{offsets: buffer(4 * (length + 1)), rows: length}
			sc.data = buffer(0)
			strs = append(strs, sc)
		}
	}
	if c.err == nil && bi != nb {
		c.failf("%d buffers for %d", nb, bi)
	}
	if c.err != nil {
		return 0, nil, c.err
	}
	return bodyLen, strs, nil
}
