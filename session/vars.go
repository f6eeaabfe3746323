package session

// Session variables: SET, RESET, SHOW, what the client is told of them
// (ParameterStatus), and the statements that reset a session (DISCARD ALL).
// The parameters themselves are in settings.go.

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/sql"
)

// Param is a reported parameter's name, as PostgreSQL spells it, and value.
type Param struct{ Name, Value string }

// defaultVars returns the parameters' defaults, by lower-case name, for a
// session of user (is_superuser, session_authorization) on a server of
// version (server_version).
func defaultVars(user string, superuser bool, version string) map[string]string {
	vars := make(map[string]string, len(params))
	for k, p := range params {
		vars[k] = p.def
	}
	vars["session_authorization"] = user
	vars["is_superuser"] = map[bool]string{true: "on", false: "off"}[superuser]
	vars["server_version"] = version
	vars["server_version_num"] = versionNum(version)
	return vars
}

// versionNum is server_version_num for a server_version: 15.2 is 150002.
func versionNum(version string) string {
	num, _, _ := strings.Cut(version, " ")
	major, minor, _ := strings.Cut(num, ".")
	m, err1 := strconv.Atoi(major)
	n, err2 := strconv.Atoi(minor)
	if err1 != nil || err2 != nil {
		return "150000"
	}
	return strconv.Itoa(m*10000 + n)
}

// lookupParam finds a parameter by name (any case); a custom one (a name
// of two parts, myapp.tenant) is known once set.
func (s *Session) lookupParam(name string) (key string, p *param, err error) {
	key = strings.ToLower(name)
	if p, ok := params[key]; ok {
		return key, p, nil
	}
	if _, ok := s.vars[key]; ok {
		return key, &param{name: key}, nil
	}
	return "", nil, sql.Errorf(sql.ErrUnknownVariable, 0, "unrecognized configuration parameter \"%s\"", key)
}

// ClientMinMessages returns client_min_messages, the least level of message
// the client is sent (wire.MessageFilter).
func (s *Session) ClientMinMessages() string { return s.vars["client_min_messages"] }

// Setting returns a parameter's value as SHOW shows it (sql.Settings).
func (s *Session) Setting(name string) (string, error) {
	key, _, err := s.lookupParam(name)
	if err != nil {
		return "", err
	}
	switch key { // outside a transaction block: the next one's
	case "transaction_isolation":
		key = "default_transaction_isolation"
	case "transaction_read_only":
		key = "default_transaction_read_only"
	}
	return s.vars[key], nil
}

// CheckSetting returns the value SET name = value would give (sql.Settings);
// value sql.ResetValue asks for the value RESET would give.
func (s *Session) CheckSetting(name, value string) (string, error) {
	if value == sql.ResetValue {
		key, p, err := s.settable(name, false)
		if err != nil {
			return "", err
		}
		return s.resetValue(key, p), nil
	}
	_, v, err := s.checkText(name, value)
	return v, err
}

// settable finds a parameter SET may change; custom: a name of two parts
// not set before is created.
func (s *Session) settable(name string, custom bool) (string, *param, error) {
	key, p, err := s.lookupParam(name)
	if err != nil && custom && strings.Count(name, ".") == 1 && !strings.HasPrefix(name, ".") && !strings.HasSuffix(name, ".") {
		key, p, err = strings.ToLower(name), &param{name: strings.ToLower(name)}, nil
	}
	if err != nil {
		return "", nil, err
	}
	if p.fixed {
		return "", nil, sql.Errorf(sql.ErrCantChange, 0, "parameter \"%s\" cannot be changed", key)
	}
	return key, p, nil
}

// checkSet checks SET name = values, returning the parameter's key and the
// value it would take: the values flattened into one text as PostgreSQL
// does, joined by ", ", each an identifier quoted where needed for a list of
// identifiers (search_path).
func (s *Session) checkSet(name string, values []string) (string, string, error) {
	_, p, err := s.settable(name, true)
	if err != nil {
		return "", "", err
	}
	if len(values) > 1 && !p.list {
		return "", "", sql.Errorf(sql.ErrInvalidValue, 0, "SET %s takes only one argument", strings.ToLower(name))
	}
	v := strings.Join(values, ", ")
	if p.quote {
		quoted := make([]string, len(values))
		for i, x := range values {
			quoted[i] = quoteIdent(x)
		}
		v = strings.Join(quoted, ", ")
	}
	return s.checkText(name, v)
}

