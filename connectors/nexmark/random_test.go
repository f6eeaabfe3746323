package nexmark

import (
	"math"
	"testing"
)

// TestJavaRandom: the values java.util.Random gives for these seeds, printed
// by Java 17 (java R.java: nextInt(), nextInt(10), nextInt(16),
// nextInt(1000000007), nextInt(13), nextLong(), the bits of nextDouble(), and
// the generators' price from the next nextDouble()).
func TestJavaRandom(t *testing.T) {
	for _, c := range []struct {
		seed   int64
		want   [5]int32
		long   int64
		double uint64
		price  int64
	}{
		{0, [5]int32{-1155484576, 8, 3, 302116440, 0}, 5700976833288827063, 4593095635380350600, 4888862},
		{42, [5]int32{-1170105035, 3, 10, 102948884, 0}, -1068554554583376509, 4604549709834685269, 353},
		{-7, [5]int32{1155869324, 7, 10, 119890471, 6}, -2732364192705608872, 4590842973996850624, 57735},
		{123456789012345, [5]int32{-1421006947, 4, 13, 308132645, 3}, -2963259256110309240, 4606532508618813285, 23671},
	} {
		r := newJavaRandom(c.seed)
		got := [5]int32{r.Int(), r.IntN(10), r.IntN(16), r.IntN(1000000007), r.IntN(13)}
		if got != c.want {
			t.Errorf("seed %d: ints %v, Java gives %v", c.seed, got, c.want)
		}
		if l := r.Long(); l != c.long {
			t.Errorf("seed %d: nextLong %d, Java gives %d", c.seed, l, c.long)
		}
		if d := math.Float64bits(r.Float64()); d != c.double {
			t.Errorf("seed %d: nextDouble bits %d, Java gives %d", c.seed, d, c.double)
		}
		if p := price(&r); p != c.price {
			t.Errorf("seed %d: price %d, Java gives %d", c.seed, p, c.price)
		}
	}
}
