package expr

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/exec/types"
)

// call is one function call being evaluated over a batch: the node, its evaluated
// arguments (nil for the lazy kernels, which evaluate their own), and where to
// allocate the result.
type call struct {
	e    *Expr
	args []arrow.Array
	b    arrow.RecordBatch
	n    int
	mem  memory.Allocator
}

// argType is the SQL type of argument i.
func (c *call) argType(i int) types.Type { return c.e.Args[i].Type }

// kernel computes one call. Its result has c.e.Type's Arrow type and c.n rows.
type kernel func(c *call) (arrow.Array, error)

// kernelMode says how a kernel takes its arguments.
type kernelMode uint8

const (
	// rowsArgs: every argument is evaluated to an array of c.n rows.
	rowsArgs kernelMode = iota
	// literalArgs: as rowsArgs, except that literal arguments arrive as one-row
	// arrays, which the kernel reads through vals and textArg, so that
	// `x + 1` or `s LIKE 'a%'` does not first broadcast its constant.
	literalArgs
	// lazyArgs: the kernel evaluates its own arguments, each only on the rows
	// that need it (CASE, COALESCE, AND, OR), so that a guarded division by
	// zero does not fail, or reads literals without evaluating them (IN).
	lazyArgs
)

// kernelFor returns the kernel of function name, nil if there is none.
func kernelFor(name string) (kernel, kernelMode) {
	if _, ok := mathFuncs[name]; ok { // math.go
		return evalMath, literalArgs
	}
	switch name {
	case "+", "-", "*", "/", "%", "mod":
		return evalArith, literalArgs
	case "neg", "abs":
		return evalNumericUnary, rowsArgs
	case "round", "floor", "ceil", "ceiling":
		return evalRounding, literalArgs
	case "=", "<>", "<", "<=", ">", ">=":
		return evalCompare, literalArgs
	case "in":
		return evalIn, lazyArgs
	case "and", "or":
		return evalAndOr, lazyArgs
	case "not":
		return evalNot, rowsArgs
	case "is_true", "is_false", "is_not_true", "is_not_false":
		return evalIsBool, rowsArgs
	case "is_null", "is_not_null":
		return evalIsNull, rowsArgs
	case "case":
		return evalCase, lazyArgs
	case "coalesce":
		return evalCoalesce, lazyArgs
	case "nullif":
		return evalNullif, rowsArgs
	case "$single_row":
		return evalSingleRow, rowsArgs
	case "like", "ilike":
		return evalLike, literalArgs
	case "lower", "upper":
		return evalCaseMap, rowsArgs
	case "length", "char_length", "character_length", "octet_length":
		return evalLength, rowsArgs
	case "substring", "substr":
		return evalSubstring, literalArgs
	case "concat", "||":
		return evalConcat, literalArgs
	case "trim", "btrim", "ltrim", "rtrim":
		return evalTrim, literalArgs
	case "replace":
		return evalReplace, literalArgs
	case "strpos", "position":
		return evalStrpos, literalArgs
	case "left", "right":
		return evalLeftRight, literalArgs
	case "reverse":
		return evalReverse, rowsArgs
	case "regexp_extract":
		return evalRegexpExtract, literalArgs
	case "count_char":
		return evalCountChar, literalArgs
	case "split_index":
		return evalSplitIndex, literalArgs
	case "proctime":
		return evalProctime, rowsArgs
	case "split_part":
		return evalSplitPart, literalArgs
	case "regexp_replace":
		return evalRegexpReplace, literalArgs
	case "regexp_like":
		return evalRegexpLike, rowsArgs
	case "array_element":
		return evalArrayElement, rowsArgs
	case "array_to_string":
		return evalArrayToString, rowsArgs
	case "array_upper", "array_length":
		return evalArrayUpper, rowsArgs
	case "format_type":
		return evalFormatType, rowsArgs
	case "$quote_ident":
		return evalQuoteIdent, rowsArgs
	case "$json_string":
		return evalJSONString, rowsArgs
	case "pg_size_pretty":
		return evalPgSizePretty, rowsArgs
	case "array_position":
		return evalArrayPosition, rowsArgs
	case "array_remove":
		return evalArrayRemove, rowsArgs
	case "format":
		return evalFormat, rowsArgs // pgformat.go
	case "array_get":
		return evalArrayGet, rowsArgs
	case "array_build":
		return evalArrayBuild, rowsArgs
	case "$timestamptz":
		return evalTimestampTZ, rowsArgs
	case "$timestamptz_in", "$tz_from_local", "$tz_to_local", "$tz_text", "$tz_offset":
		return evalZoned, rowsArgs // pgzone.go
	case "to_char", "date_format":
		return evalToChar, literalArgs
	case "date_trunc":
		return evalDateTrunc, literalArgs
	case "$date_part":
		return evalDatePart, literalArgs
	case "$date_part_seconds", "$date_part_epoch":
		return evalSecondsPart, rowsArgs
	case "$add_micros", "$add_months":
		return evalAddInterval, literalArgs
	case "$interval_months", "$interval_micros", "$interval_days", "$interval_time":
		return evalIntervalPart, rowsArgs // pginterval.go
	case "$interval_key":
		return evalIntervalKey, rowsArgs // pginterval_ops.go
	case "$interval_ordered", "$interval_unordered":
		return evalIntervalOrdered, rowsArgs
	case "$interval_add", "$interval_sub", "$interval_mul", "$timestamp_diff":
		return evalIntervalOp, rowsArgs
	case "$days_between":
		return evalDaysBetween, literalArgs
	case "tumble_start", "tumble_end", "hop_first", "cumulate_first_end", "session_start", "session_end":
		return evalWindow, literalArgs
	}
	return pgjdbcKernelFor(name) // pgjdbc.go
}

