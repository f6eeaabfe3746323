package operators

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/types"
)

// TestFilterBounds: conjuncts that hold a decimal or timestamp column within
// constants (expr.Bounds) keep the rows a plain Go evaluation of the
// condition keeps, NULLs counting as false, alone and before other
// conjuncts, whether those then read narrowed rows (the bounds kept at most
// half) or a bitmap over the batch (more than half).
func TestFilterBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	schema := types.Schema{{Name: "d", Type: types.DecimalType(15, 2)}, {Name: "t", Type: types.TimestampType},
		{Name: "s", Type: types.StringType}, {Name: "i", Type: types.Int64Type}}
	col := func(i int) *expr.Expr { return expr.Column(i, schema[i].Type, schema[i].Name) }
	cmp := func(op string, a, b *expr.Expr) *expr.Expr { return expr.Call(op, types.BoolType, a, b) }
	and := func(a ...*expr.Expr) *expr.Expr { return expr.Call("and", types.BoolType, a...) }
	cents := func(c int64) *expr.Expr { // a decimal(15,2) of c hundredths
		return expr.Literal(types.Value{Type: schema[0].Type, DecLo: uint64(c)})
	}
	days := func(d int64) *expr.Expr { return expr.Literal(types.TimestampValue(d * 86400e6)) }
	type row struct {
		d, t int64 // hundredths, days; -1 for NULL
		s    string
	}
	var rows []row
	var objs []string
	for i := range 2000 {
		w := row{d: -1, t: -1, s: fmt.Sprintf("s%d", r.IntN(3))}
		dj, tj := "null", "null"
		if r.IntN(9) > 0 {
			w.d = int64(r.IntN(11))
			dj = fmt.Sprintf(`"0.%02d"`, w.d)
		}
		if r.IntN(9) > 0 {
			w.t = int64(r.IntN(100))
			tj = fmt.Sprintf("%q", time.Unix(w.t*86400, 0).UTC().Format("2006-01-02 15:04:05"))
		}
		rows = append(rows, w)
		objs = append(objs, fmt.Sprintf(`{"d": %s, "t": %s, "s": %q, "i": %d}`, dj, tj, w.s, i))
	}
	var batches []string
	for lo := 0; lo < len(objs); lo += 700 {
		batches = append(batches, "["+strings.Join(objs[lo:min(lo+700, len(objs))], ",")+"]")
	}
	for _, tc := range []struct {
		name  string
		cond  *expr.Expr
		holds func(w row) bool // NULL (-1) fails every comparison
	}{
		{"bounds alone", and(cmp(">=", col(0), cents(5)), cmp("<=", col(0), cents(7)), cmp("<", col(1), days(30))),
			func(w row) bool { return w.d >= 5 && w.d <= 7 && w.t >= 0 && w.t < 30 }},
		{"one bound, no AND", cmp(">", cents(4), col(0)), func(w row) bool { return w.d >= 0 && w.d < 4 }},
		{"equality", and(cmp("=", col(0), cents(3)), cmp(">=", col(1), days(50))), func(w row) bool { return w.d == 3 && w.t >= 50 }},
		{"narrowed after", and(cmp(">=", col(1), days(10)), cmp("<>", col(2), expr.Literal(types.StringValue("s1"))),
			cmp("<", col(1), days(40)), cmp(">", col(0), cents(2))),
			func(w row) bool { return w.t >= 10 && w.t < 40 && w.s != "s1" && w.d > 2 }},
		{"bitmap after", and(cmp("<>", col(2), expr.Literal(types.StringValue("s1"))), cmp(">", col(0), cents(0))),
			func(w row) bool { return w.s != "s1" && w.d > 0 }},
		{"empty bounds", and(cmp(">", col(0), cents(7)), cmp("<", col(0), cents(5))), func(w row) bool { return false }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := testkit.Mem()
			defer mem.AssertSize(t, 0)
			bs := testkit.Batches(t, mem, schema, batches...)
			defer testkit.Release(bs)
			c, err := testkit.Run(t, opTestNew(t, "filter", FilterConfig{Cond: tc.cond, Keep: []int{3}}, schema), mem, bs...)
			if err != nil {
				t.Fatal(err)
			}
			var got, want []string
			for _, row := range c.Rows {
				var vals []any
				if err := json.Unmarshal([]byte(row), &vals); err != nil {
					t.Fatalf("%s: %v", row, err)
				}
				got = append(got, fmt.Sprint(vals[0]))
			}
			for i, w := range rows {
				if tc.holds(w) {
					want = append(want, fmt.Sprint(i))
				}
			}
			if tc.name != "empty bounds" && len(want) < 20 {
				t.Fatalf("a test that cannot tell: %d rows kept", len(want))
			}
			testkit.Equal(t, "rows kept", got, want)
		})
	}
}
