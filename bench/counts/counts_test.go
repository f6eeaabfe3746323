package counts

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDigestDetectsWrongResults(t *testing.T) {
	want := Of(map[string]int64{"the": 3, "and": 2})
	for _, tc := range []struct {
		name string
		out  string
	}{
		{"miscounted", "the 2\nand 3\n"},
		{"split group", "the 1\nthe 2\nand 2\n"},
		{"missing word", "the 3\n"},
		{"extra word", "the 3\nand 2\nof 1\n"},
	} {
		got, err := ParseLines([]byte(tc.out))
		if err != nil {
			t.Fatal(err)
		}
		if got == want {
			t.Errorf("%s: digest %v equals the right one", tc.name, got)
		}
	}
	got, err := ParseLines([]byte("and 2\nthe 3"))
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("reordered result: got %v, want %v", got, want)
	}
	if _, err := ParseLines([]byte("the\n")); err == nil {
		t.Error("a line without a count parsed")
	}
}

func TestReferenceAndVariants(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.txt")
	if err := os.WriteFile(path, []byte("The  lord said\nthe LORD\n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := Reference(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := Of(m), Of(map[string]int64{"the": 2, "lord": 2, "said": 1}); got != want {
		t.Errorf("reference: got %v, want %v", got, want)
	}
	if got, want := Of(Upper(m)), Of(map[string]int64{"THE": 2, "LORD": 2, "SAID": 1}); got != want {
		t.Errorf("upper: got %v, want %v", got, want)
	}
	if got, want := Of(LongerThan(m, 3)), Of(map[string]int64{"lord": 2, "said": 1}); got != want {
		t.Errorf("longer than 3: got %v, want %v", got, want)
	}
}