// quoteIdent writes an identifier as PostgreSQL's quote_identifier does:
// bare if it is lower-case letters, digits and underscores not starting
// with a digit, else in double quotes.
func quoteIdent(id string) string {
	bare := id != ""
	for i, c := range id {
		if !(c >= 'a' && c <= 'z' || c == '_' || i > 0 && c >= '0' && c <= '9') {
			bare = false
			break
		}
	}
	if bare {
		return id
	}
	return `"` + strings.ReplaceAll(id, `"`, `""`) + `"`
}

// resetValue is the value RESET gives a parameter: the session's default,
// which the startup packet may have set.
func (s *Session) resetValue(key string, p *param) string {
	if v, ok := s.resets[key]; ok {
		return v
	}
	return p.def
}

// set runs SET name = values (nil: DEFAULT); local: SET LOCAL.
func (s *Session) set(st *sql.Set) (*Result, error) {
	res := &Result{Tag: "SET"}
	var key, v string
	if st.Values == nil {
		k, p, err := s.settable(st.Name, false)
		if err != nil {
			return nil, err
		}
		key, v = k, s.resetValue(k, p)
	} else {
		k, value, err := s.checkSet(st.Name, st.Values)
		if err != nil {
			return nil, err
		}
		key, v = k, value
	}
	if st.Local && !s.assign(key, v, true) {
		res.Warnings = append(res.Warnings, Warning{Kind: sql.ErrNoTransaction, Message: "SET LOCAL can only be used in transaction blocks"})
		return res, nil
	}
	if !st.Local {
		s.assign(key, v, false)
	}
	return res, nil
}

// assign gives parameter key value v. A local one lasts to the end of the
// transaction block: outside one, it is not made and assign reports false.
// transaction_isolation and transaction_read_only outside a block are
// checked and not kept (Setting shows the next transaction's).
func (s *Session) assign(key, v string, local bool) bool {
	if local && !s.inBlock && s.tx.state == txIdle {
		return false
	}
	if key == "transaction_isolation" || key == "transaction_read_only" {
		return true
	}
	if local {
		if _, saved := s.local[key]; !saved {
			old, had := s.vars[key]
			if !had {
				old = "\x00unset"
			}
			s.local[key] = old
		}
	}
	s.vars[key] = v
	return true
}

// endBlock ends the implicit transaction block of a query of several
// statements: what SET LOCAL changed goes back to what it was, unless the
// query left a block of BEGIN's open, whose end (endLocal) does that.
func (s *Session) endBlock() {
	s.inBlock = false
	if s.tx.state == txIdle {
		s.endLocal()
	}
}

// endLocal puts back what SET LOCAL changed: a transaction block ended.
func (s *Session) endLocal() {
	for k, v := range s.local {
		if v == "\x00unset" {
			delete(s.vars, k)
		} else {
			s.vars[k] = v
		}
		delete(s.local, k)
	}
}

// reset runs RESET name, or RESET ALL (name ""), which resets every
// parameter SET may change, as PostgreSQL's does.
func (s *Session) reset(name string) (*Result, error) {
	if name != "" {
		key, p, err := s.settable(name, false)
		if err != nil {
			return nil, err
		}
		s.assign(key, s.resetValue(key, p), false)
		return &Result{Tag: "RESET"}, nil
	}
	s.resetAll()
	return &Result{Tag: "RESET"}, nil
}

func (s *Session) resetAll() {
	for key := range s.vars {
		p, known := params[key]
		if !known {
			continue // custom parameters keep their values, as in PostgreSQL
		}
		if !p.fixed {
			s.vars[key] = s.resetValue(key, p)
		}
	}
}

