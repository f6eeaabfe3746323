package sql

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestBindTransaction: PostgreSQL's transaction and cursor statements, as the
// dialect layer and the binder read them.
func TestBindTransaction(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Statement
	}{
		{"BEGIN", &Begin{Tag: "BEGIN"}},
		{"begin work", &Begin{Tag: "BEGIN"}},
		{"BEGIN TRANSACTION ISOLATION LEVEL SERIALIZABLE, READ ONLY", &Begin{Tag: "BEGIN", ReadOnly: true}},
		{"BEGIN READ ONLY READ WRITE", &Begin{Tag: "BEGIN"}},
		{"begin isolation level repeatable read not deferrable;", &Begin{Tag: "BEGIN"}},
		{"START TRANSACTION", &Begin{Tag: "START TRANSACTION"}},
		{"START TRANSACTION READ ONLY, ISOLATION LEVEL READ COMMITTED", &Begin{Tag: "START TRANSACTION", ReadOnly: true}},
		{"COMMIT", &Commit{}},
		{"commit work", &Commit{}},
		{"END TRANSACTION", &Commit{}},
		{"end", &Commit{}},
		{"COMMIT AND CHAIN", &Commit{Chain: true}},
		{"COMMIT AND NO CHAIN", &Commit{}},
		{"ROLLBACK", &Rollback{}},
		{"ABORT", &Rollback{}},
		{"rollback transaction and chain", &Rollback{Chain: true}},
		{"SAVEPOINT S1", &Savepoint{Name: "s1"}},
		{`SAVEPOINT "S 1"`, &Savepoint{Name: "S 1"}},
		{"RELEASE s1", &Release{Name: "s1"}},
		{"RELEASE SAVEPOINT S1", &Release{Name: "s1"}},
		{"ROLLBACK TO s1", &RollbackTo{Name: "s1"}},
		{"rollback work to savepoint \"X\"", &RollbackTo{Name: "X"}},
		{"FETCH c", &Fetch{Name: "c", Count: 1}},
		{"FETCH NEXT FROM c", &Fetch{Name: "c", Count: 1}},
		{"fetch forward 2000 from \"C\"", &Fetch{Name: "C", Count: 2000}},
		{"FETCH 3 IN c", &Fetch{Name: "c", Count: 3}},
		{"FETCH +3 c", &Fetch{Name: "c", Count: 3}},
		{"FETCH ALL FROM c", &Fetch{Name: "c", Count: FetchAll}},
		{"FETCH FORWARD ALL c", &Fetch{Name: "c", Count: FetchAll}},
		{"FETCH FORWARD IN c", &Fetch{Name: "c", Count: 1}},
		{"MOVE 5 FROM C", &Fetch{Name: "c", Count: 5, Move: true}},
		{"FETCH BACKWARD 1 FROM c", &Fetch{Name: "c", Count: 1, Dir: FetchBackward}},
		{"FETCH BACKWARD -2 FROM c", &Fetch{Name: "c", Count: 2}},
		{"FETCH BACKWARD ALL c", &Fetch{Name: "c", Count: FetchAll, Dir: FetchBackward}},
		{"FETCH PRIOR c", &Fetch{Name: "c", Count: 1, Dir: FetchBackward}},
		{"FETCH -1 FROM c", &Fetch{Name: "c", Count: 1, Dir: FetchBackward}},
		{"FETCH FIRST c", &Fetch{Name: "c", Count: 1, Dir: FetchAbsolute}},
		{"FETCH LAST c", &Fetch{Name: "c", Count: -1, Dir: FetchAbsolute}},
		{"FETCH ABSOLUTE -2 c", &Fetch{Name: "c", Count: -2, Dir: FetchAbsolute}},
		{"MOVE RELATIVE 3 IN c", &Fetch{Name: "c", Count: 3, Dir: FetchRelative, Move: true}},
		{"FETCH 0 c", &Fetch{Name: "c", Count: 0, Dir: FetchRelative}},
		{"CLOSE c", &CloseCursor{Name: "c"}},
		{"CLOSE ALL", &CloseCursor{All: true}},
	} {
		got := bindTx(t, c.in)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: bound %#v, want %#v", c.in, got, c.want)
		}
	}
}

func TestBindDeclare(t *testing.T) {
	for _, c := range []struct {
		in   string
		want DeclareCursor
	}{
		{"DECLARE c CURSOR FOR SELECT 1", DeclareCursor{Name: "c"}},
		{`DECLARE "C" CURSOR WITHOUT HOLD FOR SELECT id FROM customers`, DeclareCursor{Name: "C"}},
		{"declare _psql_cursor no scroll cursor for\nselect 1", DeclareCursor{Name: "_psql_cursor"}},
		{"DECLARE c BINARY INSENSITIVE SCROLL CURSOR WITH HOLD FOR VALUES (1), (2)", DeclareCursor{Name: "c", Binary: true, Scroll: true, Hold: true}},
	} {
		got, ok := bindTx(t, c.in).(*DeclareCursor)
		if !ok {
			t.Errorf("%q: bound %T, want *DeclareCursor", c.in, got)
			continue
		}
		if got.Query == nil {
			t.Errorf("%q: no query", c.in)
		}
		got.Query = nil
		if *got != c.want {
			t.Errorf("%q: bound %+v, want %+v", c.in, *got, c.want)
		}
	}
}

// TestBindCursorErrors: statements that are not cursor statements.
func TestBindCursorErrors(t *testing.T) {
	for _, c := range []struct {
		in   string
		kind error
	}{
		{"FETCH 1 2 c", ErrSyntax},
		{"FETCH ABSOLUTE c", ErrSyntax},
		{"DECLARE c CURSOR FOR INSERT INTO t VALUES (1)", ErrSyntax},
		{"DECLARE c CURSOR SELECT 1", ErrSyntax},
		{"DO 0", ErrUnsupported},
		{"BEGIN ISOLATION LEVEL CHAOS", ErrSyntax},
	} {
		stmts, err := Parse(c.in)
		if err == nil {
			_, err = Bind(stmts[0], newTestCatalog(t), c.in)
		}
		if !errors.Is(err, c.kind) {
			t.Errorf("%q: %v, want %v", c.in, err, c.kind)
		}
	}
}

func bindTx(t *testing.T, q string) Statement {
	t.Helper()
	stmts, err := Parse(q)
	if err != nil {
		t.Fatalf("%q: %v", q, err)
	}
	if len(stmts) != 1 {
		t.Fatalf("%q: %d statements", q, len(stmts))
	}
	st, err := Bind(stmts[0], newTestCatalog(t), q)
	if err != nil {
		t.Fatalf("%q: %v", q, err)
	}
	return st
}

// TestTransactionText: a statement the dialect layer wrote anew keeps the
// user's text, which names its jobs and errors.
func TestTransactionText(t *testing.T) {
	q := "BEGIN TRANSACTION READ ONLY; END TRANSACTION; FETCH 2 FROM c"
	stmts, err := Parse(q)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"BEGIN TRANSACTION READ ONLY", "END TRANSACTION", "FETCH 2 FROM c"}
	for i, s := range stmts {
		if got := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s.Text()), ";")); got != want[i] {
			t.Errorf("statement %d: text %q, want %q", i, s.Text(), want[i])
		}
	}
}
