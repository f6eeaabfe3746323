package expr

import (
	"strings"

	"github.com/hummer-db/hummer/exec/types"
)

// resolver type-checks one call. It returns ok=false when the function does not
// take these argument types; Resolve turns that into an ErrArgumentType error.
type resolver func(args []types.Type) (sig Signature, ok bool)

// catalog lists every function Resolve knows. Eval finds the kernel of each in
// kernelFor (eval.go); a test checks that the two lists agree.
var catalog = map[string]resolver{
	"+": resolveArith("+"), "-": resolveArith("-"), "*": resolveArith("*"),
	"/": resolveArith("/"), "%": resolveArith("%"), "mod": resolveArith("%"),
	"neg": resolveNumericUnary,

	"=": resolveCompare, "<>": resolveCompare, "<": resolveCompare,
	"<=": resolveCompare, ">": resolveCompare, ">=": resolveCompare,

	"and": resolveBoolN, "or": resolveBoolN, "not": resolveBool1,
	"is_true": resolveBool1, "is_false": resolveBool1,
	"is_not_true": resolveBool1, "is_not_false": resolveBool1,
	"is_null": resolveAny1, "is_not_null": resolveAny1,

	"in": resolveIn, "case": resolveCase, "coalesce": resolveCoalesce,
	"nullif": resolveNullif, "$single_row": resolveSingleRow,

	"like": resolveLike, "ilike": resolveLike,
	"lower":            fixed(types.StringType, types.StringType),
	"upper":            fixed(types.StringType, types.StringType),
	"length":           fixed(types.Int64Type, types.StringType),
	"char_length":      fixed(types.Int64Type, types.StringType),
	"character_length": fixed(types.Int64Type, types.StringType),
	"octet_length":     fixed(types.Int64Type, types.StringType),
	"substring":        resolveSubstring, "substr": resolveSubstring,
	"concat": resolveConcat, "||": resolveConcatOp,
	"trim": resolveTrim, "btrim": resolveTrim, "ltrim": resolveTrim, "rtrim": resolveTrim,
	"replace":             fixed(types.StringType, types.StringType, types.StringType, types.StringType),
	"strpos":              fixed(types.Int64Type, types.StringType, types.StringType),
	"position":            fixed(types.Int64Type, types.StringType, types.StringType),
	"left":                fixed(types.StringType, types.StringType, types.Int64Type),
	"right":               fixed(types.StringType, types.StringType, types.Int64Type),
	"reverse":             fixed(types.StringType, types.StringType),
	"split_part":          fixed(types.StringType, types.StringType, types.StringType, types.Int64Type),
	"regexp_extract":      resolveRegexpExtract,
	"count_char":          fixed(types.Int64Type, types.StringType, types.StringType),
	"split_index":         fixed(types.StringType, types.StringType, types.StringType, types.Int64Type),
	"proctime":            fixed(types.TimestampType),
	"regexp_replace":      resolveRegexpReplace,
	"regexp_like":         resolveRegexpLike,
	"array_element":       resolveAnyToText,
	"array_to_string":     resolveArrayToString,
	"array_upper":         fixed(types.Int64Type, types.StringType, types.Int64Type),
	"array_length":        fixed(types.Int64Type, types.StringType, types.Int64Type),
	"format_type":         fixed(types.StringType, types.Int64Type, types.Int64Type),
	"$quote_ident":        fixed(types.StringType, types.StringType),
	"$json_string":        fixed(types.StringType, types.StringType),
	"pg_size_pretty":      fixed(types.StringType, types.Int64Type),
	"array_position":      resolveArrayPosition,
	"array_get":           fixed(types.StringType, types.StringType, types.Int64Type),
	"array_remove":        fixed(types.StringType, types.StringType, types.StringType),
	"format":              resolveAllToText,
	"array_build":         resolveAllToText,
	"$timestamptz":        fixed(types.TimestampType, types.StringType),
	"$timestamptz_in":     fixed(types.TimestamptzType, types.StringType, types.StringType),
	"$tz_from_local":      fixed(types.TimestamptzType, types.TimestampType, types.StringType),
	"$tz_to_local":        fixed(types.TimestampType, types.TimestampType, types.StringType),
	"$tz_text":            fixed(types.StringType, types.TimestampType, types.StringType),
	"$tz_offset":          fixed(types.Int64Type, types.TimestampType, types.StringType),
	"$interval_months":    fixed(types.Int64Type, types.StringType),
	"$interval_micros":    fixed(types.Int64Type, types.StringType),
	"$interval_days":      fixed(types.Int64Type, types.StringType),
	"$interval_time":      fixed(types.Int64Type, types.StringType),
	"$interval_key":       fixed(types.Int64Type, types.StringType),
	"$interval_ordered":   fixed(types.StringType, types.StringType),
	"$interval_unordered": fixed(types.IntervalType, types.StringType),
	"$interval_add":       fixed(types.IntervalType, types.StringType, types.StringType),
	"$interval_sub":       fixed(types.IntervalType, types.StringType, types.StringType),
	"$interval_mul":       fixed(types.IntervalType, types.StringType, types.Float64Type),
	"$timestamp_diff":     fixed(types.IntervalType, types.TimestampType, types.TimestampType),
	"to_char":             fixed(types.StringType, types.TimestampType, types.StringType),
	"date_format":         fixed(types.StringType, types.TimestampType, types.StringType),
	"date_trunc":          fixed(types.TimestampType, types.StringType, types.TimestampType),
	"$date_part":          fixed(types.Int64Type, types.StringType, types.TimestampType),
	"$date_part_seconds":  fixed(secondsType, types.TimestampType),
	"$date_part_epoch":    fixed(epochType, types.TimestampType),
	"$add_micros":         fixed(types.TimestampType, types.TimestampType, types.Int64Type),
	"$add_months":         fixed(types.TimestampType, types.TimestampType, types.Int64Type),
	"$days_between":       fixed(types.Int64Type, types.TimestampType, types.TimestampType),
	"tumble_start":        fixed(types.TimestampType, types.TimestampType, types.Int64Type),
	"tumble_end":          fixed(types.TimestampType, types.TimestampType, types.Int64Type),
	"hop_first":           fixed(types.TimestampType, types.TimestampType, types.Int64Type, types.Int64Type),
	"cumulate_first_end":  fixed(types.TimestampType, types.TimestampType, types.Int64Type, types.Int64Type),
	"session_start":       fixed(types.TimestampType, types.TimestampType, types.Int64Type),
	"session_end":         fixed(types.TimestampType, types.TimestampType, types.Int64Type),

	"abs": resolveNumericUnary, "round": resolveRound,
	"floor": resolveFloorCeil, "ceil": resolveFloorCeil, "ceiling": resolveFloorCeil,
}

