package expr

// Arithmetic: + - * / % (mod), unary minus, abs, round, floor, ceil.
// Kernels compute every row, NULL rows included (their values are whatever the
// buffers hold), and look at validity only when a row fails, so that a NULL row
// never raises an error and valid rows pay no branch for it.

import (
	"math"
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec/types"
)

var (
	errBigintRange  = newError(ErrOutOfRange, "bigint out of range")
	errNumericRange = newError(ErrOutOfRange, "numeric field overflow")
	errFloatOver    = newError(ErrOutOfRange, "value out of range: overflow")
	errFloatUnder   = newError(ErrOutOfRange, "value out of range: underflow")
)

func evalArith(c *call) (arrow.Array, error) {
	op := c.e.Func
	if op == "mod" {
		op = "%"
	}
	valid, nulls := validity(c.mem, c.n, c.args...)
	var (
		data *memory.Buffer
		err  error
	)
	switch t := c.argType(0); t.ID {
	case types.Int64:
		data, err = arithInt(op, int64Arg(c.args[0]), int64Arg(c.args[1]), c.n, valid, c.mem)
	case types.Float64:
		data, err = arithFloat(op, float64Arg(c.args[0]), float64Arg(c.args[1]), c.n, valid, c.mem)
	case types.Decimal:
		data, err = arithDecimal(op, decimalArg(c.args[0]), decimalArg(c.args[1]), c.n, t, c.argType(1), c.e.Type, valid, c.mem)
	default:
		err = errArgKind(c)
	}
	return finishOrRelease(c, nulls, valid, data, err)
}

func arithInt(op string, xs, ys vals[int64], n int, valid *memory.Buffer, mem memory.Allocator) (*memory.Buffer, error) {
	buf, out := newValues[int64](mem, n)
	var err error
	switch op {
	case "+":
		for i := range out {
			x, y := xs.at(i), ys.at(i)
			r := x + y
			if (x^r)&(y^r) < 0 && validAt(valid, i) {
				err = errBigintRange
				break
			}
			out[i] = r
		}
	case "-":
		for i := range out {
			x, y := xs.at(i), ys.at(i)
			r := x - y
			if (x^y)&(x^r) < 0 && validAt(valid, i) {
				err = errBigintRange
				break
			}
			out[i] = r
		}
	case "*":
		for i := range out {
			x, y := xs.at(i), ys.at(i)
			hi, lo := bits.Mul64(uint64(x), uint64(y))
			shi := int64(hi) // the signed product's high word
			if x < 0 {
				shi -= y
			}
			if y < 0 {
				shi -= x
			}
			if shi != int64(lo)>>63 && validAt(valid, i) {
				err = errBigintRange
				break
			}
			out[i] = int64(lo)
		}
	case "/":
		// Go's integer division truncates toward zero, as PostgreSQL's does.
		for i := range out {
			x, y := xs.at(i), ys.at(i)
			switch {
			case y == 0:
				if validAt(valid, i) {
					err = errDivisionByZero
				}
			case y == -1:
				if x == math.MinInt64 && validAt(valid, i) {
					err = errBigintRange
				}
				out[i] = -x
			default:
				out[i] = x / y
			}
			if err != nil {
				break
			}
		}
	case "%":
		// The remainder takes the dividend's sign, as in PostgreSQL.
		for i := range out {
			x, y := xs.at(i), ys.at(i)
			switch {
			case y == 0:
				if validAt(valid, i) {
					err = errDivisionByZero
				}
			case y == -1:
				out[i] = 0
			default:
				out[i] = x % y
			}
			if err != nil {
				break
			}
		}
	}
	if err != nil {
		buf.Release()
		return nil, err
	}
	return buf, nil
}

// arithFloat follows PostgreSQL's float8 operators: results that overflow to
// infinity (or underflow to zero) from finite operands are errors, as is
// division by zero. "%" is fmod (PostgreSQL has no float modulo).
func arithFloat(op string, xs, ys vals[float64], n int, valid *memory.Buffer, mem memory.Allocator) (*memory.Buffer, error) {
	buf, out := newValues[float64](mem, n)
	var err error
	for i := range out {
		a, b := xs.at(i), ys.at(i)
		var r float64
		switch op {
		case "+":
			r = a + b
		case "-":
			r = a - b
		case "*":
			r = a * b
			if r == 0 && a != 0 && b != 0 && validAt(valid, i) {
				err = errFloatUnder
			}
		case "/":
			if b == 0 && !math.IsNaN(a) {
				if validAt(valid, i) {
					err = errDivisionByZero
				}
				break
			}
			r = a / b
			if r == 0 && a != 0 && !math.IsInf(b, 0) && validAt(valid, i) {
				err = errFloatUnder
			}
		case "%":
			if b == 0 {
				if validAt(valid, i) {
					err = errDivisionByZero
				}
				break
			}
			r = math.Mod(a, b)
		}
		if math.IsInf(r, 0) && !math.IsInf(a, 0) && !math.IsInf(b, 0) && validAt(valid, i) {
			err = errFloatOver
		}
		if err != nil {
			break
		}
		out[i] = r
	}
	if err != nil {
		buf.Release()
		return nil, err
	}
	return buf, nil
}

