package state

// The envelope every operator's checkpoint state comes in, and reading and
// writing the Arrow IPC streams most of its sections are.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// ErrBadState: a RestoreState got a blob it cannot use (damaged, truncated, of
// another kind of state or another format version, or of another operator
// configuration). Wrapped with the details.
var ErrBadState = errors.New("bad checkpoint state")

// The envelope of a state blob:
//
//	magic    4 bytes, the kind of state ("HAGG" hash_agg, "HVEW" a view)
//	version  uint16, little-endian: the layout of that kind's sections
//	crc      uint32: CRC-32C of everything after it
//	count    uint32: the number of sections
//	sections count times a uint64 length and that many bytes
//
// The checksum turns a truncated or damaged blob into an error before anything
// parses its sections. Past it, a blob is trusted to be what SnapshotState
// wrote: restore checks that its sections agree with each other and with the
// operator, but the Arrow IPC reader believes the sizes in a stream's metadata,
// so a forged section can make it allocate without bound.
//
// EnvelopeLen is the size of the envelope before the sections.
const EnvelopeLen = 4 + 2 + 4 + 4

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Encode wraps sections in the envelope.
func Encode(magic string, version uint16, sections ...[]byte) []byte {
	size := EnvelopeLen
	for _, s := range sections {
		size += 8 + len(s)
	}
	out := make([]byte, EnvelopeLen, size)
	copy(out, magic)
	binary.LittleEndian.PutUint16(out[4:], version)
	binary.LittleEndian.PutUint32(out[10:], uint32(len(sections)))
	for _, s := range sections {
		out = binary.LittleEndian.AppendUint64(out, uint64(len(s)))
		out = append(out, s...)
	}
	binary.LittleEndian.PutUint32(out[6:], crc32.Checksum(out[10:], castagnoli))
	return out
}

// Decode checks data's envelope and returns its sections, which alias
// data. what names the state in errors.
func Decode(what, magic string, version uint16, data []byte) ([][]byte, error) {
	if len(data) < EnvelopeLen || string(data[:4]) != magic {
		return nil, fmt.Errorf("%s: %w: not a %s state", what, ErrBadState, what)
	}
	if v := binary.LittleEndian.Uint16(data[4:]); v != version {
		return nil, fmt.Errorf("%s: %w: format version %d, this build reads %d", what, ErrBadState, v, version)
	}
	if crc32.Checksum(data[10:], castagnoli) != binary.LittleEndian.Uint32(data[6:]) {
		return nil, fmt.Errorf("%s: %w: checksum mismatch (truncated or damaged)", what, ErrBadState)
	}
	n := binary.LittleEndian.Uint32(data[10:])
	rest := data[EnvelopeLen:]
	var sections [][]byte
	for range n {
		if len(rest) < 8 {
			return nil, fmt.Errorf("%s: %w: truncated section", what, ErrBadState)
		}
		l := binary.LittleEndian.Uint64(rest)
		rest = rest[8:]
		if l > uint64(len(rest)) {
			return nil, fmt.Errorf("%s: %w: truncated section", what, ErrBadState)
		}
		sections = append(sections, rest[:l:l])
		rest = rest[l:]
	}
	if len(rest) > 0 {
		return nil, fmt.Errorf("%s: %w: %d stray bytes", what, ErrBadState, len(rest))
	}
	return sections, nil
}

// WriteIPC returns recs as an Arrow IPC stream of schema.
func WriteIPC(mem memory.Allocator, schema *arrow.Schema, recs ...arrow.RecordBatch) ([]byte, error) {
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	for _, rec := range recs {
		if err := w.Write(rec); err != nil {
			w.Close()
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ReadIPC reads an Arrow IPC stream; the caller releases the records.
func ReadIPC(mem memory.Allocator, data []byte) (*arrow.Schema, []arrow.RecordBatch, error) {
	r, err := ipc.NewReader(bytes.NewReader(data), ipc.WithAllocator(mem))
	if err != nil {
		return nil, nil, err
	}
	defer r.Release()
	var recs []arrow.RecordBatch
	for r.Next() {
		rec := r.RecordBatch()
		rec.Retain()
		recs = append(recs, rec)
	}
	if err := r.Err(); err != nil {
		for _, rec := range recs {
			rec.Release()
		}
		return nil, nil, err
	}
	return r.Schema(), recs, nil
}

// Recover turns a panic while decoding a state blob into an error. The
// envelope's checksum keeps damaged blobs out, but Arrow arrays read from a
// blob that is well formed yet wrong (forged, or written by a buggy build) are
// not validated by the IPC reader, and reading one (a text column's offsets
// past its data, say) can panic. Restoring happens once, off the hot path, so
// one recover here is cheaper than validating every buffer; the task's own
// recover would fail the job with a less helpful message.
func Recover(what string, err *error) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("%s: %w: %v", what, ErrBadState, p)
	}
}