func resolve(name string, args []types.Type) (Signature, error) {
	r, ok := catalog[name]
	if !ok {
		return Signature{}, newError(ErrUnknownFunction, "function %s does not exist", callText(name, args))
	}
	sig, ok := r(args)
	if !ok {
		return Signature{}, argumentError(name, args)
	}
	return sig, nil
}

// argumentError words a type mismatch the way PostgreSQL does for that construct.
func argumentError(name string, args []types.Type) error {
	switch name {
	case "and", "or", "not":
		for _, t := range args {
			if t.ID != types.Bool && t.ID != types.Null {
				return newError(ErrArgumentType, "argument of %s must be type boolean, not type %s", strings.ToUpper(name), t)
			}
		}
	case "is_true", "is_false", "is_not_true", "is_not_false":
		return newError(ErrArgumentType, "argument of IS %s must be type boolean, not type %s",
			strings.ToUpper(strings.ReplaceAll(strings.TrimPrefix(name, "is_"), "_", " ")), args[0])
	case "case", "coalesce":
		if t1, t2, ok := firstMismatch(name, args); ok {
			return newError(ErrArgumentType, "%s types %s and %s cannot be matched", strings.ToUpper(name), t1, t2)
		}
	}
	if isOperator(name) {
		if len(args) == 1 {
			return newError(ErrArgumentType, "operator does not exist: %s %s", operatorText(name), args[0])
		}
		if len(args) == 2 {
			return newError(ErrArgumentType, "operator does not exist: %s %s %s", args[0], operatorText(name), args[1])
		}
	}
	return newError(ErrArgumentType, "function %s does not exist", callText(name, args))
}