func eval(e *Expr, b arrow.RecordBatch, mem memory.Allocator) (arrow.Array, error) {
	n := int(b.NumRows())
	switch e.Kind {
	case KindColumn:
		if e.Col < 0 || e.Col >= int(b.NumCols()) {
			return nil, fmt.Errorf("%w: column %d of a batch with %d columns", ErrBadExpression, e.Col, b.NumCols())
		}
		col := b.Column(e.Col)
		if !storedAs(col.DataType(), e.Type) {
			return nil, fmt.Errorf("%w: column %s is %s in the batch, %s in the expression", ErrBadExpression, e, col.DataType(), e.Type)
		}
		col.Retain()
		return col, nil
	case KindLiteral:
		return literal(e, n, mem)
	case KindCast:
		if len(e.Args) != 1 {
			return nil, fmt.Errorf("%w: cast with %d arguments", ErrBadExpression, len(e.Args))
		}
		arg, err := eval(e.Args[0], b, mem)
		if err != nil {
			return nil, err
		}
		defer arg.Release()
		return castArray(arg, e.Args[0].Type, e.Type, mem)
	case KindCall:
		return evalCall(e, b, mem)
	case KindParam:
		return nil, fmt.Errorf("%w: parameter $%d was not bound", ErrBadExpression, e.Param)
	}
	return nil, fmt.Errorf("%w: unknown node kind %q", ErrBadExpression, e.Kind)
}

// evalCall checks the node against the catalog, so that kernels may trust their
// argument types, then runs the kernel.
func evalCall(e *Expr, b arrow.RecordBatch, mem memory.Allocator) (arrow.Array, error) {
	k, mode := kernelFor(e.Func)
	if k == nil {
		return nil, newError(ErrUnknownFunction, "function %s does not exist", e.Func)
	}
	if err := checkCall(e); err != nil {
		return nil, err
	}
	c := &call{e: e, b: b, n: int(b.NumRows()), mem: mem}
	if mode != lazyArgs {
		c.args = make([]arrow.Array, len(e.Args))
		defer releaseAll(c.args)
		for i, a := range e.Args {
			var (
				arr arrow.Array
				err error
			)
			if mode == literalArgs && a.Kind == KindLiteral {
				arr, err = literal(a, 1, mem)
			} else {
				arr, err = eval(a, b, mem)
			}
			if err != nil {
				return nil, err
			}
			c.args[i] = arr
		}
	}
	return k(c)
}

// literal returns n rows of the literal e.
func literal(e *Expr, n int, mem memory.Allocator) (arrow.Array, error) {
	if e.Value.Type != e.Type && !e.Value.Null {
		return nil, fmt.Errorf("%w: literal %s of type %s in a node of type %s", ErrBadExpression, FormatValue(e.Value), e.Value.Type, e.Type)
	}
	v := e.Value
	v.Type = e.Type
	return ArrayOf(v, n, mem)
}

// checkCall verifies the binder's contract: the arguments have exactly the types
// Resolve asks for, and the node the type Resolve gives, or types held as
// those (pgtypes.go), which every kernel handles as the types holding them.
func checkCall(e *Expr) error {
	have := make([]types.Type, len(e.Args))
	for i, a := range e.Args {
		have[i] = a.Type
	}
	sig, err := resolve(e.Func, have)
	if err != nil {
		return err
	}
	for i, t := range sig.Args {
		if t.Base() != have[i].Base() {
			return fmt.Errorf("%w: argument %d of %s has type %s, want %s (the binder must cast it)", ErrBadExpression, i+1, e.Func, have[i], t)
		}
	}
	if sig.Result.Base() != e.Type.Base() {
		return fmt.Errorf("%w: %s returns %s, the node says %s", ErrBadExpression, e.Func, sig.Result, e.Type)
	}
	return nil
}

