package spec

import (
	"errors"
	"strings"
	"testing"
)

func testConnector() *Connector {
	return &Connector{Name: "t", Options: []Option{
		{Name: "mode", Type: Enum, Default: "a", Allowed: []string{"a", "b"}},
		{Name: "flag", Type: Bool, Default: "false"},
		{Name: "sep", Type: Char, Default: ","},
		{Name: "label", Type: String},
	}}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		query string
		want  map[string]string // option -> value; nil for an error
		err   string
	}{
		{query: "", want: map[string]string{"mode": "a", "flag": "false", "sep": ",", "label": ""}},
		{query: "mode=B&flag=TRUE&sep=;&label=x%20y", want: map[string]string{"mode": "b", "flag": "true", "sep": ";", "label": "x y"}},
		{query: "flag=1&sep=%09", want: map[string]string{"flag": "true", "sep": "\t"}},
		{query: `sep=\t`, want: map[string]string{"sep": "\t"}},
		{query: "sep=tab", want: map[string]string{"sep": "\t"}},
		{query: "bogus=1", err: `t: unknown option "bogus" (valid options: mode, flag, sep, label)`},
		{query: "mode=c", err: `option mode: "c" is not one of a, b`},
		{query: "flag=yes", err: `option flag: "yes" is not a boolean`},
		{query: "sep=ab", err: `option sep: "ab" is not one single-byte character`},
		{query: "sep=%C3%A9", err: "not one single-byte character"},
		{query: "mode=a&mode=b", err: "option mode is given 2 times"},
		{query: "mode=%zz", err: "bad query parameter"},
	} {
		q, err := ParseQuery(tc.query)
		var v Values
		if err == nil {
			v, err = testConnector().Parse(q)
		}
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrBadOption) {
				t.Errorf("%q: error %v, want ErrBadOption with %q", tc.query, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.query, err)
			continue
		}
		for name, want := range tc.want {
			if got := v.Get(name); got != want {
				t.Errorf("%q: %s = %q, want %q", tc.query, name, got, want)
			}
		}
	}
	v, _ := testConnector().Parse(nil)
	if v.IsSet("mode") || v.Bool("flag") {
		t.Errorf("defaults: IsSet(mode) = %v, Bool(flag) = %v", v.IsSet("mode"), v.Bool("flag"))
	}
}

func TestNoOptions(t *testing.T) {
	c := &Connector{Name: "m"}
	q, _ := ParseQuery("x=1")
	if _, err := c.Parse(q); err == nil || !strings.Contains(err.Error(), "it takes no options") {
		t.Errorf("error %v", err)
	}
}