// firstMismatch finds the first pair of result values of a CASE or COALESCE that
// have no common type.
func firstMismatch(name string, args []types.Type) (types.Type, types.Type, bool) {
	var vals []types.Type
	if name == "case" {
		for i := 1; i < len(args); i += 2 {
			vals = append(vals, args[i])
		}
		if len(args) > 0 {
			vals = append(vals, args[len(args)-1])
		}
	} else {
		vals = args
	}
	acc := types.NullType
	for _, t := range vals {
		c, ok := Coerce(acc, t)
		if !ok {
			return acc, t, true
		}
		acc = c
	}
	return types.Type{}, types.Type{}, false
}

func isOperator(name string) bool {
	switch name {
	case "+", "-", "*", "/", "%", "neg", "=", "<>", "<", "<=", ">", ">=", "||", "like", "ilike":
		return true
	}
	return false
}

func operatorText(name string) string {
	switch name {
	case "neg":
		return "-"
	case "like":
		return "~~"
	case "ilike":
		return "~~*"
	}
	return name
}

func callText(name string, args []types.Type) string {
	parts := make([]string, len(args))
	for i, t := range args {
		parts[i] = t.String()
	}
	return name + "(" + strings.Join(parts, ", ") + ")"
}

// Coerce returns the common supertype of a and b, used wherever values of two
// types meet: CASE and COALESCE results, IN lists, comparisons, join keys. NULL
// coerces to anything; among numbers bigint < decimal < double, and two decimals
// widen to the larger integer part plus the larger scale; text coerces to timestamp, as a string literal does in
// PostgreSQL. Other pairs of different types have no common type. Past 38
// digits a decimal keeps its integer digits and gives up scale (see capDecimal).
func Coerce(a, b types.Type) (types.Type, bool) {
	switch {
	case a == b:
		return a, true
	case a.ID == b.ID && a.ID != types.Decimal:
		// A type held as another and that type (pgtypes.go): text for name
		// and text, as PostgreSQL's; timestamptz for timestamptz and
		// timestamp, to which PostgreSQL casts timestamp implicitly; bytea
		// for bytea and text.
		if a.OID == types.OIDTimestamptz || b.OID == types.OIDTimestamptz {
			return types.TimestamptzType, true
		}
		if a.OID == types.OIDBytea || b.OID == types.OIDBytea {
			return types.ByteaType, true // text, a literal's, read as bytea
		}
		if w, ok := widerInt(a, b); ok {
			return w, true // smallint and integer: integer
		}
		return a.Base(), true
	case a.ID == types.Null:
		return unsized(b), true
	case b.ID == types.Null:
		return unsized(a), true
	case a.IsNumeric() && b.IsNumeric():
		if a.ID == types.Float64 || b.ID == types.Float64 {
			return types.Float64Type, true
		}
		da, db := asDecimal(a), asDecimal(b)
		scale := max(da.Scale, db.Scale)
		digits := max(da.Precision-da.Scale, db.Precision-db.Scale)
		return capDecimal(int(digits), int(scale)), true
	case a.ID == types.String && b.ID == types.Timestamp, a.ID == types.Timestamp && b.ID == types.String:
		return types.TimestampType, true
	case a.ID == types.String && b.ID == types.Date, a.ID == types.Date && b.ID == types.String:
		return types.DateType, true
	case a.ID == types.Date && b.ID == types.Timestamp, a.ID == types.Timestamp && b.ID == types.Date:
		return types.TimestampType, true // a date is its midnight
	}
	return types.Type{}, false
}

