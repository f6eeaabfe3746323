package vector

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Hashing keys: a key of up to 16 bytes (nearly every word) costs two 8-byte
// loads and one 64x64->128-bit multiply, in the manner of wyhash; longer ones
// fold 8 bytes per multiply. The key's first two words come back too, so the
// table compares most keys without touching its arena.
const (
	HashK0 = 0xa0761d6478bd642f
	HashK1 = 0xe7037ed1a0b428db
	hashK2 = 0x8ebc6af09c88c6e3
)

func hashMix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// shortHash is the hash of a key of n <= 16 bytes whose zero-padded words are
// w0 and w1, for the seed whose k0 and k1 are seed^hashK0 and seed^hashK1.
func shortHash(w0, w1, n, k0, k1 uint64) uint64 { return hashMix(w0^k0, w1^k1^n) }

// ShortKey hashes the key of n <= 16 bytes at the start of b, which holds 16
// bytes (Arrow pads its buffers, so they may run past the key), and returns its
// words too: HashKey's case of such keys in two loads. It is inlined, so that
// the loops over a batch's keys that call it (state.KeyTable.findShort, HashRows)
// stay leaves and keep their variables in registers.
func ShortKey(b []byte, n uint, k0, k1 uint64) (h, w0, w1 uint64) {
	b = b[:16]
	w0 = binary.LittleEndian.Uint64(b) & firstWord[n]
	w1 = binary.LittleEndian.Uint64(b[8:]) & secondWord[n]
	return shortHash(w0, w1, uint64(n), k0, k1), w0, w1
}

// lowBytes[n] keeps the first n bytes of a little-endian word.
var lowBytes = [9]uint64{0, 0xff, 0xffff, 0xffffff, 0xffffffff, 0xffffffffff, 0xffffffffffff, 0xffffffffffffff, ^uint64(0)}

// firstWord[n] and secondWord[n] keep the bytes of a key of n <= 16 bytes in
// the two words loaded from its start (a lookup is fewer instructions than a
// shift, which Go guards against counts of 64).
var firstWord, secondWord = func() (f, s [17]uint64) {
	for n := range 17 {
		f[n] = lowBytes[min(n, 8)]
		s[n] = lowBytes[max(n-8, 0)]
	}
	return f, s
}()

// loadWord reads up to 8 bytes of p, little-endian, zero-padded. When p's
// capacity allows (Arrow buffers are padded to 64 bytes) it is one load.
func loadWord(p []byte) uint64 {
	n := len(p)
	if n >= 8 {
		return binary.LittleEndian.Uint64(p)
	}
	if cap(p) >= 8 {
		return binary.LittleEndian.Uint64(p[:8]) & lowBytes[n]
	}
	var w uint64
	for i := n - 1; i >= 0; i-- {
		w = w<<8 | uint64(p[i])
	}
	return w
}

// HashKey returns p's hash and its first two words (bytes 0-7 and 8-15,
// zero-padded). Loops over many keys take their keys of up to 16 bytes through
// ShortKey instead.
func HashKey(p []byte, seed uint64) (h, w0, w1 uint64) {
	n := uint64(len(p))
	w0 = loadWord(p)
	if n > 8 {
		w1 = loadWord(p[8:])
	}
	if n <= 16 {
		return shortHash(w0, w1, n, seed^HashK0, seed^HashK1), w0, w1
	}
	h = seed ^ n
	for len(p) > 8 {
		h = hashMix(h^binary.LittleEndian.Uint64(p)^HashK0, HashK1)
		p = p[8:]
	}
	return hashMix(h^loadWord(p)^hashK2, HashK1^n), w0, w1
}

// HashRows writes into out (len = rows) a hash of each row's key columns. Equal
// values of equal types hash equally in every process (no random seed), so two
// edges partitioning join keys of the same types agree, and so will TaskManagers
// in different processes.
func HashRows(rec arrow.RecordBatch, keys []int, out []uint64) error {
	for i := range out {
		out[i] = 0x9e3779b97f4a7c15
	}
	for _, k := range keys {
		col := rec.Column(k)
		switch a := col.(type) {
		case *array.Int64:
			for i, v := range a.Int64Values() {
				out[i] = mix(out[i], uint64(v))
			}
		case *array.Timestamp:
			for i, v := range a.TimestampValues() {
				out[i] = mix(out[i], uint64(v))
			}
		case *array.Float64:
			for i, v := range a.Float64Values() {
				if v == 0 {
					v = 0 // -0 and +0 are equal
				}
				out[i] = mix(out[i], math.Float64bits(v))
			}
		case *array.Boolean:
			for i := range out {
				if a.Value(i) {
					out[i] = mix(out[i], 1)
				} else {
					out[i] = mix(out[i], 2)
				}
			}
		case *array.Decimal128:
			for i := range out {
				v := a.Value(i)
				out[i] = mix(mix(out[i], uint64(v.HighBits())), v.LowBits())
			}
		case *array.String:
			offs := a.ValueOffsets()
			data := a.ValueBytes()
			base := offs[0]
			for i := range out {
				// The key tables' hash, unseeded.
				s, e := int(offs[i]-base), int(offs[i+1]-base)
				var h uint64
				if n := e - s; n <= 16 && s+16 <= cap(data) {
					h, _, _ = ShortKey(data[s:s+16], uint(n), HashK0, HashK1)
				} else {
					h, _, _ = HashKey(data[s:e], 0)
				}
				out[i] = mix(out[i], h)
			}
		case *array.Null:
			// every row is NULL: the same hash for all
		default:
			return fmt.Errorf("exec: cannot hash column of type %v", col.DataType())
		}
		if col.NullN() > 0 {
			for i := range out {
				if col.IsNull(i) {
					out[i] = mix(out[i], 0x5bd1e995)
				}
			}
		}
	}
	return nil
}

// mix folds v into h (a splitmix64 step over their combination).
func mix(h, v uint64) uint64 {
	x := h ^ (v + 0x9e3779b97f4a7c15 + (h << 6) + (h >> 2))
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