// discard runs DISCARD: ALL resets the session (its parameters and, in the
// wire server, its prepared statements); PLANS, SEQUENCES and TEMP have
// nothing to drop (no plan cache, sequences or temporary tables).
func (s *Session) discard(what string) *Result {
	res := &Result{Tag: "DISCARD " + what}
	if what == "ALL" {
		s.resetAll()
		res.DropAllPrepared = true
	}
	return res
}

// ParameterStatus returns the reported parameters whose values the client
// has not been told yet, in PostgreSQL's order: all of them the first time
// (at startup), then those a statement changed. PostgreSQL tells a client of
// them just before ReadyForQuery, and only of values that differ from what
// it last told it.
func (s *Session) ParameterStatus() []Param {
	var out []Param
	for _, p := range paramList {
		if !p.report {
			continue
		}
		key := strings.ToLower(p.name)
		v := s.vars[key]
		if told, ok := s.reported[key]; ok && told == v {
			continue
		}
		s.reported[key] = v
		out = append(out, Param{Name: p.name, Value: v})
	}
	sort.Slice(out, func(i, j int) bool { return strings.ToLower(out[i].Name) < strings.ToLower(out[j].Name) })
	return out
}

// show runs SHOW name.
func (s *Session) show(name string) (*Result, error) {
	v, err := s.Setting(name)
	if err != nil {
		return nil, err
	}
	return s.valuesResult("SHOW", types.Schema{{Name: paramName(name), Type: types.StringType}},
		[][]types.Value{{types.StringValue(v)}})
}

// showAll lists every parameter as PostgreSQL's SHOW ALL does: name,
// setting and description, by name in any case.
func (s *Session) showAll() (*Result, error) {
	keys := make([]string, 0, len(s.vars)+2)
	for k := range s.vars {
		keys = append(keys, k)
	}
	keys = append(keys, "transaction_isolation", "transaction_read_only")
	sort.Strings(keys)
	rows := make([][]types.Value, 0, len(keys))
	for i, k := range keys {
		if i > 0 && keys[i-1] == k {
			continue
		}
		v, _ := s.Setting(k)
		desc := ""
		if p, ok := params[k]; ok {
			desc = p.desc
		}
		rows = append(rows, []types.Value{types.StringValue(paramName(k)), types.StringValue(v), types.StringValue(desc)})
	}
	return s.valuesResult("SHOW", showAllSchema, rows)
}

// intVar is an integer parameter's value (checked by SET).
func (s *Session) intVar(key string) int {
	n, _ := strconv.Atoi(s.vars[key])
	return n
}

// unitShifts are the units ParseSize reads, as powers of two.
var unitShifts = map[string]uint{"": 0, "b": 0, "k": 10, "kb": 10, "kib": 10, "m": 20, "mb": 20, "mib": 20,
	"g": 30, "gb": 30, "gib": 30, "t": 40, "tb": 40, "tib": 40}

// ParseSize reads a memory size: a number with a unit of 1024s as
// PostgreSQL's memory settings take them (kB, MB, GB, TB; also K, M, G, T,
// KiB, MiB, GiB, TiB), or a bare number of bare units (bytes for --memory;
// kB for SET work_mem, as PostgreSQL has it).
func ParseSize(s string, bare int64) (int64, error) {
	t := strings.TrimSpace(s)
	i := len(t)
	for i > 0 && (t[i-1] < '0' || t[i-1] > '9') && t[i-1] != '.' {
		i--
	}
	num, unit := strings.TrimSpace(t[:i]), strings.ToLower(strings.TrimSpace(t[i:]))
	shift, ok := unitShifts[unit]
	if !ok {
		return 0, fmt.Errorf("%q: unknown unit %q (want kB, MB, GB or TB)", s, t[i:])
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f <= 0 {
		return 0, fmt.Errorf("%q: want a size such as 2GiB or 512MB", s)
	}
	n := f * float64(uint64(1)<<shift)
	if unit == "" {
		n = f * float64(bare)
	}
	if n > 1<<62 {
		return 0, fmt.Errorf("%q: too large", s)
	}
	return int64(n), nil
}
