package session_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/connectors"
	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/operators"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/exec/vector"
	"github.com/hummer-db/hummer/session"
)

func openEngine(t *testing.T) *session.Session {
	t.Helper()
	mem := memory.NewCheckedAllocator(vector.NewPoisoningPoolAllocator())
	reg := exec.NewRegistry()
	operators.Register(reg)
	connectors.Register(reg)
	e, err := session.Open(session.Config{DataDir: t.TempDir(), Registry: reg, Validate: connectors.Validate, Slots: 2, Alloc: mem})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.Close()
		mem.AssertSize(t, 0)
	})
	return e.NewSession()
}

// collect runs p and returns its rows as text.
func collect(t *testing.T, p *session.Prepared, params ...types.Value) ([][]string, error) {
	t.Helper()
	ctx := context.Background()
	res, err := p.Run(ctx, params)
	if err != nil {
		return nil, err
	}
	if res.Rows == nil {
		return nil, nil
	}
	defer res.Rows.Close()
	var out [][]string
	for {
		b, err := res.Rows.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		for i := 0; i < int(b.NumRows()); i++ {
			var row []string
			for j := 0; j < int(b.NumCols()); j++ {
				row = append(row, expr.FormatValue(expr.ValueOf(b.Column(j), i)))
			}
			out = append(out, row)
		}
		b.Release()
	}
}

func TestPrepare(t *testing.T) {
	s := openEngine(t)
	ctx := context.Background()
	dir := t.TempDir()
	data := filepath.Join(dir, "w.csv")
	if err := os.WriteFile(data, []byte("a,1\nb,2\nc,3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ddl, err := s.Prepare(ctx, "CREATE TABLE w (word TEXT, n BIGINT) ENGINE=file CONNECTION='file://"+data+"?format=csv'", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ddl.Params) != 0 || ddl.Schema != nil {
		t.Fatalf("DDL: params %v schema %v", ddl.Params, ddl.Schema)
	}
	if _, err := collect(t, ddl); err != nil {
		t.Fatal(err)
	}

	p, err := s.Prepare(ctx, "SELECT word, n FROM w WHERE n > $1 AND word <> $2 ORDER BY n", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Params) != 2 || p.Params[0] != types.Int64Type || p.Params[1] != types.StringType {
		t.Fatalf("params %v", p.Params)
	}
	if len(p.Schema) != 2 || p.Schema[1].Type != types.Int64Type {
		t.Fatalf("schema %v", p.Schema)
	}
	// The same statement twice: text and typed parameters.
	for _, params := range [][]types.Value{
		{types.StringValue(" 1 "), types.StringValue("z")},
		{types.IntValue(1), types.StringValue("z")},
	} {
		rows, err := collect(t, p, params...)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 2 || rows[0][0] != "'b'" || rows[1][1] != "3" {
			t.Fatalf("rows %v", rows)
		}
	}
	if _, err := collect(t, p, types.StringValue("abc"), types.StringValue("z")); !errors.Is(err, expr.ErrInvalidCast) {
		t.Fatalf("bad int parameter: %v", err)
	}
	rows, err := collect(t, p, types.NullValue(types.NullType), types.StringValue("z"))
	if err != nil || len(rows) != 0 {
		t.Fatalf("NULL parameter: %v %v", rows, err)
	}

	bare, err := s.Prepare(ctx, "SELECT $1 IS NULL", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(bare.Params) != 1 || bare.Params[0] != types.StringType {
		t.Fatalf("bare params %v", bare.Params)
	}
	var pe *session.ParamTypeError
	if _, err := collect(t, bare, types.StringValue("x")); !errors.As(err, &pe) {
		t.Fatalf("bare parameter: %v", err)
	}

	if _, err := s.Prepare(ctx, "SELECT 1; SELECT 2", nil); err == nil {
		t.Fatal("two statements prepared")
	}
	if empty, err := s.Prepare(ctx, " ", nil); err != nil || !empty.Empty() {
		t.Fatalf("empty: %v", err)
	}
}