// widerInt returns the wider of a smallint and an integer; ok is false
// unless both are one of them.
func widerInt(a, b types.Type) (types.Type, bool) {
	isInt := func(t types.Type) bool { return t == types.Int2Type || t == types.Int4Type }
	if !isInt(a) || !isInt(b) {
		return types.Type{}, false
	}
	if a == types.Int4Type {
		return a, true
	}
	return b, true
}

// unsized is t without the length of a character type, as PostgreSQL types
// what meets a character varying(n) as text and what meets a character(n)
// as bpchar: a parameter compared with a column of such a type takes a
// value of any length.
func unsized(t types.Type) types.Type {
	switch t.OID {
	case types.OIDVarchar:
		return t.Base()
	case types.OIDBpchar:
		return types.BpcharType(0)
	}
	return t
}

// int64Digits is the precision of the decimal that holds every bigint.
const int64Digits = 19

// asDecimal returns the decimal type that holds every value of the numeric type t
// exactly (not meaningful for double).
func asDecimal(t types.Type) types.Type {
	if t.ID == types.Int64 {
		return types.DecimalType(int64Digits, 0)
	}
	return t
}

// capDecimal returns a decimal with the given integer digits and scale. Past 38
// digits it gives up scale rather than integer digits, down to a scale of 6 (as
// Spark does), so that large values still fit and only far decimals round.
func capDecimal(intDigits, scale int) types.Type {
	if intDigits+scale > maxDecimalDigits {
		scale = max(maxDecimalDigits-intDigits, min(scale, 6))
	}
	return types.DecimalType(min(intDigits+scale, maxDecimalDigits), scale)
}

const maxDecimalDigits = 38

// common folds Coerce over ts; every-NULL input gives NULL.
func common(ts []types.Type) (types.Type, bool) {
	acc := types.NullType
	for _, t := range ts {
		c, ok := Coerce(acc, t)
		if !ok {
			return types.Type{}, false
		}
		acc = c
	}
	return acc, true
}

func repeat(t types.Type, n int) []types.Type {
	ts := make([]types.Type, n)
	for i := range ts {
		ts[i] = t
	}
	return ts
}

// accepts reports whether an argument of type have may be passed where want is
// expected: only NULL is cast implicitly (PostgreSQL has no implicit cast from
// bigint to text, say, so lower(bigint) is an error there too).
func accepts(want, have types.Type) bool {
	return have.ID == types.Null || have.Base() == want
}

// fixed returns a resolver for a function with one signature.
func fixed(result types.Type, params ...types.Type) resolver {
	return func(args []types.Type) (Signature, bool) {
		if len(args) != len(params) {
			return Signature{}, false
		}
		for i, p := range params {
			if !accepts(p, args[i]) {
				return Signature{}, false
			}
		}
		return Signature{Args: append([]types.Type(nil), params...), Result: result}, true
	}
}

// numericCommon is the common numeric type of args, bigint when all are NULL.
func numericCommon(args []types.Type) (types.Type, bool) {
	t, ok := common(args)
	if !ok {
		return types.Type{}, false
	}
	if t.ID == types.Null {
		return types.Int64Type, true
	}
	return t, t.IsNumeric()
}

