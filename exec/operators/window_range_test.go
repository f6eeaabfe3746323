package operators

import (
	"strings"
	"testing"

	"github.com/hummer-db/hummer/exec/internal/testkit"
	"github.com/hummer-db/hummer/exec/types"
)

// The rows of a RANGE frame with offsets: k is the order key, lo and hi the
// bounds the binder computes for 2 PRECEDING and 1 FOLLOWING (k - 2 and
// k + 1; k + 2 and k - 1 for a descending key).
var rangeSchema = types.Schema{
	{Name: "k", Type: types.Int64Type},
	{Name: "lo", Type: types.Int64Type},
	{Name: "hi", Type: types.Int64Type},
	{Name: "lo_desc", Type: types.Int64Type},
	{Name: "hi_desc", Type: types.Int64Type},
}

var rangeInput = []string{
	`[{"k": 1, "lo": -1, "hi": 2, "lo_desc": 3, "hi_desc": 0}, {"k": 5, "lo": 3, "hi": 6, "lo_desc": 7, "hi_desc": 4},
	  {"k": null, "lo": null, "hi": null, "lo_desc": null, "hi_desc": null}, {"k": 2, "lo": 0, "hi": 3, "lo_desc": 4, "hi_desc": 1}]`,
	`[{"k": 3, "lo": 1, "hi": 4, "lo_desc": 5, "hi_desc": 2}, {"k": null, "lo": null, "hi": null, "lo_desc": null, "hi_desc": null},
	  {"k": 3, "lo": 1, "hi": 4, "lo_desc": 5, "hi_desc": 2}]`,
}

// rangeCases: count(*) over each frame, row by row in the window's order,
// worked out by hand from PostgreSQL's definition.
var rangeCases = []struct {
	name  string
	order SortKeySpec
	frame WindowFrame
	want  []string
}{
	{"2 PRECEDING AND 1 FOLLOWING", SortKeySpec{Col: 0},
		WindowFrame{StartOffset: true, EndOffset: true, RangeKey: 0, StartBound: 1, EndBound: 2},
		// k: 1 2 3 3 5 NULL NULL
		[]string{"[1,2]", "[2,4]", "[3,4]", "[3,4]", "[5,3]", "[null,2]", "[null,2]"}},
	{"2 PRECEDING AND CURRENT ROW, NULLs first", SortKeySpec{Col: 0, NullsFirst: true},
		WindowFrame{StartOffset: true, RangeKey: 0, StartBound: 1},
		[]string{"[null,2]", "[null,2]", "[1,1]", "[2,2]", "[3,4]", "[3,4]", "[5,3]"}},
	{"desc: 2 PRECEDING AND 1 FOLLOWING", SortKeySpec{Col: 0, Desc: true},
		WindowFrame{StartOffset: true, EndOffset: true, RangeKey: 0, StartBound: 3, EndBound: 4},
		// k: 5 3 3 2 1 NULL NULL; 5's frame is [7, 4]: 5 alone
		[]string{"[5,1]", "[3,4]", "[3,4]", "[2,4]", "[1,4]", "[null,2]", "[null,2]"}},
	{"1 FOLLOWING AND UNBOUNDED FOLLOWING", SortKeySpec{Col: 0},
		WindowFrame{EndUnbounded: true, StartOffset: true, RangeKey: 0, StartBound: 2},
		// from k + 1 on, NULLs (last) included
		[]string{"[1,6]", "[2,5]", "[3,3]", "[3,3]", "[5,2]", "[null,2]", "[null,2]"}},
}

func TestWindowRangeFrames(t *testing.T) {
	for _, tc := range rangeCases {
		t.Run(tc.name, func(t *testing.T) {
			mem := testkit.Mem()
			defer mem.AssertSize(t, 0)
			bs := testkit.Batches(t, mem, rangeSchema, rangeInput...)
			defer testkit.Release(bs)
			out := append(append(types.Schema{}, rangeSchema...), types.Field{Name: "count", Type: types.Int64Type})
			cfg := WindowConfig{Order: []SortKeySpec{tc.order},
				Funcs: []WindowFuncSpec{{Func: "count", Default: -1, Frame: tc.frame, Type: types.Int64Type}}}
			c, err := testkit.Run(t, opTestNew(t, "window", cfg, out), mem, bs...)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range c.Rows {
				// [k,lo,hi,lo_desc,hi_desc,count] -> [k,count]
				f := strings.Split(strings.Trim(r, "[]"), ",")
				got = append(got, "["+f[0]+","+f[len(f)-1]+"]")
			}
			testkit.Equal(t, "k, count", got, tc.want)
		})
	}
}
