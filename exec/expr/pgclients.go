package expr

import (
	"encoding/json"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// The functions the catalog queries of the Python clients need beyond
// pgcatalog.go's: the JSON string of a text, from which the binder builds
// json_build_object.

// evalJSONString is $json_string(s): s as a JSON string literal ("a\"b"),
// as PostgreSQL's to_json(text) writes it.
func evalJSONString(c *call) (arrow.Array, error) {
	in := textOf(c.args[0])
	valid, nulls := validity(c.mem, c.n, c.args[0])
	sb := newStringBuilder(c.mem, c.n, len(in.all())+2*c.n)
	for i := range c.n {
		if validAt(valid, i) {
			sb.write(JSONString(string(in.row(i))))
		}
		sb.end()
	}
	sb.valid, sb.nulls = valid, nulls
	return sb.array(), nil
}

// JSONString is s as a JSON string literal, with only what JSON requires
// escaped (PostgreSQL leaves <, > and & and non-ASCII characters as they are).
func JSONString(s string) []byte {
	out := []byte{'"'}
	for _, r := range s {
		switch {
		case r == '"':
			out = append(out, '\\', '"')
		case r == '\\':
			out = append(out, '\\', '\\')
		case r < 0x20:
			b, _ := json.Marshal(string(r))
			out = append(out, b[1:len(b)-1]...)
		default:
			out = append(out, string(r)...)
		}
	}
	return append(out, '"')
}

// parseVector reads the text form of an int2vector or oidvector (pg_index's
// indkey, "3 1"): integers separated by spaces, two or more.
func parseVector(s string) ([]*string, bool) {
	if !strings.Contains(s, " ") {
		return nil, false
	}
	var out []*string
	for _, f := range strings.Fields(s) {
		for _, c := range f {
			if (c < '0' || c > '9') && c != '-' {
				return nil, false
			}
		}
		out = append(out, &f)
	}
	return out, true
}