// resolveArith types the binary arithmetic operators. Both arguments are cast to
// their common type; the result is that type, except for decimals:
//
//   - -   decimal(p,s), decimal(p,s) -> decimal(p+1, s)
//   - -> decimal(d1+d2+1, s1+s2) of each side's own decimal(d+s, s) (a bigint
//     is decimal(19,0)), as PostgreSQL's numeric product has the sum of the scales
//     /     -> scale max(16, s), integer digits p (a divisor below 1 enlarges the
//     quotient) but at most 38 less the scale; rounded half away from zero at
//     that scale. PostgreSQL picks the scale per value, for at least 16
//     significant digits; a fixed type cannot, so this is PostgreSQL's scale for
//     quotients from 1 to 9999 (16 digits after the point) and more digits than
//     it gives for larger ones; a quotient of 10^(38-scale) or more fails.
//     %     -> decimal(p, s)
//
// always capped at 38 digits by capDecimal, which may lower the scale (the
// kernel then rounds half away from zero); results that do not fit fail with
// ErrOutOfRange.
func resolveArith(op string) resolver {
	return func(args []types.Type) (Signature, bool) {
		if len(args) != 2 {
			return Signature{}, false
		}
		t, ok := numericCommon(args)
		if !ok {
			return Signature{}, false
		}
		if op == "*" && t.ID == types.Decimal {
			// Each side keeps its own scale, and the product has their sum:
			// PostgreSQL's numeric(10,2) * 10 is 15.00, not 15.0000.
			a, b := asDecimal(args[0]), asDecimal(args[1])
			if args[0].ID == types.Null {
				a = t
			}
			if args[1].ID == types.Null {
				b = t
			}
			res := capDecimal(int(a.Precision-a.Scale)+int(b.Precision-b.Scale)+1, int(a.Scale+b.Scale))
			return Signature{Args: []types.Type{a, b}, Result: res}, true
		}
		return Signature{Args: []types.Type{t, t}, Result: arithResult(op, t)}, true
	}
}

func arithResult(op string, t types.Type) types.Type {
	if t.ID != types.Decimal {
		return t
	}
	p, s := int(t.Precision), int(t.Scale)
	switch op {
	case "+", "-":
		return capDecimal(p-s+1, s)
	case "/":
		scale := max(16, s)
		return types.DecimalType(min(p, maxDecimalDigits-scale)+scale, scale)
	}
	return t
}

func resolveNumericUnary(args []types.Type) (Signature, bool) {
	if len(args) != 1 {
		return Signature{}, false
	}
	t, ok := numericCommon(args)
	if !ok {
		return Signature{}, false
	}
	return Signature{Args: []types.Type{t}, Result: t}, true
}

// resolveRound: round(x) and round(x, n). Doubles stay doubles (PostgreSQL has no
// round(double, int); it is accepted here), bigints stay bigints, round(decimal(p,s))
// is decimal(p-s+1, 0) and round(decimal(p,s), n) is decimal(p+1, s) with the digits
// past n zeroed: n is a value, not part of the type, so the scale cannot follow it.
// A binder that sees a constant n may cast the result to decimal(p+1, n).
func resolveRound(args []types.Type) (Signature, bool) {
	if len(args) != 1 && len(args) != 2 {
		return Signature{}, false
	}
	t, ok := numericCommon(args[:1])
	if !ok {
		return Signature{}, false
	}
	if len(args) == 1 {
		res := t
		if t.ID == types.Decimal {
			res = capDecimal(int(t.Precision-t.Scale)+1, 0)
		}
		return Signature{Args: []types.Type{t}, Result: res}, true
	}
	if !accepts(types.Int64Type, args[1]) {
		return Signature{}, false
	}
	res := t
	if t.ID == types.Decimal {
		res = capDecimal(int(t.Precision-t.Scale)+1, int(t.Scale))
	}
	return Signature{Args: []types.Type{t, types.Int64Type}, Result: res}, true
}

// resolveFloorCeil: bigint and double keep their type; decimal(p,s) becomes
// decimal(p-s+1, 0).
func resolveFloorCeil(args []types.Type) (Signature, bool) {
	if len(args) != 1 {
		return Signature{}, false
	}
	t, ok := numericCommon(args)
	if !ok {
		return Signature{}, false
	}
	res := t
	if t.ID == types.Decimal {
		res = capDecimal(int(t.Precision-t.Scale)+1, 0)
	}
	return Signature{Args: []types.Type{t}, Result: res}, true
}

// commonOrText is the common type of args, text when all are NULL.
func commonOrText(args []types.Type) (types.Type, bool) {
	t, ok := common(args)
	if ok && t.ID == types.Null {
		t = types.StringType
	}
	return t, ok
}

