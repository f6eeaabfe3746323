// Package spec is the vocabulary every connector describes its options with: the
// option specs that CREATE TABLE validates a CONNECTION URL against (as Benthos does
// with its config specs), and the documentation SHOW and the docs print.
//
// It is a leaf package so that the connector folders and the connectors package,
// which imports them all, can share it without an import cycle.
package spec

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// ErrBadOption is wrapped by every error about a CONNECTION URL or one of its
// options; CREATE TABLE refuses the table with it.
var ErrBadOption = errors.New("bad connector option")

// Type is the kind of value an option takes.
type Type string

const (
	// String takes any text.
	String Type = "string"
	// Bool takes true or false (also 1 or 0), in any case.
	Bool Type = "bool"
	// Enum takes one of Option.Allowed, in any case; Values hold it in lower case.
	Enum Type = "enum"
	// Char takes one single-byte character; `\t` and `tab` spell a tab.
	Char Type = "char"
)

// Option describes one option of a connector's CONNECTION URL (a query parameter).
type Option struct {
	Name        string
	Type        Type
	Default     string // as it would be written in the URL; "" for none
	Description string
	Allowed     []string // the values an Enum takes
}

// Connector describes one connector: its ENGINE name, the shape of its CONNECTION
// URL, whether it reads (source) or writes (sink), and its options.
type Connector struct {
	Name        string
	URL         string // the CONNECTION URL's shape, for messages and docs
	Description string
	Source      bool
	Sink        bool
	// Unbounded says the source never ends by itself (a stream such as Kafka): a
	// query over it runs as a continuous job.
	Unbounded bool
	// Upsert says the sink of a table with a PRIMARY KEY upserts by it, so it
	// can take a query's updates and deletes (exec.ConnectorSpec.Key), and its
	// source reads such a table as upserts (Insert rows) and deletes of keys
	// (Delete rows, only the key columns set), which the planner turns into a
	// changelog with an upsert operator.
	Upsert  bool
	Options []Option
}

// Values are a connection's options after Parse: every option the connector has,
// either as set in the URL or defaulted, already checked against its Type.
type Values struct {
	vals map[string]string
	set  map[string]bool
}

// Get returns the value of option name ("" for an unknown option). An Enum's value
// is in lower case, a Char's is its one byte.
func (v Values) Get(name string) string { return v.vals[name] }

// Bool returns the value of a Bool option.
func (v Values) Bool(name string) bool {
	b, _ := parseBool(v.vals[name])
	return b
}

// IsSet reports whether the URL set option name, rather than it being defaulted.
func (v Values) IsSet(name string) bool { return v.set[name] }

// Errorf returns an error about connector c that wraps ErrBadOption.
func (c *Connector) Errorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrBadOption, c.Name, fmt.Sprintf(format, args...))
}

// ParseQuery splits the query of a CONNECTION URL into its parameters. Unlike
// url.ParseQuery it splits on '&' only, so that a value may be a ';' (a CSV
// delimiter, say) without being percent-encoded.
func ParseQuery(rawQuery string) (url.Values, error) {
	q := url.Values{}
	for part := range strings.SplitSeq(rawQuery, "&") {
		if part == "" {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		key, err := url.QueryUnescape(k)
		if err != nil {
			return nil, fmt.Errorf("%w: bad query parameter %q: %v", ErrBadOption, part, err)
		}
		val, err := url.QueryUnescape(v)
		if err != nil {
			return nil, fmt.Errorf("%w: bad query parameter %q: %v", ErrBadOption, part, err)
		}
		q[key] = append(q[key], val)
	}
	return q, nil
}

// Parse checks the query parameters of a CONNECTION URL against c's options and
// returns them with defaults filled in. An unknown option, a repeated one or a value
// of the wrong type is an error wrapping ErrBadOption; the message for an unknown
// option lists the valid ones.
func (c *Connector) Parse(q url.Values) (Values, error) {
	v := Values{vals: map[string]string{}, set: map[string]bool{}}
	names := make([]string, 0, len(q))
	for name := range q {
		names = append(names, name)
	}
	slices.Sort(names) // report the same error for the same URL every time
	for _, name := range names {
		o := c.option(name)
		if o == nil {
			return Values{}, c.Errorf("unknown option %q (%s)", name, c.validOptions())
		}
		if len(q[name]) > 1 {
			return Values{}, c.Errorf("option %s is given %d times", name, len(q[name]))
		}
		val, err := o.check(q[name][0])
		if err != nil {
			return Values{}, c.Errorf("option %s: %v", name, err)
		}
		v.vals[name] = val
		v.set[name] = true
	}
	for _, o := range c.Options {
		if !v.set[o.Name] {
			val, err := o.check(o.Default)
			if err != nil {
				// A connector's own spec is wrong: a programming error, reported as one.
				return Values{}, fmt.Errorf("%s: default of option %s: %v", c.Name, o.Name, err)
			}
			v.vals[o.Name] = val
		}
	}
	return v, nil
}

func (c *Connector) option(name string) *Option {
	for i := range c.Options {
		if c.Options[i].Name == name {
			return &c.Options[i]
		}
	}
	return nil
}

func (c *Connector) validOptions() string {
	if len(c.Options) == 0 {
		return "it takes no options"
	}
	names := make([]string, len(c.Options))
	for i, o := range c.Options {
		names[i] = o.Name
	}
	return "valid options: " + strings.Join(names, ", ")
}

// check validates s as a value of o and returns it in canonical form.
func (o *Option) check(s string) (string, error) {
	switch o.Type {
	case Bool:
		b, ok := parseBool(s)
		if !ok {
			return "", fmt.Errorf("%q is not a boolean (true or false)", s)
		}
		if b {
			return "true", nil
		}
		return "false", nil
	case Enum:
		for _, a := range o.Allowed {
			if strings.EqualFold(s, a) {
				return a, nil
			}
		}
		return "", fmt.Errorf("%q is not one of %s", s, strings.Join(o.Allowed, ", "))
	case Char:
		switch {
		case s == `\t` || strings.EqualFold(s, "tab"):
			return "\t", nil
		case len(s) == 1 && s[0] < 0x80:
			return s, nil
		}
		return "", fmt.Errorf("%q is not one single-byte character", s)
	}
	return s, nil
}

func parseBool(s string) (b, ok bool) {
	switch strings.ToLower(s) {
	case "true", "1":
		return true, true
	case "false", "0":
		return false, true
	}
	return false, false
}