// storedAs reports whether arrays of dt hold values of t exactly as the engine
// stores them (Timestamp in microseconds, Decimal with t's precision and scale).
func storedAs(dt arrow.DataType, t types.Type) bool {
	switch d := dt.(type) {
	case *arrow.TimestampType:
		return (t.ID == types.Timestamp || t.ID == types.Date) && d.Unit == arrow.Microsecond
	case *arrow.Decimal128Type:
		return t.ID == types.Decimal && d.Precision == int32(t.Precision) && d.Scale == int32(t.Scale)
	}
	got, err := types.FromArrow(dt)
	return err == nil && got == t.Base()
}

// EvalConst evaluates an expression that reads no column (IsConstant), for the
// binder's constant folding. It fails as Eval would, for example with
// ErrDivisionByZero for 1/0.
func EvalConst(e *Expr) (types.Value, error) {
	if !e.IsConstant() {
		return types.Value{}, fmt.Errorf("%w: %s is not constant", ErrBadExpression, e)
	}
	if e.Kind == KindLiteral {
		return e.Value, nil
	}
	mem := memory.NewGoAllocator()
	b := array.NewRecordBatch(arrow.NewSchema(nil, nil), nil, 1)
	defer b.Release()
	arr, err := eval(e, b, mem)
	if err != nil {
		return types.Value{}, err
	}
	defer arr.Release()
	v := ValueOf(arr, 0)
	v.Type = e.Type
	return v, nil
}

// evalWhere evaluates e for the rows whose bit is set in sel (nil: all rows) and
// returns an array of b's length; rows outside sel hold unspecified values. It
// first evaluates e over the whole batch, which is cheapest, and only when that
// fails evaluates it again over just the selected rows, so that an error from a
// row the query does not use (1/x where x = 0 under CASE WHEN x <> 0) is not
// reported. It returns nil, nil when sel selects no row.
func evalWhere(e *Expr, b arrow.RecordBatch, sel []byte, mem memory.Allocator) (arrow.Array, error) {
	n := int(b.NumRows())
	count := n
	if sel != nil {
		count = bitutil.CountSetBits(sel, 0, n)
	}
	if count == 0 {
		return nil, nil
	}
	arr, err := eval(e, b, mem)
	if err == nil || count == n {
		return arr, err
	}
	idx := make([]int32, 0, count)
	pos := make([]int32, n)
	for i := range n {
		pos[i] = -1
		if bitutil.BitIsSet(sel, i) {
			pos[i] = int32(len(idx))
			idx = append(idx, int32(i))
		}
	}
	sub, serr := takeBatch(b, e, idx, mem)
	if serr != nil {
		return nil, err
	}
	defer sub.Release()
	part, err := eval(e, sub, mem)
	if err != nil {
		return nil, err
	}
	defer part.Release()
	return take(part, pos, mem)
}

// takeBatch returns the rows idx of b. Only the columns e reads are copied; the
// others become NULL columns of the right type and length.
func takeBatch(b arrow.RecordBatch, e *Expr, idx []int32, mem memory.Allocator) (arrow.RecordBatch, error) {
	used := make(map[int]bool)
	for _, c := range e.Columns(nil) {
		used[c] = true
	}
	cols := make([]arrow.Array, b.NumCols())
	for i := range cols {
		var err error
		if used[i] {
			cols[i], err = take(b.Column(i), idx, mem)
		} else {
			cols[i] = array.MakeArrayOfNull(mem, b.Column(i).DataType(), len(idx))
		}
		if err != nil {
			releaseAll(cols)
			return nil, err
		}
	}
	defer releaseAll(cols)
	return array.NewRecordBatch(b.Schema(), cols, int64(len(idx))), nil
}

// errArgKind reports an argument type a kernel has no loop for; checkCall makes
// it unreachable unless the catalog and the kernels disagree.
func errArgKind(c *call) error {
	return fmt.Errorf("%w: %s has no kernel for %s", ErrBadExpression, c.e.Func, callText(c.e.Func, argTypes(c.e)))
}

func argTypes(e *Expr) []types.Type {
	ts := make([]types.Type, len(e.Args))
	for i, a := range e.Args {
		ts[i] = a.Type
	}
	return ts
}