func resolveCompare(args []types.Type) (Signature, bool) {
	if len(args) != 2 {
		return Signature{}, false
	}
	t, ok := commonOrText(args)
	if !ok {
		return Signature{}, false
	}
	return Signature{Args: []types.Type{t, t}, Result: types.BoolType}, true
}

func isBoolish(t types.Type) bool { return t.ID == types.Bool || t.ID == types.Null }

func resolveBoolN(args []types.Type) (Signature, bool) {
	if len(args) < 2 {
		return Signature{}, false
	}
	for _, t := range args {
		if !isBoolish(t) {
			return Signature{}, false
		}
	}
	return Signature{Args: repeat(types.BoolType, len(args)), Result: types.BoolType}, true
}

func resolveBool1(args []types.Type) (Signature, bool) {
	if len(args) != 1 || !isBoolish(args[0]) {
		return Signature{}, false
	}
	return Signature{Args: []types.Type{types.BoolType}, Result: types.BoolType}, true
}

// resolveAny1 types IS [NOT] NULL, which takes any type, NULL included, uncast.
func resolveAny1(args []types.Type) (Signature, bool) {
	if len(args) != 1 {
		return Signature{}, false
	}
	return Signature{Args: []types.Type{args[0]}, Result: types.BoolType}, true
}

// resolveIn types x IN (v1, v2, ...): args[0] is x, all are cast to one type.
func resolveIn(args []types.Type) (Signature, bool) {
	if len(args) < 2 {
		return Signature{}, false
	}
	t, ok := commonOrText(args)
	if !ok {
		return Signature{}, false
	}
	return Signature{Args: repeat(t, len(args)), Result: types.BoolType}, true
}

// resolveCase types searched CASE: [when1, then1, ..., whenN, thenN, else].
func resolveCase(args []types.Type) (Signature, bool) {
	if len(args) < 3 || len(args)%2 == 0 {
		return Signature{}, false
	}
	var vals []types.Type
	for i := 0; i+1 < len(args); i += 2 {
		if !isBoolish(args[i]) {
			return Signature{}, false
		}
		vals = append(vals, args[i+1])
	}
	vals = append(vals, args[len(args)-1])
	t, ok := commonOrText(vals)
	if !ok {
		return Signature{}, false
	}
	sig := Signature{Args: make([]types.Type, len(args)), Result: t}
	for i := range args {
		if i%2 == 0 && i != len(args)-1 {
			sig.Args[i] = types.BoolType
		} else {
			sig.Args[i] = t
		}
	}
	return sig, true
}

func resolveCoalesce(args []types.Type) (Signature, bool) {
	if len(args) < 1 {
		return Signature{}, false
	}
	t, ok := commonOrText(args)
	if !ok {
		return Signature{}, false
	}
	return Signature{Args: repeat(t, len(args)), Result: t}, true
}

// resolveRegexpReplace types regexp_replace(s, pattern, replacement[, flags]).
func resolveRegexpReplace(args []types.Type) (Signature, bool) {
	if len(args) != 3 && len(args) != 4 {
		return Signature{}, false
	}
	for _, a := range args {
		if !accepts(types.StringType, a) {
			return Signature{}, false
		}
	}
	return Signature{Args: repeat(types.StringType, len(args)), Result: types.StringType}, true
}

// resolveRegexpLike types regexp_like(s, pattern[, flags]).
func resolveRegexpLike(args []types.Type) (Signature, bool) {
	if len(args) != 2 && len(args) != 3 {
		return Signature{}, false
	}
	for _, a := range args {
		if !accepts(types.StringType, a) {
			return Signature{}, false
		}
	}
	return Signature{Args: repeat(types.StringType, len(args)), Result: types.BoolType}, true
}

// resolveAnyToText types a function of one argument of any type, read as
// its text.
func resolveAnyToText(args []types.Type) (Signature, bool) {
	if len(args) != 1 {
		return Signature{}, false
	}
	return Signature{Args: []types.Type{types.StringType}, Result: types.StringType}, true
}

