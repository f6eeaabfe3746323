package disk

// Order-preserving keys, from the keys exec/state encodes (state.RowKeys).

import (
	"encoding/binary"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

// Flags before each column of an ordered key: a valid value sorts before NULL.
const (
	flagValid = 0x01
	flagNull  = 0x02
)

// AppendOrdered appends to dst the order-preserving form of key, a key of
// columns of types as state.RowKeys encodes it (and state.KeyTable.Key
// returns it; null says a raw key is NULL). Per column: a flag byte (valid
// 0x01, NULL 0x02, so NULL sorts last), then for a valid value: bigint and
// timestamp big-endian with the sign bit flipped; double's IEEE bits with
// the sign bit flipped, or every bit for a negative number; decimal the high
// word as bigint, then the low word big-endian; boolean one byte; text its
// bytes with 0x00 escaped as 0x00 0xFF and ended by 0x00 0x01. Two keys
// compare (bytes.Compare) as their rows do column by column, and are equal
// exactly when the rows are under GROUP BY.
func AppendOrdered(dst, key []byte, null bool, types []arrow.DataType) ([]byte, error) {
	if len(types) == 1 && types[0].ID() == arrow.STRING {
		if null {
			return append(dst, flagNull), nil
		}
		return appendOrderedString(append(dst, flagValid), key), nil
	}
	for _, dt := range types {
		if len(key) == 0 {
			return nil, fmt.Errorf("disk: key too short for its %d columns", len(types))
		}
		valid := key[0] == 1
		key = key[1:]
		if !valid {
			dst = append(dst, flagNull)
		} else {
			dst = append(dst, flagValid)
		}
		var w int
		switch dt.ID() {
		case arrow.NULL:
			w = 0
		case arrow.BOOL:
			w = 1
			if valid {
				dst = append(dst, key[0])
			}
		case arrow.INT64, arrow.TIMESTAMP:
			w = 8
			if valid {
				dst = binary.BigEndian.AppendUint64(dst, binary.LittleEndian.Uint64(key)^1<<63)
			}
		case arrow.FLOAT64:
			w = 8
			if valid {
				b := binary.LittleEndian.Uint64(key)
				if b>>63 == 1 {
					b = ^b
				} else {
					b |= 1 << 63
				}
				dst = binary.BigEndian.AppendUint64(dst, b)
			}
		case arrow.DECIMAL128:
			w = 16
			if valid {
				lo, hi := binary.LittleEndian.Uint64(key), binary.LittleEndian.Uint64(key[8:])
				dst = binary.BigEndian.AppendUint64(dst, hi^1<<63)
				dst = binary.BigEndian.AppendUint64(dst, lo)
			}
		case arrow.STRING:
			if len(key) < 4 {
				return nil, fmt.Errorf("disk: text key too short")
			}
			n := int(binary.LittleEndian.Uint32(key))
			key = key[4:]
			if len(key) < n {
				return nil, fmt.Errorf("disk: text key too short")
			}
			if valid {
				dst = appendOrderedString(dst, key[:n])
			}
			w = n
		default:
			return nil, fmt.Errorf("disk: cannot use a %s column as a key", dt)
		}
		if len(key) < w {
			return nil, fmt.Errorf("disk: key too short for its %s column", dt)
		}
		key = key[w:]
	}
	if len(key) != 0 {
		return nil, fmt.Errorf("disk: %d stray key bytes", len(key))
	}
	return dst, nil
}

// appendOrderedString appends s escaped and terminated (see AppendOrdered), so
// that a text column that is a prefix of another sorts first and the columns
// after it cannot be mistaken for its bytes.
func appendOrderedString(dst, s []byte) []byte {
	for _, c := range s {
		if c == 0 {
			dst = append(dst, 0, 0xFF)
		} else {
			dst = append(dst, c)
		}
	}
	return append(dst, 0, 0x01)
}
