package nexmark

// javaRandom is java.util.Random: the 48-bit linear congruential generator the
// Nexmark generators (Beam's and the nexmark/nexmark project's Flink one) draw
// every field from. Drawing in the same order from the same seed gives the
// same values, so an event here is the event those generators make for its id.
type javaRandom struct{ seed uint64 }

const (
	javaMultiplier = 0x5DEECE66D
	javaMask       = 1<<48 - 1
)

func newJavaRandom(seed int64) javaRandom {
	return javaRandom{seed: (uint64(seed) ^ javaMultiplier) & javaMask}
}

// next returns the next bits (at most 32) of the sequence, as Random.next does.
func (r *javaRandom) next(bits uint) int32 {
	r.seed = (r.seed*javaMultiplier + 0xB) & javaMask
	return int32(r.seed >> (48 - bits))
}

// Int is Random.nextInt().
func (r *javaRandom) Int() int32 { return r.next(32) }

// IntN is Random.nextInt(bound), bound > 0: uniform in [0, bound), with
// Java's rejection of the values that would bias it.
func (r *javaRandom) IntN(bound int32) int32 {
	v := r.next(31)
	m := bound - 1
	if bound&m == 0 {
		return int32((int64(bound) * int64(v)) >> 31)
	}
	for u := v; ; u = r.next(31) {
		v = u % bound
		if u-v+m >= 0 { // int32 overflow is the rejection test, as in Java
			return v
		}
	}
}

// Long is Random.nextLong().
func (r *javaRandom) Long() int64 {
	hi := int64(r.next(32))
	return hi<<32 + int64(r.next(32))
}

// Float64 is Random.nextDouble(): uniform in [0, 1).
func (r *javaRandom) Float64() float64 {
	hi := int64(r.next(26))
	return float64(hi<<27+int64(r.next(27))) * (1.0 / (1 << 53))
}

// LongN is the generators' LongGenerator.nextLong(random, n): uniform in
// [0, n) below 2^31 - 1, and (skewed, as there) |nextLong() % n| above.
func (r *javaRandom) LongN(n int64) int64 {
	if n < 1<<31-1 {
		return int64(r.IntN(int32(n)))
	}
	v := r.Long() % n
	if v < 0 {
		v = -v
	}
	return v
}
