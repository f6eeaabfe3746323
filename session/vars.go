package session

// Session variables: their defaults, SET and SHOW.

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/jobmanager"
	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/sql"
)

// defaultVars returns the session variables and their defaults; set says which
// may be set.
func defaultVars() map[string]types.Value {
	return map[string]types.Value{
		"parallelism":        types.StringValue("auto"),
		"min_parallelism":    types.IntValue(0),
		"max_parallelism":    types.IntValue(0),
		"network":            types.StringValue(""),
		"network_task":       types.StringValue(exec.NetworkAuto),
		"application_name":   types.StringValue(""),
		"client_encoding":    types.StringValue("UTF8"),
		"datestyle":          types.StringValue("ISO, MDY"),
		"timezone":           types.StringValue("UTC"),
		"extra_float_digits": types.IntValue(1),
		"search_path":        types.StringValue("public"),
		"statement_timeout":  types.StringValue("0"),
		// Empty: the engine's default (Config.CheckpointInterval).
		"checkpoint_interval": types.StringValue(""),
		// Failed checkpoints in a row a continuous job tolerates; the next
		// fails it over (jobmanager.DefaultFailoverAfter).
		"tolerable_failed_checkpoints": types.IntValue(jobmanager.DefaultFailoverAfter - 1),
		// The memory an aggregation's groups may take before it spills;
		// empty: the TaskManagers' default (a share of the process's limit).
		"work_mem": types.StringValue(""),
		// A query over a view waits until the view has caught up with its
		// inputs (views.go); off reads its rows at once.
		"wait_for_views": types.StringValue("on"),
	}
}

// showAll lists every session variable (SHOW VARIABLES).
func (s *Session) showAll() (*Result, error) {
	names := make([]string, 0, len(s.vars))
	for n := range s.vars {
		names = append(names, n)
	}
	sort.Strings(names)
	rows := make([][]types.Value, len(names))
	for i, n := range names {
		rows[i] = []types.Value{types.StringValue(n), types.StringValue(formatVar(s.vars[n]))}
	}
	return s.valuesResult("SHOW", showAllSchema, rows)
}

// set assigns a session variable; a NULL value (SET x = DEFAULT) resets it.
func (s *Session) set(name string, v types.Value) error {
	old, ok := s.vars[name]
	if !ok {
		return sql.Errorf(sql.ErrUnknownVariable, 0, "unrecognized configuration parameter %q", name)
	}
	if v.Null || v.Type.ID == types.Null {
		s.vars[name] = defaultVars()[name]
		return nil
	}
	if name == "network_task" {
		mode := strings.ToLower(strings.TrimSpace(formatVar(v)))
		if mode != exec.NetworkFused && mode != exec.NetworkOwn && mode != exec.NetworkAuto {
			return sql.Errorf(sql.ErrInvalidValue, 0, "network_task must be 'fused', 'own' or 'auto', got %s", formatVar(v))
		}
		s.vars[name] = types.StringValue(mode)
		return nil
	}
	if name == "checkpoint_interval" {
		text := formatVar(v)
		if _, err := parseInterval(text); err != nil {
			return sql.Errorf(sql.ErrInvalidValue, 0, "invalid value for parameter \"checkpoint_interval\": %q: %v", text, err)
		}
		s.vars[name] = types.StringValue(text)
		return nil
	}
	if name == "work_mem" {
		text := formatVar(v)
		n, err := ParseSize(text, 1<<10)
		if err != nil || n < 64<<10 {
			return sql.Errorf(sql.ErrInvalidValue, 0, "invalid value for parameter \"work_mem\": %q (want a size of 64kB or more, such as '256MB')", text)
		}
		s.vars[name] = types.StringValue(text)
		return nil
	}
	if name == "wait_for_views" {
		on, ok := parseBool(formatVar(v))
		if !ok {
			return sql.Errorf(sql.ErrInvalidValue, 0, "parameter \"wait_for_views\" requires a Boolean value, got %s", formatVar(v))
		}
		s.vars[name] = types.StringValue(map[bool]string{true: "on", false: "off"}[on])
		return nil
	}
	if name == "tolerable_failed_checkpoints" {
		n, err := intValue(v)
		if err != nil || n < 0 {
			return sql.Errorf(sql.ErrInvalidValue, 0, "tolerable_failed_checkpoints must be an integer of 0 or more, got %s", formatVar(v))
		}
		s.vars[name] = types.IntValue(n)
		return nil
	}
	if name == "parallelism" {
		if v.Type.ID == types.String && strings.EqualFold(strings.TrimSpace(v.Str), "auto") {
			s.vars[name] = types.StringValue("auto")
			return nil
		}
		n, err := intValue(v)
		if slots := s.e.slots(); err != nil || n < 1 || n > int64(slots) {
			return sql.Errorf(sql.ErrInvalidValue, 0,
				"parallelism must be 'auto' or an integer from 1 to %d (the number of slots), got %s", slots, formatVar(v))
		}
		s.vars[name] = types.IntValue(n)
		return nil
	}
	if old.Type.ID == types.Int64 {
		n, err := intValue(v)
		if err != nil {
			return sql.Errorf(sql.ErrInvalidValue, 0, "invalid value for parameter %q: %s", name, formatVar(v))
		}
		s.vars[name] = types.IntValue(n)
		return nil
	}
	s.vars[name] = types.StringValue(formatVar(v))
	return nil
}

// parseBool reads a Boolean setting as PostgreSQL does: on, off, true,
// false, yes, no, 1, 0 (any case).
func parseBool(s string) (value, ok bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "on", "true", "yes", "1", "t", "y":
		return true, true
	case "off", "false", "no", "0", "f", "n":
		return false, true
	}
	return false, false
}

func intValue(v types.Value) (int64, error) {
	switch v.Type.ID {
	case types.Int64:
		return v.Int, nil
	case types.String:
		return strconv.ParseInt(strings.TrimSpace(v.Str), 10, 64)
	}
	return 0, fmt.Errorf("not an integer")
}

func formatVar(v types.Value) string {
	switch v.Type.ID {
	case types.Int64:
		return strconv.FormatInt(v.Int, 10)
	case types.String:
		return v.Str
	case types.Bool:
		if v.Bool {
			return "on"
		}
		return "off"
	case types.Float64:
		return strconv.FormatFloat(v.Float, 'g', -1, 64)
	}
	return fmt.Sprint(v)
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
