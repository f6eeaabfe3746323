package file

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/connectors/internal/conntest"
	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/exec/vector"
)

func TestJSON(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	schema := types.Schema{
		{Name: "id", Type: types.Int64Type},
		{Name: "Name", Type: types.StringType},
		{Name: "price", Type: types.DecimalType(10, 2)},
		{Name: "ok", Type: types.BoolType},
		{Name: "score", Type: types.Float64Type},
		{Name: "ts", Type: types.TimestampType},
	}
	for _, tc := range []struct {
		name    string
		cols    []int
		content string
		want    []string
		bad     int64
	}{{
		name: "types",
		content: `{"id": 1, "name": "apple", "price": 1.005, "ok": true, "score": 1.5, "ts": "2024-01-02 03:04:05"}` + "\n" +
			`{"ID": -2, "NAME": "p\u00e9ar \"q\"", "Price": "3", "OK": "f", "score": "2.5e1", "ts": "2024-01-02T03:04:05Z"}` + "\r\n" +
			`{"id": 3, "extra": [1, 2], "name": {"nested": [1]}, "ok": null}` + "\n" +
			"\n   \n" + // blank lines are skipped
			`{"name": 42, "price": 1e2, "ok": 0}` + "\n" +
			`{}`,
		want: []string{
			"1|apple|1.01|true|1.5|2024-01-02T03:04:05",
			`-2|péar "q"|3|false|25|2024-01-02T03:04:05`,
			`3|{"nested": [1]}|NULL|NULL|NULL|NULL`,
			"NULL|42|100|false|NULL|NULL",
			"NULL|NULL|NULL|NULL|NULL|NULL",
		},
	}, {
		name: "malformed",
		content: `{"id": 1}` + "\n" +
			`{"id": 1.5}` + "\n" + // not a bigint
			`{"id": "x"}` + "\n" +
			`{"ts": 12345}` + "\n" + // a timestamp must be a string
			`{"price": 123456789012}` + "\n" + // out of range for decimal(10,2)
			`{"ok": "maybe"}` + "\n" +
			`{"id": [1]}` + "\n" +
			`{"id": 2` + "\n" + // truncated
			`[1, 2]` + "\n" +
			`{"id": 3} {"id": 4}` + "\n" +
			`not json` + "\n" +
			`{"id": 5}`,
		want: []string{"1|NULL|NULL|NULL|NULL|NULL", "5|NULL|NULL|NULL|NULL|NULL"},
		bad:  10,
	}, {
		name: "projection",
		cols: []int{1, 0},
		// A column the query does not read still makes its record bad.
		content: `{"id": 1, "name": "a", "price": "not read"}` + "\n" + `{"id": 2}` + "\n" + "null",
		want:    []string{"NULL|2"},
		bad:     2,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			_, url := writeFile(t, tc.content)
			c := exec.ConnectorSpec{Connector: Name, URL: url + "?format=json&bad_rows=skip", Schema: schema, Columns: tc.cols}
			for n := 1; n <= 4; n++ {
				got, bad := concat(readAll(t, mem, c, n))
				if !slices.Equal(got, tc.want) || bad != tc.bad {
					t.Fatalf("n=%d: got %q with %d bad, want %q with %d bad", n, got, bad, tc.want, tc.bad)
				}
			}
		})
	}
}

// TestJSONSplit checks that parallel subtasks read every object exactly once.
func TestJSONSplit(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	var sb strings.Builder
	var want []string
	for i := range 2*BatchRows + 3 {
		fmt.Fprintf(&sb, `{"n": %d, "s": "%s"}`+"\n", i, strings.Repeat("x", i%7))
		want = append(want, fmt.Sprintf("%d|%s", i, strings.Repeat("x", i%7)))
	}
	_, url := writeFile(t, sb.String())
	c := exec.ConnectorSpec{Connector: Name, URL: url + "?format=json",
		Schema: types.Schema{{Name: "n", Type: types.Int64Type}, {Name: "s", Type: types.StringType}}}
	for n := 1; n <= 7; n++ {
		got, bad := concat(readAll(t, mem, c, n))
		if !slices.Equal(got, want) || bad != 0 {
			t.Fatalf("n=%d: %s, %d bad", n, firstDiff(got, want), bad)
		}
	}
}

// TestBadRecordLog checks that bad records are logged with their line number in
// the file, also by subtasks that start mid-file, and that only the first few are.
func TestBadRecordLog(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	var sb strings.Builder
	var badLines []int
	for i := 1; i <= 2000; i++ {
		if i%100 == 0 {
			sb.WriteString("oops\n")
			badLines = append(badLines, i)
		} else {
			fmt.Fprintf(&sb, `{"n": %d}`+"\n", i)
		}
	}
	_, url := writeFile(t, sb.String())
	c := exec.ConnectorSpec{Connector: Name, URL: url + "?format=json&bad_rows=skip", Schema: types.Schema{{Name: "n", Type: types.Int64Type}}}
	const n = 2
	var logged []int
	var summaries int
	var bad int64
	for i := range n {
		src, err := newSourceFor(c)
		if err != nil {
			t.Fatal(err)
		}
		var logBuf strings.Builder
		tc := conntest.TaskContext(t, mem, i, n)
		tc.Log = slog.New(slog.NewTextHandler(&logBuf, nil))
		if err := src.Open(context.Background(), tc); err != nil {
			t.Fatal(err)
		}
		var out conntest.Collector
		if err := src.Run(context.Background(), &out); err != nil {
			t.Fatal(err)
		}
		out.Release()
		src.Close()
		bad += tc.Metrics.BadRecords.Load()
		for _, l := range strings.Split(logBuf.String(), "\n") {
			if _, rest, ok := strings.Cut(l, " line="); ok {
				var line int
				fmt.Sscan(rest, &line)
				logged = append(logged, line)
			}
			if strings.Contains(l, "count=10") {
				summaries++
			}
		}
	}
	// Each subtask has 10 bad lines and logs its first 5.
	want := append(slices.Clone(badLines[:maxLoggedBadRecords]), badLines[10:10+maxLoggedBadRecords]...)
	if !slices.Equal(logged, want) || bad != 20 || summaries != 2 {
		t.Errorf("logged lines %v, %d bad, %d summaries; want %v, 20 bad, 2 summaries", logged, bad, summaries, want)
	}
}
