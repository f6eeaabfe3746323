package expr

import (
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec/types"
)

// The double precision functions of PostgreSQL's mathematical functions:
// power (and ^, which the binder reads as PostgreSQL's exponentiation, not
// MySQL's exclusive or), sqrt, cbrt, exp, ln, log, log10, sign, degrees,
// radians, the trigonometric functions and pi. Their arguments are cast to
// double precision, as PostgreSQL resolves an integer argument; a numeric
// argument, whose result PostgreSQL computes as numeric, gets the double's.
// The arguments PostgreSQL refuses fail with its messages.

// mathFuncs are the functions of one or two doubles, by name.
var mathFuncs = map[string]func(x, y float64) (float64, error){
	"power": power, "pow": power,
	"sqrt": func(x, _ float64) (float64, error) {
		if x < 0 {
			return 0, newError(ErrPowerArgument, "cannot take square root of a negative number")
		}
		return math.Sqrt(x), nil
	},
	"cbrt":  func(x, _ float64) (float64, error) { return math.Cbrt(x), nil },
	"exp":   func(x, _ float64) (float64, error) { return checkOverflow(math.Exp(x), x) },
	"ln":    logarithm(math.Log),
	"log10": logarithm(math.Log10),
	"log":   logarithm(math.Log10), // log(x) is log10 in PostgreSQL
	"sign": func(x, _ float64) (float64, error) {
		switch {
		case x > 0:
			return 1, nil
		case x < 0:
			return -1, nil
		}
		return 0, nil
	},
	"degrees": func(x, _ float64) (float64, error) { return x * (180 / math.Pi), nil },
	"radians": func(x, _ float64) (float64, error) { return x * (math.Pi / 180), nil },
	"sin":     func(x, _ float64) (float64, error) { return math.Sin(x), nil },
	"cos":     func(x, _ float64) (float64, error) { return math.Cos(x), nil },
	"tan":     func(x, _ float64) (float64, error) { return math.Tan(x), nil },
	"cot":     func(x, _ float64) (float64, error) { return 1 / math.Tan(x), nil },
	"asin":    inUnitRange(math.Asin),
	"acos":    inUnitRange(math.Acos),
	"atan":    func(x, _ float64) (float64, error) { return math.Atan(x), nil },
	"atan2":   func(y, x float64) (float64, error) { return math.Atan2(y, x), nil },
	"pi":      func(_, _ float64) (float64, error) { return math.Pi, nil },
}

// mathArity is the number of arguments each of mathFuncs takes.
var mathArity = map[string]int{"power": 2, "pow": 2, "atan2": 2, "pi": 0}

func power(x, y float64) (float64, error) {
	if x == 0 && y < 0 {
		return 0, newError(ErrPowerArgument, "zero raised to a negative power is undefined")
	}
	if x < 0 && y != math.Trunc(y) {
		return 0, newError(ErrPowerArgument, "a negative number raised to a non-integer power yields a complex result")
	}
	return checkOverflow(math.Pow(x, y), x, y)
}

func logarithm(f func(float64) float64) func(x, _ float64) (float64, error) {
	return func(x, _ float64) (float64, error) {
		switch {
		case x == 0:
			return 0, newError(ErrLogArgument, "cannot take logarithm of zero")
		case x < 0:
			return 0, newError(ErrLogArgument, "cannot take logarithm of a negative number")
		}
		return f(x), nil
	}
}

func inUnitRange(f func(float64) float64) func(x, _ float64) (float64, error) {
	return func(x, _ float64) (float64, error) {
		if x < -1 || x > 1 {
			return 0, newError(ErrOutOfRange, "input is out of range")
		}
		return f(x), nil
	}
}

// checkOverflow fails as PostgreSQL's float8 functions do when finite
// arguments give an infinite result.
func checkOverflow(r float64, args ...float64) (float64, error) {
	if math.IsInf(r, 0) {
		for _, a := range args {
			if math.IsInf(a, 0) {
				return r, nil
			}
		}
		return 0, newError(ErrOutOfRange, "value out of range: overflow")
	}
	return r, nil
}

func init() {
	for name := range mathFuncs {
		n, ok := mathArity[name]
		if !ok {
			n = 1
		}
		catalog[name] = resolveFloats(n)
	}
}

// resolveFloats resolves a function of n doubles over any numeric
// arguments, each cast to double precision.
func resolveFloats(n int) resolver {
	return func(args []types.Type) (Signature, bool) {
		if len(args) != n {
			return Signature{}, false
		}
		params := make([]types.Type, n)
		for i, a := range args {
			switch a.ID {
			case types.Int64, types.Decimal, types.Float64, types.Null:
			default:
				return Signature{}, false
			}
			params[i] = types.Float64Type
		}
		return Signature{Args: params, Result: types.Float64Type}, true
	}
}

// evalMath computes one of mathFuncs over whole columns; a NULL argument's
// row is NULL and is not computed, so it cannot fail.
func evalMath(c *call) (arrow.Array, error) {
	f := mathFuncs[c.e.Func]
	valid, nulls := validity(c.mem, c.n, c.args...)
	var x, y vals[float64]
	if len(c.args) > 0 {
		x = float64Arg(c.args[0])
	}
	if len(c.args) > 1 {
		y = float64Arg(c.args[1])
	}
	var (
		data *memory.Buffer
		out  []float64
		err  error
	)
	data, out = newValues[float64](c.mem, c.n)
	for i := range out {
		if !validAt(valid, i) {
			continue
		}
		var a, b float64
		if x.v != nil {
			a = x.at(i)
		}
		if y.v != nil {
			b = y.at(i)
		}
		if out[i], err = f(a, b); err != nil {
			break
		}
	}
	return finishOrRelease(c, nulls, valid, data, err)
}
