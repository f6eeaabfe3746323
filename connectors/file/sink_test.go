package file

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/connectors/internal/conntest"
	"github.com/hummer-db/hummer/connectors/spec"
	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/exec/vector"
)

// fmtSchema has a column of each type a file table holds.
var fmtSchema = types.Schema{
	{Name: "id", Type: types.Int64Type}, {Name: "name", Type: types.StringType},
	{Name: "price", Type: types.DecimalType(10, 2)}, {Name: "ts", Type: types.TimestampType},
	{Name: "ok", Type: types.BoolType}, {Name: "f", Type: types.Float64Type},
}

// batchOf builds a batch of schema from a JSON array of objects.
func batchOf(t *testing.T, mem memory.Allocator, schema types.Schema, rows string) exec.Batch {
	t.Helper()
	rec, _, err := array.RecordFromJSON(mem, schema.Arrow(), strings.NewReader(rows))
	if err != nil {
		t.Fatal(err)
	}
	return exec.Batch{Rec: rec}
}

// openSink opens subtask i of n of the sink of c, with checkpoints or not.
func openSink(t *testing.T, mem memory.Allocator, c exec.ConnectorSpec, i, n int, checkpointing bool) *sink {
	t.Helper()
	cfg, err := parseConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	k, err := newSink(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tc := conntest.TaskContext(t, mem, i, n)
	tc.Checkpointing = checkpointing
	if err := k.Open(context.Background(), tc); err != nil {
		t.Fatal(err)
	}
	return k
}

// write gives k the batch and releases it.
func write(t *testing.T, k *sink, b exec.Batch) {
	t.Helper()
	defer b.Rec.Release()
	if err := k.ProcessBatch(context.Background(), 0, b, nil); err != nil {
		t.Fatal(err)
	}
}

func endOfStream(t *testing.T, k *sink) {
	t.Helper()
	if err := k.ProcessSignal(context.Background(), 0, exec.Signal{Kind: exec.EndOfStream}, nil); err != nil {
		t.Fatal(err)
	}
}

// committed returns the committed files under dir (relative, slash
// separated) and the hidden ones, each sorted.
func committed(t *testing.T, dir string) (files, hidden []string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if strings.HasPrefix(d.Name(), ".") {
			hidden = append(hidden, filepath.ToSlash(rel))
		} else {
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files, hidden
}

// TestSinkCSV writes values that need quoting, NULL and the empty string,
// with a header, and checks the file's bytes, encoding/csv's reading of
// them, and the source's reading of the directory.
func TestSinkCSV(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	dir := filepath.Join(t.TempDir(), "out")
	c := exec.ConnectorSpec{Connector: Name, URL: "file://" + dir + "/?format=csv&header=true", Schema: fmtSchema}
	k := openSink(t, mem, c, 0, 1, false)
	defer k.Close(context.Background())
	write(t, k, batchOf(t, mem, fmtSchema, `[
		{"id": 1, "name": "a,b", "price": "1.50", "ts": "2015-07-15T10:03:00", "ok": true, "f": 0.1},
		{"id": 2, "name": "say \"hi\"", "price": "-0.05", "ts": "2015-07-15T10:03:00.25", "ok": false, "f": 1e20},
		{"id": 3, "name": "two\nlines", "price": null, "ts": null, "ok": null, "f": null},
		{"id": 4, "name": "", "price": "0", "ts": "1999-12-31T23:59:59.000001", "ok": true, "f": -2.5},
		{"id": null, "name": null, "price": "12345678.90", "ts": "2000-01-01T00:00:00", "ok": false, "f": 3}
	]`))
	if files, _ := committed(t, dir); len(files) != 0 {
		t.Fatalf("before the end of the input, committed files: %v", files)
	}
	endOfStream(t, k)
	files, hidden := committed(t, dir)
	if len(files) != 1 || len(hidden) != 0 || !strings.HasPrefix(files[0], "part-0-0-") || !strings.HasSuffix(files[0], ".csv") {
		t.Fatalf("files %v, hidden %v; want one part-0-0-*.csv", files, hidden)
	}
	data, err := os.ReadFile(filepath.Join(dir, files[0]))
	if err != nil {
		t.Fatal(err)
	}
	want := "id,name,price,ts,ok,f\n" +
		"1,\"a,b\",1.50,2015-07-15 10:03:00,true,0.1\n" +
		"2,\"say \"\"hi\"\"\",-0.05,2015-07-15 10:03:00.25,false,1e+20\n" +
		"3,\"two\nlines\",,,,\n" +
		"4,\"\",0.00,1999-12-31 23:59:59.000001,true,-2.5\n" +
		",,12345678.90,2000-01-01 00:00:00,false,3\n"
	if string(data) != want {
		t.Errorf("the file holds\n%q\nwant\n%q", data, want)
	}
	recs, err := csv.NewReader(strings.NewReader(string(data))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 6 || recs[2][1] != `say "hi"` || recs[3][1] != "two\nlines" || recs[1][1] != "a,b" {
		t.Errorf("encoding/csv reads %q", recs)
	}
	// Read back through the source, as SELECT * FROM the table does: NULL and
	// '' stay apart (the rows as Arrow's ValueStr prints them).
	var got []string
	for _, r := range readAll(t, mem, c, 2) {
		got = append(got, r.rows...)
	}
	slices.Sort(got)
	wantRows := []string{
		"1|a,b|1.5|2015-07-15T10:03:00|true|0.1",
		"2|say \"hi\"|-0.05|2015-07-15T10:03:00.25|false|1e+20",
		"3|two\nlines|NULL|NULL|NULL|NULL",
		"4||0|1999-12-31T23:59:59.000001|true|-2.5",
		"NULL|NULL|12345678.9|2000-01-01T00:00:00|false|3",
	}
	if !slices.Equal(got, wantRows) {
		t.Errorf("read back:\n%q\nwant\n%q", got, wantRows)
	}
}

// TestSinkCSVDelimiter quotes a field holding the table's delimiter, not a
// comma.
func TestSinkCSVDelimiter(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	schema := types.Schema{{Name: "a", Type: types.StringType}, {Name: "b", Type: types.StringType}}
	c := exec.ConnectorSpec{Connector: Name, URL: "file://" + dir + "/?format=csv&delimiter=;", Schema: schema}
	k := openSink(t, mem, c, 0, 1, false)
	defer k.Close(context.Background())
	write(t, k, batchOf(t, mem, schema, `[{"a": "x;y", "b": "p,q"}]`))
	endOfStream(t, k)
	files, _ := committed(t, dir)
	data, err := os.ReadFile(filepath.Join(dir, files[0]))
	if err != nil || string(data) != "\"x;y\";p,q\n" {
		t.Errorf("the file holds %q (%v), want %q", data, err, "\"x;y\";p,q\n")
	}
}

// TestSinkJSON writes strings that need escaping and checks the file's
// lines, encoding/json's reading of them, and the source's.
func TestSinkJSON(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	c := exec.ConnectorSpec{Connector: Name, URL: "file://" + dir + "/?format=json", Schema: fmtSchema}
	k := openSink(t, mem, c, 0, 1, false)
	defer k.Close(context.Background())
	write(t, k, batchOf(t, mem, fmtSchema, `[
		{"id": 1, "name": "quote \" back \\ nl \n tab \t bell \u0007 é <&>", "price": "1.50", "ts": "2015-07-15T10:03:00", "ok": true, "f": 0.5},
		{"id": null, "name": "", "price": null, "ts": null, "ok": null, "f": null}
	]`))
	endOfStream(t, k)
	files, _ := committed(t, dir)
	if len(files) != 1 || !strings.HasSuffix(files[0], ".json") {
		t.Fatalf("files %v", files)
	}
	data, err := os.ReadFile(filepath.Join(dir, files[0]))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":1,"name":"quote \" back \\ nl \n tab \t bell \u0007 é <&>","price":1.50,"ts":"2015-07-15 10:03:00","ok":true,"f":0.5}` + "\n" +
		`{"id":null,"name":"","price":null,"ts":null,"ok":null,"f":null}` + "\n"
	if string(data) != want {
		t.Errorf("the file holds\n%s\nwant\n%s", data, want)
	}
	var obj map[string]any
	line, _, _ := strings.Cut(string(data), "\n")
	if err := json.Unmarshal([]byte(line), &obj); err != nil || obj["name"] != "quote \" back \\ nl \n tab \t bell \a é <&>" {
		t.Errorf("encoding/json reads %v (%v)", obj, err)
	}
	got := readAll(t, mem, c, 1)[0].rows
	slices.Sort(got)
	wantRows := []string{
		"1|quote \" back \\ nl \n tab \t bell \a é <&>|1.5|2015-07-15T10:03:00|true|0.5",
		"NULL||NULL|NULL|NULL|NULL",
	}
	if !slices.Equal(got, wantRows) {
		t.Errorf("read back:\n%q\nwant\n%q", got, wantRows)
	}
}

// TestPartitionPath checks the directories of partition values: Hive's
// escapes, a NULL and an empty value in the default partition, a ':' kept.
func TestPartitionPath(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	schema := types.Schema{{Name: "v", Type: types.Int64Type}, {Name: "dt", Type: types.StringType}, {Name: "hm", Type: types.StringType}}
	cfg, err := parseConfig(exec.ConnectorSpec{Connector: Name, URL: "file:///out/?format=csv&partition_by=dt,HM", Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.partition, []int{1, 2}) {
		t.Fatalf("partition columns %v", cfg.partition)
	}
	b := batchOf(t, mem, schema, `[
		{"v": 1, "dt": "2015-07-15", "hm": "10:03"},
		{"v": 2, "dt": "a/b=c%d", "hm": "x y"},
		{"v": 3, "dt": null, "hm": ""},
		{"v": 4, "dt": "..", "hm": "q?\n#"}
	]`)
	defer b.Rec.Release()
	want := []string{
		"dt=2015-07-15/hm=10:03/",
		"dt=a%2Fb%3Dc%25d/hm=x y/",
		"dt=__HIVE_DEFAULT_PARTITION__/hm=__HIVE_DEFAULT_PARTITION__/",
		"dt=../hm=q%3F%0A%23/",
	}
	for i, w := range want {
		if got := string(cfg.appendPartition(nil, b.Rec, i)); got != w {
			t.Errorf("row %d: %q, want %q", i, got, w)
		}
	}
}

// TestSinkOptions: partition_by is checked at CREATE TABLE (Validate).
func TestSinkOptions(t *testing.T) {
	schema := types.Schema{{Name: "v", Type: types.Int64Type}, {Name: "dt", Type: types.StringType}}
	for _, tc := range []struct{ url, err string }{
		{"file:///out/?format=csv&partition_by=dt", ""},
		{"file:///out/?format=json&partition_by=DT", ""},
		{"file:///out?format=csv&partition_by=dt", "option partition_by needs a directory table: end the path with / (file:///out/)"},
		{"file:///out/?format=csv&partition_by=day", `option partition_by: no column "day" in the table (columns: v, dt)`},
		{"file:///out/?format=csv&partition_by=dt,dt", "option partition_by: column dt is named twice"},
		{"file:///out/?format=csv&partition_by=dt,", `option partition_by: "dt,": an empty column name`},
		{"file:///?format=csv", "a directory table cannot be the root directory"},
	} {
		err := Validate(exec.ConnectorSpec{Connector: Name, URL: tc.url, Schema: schema})
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.url, err)
		case tc.err != "" && (err == nil || !errors.Is(err, spec.ErrBadOption) || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %v, want ErrBadOption with %q", tc.url, err, tc.err)
		}
	}
	// A directory table over a directory, or where none is yet, is fine; over
	// a file it is refused.
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for path, code := range map[string]string{dir + "/": "", dir + "/new/": "", file + "/": "42809"} {
		err := CheckFile(exec.ConnectorSpec{Connector: Name, URL: "file://" + path + "?format=csv", Schema: schema})
		var fe *fileError
		if code == "" && err != nil || code != "" && (!errors.As(err, &fe) || fe.code != code) {
			t.Errorf("CheckFile(%s): %v, want %q", path, err, code)
		}
	}
	// The sink refuses a table over one file, and a retraction.
	if _, err := newSink(config{path: file}); !errors.Is(err, exec.ErrBadInput) {
		t.Errorf("a sink of a file table: %v", err)
	}
}

// rowsOfFiles reads the committed CSV files under dir with encoding/csv
// (not the connector's reader): each row as its fields joined by "|", and
// the partition directory it is in.
func rowsOfFiles(t *testing.T, dir string) (rows []string, dirs map[string]string) {
	t.Helper()
	files, _ := committed(t, dir)
	dirs = map[string]string{}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(strings.NewReader(string(data))).ReadAll()
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, r := range recs {
			row := strings.Join(r, "|")
			rows = append(rows, row)
			dirs[row] = filepath.ToSlash(filepath.Dir(f))
		}
	}
	slices.Sort(rows)
	return rows, dirs
}

// seqRows makes rows from..to-1 of (v BIGINT, p TEXT), p = "p" + v%3, as
// JSON, and their text as encoding/csv reads them.
func seqRows(from, to int) (string, []string) {
	var objs, text []string
	for v := from; v < to; v++ {
		objs = append(objs, fmt.Sprintf(`{"v": %d, "p": "p%d"}`, v, v%3))
		text = append(text, fmt.Sprintf("%d|p%d", v, v%3))
	}
	return "[" + strings.Join(objs, ",") + "]", text
}

var seqSchema = types.Schema{{Name: "v", Type: types.Int64Type}, {Name: "p", Type: types.StringType}}

// TestSinkExactlyOnce runs the protocol through a crash: rows, a barrier,
// more rows, a crash before the checkpoint's completion is heard; a new
// sink restored from the snapshot, the rows after it again, and the
// notification. Every row is in the committed files once, in its partition,
// and no in-progress file is left.
func TestSinkExactlyOnce(t *testing.T) {
	ctx := context.Background()
	for _, restoreFrom := range []int{1, 2} {
		t.Run(fmt.Sprintf("restore-from-%d", restoreFrom), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
			defer mem.AssertSize(t, 0)
			dir := t.TempDir()
			c := exec.ConnectorSpec{Connector: Name, URL: "file://" + dir + "/?format=csv&partition_by=p", Schema: seqSchema}
			// The first attempt: checkpoint 1 after rows 0-9 completes and is
			// heard; checkpoint 2 after rows 10-19 is taken but its completion
			// not heard; rows 20-24 are written; then the process dies.
			a := openSink(t, mem, c, 0, 1, true)
			rows, _ := seqRows(0, 10)
			write(t, a, batchOf(t, mem, seqSchema, rows))
			state1, err := a.SnapshotState(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			if err := a.NotifyCheckpointComplete(ctx, 1); err != nil {
				t.Fatal(err)
			}
			if got, _ := rowsOfFiles(t, dir); len(got) != 10 {
				t.Fatalf("after checkpoint 1, %d rows committed, want 10", len(got))
			}
			rows, _ = seqRows(10, 20)
			write(t, a, batchOf(t, mem, seqSchema, rows))
			state2, err := a.SnapshotState(ctx, 2)
			if err != nil {
				t.Fatal(err)
			}
			rows, _ = seqRows(20, 25)
			write(t, a, batchOf(t, mem, seqSchema, rows))
			for _, pf := range a.open {
				pf.w.Flush()
				pf.f.Close() // the process dies: its files stay as they are
			}
			if _, hidden := committed(t, dir); len(hidden) != 6 {
				t.Fatalf("at the crash, hidden files %v; want 3 pending and 3 in progress", hidden)
			}
			// The job restarts from checkpoint restoreFrom; the source sends the
			// rows after it again.
			state, replayFrom := state1, 10
			if restoreFrom == 2 {
				state, replayFrom = state2, 20
			}
			// The restored attempt fails too, before its first checkpoint,
			// having written rows; the next is restored from the same one.
			b1 := openSink(t, mem, c, 0, 1, true)
			if err := b1.RestoreState(ctx, state); err != nil {
				t.Fatal(err)
			}
			rows, _ = seqRows(replayFrom, replayFrom+4)
			write(t, b1, batchOf(t, mem, seqSchema, rows))
			for _, pf := range b1.open {
				pf.w.Flush()
				pf.f.Close()
			}
			if _, hidden := committed(t, dir); len(hidden) != 3 {
				t.Fatalf("at the second crash, hidden files %v; want 3 in progress", hidden)
			}
			b := openSink(t, mem, c, 0, 1, true)
			defer b.Close(ctx)
			if err := b.RestoreState(ctx, state); err != nil {
				t.Fatalf("restoring again: %v", err)
			}
			if _, hidden := committed(t, dir); len(hidden) != 0 {
				t.Fatalf("after the restore, hidden files %v", hidden)
			}
			if got, _ := rowsOfFiles(t, dir); len(got) != replayFrom {
				t.Fatalf("after the restore, %d rows committed, want %d", len(got), replayFrom)
			}
			rows, _ = seqRows(replayFrom, 30)
			write(t, b, batchOf(t, mem, seqSchema, rows))
			if _, err := b.SnapshotState(ctx, 3); err != nil {
				t.Fatal(err)
			}
			rows, _ = seqRows(30, 32)
			write(t, b, batchOf(t, mem, seqSchema, rows))
			if err := b.NotifyCheckpointComplete(ctx, 3); err != nil {
				t.Fatal(err)
			}
			endOfStream(t, b)
			got, dirs := rowsOfFiles(t, dir)
			_, want := seqRows(0, 32)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("committed rows\n%v\nwant each of\n%v once", got, want)
			}
			for row, d := range dirs {
				if p := row[strings.IndexByte(row, '|')+1:]; d != "p="+p {
					t.Errorf("row %s is in %s", row, d)
				}
			}
			if files, hidden := committed(t, dir); len(hidden) != 0 {
				t.Errorf("hidden files left: %v (committed %v)", hidden, files)
			}
			// The source reads the table back, every row once.
			var back []string
			for _, r := range readAll(t, mem, c, 3) {
				back = append(back, r.rows...)
			}
			slices.Sort(back)
			if !slices.Equal(back, want) {
				t.Errorf("read back\n%v\nwant\n%v", back, want)
			}
		})
	}
}

// TestSinkFailedJob: a job without checkpoints that fails leaves nothing,
// neither committed nor hidden files; a retraction fails the write.
func TestSinkFailedJob(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	c := exec.ConnectorSpec{Connector: Name, URL: "file://" + dir + "/?format=csv&partition_by=p", Schema: seqSchema}
	k := openSink(t, mem, c, 1, 2, false)
	rows, _ := seqRows(0, 10)
	write(t, k, batchOf(t, mem, seqSchema, rows))
	b := batchOf(t, mem, seqSchema, `[{"v": 1, "p": "x"}]`)
	b.Ops = []exec.ChangeKind{exec.Delete}
	if err := k.ProcessBatch(context.Background(), 0, b, nil); !errors.Is(err, errRetraction) {
		t.Errorf("a retraction: %v", err)
	}
	b.Rec.Release()
	k.Close(context.Background())
	k.Close(context.Background())
	if files, hidden := committed(t, dir); len(files)+len(hidden) != 0 {
		t.Errorf("after a failure, files %v and %v", files, hidden)
	}
}

// TestDirSourceSkips: the source of a directory reads its files and those of
// its subdirectories, but not hidden or _ ones; a missing directory reads as
// empty; a checkpoint restores to the file and offset it was at.
func TestDirSourceSkips(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	for name, content := range map[string]string{
		"a.csv": "1,a\n2,b\n", "p=x/b.csv": "3,c\n", ".c.csv.inprogress": "9,x\n", "_SUCCESS": "", "_tmp/d.csv": "9,y\n", ".hidden/e.csv": "9,z\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := exec.ConnectorSpec{Connector: Name, URL: "file://" + dir + "/?format=csv", Schema: seqSchema}
	var got []string
	for _, r := range readAll(t, mem, c, 2) {
		got = append(got, r.rows...)
	}
	slices.Sort(got)
	if want := []string{"1|a", "2|b", "3|c"}; !slices.Equal(got, want) {
		t.Errorf("read %v, want %v", got, want)
	}
	missing := exec.ConnectorSpec{Connector: Name, URL: "file://" + dir + "/none/?format=csv", Schema: seqSchema}
	if r := readAll(t, mem, missing, 1); len(r[0].rows) != 0 {
		t.Errorf("a missing directory read %v", r[0].rows)
	}
	// Checkpoints: cut after the first batch (file a.csv), restore, read on.
	first := cutRun(t, mem, c, 0, 1, nil, 1)
	rest := cutRun(t, mem, c, 0, 1, first.state, -1)
	all := append(first.rows, rest.rows...)
	slices.Sort(all)
	if want := []string{"1|a", "2|b", "3|c"}; !slices.Equal(all, want) {
		t.Errorf("across a checkpoint: %v then %v, want %v once each", first.rows, rest.rows, want)
	}
}

// TestSinkBrokenFile: a file that cannot be closed whole at a barrier fails
// the snapshot and then the task (its rows would be lost if the task went
// on to later checkpoints), and is not committed.
func TestSinkBrokenFile(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	dir := t.TempDir()
	c := exec.ConnectorSpec{Connector: Name, URL: "file://" + dir + "/?format=csv", Schema: seqSchema}
	k := openSink(t, mem, c, 0, 1, true)
	defer k.Close(ctx)
	rows, _ := seqRows(0, 10)
	write(t, k, batchOf(t, mem, seqSchema, rows))
	for _, pf := range k.open {
		pf.f.Close() // the rows are in the buffer still: the flush fails
	}
	if _, err := k.SnapshotState(ctx, 1); err == nil {
		t.Fatal("a snapshot with a file that cannot be written succeeded")
	}
	b := batchOf(t, mem, seqSchema, rows)
	if err := k.ProcessBatch(ctx, 0, b, nil); err == nil {
		t.Error("the broken sink took more rows")
	}
	b.Rec.Release()
	if err := k.ProcessSignal(ctx, 0, exec.Signal{Kind: exec.EndOfStream}, nil); err == nil {
		t.Error("the broken sink ended well")
	}
	if files, _ := committed(t, dir); len(files) != 0 {
		t.Errorf("committed %v", files)
	}
}

// TestSinkText writes each value as a line, NULL as an empty one, and
// refuses a value holding a line break.
func TestSinkText(t *testing.T) {
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	c := exec.ConnectorSpec{Connector: Name, URL: "file://" + dir + "/", Schema: lineSchema}
	k := openSink(t, mem, c, 0, 1, false)
	defer k.Close(context.Background())
	write(t, k, batchOf(t, mem, lineSchema, `[{"line": "a, \"b\""}, {"line": null}, {"line": ""}, {"line": "é"}]`))
	b := batchOf(t, mem, lineSchema, `[{"line": "two\nlines"}]`)
	if err := k.ProcessBatch(context.Background(), 0, b, nil); !errors.Is(err, errLineBreak) {
		t.Errorf("a line break: %v", err)
	}
	b.Rec.Release()
	endOfStream(t, k)
	files, _ := committed(t, dir)
	if len(files) != 1 || !strings.HasSuffix(files[0], ".txt") {
		t.Fatalf("files %v", files)
	}
	data, err := os.ReadFile(filepath.Join(dir, files[0]))
	if want := "a, \"b\"\n\n\né\n"; err != nil || string(data) != want {
		t.Errorf("the file holds %q (%v), want %q", data, err, want)
	}
}
