package records

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/hummer-db/hummer/exec/types"
)

// Parser parses records that each come whole, one to a Kafka message value or
// one to a line of a socket, into the projected columns of a table: format=text
// takes the record as the table's single TEXT column, format=json as one
// object (JSONParser), format=csv as one RFC 4180 record. A record is good or
// bad by every column of the table, whichever the query reads.
type Parser struct {
	format string
	schema types.Schema // the table's columns
	cols   []int        // the positions in schema the Builder has, in order
	unread []int        // the table's columns the query does not read
	csv    csvRecord
	json   *JSONParser
}

// NewParser returns a parser of records in format (FormatText, FormatCSV or
// FormatJSON) of the table's columns schema into the columns cols of it
// (positions in schema, in the order the Builder has them). CheckSchema has
// checked that schema suits format.
func NewParser(format string, schema types.Schema, cols []int) *Parser {
	p := &Parser{format: format, schema: schema, cols: cols, unread: Unread(len(schema), cols)}
	if format == FormatJSON {
		p.json = NewJSONParser(schema, cols)
	}
	return p
}

// JSON returns the parser's JSONParser (nil unless the format is json), for a
// caller that also reads other JSON of the table's columns (a Kafka message
// key).
func (p *Parser) JSON() *JSONParser { return p.json }

// Parse fills the row bb is reading from one record v. The row may borrow v,
// or p, until Commit or the next call.
func (p *Parser) Parse(v []byte, bb *Builder) error {
	bb.Reset()
	switch p.format {
	case FormatText:
		if len(p.cols) == 1 {
			return bb.ParseField(0, v)
		}
		// A query that reads no column (count(*)) counts what one that
		// reads the line would.
		return Validate(types.StringType, v)
	case FormatJSON:
		if len(bytes.TrimSpace(v)) == 0 {
			return errors.New("empty record")
		}
		return p.json.Parse(v, bb)
	}
	rec := &p.csv
	if err := rec.parse(v); err != nil {
		return err
	}
	if n := len(rec.fields); n != len(p.schema) {
		return fmt.Errorf("%d fields, the table has %d columns", n, len(p.schema))
	}
	for i, col := range p.cols {
		f := rec.fields[col]
		if len(f) == 0 && !rec.quoted[col] {
			bb.SetNull(i)
			continue
		}
		if err := bb.ParseField(i, f); err != nil {
			return fmt.Errorf("column %s: %w", p.schema[col].Name, err)
		}
	}
	// The columns the query does not read must be good too: a record is good
	// or bad whichever columns a query reads.
	for _, col := range p.unread {
		if f := rec.fields[col]; len(f) > 0 || rec.quoted[col] {
			if err := Validate(p.schema[col].Type, f); err != nil {
				return fmt.Errorf("column %s: %w", p.schema[col].Name, err)
			}
		}
	}
	return nil
}

// csvRecord is one RFC 4180 record split into fields, parsed from a whole
// record (it cannot span messages or lines, so unlike the file connector's
// there is no line reader). As there, a field in double quotes may hold
// commas, newlines and doubled quotes, and an empty unquoted field is NULL.
type csvRecord struct {
	buf    []byte
	fields [][]byte // slices of buf
	quoted []bool
	ends   []int
}

func (r *csvRecord) parse(v []byte) error {
	v = bytes.TrimSuffix(bytes.TrimSuffix(v, []byte("\n")), []byte("\r"))
	r.buf, r.ends, r.quoted, r.fields = r.buf[:0], r.ends[:0], r.quoted[:0], r.fields[:0]
	i := 0
	for {
		quoted := i < len(v) && v[i] == '"'
		if quoted {
			i++
			for {
				j := bytes.IndexByte(v[i:], '"')
				if j < 0 {
					return errors.New("unterminated quoted field")
				}
				r.buf = append(r.buf, v[i:i+j]...)
				i += j + 1
				if i < len(v) && v[i] == '"' {
					r.buf = append(r.buf, '"')
					i++
					continue
				}
				break
			}
			if i < len(v) && v[i] != ',' {
				return fmt.Errorf("field %d: unexpected %q after the closing quote", len(r.ends)+1, v[i])
			}
		} else {
			end := len(v)
			if j := bytes.IndexByte(v[i:], ','); j >= 0 {
				end = i + j
			}
			f := v[i:end]
			if bytes.IndexByte(f, '"') >= 0 {
				return fmt.Errorf(`field %d: a '"' in an unquoted field (quote the field and double the quote)`, len(r.ends)+1)
			}
			r.buf = append(r.buf, f...)
			i = end
		}
		r.ends = append(r.ends, len(r.buf))
		r.quoted = append(r.quoted, quoted)
		if i >= len(v) {
			break
		}
		i++ // the comma
	}
	start := 0
	for _, e := range r.ends {
		r.fields = append(r.fields, r.buf[start:e])
		start = e
	}
	return nil
}
