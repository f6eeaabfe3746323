package expr

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// evalFormat is PostgreSQL's format(fmt, args...): fmt with each %s
// replaced by the next argument's text (NULL: nothing), %I by it quoted as
// an identifier (QuoteIdent; NULL is an error), %L as a literal (NULL:
// NULL), and %% by %. A NULL fmt gives NULL. Positions (%1$s) and widths
// are not read: they are an error, as a format PostgreSQL does not know is.
func evalFormat(c *call) (arrow.Array, error) {
	args := make([]textArg, len(c.args))
	for j, a := range c.args {
		args[j] = textOf(a)
	}
	valid, nulls := validity(c.mem, c.n, c.args[0])
	sb := newStringBuilder(c.mem, c.n, len(args[0].all())+16*c.n)
	var buf []byte
	for i := range c.n {
		if validAt(valid, i) {
			var err error
			if buf, err = formatRow(buf[:0], c, args, i); err != nil {
				sb.release()
				releaseBuffer(valid)
				return nil, err
			}
			sb.write(buf)
		}
		sb.end()
	}
	sb.valid, sb.nulls = valid, nulls
	return sb.array(), nil
}

func formatRow(dst []byte, c *call, args []textArg, i int) ([]byte, error) {
	f := args[0].row(i)
	next := 1
	for k := 0; k < len(f); k++ {
		if f[k] != '%' {
			dst = append(dst, f[k])
			continue
		}
		if k++; k == len(f) {
			return nil, newError(ErrInvalidArgument, "unterminated format() type specifier")
		}
		conv := f[k]
		if conv == '%' {
			dst = append(dst, '%')
			continue
		}
		if conv != 's' && conv != 'I' && conv != 'L' {
			return nil, newError(ErrInvalidArgument, "unrecognized format() type specifier \"%c\"", conv)
		}
		if next >= len(args) {
			return nil, newError(ErrInvalidArgument, "too few arguments for format()")
		}
		null, v := c.args[next].IsNull(i), string(args[next].row(i))
		next++
		switch {
		case conv == 's' && !null:
			dst = append(dst, v...)
		case conv == 'I' && null:
			return nil, newError(ErrNullValue, "null values cannot be formatted as an SQL identifier")
		case conv == 'I':
			dst = append(dst, QuoteIdent(v)...)
		case conv == 'L' && null:
			dst = append(dst, "NULL"...)
		case conv == 'L':
			if strings.Contains(v, `\`) {
				dst = append(dst, 'E') // quote_literal's escape string
				v = strings.ReplaceAll(v, `\`, `\\`)
			}
			dst = append(append(append(dst, '\''), strings.ReplaceAll(v, "'", "''")...), '\'')
		}
	}
	return dst, nil
}
