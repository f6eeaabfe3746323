package planner

import (
	"strings"

	"github.com/hummer-db/hummer/exec/operators"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/sql"
)

// filter builds a Filter; keep, when not nil, are the input columns it
// passes on (out is then their schema).
func (b *builder) filter(p *sql.Filter, keep []int, out types.Schema) (int, error) {
	cond := p.Cond
	label := "filter " + cond.String()
	if keep != nil {
		label += " keep " + keepList(p.Schema(), keep)
	}
	if u, ok := p.Input.(*sql.Unnest); ok && u.Func != "generate_series" {
		// Length conditions on the pieces move into the split
		// (unnest_filter.go).
		minBytes, minChars, rest := unnestLengthBounds(cond, u.Col)
		from, err := b.unnest(u, minBytes, minChars)
		if err != nil || rest == nil {
			return from, err
		}
		return b.pass(from, b.forward(from, "filter", "filter "+rest.String(), operators.FilterConfig{Cond: rest}, p.Schema())), nil
	}
	var from int
	var err error
	if scan, ok := p.Input.(*sql.Scan); ok {
		from, err = b.scan(scan, cond)
	} else {
		from, err = b.build(p.Input)
	}
	if err != nil {
		return 0, err
	}
	return b.pass(from, b.forward(from, "filter", label, operators.FilterConfig{Cond: cond, Keep: keep}, out)), nil
}

// isScan reports whether p is a Scan.
func isScan(p sql.Plan) bool {
	_, ok := p.(*sql.Scan)
	return ok
}

// keepList is "(a, b)": the names of columns keep of in.
func keepList(in types.Schema, keep []int) string {
	names := make([]string, len(keep))
	for i, c := range keep {
		names[i] = in[c].Name
	}
	return "(" + strings.Join(names, ", ") + ")"
}