// arithDecimal works on two decimals, of type t and (for "*", which keeps
// each side's scale) u, of type t as well for the other operators (the binder
// casts both sides to it), and produces type res, whose scale the resolver
// chose.
func arithDecimal(op string, xs, ys vals[num], n int, t, u, res types.Type, valid *memory.Buffer, mem memory.Allocator) (*memory.Buffer, error) {
	buf, out := newValues[num](mem, n)
	p, scale := int(res.Precision), int(res.Scale)
	// The scale the operation yields before any rounding to res's scale.
	natural := int(t.Scale)
	switch op {
	case "*":
		natural = int(t.Scale) + int(u.Scale)
	case "/":
		natural = scale // the division rounds to it directly
	}
	if (op == "+" || op == "-" || op == "*") && natural == scale && arithDecimalSmall(op, xs, ys, out, p) {
		return buf, nil
	}
	var err error
	for i := range out {
		var (
			r  num
			ok = true
		)
		x, y := xs.at(i), ys.at(i)
		switch op {
		case "+":
			r, ok = addDec(x, y)
		case "-":
			r, ok = subDec(x, y)
		case "*":
			r, ok = mulDrop(x, y, natural-scale)
		case "/":
			if y == (num{}) {
				if validAt(valid, i) {
					err = errDivisionByZero
				}
				break
			}
			// x/10^s / (y/10^s) = x/y; at the result's scale S that is x*10^S / y.
			r, ok = divDec(x, int(res.Scale), y, halfAway)
		case "%":
			if y == (num{}) {
				if validAt(valid, i) {
					err = errDivisionByZero
				}
				break
			}
			r = modDec(x, y)
		}
		if ok && natural != scale && op != "*" {
			r, ok = rescale(r, natural, scale)
		}
		if (!ok || !fits(r, p)) && err == nil && validAt(valid, i) {
			err = errNumericRange
		}
		if err != nil {
			break
		}
		out[i] = r
	}
	if err != nil {
		buf.Release()
		return nil, err
	}
	return buf, nil
}

// arithDecimalSmall is arithDecimal's fast path for +, - and * with no
// rescaling, when every operand fits in an int64 (as every DECIMAL(18) or
// narrower does): it fills out and reports true, or reports false when an
// operand is wider or a result leaves the int64 range or precision p, for
// the general loop to do the work again (and raise the error if a valid row
// is out of range). One loop per operator, each without a branch per row:
// a row's misfits are ORed into one word checked at the end.
func arithDecimalSmall(op string, xs, ys vals[num], out []num, p int) bool {
	limit := uint64(math.MaxUint64)
	if p <= 18 {
		limit = uint64(pow10Int[p])
	}
	var bad uint64 // nonzero once a row left the fast path
	switch op {
	case "+":
		for i := range out {
			x, y := xs.at(i), ys.at(i)
			a, b := int64(x.LowBits()), int64(y.LowBits())
			r := a + b
			bad |= misfit(x, a) | misfit(y, b) | uint64((a^r)&(b^r))>>63 | b2u64(absU(r) >= limit)
			out[i] = decimal128.New(r>>63, uint64(r))
		}
	case "-":
		for i := range out {
			x, y := xs.at(i), ys.at(i)
			a, b := int64(x.LowBits()), int64(y.LowBits())
			r := a - b
			bad |= misfit(x, a) | misfit(y, b) | uint64((a^b)&(a^r))>>63 | b2u64(absU(r) >= limit)
			out[i] = decimal128.New(r>>63, uint64(r))
		}
	case "*":
		for i := range out {
			x, y := xs.at(i), ys.at(i)
			a, b := int64(x.LowBits()), int64(y.LowBits())
			hi, lo := bits.Mul64(absU(a), absU(b))
			neg := (a ^ b) >> 63 // -1 when the signs differ
			r := (int64(lo) ^ neg) - neg
			bad |= misfit(x, a) | misfit(y, b) | hi | lo>>63 | b2u64(lo >= limit)
			out[i] = decimal128.New(r>>63, uint64(r))
		}
	default:
		return false
	}
	return bad == 0
}

// misfit is nonzero when the decimal n, whose low word is lo, does not fit in
// an int64: its high word is not lo's sign.
func misfit(n num, lo int64) uint64 { return uint64(n.HighBits() ^ lo>>63) }

// b2u64 is 1 for true and 0 for false, without a branch.
func b2u64(b bool) uint64 {
	var r uint64
	if b {
		r = 1
	}
	return r
}

