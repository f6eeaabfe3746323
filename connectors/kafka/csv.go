package kafka

import (
	"bytes"
	"errors"
	"fmt"
)

// csvRecord is one RFC 4180 record split into fields, parsed from a whole
// message value (a record cannot span messages, so unlike the file connector
// there is no line reader). As there, a field in double quotes may hold commas,
// newlines and doubled quotes, and an empty unquoted field is NULL.
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
