package table

import (
	"errors"
	"testing"
)

// A COPY's data arrives in chunks cut anywhere, inside a quoted field or a
// \r\n included: the rows are those of the whole, read off it by hand.
func TestCopyReaderChunks(t *testing.T) {
	csv := CopyFormat{CSV: true, Header: true, Delimiter: ',', Quote: '"', Escape: '"'}
	text := CopyFormat{Delimiter: '\t', Null: `\N`}
	for _, c := range []struct {
		name string
		f    CopyFormat
		data string
		want []string
	}{
		{"csv", csv, "id,name\r\n1,\"a,\"\"b\"\"\nc\"\r\n2,\r\n3,\"\"\n", []string{"1|a,\"b\"\nc", "2|NULL", "3|"}},
		{"text", text, "1\tx\\ty\n2\t\\N\n3\t\\101\\x42\\\\\n\\.\nignored\n", []string{"1|x\ty", "2|NULL", "3|AB\\"}},
	} {
		for cut := 0; cut <= len(c.data); cut++ {
			s, err := openStore(t, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			s.Create("t1")
			tx, _ := s.Begin("t1", keyed)
			r := NewCopyReader(tx, []int{0, 1}, nil, c.f)
			for _, chunk := range []string{c.data[:cut], c.data[cut:]} {
				if err := r.Write([]byte(chunk)); err != nil {
					t.Fatalf("%s, cut at %d: %v", c.name, cut, err)
				}
			}
			if err := r.Close(); err != nil {
				t.Fatalf("%s, cut at %d: %v", c.name, cut, err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			equal(t, c.name, scan(t, s, "t1", 1), c.want...)
			if t.Failed() {
				t.Fatalf("cut at %d", cut)
			}
		}
	}
}

// A bad record fails the COPY with its line (counting the lines a quoted
// field spans) and column.
func TestCopyReaderErrors(t *testing.T) {
	csv := CopyFormat{CSV: true, Delimiter: ',', Quote: '"', Escape: '"'}
	for _, c := range []struct{ data, code, msg, where string }{
		{"1,a\n2,\"x\ny\"\nthree,b\n", "22P02", `invalid input syntax for type bigint: "three"`, `COPY t, line 4, column id: "three"`},
		{"99999999999999999999,a\n", "22003", `value "99999999999999999999" is out of range for type bigint`, `COPY t, line 1, column id: "99999999999999999999"`},
		{"1,a,extra\n", "22P04", "extra data after last expected column", `COPY t, line 1: "1,a,extra"`},
		{"1\n", "22P04", `missing data for column "name"`, `COPY t, line 1: "1"`},
		{"1,\"open\n", "22P04", "unterminated CSV quoted field", "COPY t, line 1: \"1,\"open\n\""},
	} {
		s, _ := openStore(t, t.TempDir())
		s.Create("t1")
		tx, _ := s.Begin("t1", keyed)
		r := NewCopyReader(tx, []int{0, 1}, nil, csv)
		err := r.Write([]byte(c.data))
		if err == nil {
			err = r.Close()
		}
		var ce *CopyError
		if !errors.As(err, &ce) || ce.Code != c.code || ce.Msg != c.msg || ce.Where != c.where {
			t.Errorf("%q: %v, want %s %s (%s)", c.data, err, c.code, c.msg, c.where)
		}
		r.Release()
		tx.Rollback()
	}
}
