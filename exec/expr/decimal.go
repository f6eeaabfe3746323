package expr

// Decimal arithmetic on unscaled 128-bit integers. Values that fit in an int64
// (most prices and amounts) take integer fast paths; the rest go through
// math/big, which allocates but stays exact. Every operation reports overflow
// instead of wrapping.

import (
	"math"
	"math/big"
	"math/bits"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/hummer-db/hummer/exec/types"
)

type num = decimal128.Num

// pow10 returns 10^k as a decimal, for 0 <= k <= 38.
func pow10(k int) num { return decimal128.GetScaleMultiplier(k) }

var pow10Int = [...]int64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18}

var pow10Float = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// small returns n as an int64 when it fits.
func small(n num) (int64, bool) {
	lo := n.LowBits()
	return int64(lo), n.HighBits() == int64(lo)>>63
}

// absU is |x|, also right for MinInt64, without a branch.
func absU(x int64) uint64 {
	m := x >> 63
	return uint64((x ^ m) - m)
}

// fits reports whether n has at most p digits.
func fits(n num, p int) bool {
	if n.HighBits() == math.MinInt64 && n.LowBits() == 0 {
		return false // Abs would overflow
	}
	return n.Abs().Less(pow10(p))
}

func fromBig(b *big.Int) (num, bool) {
	if b.BitLen() > 126 {
		return num{}, false
	}
	return decimal128.FromBigInt(b), true
}

func addDec(a, b num) (num, bool) {
	r := a.Add(b)
	return r, (a.HighBits()^r.HighBits())&(b.HighBits()^r.HighBits()) >= 0
}

func subDec(a, b num) (num, bool) {
	r := a.Sub(b)
	return r, (a.HighBits()^b.HighBits())&(a.HighBits()^r.HighBits()) >= 0
}

func mulDec(a, b num) (num, bool) {
	if x, ok := small(a); ok {
		if y, ok := small(b); ok {
			// Two int64 magnitudes multiply to under 2^126: no overflow.
			hi, lo := bits.Mul64(absU(x), absU(y))
			r := decimal128.New(int64(hi), lo)
			if (x < 0) != (y < 0) {
				r = r.Negate()
			}
			return r, true
		}
	}
	return fromBig(new(big.Int).Mul(a.BigInt(), b.BigInt()))
}