// evalNumericUnary computes neg and abs; the result has the argument's type.
func evalNumericUnary(c *call) (arrow.Array, error) {
	abs := c.e.Func == "abs"
	a := c.args[0]
	valid, nulls := validity(c.mem, c.n, a)
	var (
		data *memory.Buffer
		err  error
	)
	switch c.argType(0).ID {
	case types.Int64:
		x := a.(*array.Int64).Int64Values()
		var out []int64
		data, out = newValues[int64](c.mem, c.n)
		for i, v := range x {
			if v == math.MinInt64 && validAt(valid, i) {
				err = errBigintRange
				break
			}
			if !abs || v < 0 {
				v = -v
			}
			out[i] = v
		}
	case types.Float64:
		x := a.(*array.Float64).Float64Values()
		var out []float64
		data, out = newValues[float64](c.mem, c.n)
		for i, v := range x {
			if abs {
				out[i] = math.Abs(v)
			} else {
				out[i] = -v
			}
		}
	case types.Decimal:
		x := a.(*array.Decimal128).Values()
		var out []decimal128.Num
		data, out = newValues[decimal128.Num](c.mem, c.n)
		for i, v := range x {
			if abs {
				out[i] = v.Abs()
			} else {
				out[i] = v.Negate()
			}
		}
	default:
		err = errArgKind(c)
	}
	return finishOrRelease(c, nulls, valid, data, err)
}

// evalRounding computes round(x), round(x, n), floor(x) and ceil(x).
//
// Decimals round half away from zero, as PostgreSQL's numeric does. Doubles
// round half to even: PostgreSQL's round(double precision) is rint(), so
// round(2.5::float8) is 2. round(double, n) (not in PostgreSQL) scales by 10^n
// and does the same. Bigints are returned as they are, except round(x, n) with
// n < 0, which rounds to tens, hundreds, ... half away from zero.
func evalRounding(c *call) (arrow.Array, error) {
	mode := halfAway
	switch c.e.Func {
	case "floor":
		mode = toFloor
	case "ceil", "ceiling":
		mode = toCeil
	}
	valid, nulls := validity(c.mem, c.n, c.args...)
	var digits vals[int64] // round(x, n): n per row
	if len(c.args) == 2 {
		digits = int64Arg(c.args[1])
	}
	var (
		data *memory.Buffer
		err  error
	)
	switch t := c.argType(0); t.ID {
	case types.Int64:
		x := int64Arg(c.args[0])
		var out []int64
		data, out = newValues[int64](c.mem, c.n)
		for i := range out {
			v := x.at(i)
			out[i] = v
			if digits.v == nil || digits.at(i) >= 0 {
				continue
			}
			r, ok := roundDigits(decimal128.FromI64(v), 0, digits.at(i), halfAway)
			s, fitsInt := small(r)
			if (!ok || !fitsInt) && validAt(valid, i) {
				err = errBigintRange
				break
			}
			out[i] = s
		}
	case types.Float64:
		x := float64Arg(c.args[0])
		var out []float64
		data, out = newValues[float64](c.mem, c.n)
		for i := range out {
			v := x.at(i)
			switch {
			case mode == toFloor:
				out[i] = math.Floor(v)
			case mode == toCeil:
				out[i] = math.Ceil(v)
			case digits.v == nil || digits.at(i) == 0:
				out[i] = math.RoundToEven(v)
			default:
				out[i] = roundFloatDigits(v, digits.at(i))
			}
		}
	case types.Decimal:
		x := decimalArg(c.args[0])
		var out []decimal128.Num
		data, out = newValues[decimal128.Num](c.mem, c.n)
		scale, resScale, p := int(t.Scale), int(c.e.Type.Scale), int(c.e.Type.Precision)
		for i := range out {
			v := x.at(i)
			var (
				r  num
				ok bool
			)
			if digits.v == nil {
				// Result scale 0: divide the fraction away.
				r, ok = divDec(v, 0, pow10(scale), mode)
			} else {
				// Round once, to the nearer of n places and the result's scale
				// (lower than the argument's only past 38 digits); the rescale
				// after it is then exact.
				r, ok = roundDigits(v, scale, min(digits.at(i), int64(resScale)), halfAway)
				if ok && resScale != scale {
					r, ok = rescale(r, scale, resScale)
				}
			}
			if (!ok || !fits(r, p)) && validAt(valid, i) {
				err = errNumericRange
				break
			}
			out[i] = r
		}
	default:
		err = errArgKind(c)
	}
	return finishOrRelease(c, nulls, valid, data, err)
}

func roundFloatDigits(v float64, digits int64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	if digits > 0 {
		if digits > 308 {
			return v
		}
		p := math.Pow(10, float64(digits))
		if s := v * p; !math.IsInf(s, 0) {
			return math.RoundToEven(s) / p
		}
		return v
	}
	if digits < -308 {
		return 0
	}
	p := math.Pow(10, float64(-digits))
	return math.RoundToEven(v/p) * p
}

// finishOrRelease wraps a kernel's result buffers into c's result array, or, when
// the kernel failed, releases whichever of them exist and returns its error.
func finishOrRelease(c *call, nulls int, valid, data *memory.Buffer, err error) (arrow.Array, error) {
	if err != nil {
		for _, b := range []*memory.Buffer{data, valid} {
			if b != nil {
				b.Release()
			}
		}
		return nil, err
	}
	return finish(c.e.Type.Arrow(), c.n, nulls, valid, data), nil
}
