package operators

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestTopNList checks the chunked list against a plain slice over random
// inserts at their sorted place, deletes, truncations and lookups, at sizes
// that split chunks many times and empty them again.
func TestTopNList(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var l topnList
	var ref []topnEntry
	key := func(v int) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }
	var seq uint64
	most := 0
	for step := range 40000 {
		switch r := rng.IntN(100); {
		case r < 65 || len(ref) == 0:
			seq++
			e := topnEntry{key: key(rng.IntN(5000)), rid: uint32(step), seq: seq}
			pos := l.bound(e.key, true)
			want, _ := slices.BinarySearchFunc(ref, e, func(a, b topnEntry) int {
				if c := bytes.Compare(a.key, b.key); c != 0 {
					return c
				}
				return int(a.seq) - int(b.seq)
			})
			if pos != want {
				t.Fatalf("step %d: upper bound %d, want %d", step, pos, want)
			}
			l.Insert(pos, e)
			ref = slices.Insert(ref, pos, e)
		case r < 99:
			pos := rng.IntN(len(ref))
			if lb, want := l.bound(ref[pos].key, false), slices.IndexFunc(ref, func(e topnEntry) bool { return bytes.Equal(e.key, ref[pos].key) }); lb != want {
				t.Fatalf("step %d: lower bound %d, want %d", step, lb, want)
			}
			l.Delete(pos)
			ref = slices.Delete(ref, pos, pos+1)
		default:
			n := len(ref) - rng.IntN(min(len(ref), 20)+1)
			dropped := 0
			l.Truncate(n, func(*topnEntry) { dropped++ })
			if dropped != len(ref)-n {
				t.Fatalf("step %d: truncating to %d dropped %d of %d", step, n, dropped, len(ref))
			}
			ref = ref[:n]
		}
		if l.Len() != len(ref) {
			t.Fatalf("step %d: length %d, want %d", step, l.Len(), len(ref))
		}
		if step%997 == 0 || l.Len() < 3 {
			l.Each(func(pos int, e *topnEntry) bool {
				if e.rid != ref[pos].rid {
					t.Fatalf("step %d: entry %d is row %d, want %d", step, pos, e.rid, ref[pos].rid)
				}
				return true
			})
			for range 5 {
				if len(ref) > 0 {
					pos := rng.IntN(len(ref))
					if l.At(pos).rid != ref[pos].rid {
						t.Fatalf("step %d: At(%d) is row %d, want %d", step, pos, l.At(pos).rid, ref[pos].rid)
					}
				}
			}
			if len(ref) > 0 && l.Last().rid != ref[len(ref)-1].rid {
				t.Fatalf("step %d: the last entry is row %d, want %d", step, l.Last().rid, ref[len(ref)-1].rid)
			}
		}
		most = max(most, len(l.chunks))
		for _, ch := range l.chunks {
			if len(ch) == 0 || len(ch) > 2*topnChunk {
				t.Fatalf("step %d: a chunk of %d entries", step, len(ch))
			}
		}
	}
	if most < 4 {
		t.Errorf("the list never grew past %d chunks", most)
	}
}