// resolveArrayPosition types array_position(array, x): x compares as text
// with the elements of the array's text form.
func resolveArrayPosition(args []types.Type) (Signature, bool) {
	if len(args) != 2 || !accepts(types.StringType, args[0]) {
		return Signature{}, false
	}
	return Signature{Args: []types.Type{types.StringType, types.StringType}, Result: types.Int64Type}, true
}

// resolveAllToText types a function of any number of arguments (one at
// least) of any types, each read as its text.
func resolveAllToText(args []types.Type) (Signature, bool) {
	if len(args) == 0 {
		return Signature{}, false
	}
	return Signature{Args: repeat(types.StringType, len(args)), Result: types.StringType}, true
}

// resolveArrayToString types array_to_string(array, sep[, null]), the array
// in its text form.
func resolveArrayToString(args []types.Type) (Signature, bool) {
	if len(args) != 2 && len(args) != 3 {
		return Signature{}, false
	}
	for _, a := range args {
		if !accepts(types.StringType, a) {
			return Signature{}, false
		}
	}
	return Signature{Args: repeat(types.StringType, len(args)), Result: types.StringType}, true
}

// resolveSingleRow types $single_row(rows bigint, v): v, unless rows is
// above 1 (the binder's check on a correlated scalar subquery's rows).
func resolveSingleRow(args []types.Type) (Signature, bool) {
	if len(args) != 2 || (args[0].ID != types.Int64 && args[0].ID != types.Null) {
		return Signature{}, false
	}
	return Signature{Args: []types.Type{types.Int64Type, args[1]}, Result: args[1]}, true
}

func resolveNullif(args []types.Type) (Signature, bool) {
	if len(args) != 2 {
		return Signature{}, false
	}
	t, ok := commonOrText(args)
	if !ok {
		return Signature{}, false
	}
	return Signature{Args: []types.Type{t, t}, Result: t}, true
}

// resolveLike types like(s, pattern, escape); the escape may be left out and
// defaults to backslash.
func resolveLike(args []types.Type) (Signature, bool) {
	if len(args) != 2 && len(args) != 3 {
		return Signature{}, false
	}
	for _, t := range args {
		if !accepts(types.StringType, t) {
			return Signature{}, false
		}
	}
	return Signature{Args: repeat(types.StringType, len(args)), Result: types.BoolType}, true
}

func resolveSubstring(args []types.Type) (Signature, bool) {
	if len(args) != 2 && len(args) != 3 {
		return Signature{}, false
	}
	if !accepts(types.StringType, args[0]) {
		return Signature{}, false
	}
	for _, t := range args[1:] {
		if !accepts(types.Int64Type, t) {
			return Signature{}, false
		}
	}
	sig := Signature{Args: repeat(types.Int64Type, len(args)), Result: types.StringType}
	sig.Args[0] = types.StringType
	return sig, true
}

// resolveConcat: concat takes any number of arguments of any type, each cast to text.
func resolveConcat(args []types.Type) (Signature, bool) {
	if len(args) < 1 {
		return Signature{}, false
	}
	return Signature{Args: repeat(types.StringType, len(args)), Result: types.StringType}, true
}

// resolveConcatOp: a || b needs text on at least one side (as PostgreSQL's
// text || anynonarray); the other side is cast to text.
func resolveConcatOp(args []types.Type) (Signature, bool) {
	if len(args) != 2 {
		return Signature{}, false
	}
	if !accepts(types.StringType, args[0]) && !accepts(types.StringType, args[1]) {
		return Signature{}, false
	}
	return Signature{Args: repeat(types.StringType, 2), Result: types.StringType}, true
}

// resolveTrim: trim(s) and trim(s, characters); trim is btrim (both ends).
func resolveTrim(args []types.Type) (Signature, bool) {
	if len(args) != 1 && len(args) != 2 {
		return Signature{}, false
	}
	for _, t := range args {
		if !accepts(types.StringType, t) {
			return Signature{}, false
		}
	}
	return Signature{Args: repeat(types.StringType, len(args)), Result: types.StringType}, true
}
