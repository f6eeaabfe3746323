package records

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/hummer-db/hummer/exec/types"
)

// JSONParser reads one JSON object per line into the projected columns: fields
// are matched to columns by name, exactly first and then case-insensitively; a
// missing field or a JSON null is NULL; other fields are ignored. Every column
// of the table is checked, read or not, so that a record is good or bad
// whichever columns a query reads; a line that is not an object (null, a
// number, an array) is bad.
//
// Numbers are parsed into the column's type from their literal text (so a DECIMAL
// is exact), a string is parsed as CSV parses a field (so "2024-01-02" fills a
// TIMESTAMP and "1.5" a DOUBLE), and a TEXT column takes a number, boolean, object
// or array as its JSON text. A TIMESTAMP must be a string: a bare number would leave
// its unit to guesswork.
type JSONParser struct {
	names []string     // the table's columns' names
	types []types.Type // and types
	proj  []int        // each column's position among the projected ones, or -1
	obj   map[string]json.RawMessage
}

// NewJSONParser returns a parser of objects of the table's columns schema into
// the columns cols of it (positions in schema, in the order the Builder has
// them).
func NewJSONParser(schema types.Schema, cols []int) *JSONParser {
	p := &JSONParser{obj: map[string]json.RawMessage{}, proj: make([]int, len(schema))}
	for i, f := range schema {
		p.names = append(p.names, f.Name)
		p.types = append(p.types, f.Type)
		p.proj[i] = -1
	}
	for j, c := range cols {
		p.proj[c] = j
	}
	return p
}

// Parse fills the row bb is reading from one JSON object. Its strings may point
// into line, or into p, until the next call.
func (p *JSONParser) Parse(line []byte, bb *Builder) error {
	if t := bytes.TrimSpace(line); len(t) == 0 || t[0] != '{' {
		return fmt.Errorf("not a JSON object: %s", Quote(t))
	}
	clear(p.obj) // Unmarshal adds to a map rather than replacing it
	if err := json.Unmarshal(line, &p.obj); err != nil {
		return err
	}
	var scratch value
	for i, name := range p.names {
		raw, ok := p.obj[name]
		if !ok {
			for k, v := range p.obj {
				if strings.EqualFold(k, name) {
					raw, ok = v, true
					break
				}
			}
		}
		v := &scratch
		if j := p.proj[i]; j >= 0 {
			v = &bb.vals[j]
		}
		if !ok {
			v.null = true
			continue
		}
		if err := jsonValue(p.types[i], raw, v); err != nil {
			return fmt.Errorf("field %s: %w", name, err)
		}
	}
	return nil
}

func jsonValue(t types.Type, raw []byte, v *value) error {
	if len(raw) == 0 {
		return errors.New("empty value")
	}
	switch c := raw[0]; {
	case c == 'n':
		v.null = true
		return nil
	case c == '"':
		s := raw[1 : len(raw)-1]
		if bytes.IndexByte(s, '\\') >= 0 {
			var str string
			if err := json.Unmarshal(raw, &str); err != nil {
				return err
			}
			s = []byte(str)
		}
		return parseValue(t, s, v, nil)
	case c == '{' || c == '[':
		if t.ID != types.String {
			return fmt.Errorf("cannot put %s into a %v column", Quote(raw), t)
		}
		v.s = raw
		return nil
	case t.ID == types.Timestamp || t.ID == types.Date:
		return fmt.Errorf("cannot put %s into a %v column (write it as a string)", Quote(raw), t)
	}
	// A number, true or false: its literal text parses into every other type it fits.
	return parseValue(t, raw, v, nil)
}