// mulDrop returns a*b / 10^drop rounded half away from zero, exact even when
// the product itself passes 128 bits.
func mulDrop(a, b num, drop int) (num, bool) {
	if r, ok := mulDec(a, b); ok {
		return rescale(r, drop, 0)
	}
	p := new(big.Int).Mul(a.BigInt(), b.BigInt())
	d := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(drop)), nil)
	q, rem := p.QuoRem(p, d, new(big.Int))
	if rem.Abs(rem).Lsh(rem, 1).Cmp(d) >= 0 {
		if (a.Sign() < 0) != (b.Sign() < 0) {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return fromBig(q)
}

// roundMode says how a quotient is rounded to an integer.
type roundMode uint8

const (
	halfAway roundMode = iota // PostgreSQL's numeric rounding: half away from zero
	toFloor
	toCeil
	toZero
)

// divDec returns a*10^shift / b rounded by mode; b must not be zero and shift
// must be in [0, 38].
func divDec(a num, shift int, b num, mode roundMode) (num, bool) {
	if x, ok := small(a); ok && shift < len(pow10Int) {
		if y, ok := small(b); ok {
			hi, ux := bits.Mul64(absU(x), uint64(pow10Int[shift]))
			if hi == 0 && ux < 1<<63 {
				uy := absU(y)
				q, r := ux/uy, ux%uy
				neg := (x < 0) != (y < 0)
				if r != 0 && roundUp(mode, neg, r >= uy-r) {
					q++
				}
				if neg {
					return decimal128.FromI64(-int64(q)), true
				}
				return decimal128.FromU64(q), true
			}
		}
	}
	n := a.BigInt()
	if shift > 0 {
		n.Mul(n, pow10(shift).BigInt())
	}
	d := b.BigInt()
	q, r := new(big.Int).QuoRem(n, d, new(big.Int))
	if r.Sign() != 0 {
		neg := n.Sign() != d.Sign()
		r2 := r.Abs(r)
		r2.Lsh(r2, 1)
		if roundUp(mode, neg, r2.CmpAbs(d) >= 0) {
			if neg {
				q.Sub(q, big.NewInt(1))
			} else {
				q.Add(q, big.NewInt(1))
			}
		}
	}
	return fromBig(q)
}

// roundUp decides whether a truncated quotient's magnitude grows by one, given
// a nonzero remainder, the quotient's sign and whether the remainder is at
// least half the divisor.
func roundUp(mode roundMode, neg, half bool) bool {
	switch mode {
	case halfAway:
		return half
	case toFloor:
		return neg
	case toCeil:
		return !neg
	}
	return false
}

// modDec is a % b truncated toward zero (the sign of a), as PostgreSQL's numeric mod.
func modDec(a, b num) num {
	if x, ok := small(a); ok {
		if y, ok := small(b); ok {
			if y == -1 {
				return num{}
			}
			return decimal128.FromI64(x % y)
		}
	}
	r := new(big.Int).Rem(a.BigInt(), b.BigInt())
	return decimal128.FromBigInt(r)
}

// rescale converts n from scale from to scale to, rounding half away from zero
// when digits are dropped. ok is false on overflow.
func rescale(n num, from, to int) (num, bool) {
	switch {
	case to == from:
		return n, true
	case to > from:
		if to-from > 38 {
			return n, n == num{}
		}
		return mulDec(n, pow10(to-from))
	case from-to > 38:
		return num{}, true // |n| < 10^38 rounds to zero
	}
	return divDec(n, 0, pow10(from-to), halfAway)
}

// roundDigits rounds n (at scale) to keep digits places after the point
// (digits may be negative), by mode, and returns the result at the same scale.
func roundDigits(n num, scale int, digits int64, mode roundMode) (num, bool) {
	if digits >= int64(scale) {
		return n, true
	}
	drop := int64(scale) - digits
	if drop > 38 {
		return num{}, true
	}
	q, ok := divDec(n, 0, pow10(int(drop)), mode)
	if !ok {
		return num{}, false
	}
	return mulDec(q, pow10(int(drop)))
}

// decToFloat converts n at scale to the nearest double.
func decToFloat(n num, scale int) float64 {
	if x, ok := small(n); ok && scale < len(pow10Float) && absU(x) <= 1<<53 {
		// Both operands are exact, so the division rounds correctly.
		return float64(x) / pow10Float[scale]
	}
	var buf [48]byte
	f, _ := strconv.ParseFloat(string(types.AppendDecimal(buf[:0], n, scale)), 64)
	return f
}

// parseStatus is the outcome of parseDecimal.
type parseStatus uint8

const (
	parsed parseStatus = iota
	badSyntax
	tooLarge
)

// parseDecimal reads numeric text (PostgreSQL's numeric input: surrounding
// spaces, a sign, digits with an optional point, an optional exponent) as an
// unscaled number of the given precision and scale, rounding half away from zero.
func parseDecimal[S ~string | ~[]byte](s S, precision, scale int) (num, parseStatus) {
	i, end := 0, len(s)
	for i < end && isSpace(s[i]) {
		i++
	}
	for end > i && isSpace(s[end-1]) {
		end--
	}
	neg := false
	if i < end && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	// Significant digits (leading zeros dropped) and where the point falls.
	var digits [80]byte
	nd, ndAll, sawDigit, sawPoint := 0, 0, false, false
scan:
	for ; i < end; i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			sawDigit = true
			if nd == len(digits) {
				if !sawPoint {
					return num{}, tooLarge
				}
				continue // 80 significant digits are past any rounding that matters
			}
			if sawPoint {
				ndAll++
			}
			if nd == 0 && c == '0' {
				continue
			}
			digits[nd] = c - '0'
			nd++
		case c == '.' && !sawPoint:
			sawPoint = true
		default:
			break scan
		}
	}
	if !sawDigit {
		return num{}, badSyntax
	}
	frac := 0
	if sawPoint {
		frac = ndAll
	}
	exp := 0
	if i < end {
		if s[i] != 'e' && s[i] != 'E' {
			return num{}, badSyntax
		}
		i++
		eneg := false
		if i < end && (s[i] == '+' || s[i] == '-') {
			eneg = s[i] == '-'
			i++
		}
		if i == end {
			return num{}, badSyntax
		}
		for ; i < end; i++ {
			if s[i] < '0' || s[i] > '9' {
				return num{}, badSyntax
			}
			if exp < 100000 {
				exp = exp*10 + int(s[i]-'0')
			}
		}
		if eneg {
			exp = -exp
		}
	}
	if nd == 0 {
		return num{}, parsed
	}
	// The value is digits * 10^(exp-frac); unscaled, digits * 10^k.
	k := scale + exp - frac
	keep := nd + k // digits left once k is applied
	roundDigit := byte(0)
	if k < 0 {
		if keep < 0 {
			return num{}, parsed
		}
		if keep < nd {
			roundDigit = digits[keep]
		}
		nd = keep
	}
	zeros := max(k, 0)
	if nd+zeros > precision {
		return num{}, tooLarge
	}
	var n num
	ten := decimal128.FromU64(10)
	for j := range nd {
		n = n.Mul(ten).Add(decimal128.FromU64(uint64(digits[j])))
	}
	for range zeros {
		n = n.Mul(ten)
	}
	if roundDigit >= 5 {
		n = n.Add(decimal128.FromU64(1))
		if !fits(n, precision) {
			return num{}, tooLarge
		}
	}
	if neg {
		n = n.Negate()
	}
	return n, parsed
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}
