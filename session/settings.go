package session

// The session's run-time parameters: PostgreSQL's that clients read, set or
// are told of (ParameterStatus), and the engine's own. Each has its name as
// PostgreSQL spells it (SHOW's column, ParameterStatus), a default, and a
// check that turns a value into the text SHOW shows, or fails as PostgreSQL
// 15 fails (22023 invalid_parameter_value; 55P02 for one that cannot be
// changed). The values accepted are those whose meaning the engine keeps.

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // TimeZone names resolve without the system's zoneinfo

	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/jobmanager"
	"github.com/hummer-db/hummer/sql"
)

// param is one run-time parameter.
type param struct {
	name string // as PostgreSQL spells it
	def  string
	desc string
	// report: the client is told its value at startup and whenever it
	// changes (ParameterStatus).
	report bool
	// fixed: it cannot be changed (55P02); its value is the session's.
	fixed bool
	// list: it takes a list of values (search_path); quote: each is an
	// identifier, written quoted where it needs to be.
	list, quote bool
	// check returns the value as it is kept and shown; nil takes any text.
	check func(s *Session, p *param, v string) (string, error)
}

// params are the parameters by lower-case name.
var params = map[string]*param{}

func init() {
	for _, p := range paramList {
		params[strings.ToLower(p.name)] = p
	}
}

var paramList = []*param{
	// PostgreSQL's.
	{name: "application_name", report: true, check: checkAppName,
		desc: "Sets the application name to be reported in statistics and logs."},
	{name: "client_min_messages", def: "notice", check: checkMessageLevel,
		desc: "Sets the message levels that are sent to the client."},
	{name: "client_encoding", def: "UTF8", report: true, check: checkEncoding,
		desc: "Sets the client's character set encoding."},
	{name: "DateStyle", def: "ISO, MDY", report: true, list: true, check: checkDateStyle,
		desc: "Sets the display format for date and time values."},
	{name: "default_transaction_isolation", def: "read committed", check: checkIsolation,
		desc: "Sets the transaction isolation level of each new transaction."},
	{name: "default_transaction_read_only", def: "off", report: true, check: checkNotReadOnly,
		desc: "Sets the default read-only status of new transactions."},
	{name: "extra_float_digits", def: "1", check: checkIntRange(-15, 3),
		desc: "Sets the number of digits displayed for floating-point values."},
	{name: "in_hot_standby", def: "off", report: true, fixed: true,
		desc: "Shows whether hot standby is currently active."},
	{name: "integer_datetimes", def: "on", report: true, fixed: true,
		desc: "Shows whether datetimes are integer based."},
	{name: "IntervalStyle", def: "postgres", report: true, check: checkIntervalStyle,
		desc: "Sets the display format for interval values."},
	{name: "is_superuser", def: "off", report: true, fixed: true,
		desc: "Shows whether the current user is a superuser."},
	{name: "lc_collate", def: "C", fixed: true, desc: "Shows the collation order locale."},
	{name: "lc_ctype", def: "C", fixed: true, desc: "Shows the character classification and case conversion locale."},
	{name: "lc_messages", def: "C", desc: "Sets the language in which messages are displayed."},
	{name: "lc_monetary", def: "C", check: checkCLocale, desc: "Sets the locale for formatting monetary amounts."},
	{name: "lc_numeric", def: "C", check: checkCLocale, desc: "Sets the locale for formatting numbers."},
	{name: "lc_time", def: "C", check: checkCLocale, desc: "Sets the locale for formatting date and time values."},
	{name: "max_identifier_length", def: "63", fixed: true, desc: "Shows the maximum identifier length."},
	// pgjdbc's getImportedKeys and getExportedKeys read it from pg_settings.
	{name: "max_index_keys", def: "32", fixed: true, desc: "Shows the maximum number of index keys."},
	// Hummer keeps passwords as SCRAM-SHA-256 verifiers only; psql's
	// \password reads this to hash the password it sends.
	{name: "password_encryption", def: "scram-sha-256", fixed: true,
		desc: "Chooses the algorithm for encrypting passwords."},
	{name: "search_path", def: `"$user", public`, list: true, quote: true,
		desc: "Sets the schema search order for names that are not schema-qualified."},
	{name: "server_encoding", def: "UTF8", report: true, fixed: true,
		desc: "Shows the server (database) character set encoding."},
	{name: "server_version", report: true, fixed: true, desc: "Shows the server version."},
	{name: "server_version_num", fixed: true, desc: "Shows the server version as an integer."},
	{name: "session_authorization", report: true, check: checkSessionAuthorization,
		desc: "Sets the session user name."},
	{name: "standard_conforming_strings", def: "on", report: true, check: checkConformingStrings,
		desc: "Causes '...' strings to treat backslashes literally."},
	{name: "statement_timeout", def: "0", check: checkTimeout,
		desc: "Sets the maximum allowed duration of any statement."},
	{name: "TimeZone", def: "UTC", report: true, check: checkTimeZone,
		desc: "Sets the time zone for displaying and interpreting time stamps."},
	// Outside a transaction block these show the defaults of the next one
	// (the engine has no transaction blocks); SET checks the value and, as
	// PostgreSQL outside a block, keeps nothing.
	{name: "transaction_isolation", def: "read committed", check: checkIsolation,
		desc: "Sets the current transaction's isolation level."},
	{name: "transaction_read_only", def: "off", check: checkNotReadOnly,
		desc: "Sets the current transaction's read-only status."},

	// The engine's own.
	{name: "parallelism", def: "auto", check: checkParallelism,
		desc: "Sets the parallelism of a query's tasks: 'auto' or a number of slots."},
	{name: "min_parallelism", def: "0", check: checkIntRange(0, math.MaxInt32),
		desc: "Sets the least parallelism 'auto' picks (0: no bound)."},
	{name: "max_parallelism", def: "0", check: checkIntRange(0, math.MaxInt32),
		desc: "Sets the most parallelism 'auto' picks (0: no bound)."},
	{name: "network", desc: "Sets the network between a cluster's TaskManagers (empty: the default)."},
	{name: "network_task", def: exec.NetworkAuto, check: checkNetworkTask,
		desc: "Sets whether network channels run in tasks of their own: 'fused', 'own' or 'auto'."},
	// Empty: the engine's default (Config.CheckpointInterval).
	{name: "checkpoint_interval", check: checkCheckpointInterval,
		desc: "Sets the time between checkpoints of continuous jobs ('0' turns them off; empty: the engine's default)."},
	// Failed checkpoints in a row a continuous job tolerates; the next fails
	// it over (jobmanager.DefaultFailoverAfter).
	{name: "tolerable_failed_checkpoints", def: strconv.Itoa(jobmanager.DefaultFailoverAfter - 1), check: checkIntRange(0, math.MaxInt32),
		desc: "Sets the failed checkpoints in a row a continuous job tolerates before it fails over."},
	// The memory an aggregation's groups may take before it spills; empty:
	// the TaskManagers' default (a share of the process's limit).
	{name: "work_mem", check: checkWorkMem,
		desc: "Sets the memory an aggregation's groups may take before they spill (empty: the TaskManagers' default)."},
	// How long a stream join keeps a row not written since (processing
	// time; Flink's table.exec.state.ttl): '0' keeps every row. Past it,
	// answers over old keys are no longer exact.
	// Where a continuous job's operators keep their state: 'memory' or
	// 'disk' (pebble, bounded by the TaskManager's --state-memory; for now
	// a streaming GROUP BY's groups and a stream join's rows); empty: the
	// TaskManagers' default.
	{name: "state_backend", check: checkStateBackend,
		desc: "Sets where a continuous job keeps its operators' state: 'memory' or 'disk' (empty: the TaskManagers' default)."},
	{name: "state_ttl", def: "0", check: checkStateTTL,
		desc: "Sets how long a stream join keeps a row of either side not written since ('0': for ever); answers over keys idle longer are not exact."},
	// The table a job's windowed operators send their late rows to (rows
	// behind the watermark, which they drop and count); empty: none.
	// Checked when a job starts (late.go).
	{name: "late_rows_table",
		desc: "Sets the table the jobs started after it send their late rows to (rows behind the watermark; empty: none, they are only counted)."},
	// A query over a view waits until the view has caught up with its inputs
	// (views.go); off reads its rows at once.
	{name: "wait_for_views", def: "on", check: checkBool,
		desc: "Sets whether a query over a view waits until the view has caught up with its inputs."},
	// Off leaves the jobs started after it without their tasks' time
	// accounting and per-operator counts (exec.JobGraph.NoTaskMetrics), as
	// --task-metrics=false leaves every job of a TaskManager.
	{name: "task_metrics", def: "on", check: checkBool,
		desc: "Sets whether the jobs started after it account each task's busy, idle and backpressured time and each operator's rows and time."},
}

// paramName is how SHOW names a parameter's column: PostgreSQL's spelling, a
// custom parameter (myapp.tenant) as written.
func paramName(name string) string {
	if p, ok := params[strings.ToLower(name)]; ok {
		return p.name
	}
	return strings.ToLower(name)
}

// invalidValue is PostgreSQL's error for a value a parameter does not take.
func invalidValue(p *param, v, detail string) error {
	e := sql.Errorf(sql.ErrInvalidValue, 0, "invalid value for parameter \"%s\": \"%s\"", p.name, v)
	e.Detail = detail
	return e
}

func checkBool(_ *Session, p *param, v string) (string, error) {
	on, ok := parseBool(v)
	if !ok {
		return "", sql.Errorf(sql.ErrInvalidValue, 0, "parameter \"%s\" requires a Boolean value", p.name)
	}
	if on {
		return "on", nil
	}
	return "off", nil
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

// checkIntRange reads an integer parameter; a fraction is rounded to the
// nearest even integer, as PostgreSQL's rint.
func checkIntRange(lo, hi int64) func(*Session, *param, string) (string, error) {
	return func(_ *Session, p *param, v string) (string, error) {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return "", invalidValue(p, v, "")
		}
		n := int64(math.RoundToEven(f))
		if n < lo || n > hi {
			return "", sql.Errorf(sql.ErrInvalidValue, 0, "%d is outside the valid range for parameter \"%s\" (%d .. %d)", n, p.name, lo, hi)
		}
		return strconv.FormatInt(n, 10), nil
	}
}

// checkAppName keeps what PostgreSQL keeps of an application_name: its
// printable ASCII (anything else becomes '?'), up to 63 bytes.
func checkAppName(_ *Session, _ *param, v string) (string, error) {
	b := []byte(v)
	for i, c := range b {
		if c < 32 || c > 126 {
			b[i] = '?'
		}
	}
	if len(b) > 63 {
		b = b[:63]
	}
	return string(b), nil
}

// pgEncodings are PostgreSQL's client encodings by their names without
// punctuation, lower case (as PostgreSQL compares them).
var pgEncodings = map[string]string{
	"utf8": "UTF8", "unicode": "UTF8", "sqlascii": "SQL_ASCII",
	"latin1": "LATIN1", "iso88591": "LATIN1", "latin2": "LATIN2", "iso88592": "LATIN2",
	"latin9": "LATIN9", "iso885915": "LATIN9", "win1250": "WIN1250", "win1251": "WIN1251",
	"win1252": "WIN1252", "win": "WIN1251", "windows1252": "WIN1252", "koi8r": "KOI8R", "koi8": "KOI8R",
	"koi8u": "KOI8U", "eucjp": "EUC_JP", "euccn": "EUC_CN", "euckr": "EUC_KR", "euctw": "EUC_TW",
	"sjis": "SJIS", "shiftjis": "SJIS", "big5": "BIG5", "gbk": "GBK", "gb18030": "GB18030",
	"uhc": "UHC", "johab": "JOHAB", "muleinternal": "MULE_INTERNAL",
}

// checkEncoding accepts UTF8, the engine's only encoding, and SQL_ASCII (no
// conversion at all, which is what a UTF8 server gives such a client); any
// other encoding PostgreSQL knows fails as PostgreSQL fails for one it
// cannot convert to.
func checkEncoding(_ *Session, p *param, v string) (string, error) {
	key := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return -1
	}, v)
	enc, ok := pgEncodings[key]
	switch {
	case !ok:
		return "", invalidValue(p, v, "")
	case enc != "UTF8" && enc != "SQL_ASCII":
		return "", invalidValue(p, v, fmt.Sprintf("Conversion between %s and UTF8 is not supported.", enc))
	}
	return enc, nil
}

// checkDateStyle reads DateStyle's output style and field order as
// PostgreSQL does (ISO, SQL, Postgres, German; MDY, DMY, YMD, and their
// older names); the engine writes dates in the ISO style only, so another
// style is refused. A value that names no order keeps the current one.
func checkDateStyle(s *Session, p *param, v string) (string, error) {
	style, order := "", ""
	cur := strings.SplitN(s.vars["datestyle"], ", ", 2)
	for _, w := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		var st, ord string
		switch strings.ToLower(w) {
		case "iso":
			st = "ISO"
		case "sql":
			st = "SQL"
		case "postgres":
			st = "Postgres"
		case "german":
			st = "German"
		case "ymd":
			ord = "YMD"
		case "dmy", "euro", "european":
			ord = "DMY"
		case "mdy", "us", "noneuro", "noneuropean":
			ord = "MDY"
		case "default":
			st, ord = "ISO", "MDY"
		default:
			return "", invalidValue(p, v, fmt.Sprintf("Unrecognized key word: \"%s\".", w))
		}
		if st != "" && style != "" && st != style || ord != "" && order != "" && ord != order {
			return "", invalidValue(p, v, "Conflicting \"datestyle\" specifications.")
		}
		if st != "" {
			style = st
		}
		if ord != "" {
			order = ord
		}
	}
	if style == "" {
		style = "ISO"
	}
	if style != "ISO" {
		return "", invalidValue(p, v, "Hummer writes dates in the ISO style only.")
	}
	if order == "" {
		order = "MDY"
		if len(cur) == 2 {
			order = cur[1]
		}
	}
	return style + ", " + order, nil
}

// checkIntervalStyle: the engine writes intervals in the postgres style.
func checkIntervalStyle(_ *Session, p *param, v string) (string, error) {
	switch w := strings.ToLower(strings.TrimSpace(v)); w {
	case "postgres":
		return w, nil
	case "postgres_verbose", "sql_standard", "iso_8601":
		return "", invalidValue(p, v, "Hummer writes intervals in the postgres style only.")
	}
	return "", invalidValue(p, v, "")
}

// checkIsolation: every statement runs alone, which read committed (and
// read uncommitted, which PostgreSQL runs as read committed) describe; the
// stronger levels would promise what the engine does not do.
// checkMessageLevel takes PostgreSQL's levels for client_min_messages; the
// engine sends only NOTICE and WARNING, so the debug levels and LOG send
// what NOTICE does.
func checkMessageLevel(_ *Session, p *param, v string) (string, error) {
	switch w := strings.ToLower(strings.TrimSpace(v)); w {
	case "debug5", "debug4", "debug3", "debug2", "debug1", "debug", "log", "notice", "warning", "error":
		if w == "debug" {
			w = "debug2"
		}
		return w, nil
	}
	return "", invalidValue(p, v, "Available values: debug5, debug4, debug3, debug2, debug1, log, notice, warning, error.")
}

func checkIsolation(_ *Session, p *param, v string) (string, error) {
	switch w := strings.ToLower(strings.TrimSpace(v)); w {
	case "read committed", "read uncommitted":
		return w, nil
	case "repeatable read", "serializable":
		return "", sql.Errorf(sql.ErrUnsupported, 0, "transaction isolation level %s is not supported: the engine runs at read committed", w)
	}
	return "", invalidValue(p, v, "")
}

// checkNotReadOnly: the engine does not refuse writes in read-only
// transactions, so it does not take the setting that would ask it to.
func checkNotReadOnly(s *Session, p *param, v string) (string, error) {
	on, err := checkBool(s, p, v)
	if err == nil && on == "on" {
		return "", sql.Errorf(sql.ErrUnsupported, 0, "%s = on is not supported: the engine has no read-only transactions", p.name)
	}
	return on, err
}

// checkCLocale: the engine formats numbers, money and times as the C locale
// does.
func checkCLocale(_ *Session, p *param, v string) (string, error) {
	switch strings.TrimSpace(v) {
	case "", "C", "POSIX", "C.UTF-8", "C.utf8":
		return "C", nil
	}
	return "", invalidValue(p, v, "Hummer formats values as the C locale does.")
}

// checkSessionAuthorization: the session runs as the user who logged in.
func checkSessionAuthorization(s *Session, _ *param, v string) (string, error) {
	if !strings.EqualFold(v, s.vars["session_authorization"]) {
		return "", sql.Errorf(sql.ErrUnsupported, 0, "SET SESSION AUTHORIZATION to another user is not supported")
	}
	return s.vars["session_authorization"], nil
}

// checkConformingStrings: the parser always reads backslashes in strings
// literally.
func checkConformingStrings(s *Session, p *param, v string) (string, error) {
	on, err := checkBool(s, p, v)
	if err == nil && on == "off" {
		return "", sql.Errorf(sql.ErrUnsupported, 0, "standard_conforming_strings = off is not supported: backslashes in strings are always literal")
	}
	return on, err
}

// checkTimeout reads statement_timeout as PostgreSQL does (milliseconds, or a
// number with a unit; Go durations such as '1m30s' too) and shows it as
// PostgreSQL does: in the largest unit that holds it whole.
func checkTimeout(_ *Session, p *param, v string) (string, error) {
	d, err := parseTimeout(v)
	if err != nil {
		e := invalidValue(p, v, "")
		if strings.HasPrefix(err.Error(), "valid units") {
			e.(*sql.Error).Detail = "Valid units for this parameter are \"us\", \"ms\", \"s\", \"min\", \"h\", and \"d\"."
		}
		return "", e
	}
	ms := d.Round(time.Millisecond).Milliseconds()
	if ms > math.MaxInt32 {
		return "", sql.Errorf(sql.ErrInvalidValue, 0, "%d ms is outside the valid range for parameter \"%s\" (0 .. %d)", ms, p.name, math.MaxInt32)
	}
	return formatMillis(ms), nil
}

// formatMillis shows a time in milliseconds as PostgreSQL shows one.
func formatMillis(ms int64) string {
	if ms == 0 {
		return "0"
	}
	for _, u := range []struct {
		name string
		ms   int64
	}{{"d", 86400000}, {"h", 3600000}, {"min", 60000}, {"s", 1000}} {
		if ms%u.ms == 0 {
			return strconv.FormatInt(ms/u.ms, 10) + u.name
		}
	}
	return strconv.FormatInt(ms, 10) + "ms"
}

func checkParallelism(s *Session, _ *param, v string) (string, error) {
	if strings.EqualFold(strings.TrimSpace(v), "auto") {
		return "auto", nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if slots := s.e.slots(); err != nil || n < 1 || n > int64(slots) {
		return "", sql.Errorf(sql.ErrInvalidValue, 0,
			"parallelism must be 'auto' or an integer from 1 to %d (the number of slots), got %s", slots, v)
	}
	return strconv.FormatInt(n, 10), nil
}

func checkNetworkTask(_ *Session, _ *param, v string) (string, error) {
	mode := strings.ToLower(strings.TrimSpace(v))
	if mode != exec.NetworkFused && mode != exec.NetworkOwn && mode != exec.NetworkAuto {
		return "", sql.Errorf(sql.ErrInvalidValue, 0, "network_task must be 'fused', 'own' or 'auto', got %s", v)
	}
	return mode, nil
}

func checkCheckpointInterval(_ *Session, _ *param, v string) (string, error) {
	if _, err := parseInterval(v); err != nil {
		return "", sql.Errorf(sql.ErrInvalidValue, 0, "invalid value for parameter \"checkpoint_interval\": %q: %v", v, err)
	}
	return v, nil
}

func checkStateTTL(_ *Session, _ *param, v string) (string, error) {
	if _, err := parseTTL(v); err != nil {
		return "", sql.Errorf(sql.ErrInvalidValue, 0, "invalid value for parameter \"state_ttl\": %q: %v", v, err)
	}
	return v, nil
}

// parseTTL reads state_ttl: an interval as checkpoint_interval takes it, or
// PostgreSQL's spelling of one ('1h', '1 hour', '30 min', '90 s').
func parseTTL(v string) (time.Duration, error) {
	if d, err := parseInterval(v); err == nil {
		return d, nil
	}
	f := strings.Fields(strings.ToLower(v))
	if len(f) == 2 {
		n, err := strconv.ParseFloat(f[0], 64)
		unit := map[string]time.Duration{"ms": time.Millisecond, "millisecond": time.Millisecond, "milliseconds": time.Millisecond,
			"s": time.Second, "sec": time.Second, "second": time.Second, "seconds": time.Second,
			"min": time.Minute, "minute": time.Minute, "minutes": time.Minute,
			"h": time.Hour, "hour": time.Hour, "hours": time.Hour, "d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour}[f[1]]
		if err == nil && unit > 0 && n >= 0 {
			return time.Duration(n * float64(unit)), nil
		}
	}
	return 0, fmt.Errorf("want a duration such as '1h', '30 min' or '90s', or milliseconds")
}

func checkStateBackend(_ *Session, _ *param, v string) (string, error) {
	b := strings.ToLower(strings.TrimSpace(v))
	if b != "" && b != "memory" && b != "disk" {
		return "", sql.Errorf(sql.ErrInvalidValue, 0, "invalid value for parameter \"state_backend\": %q (want 'memory' or 'disk')", v)
	}
	return b, nil
}

func checkWorkMem(_ *Session, _ *param, v string) (string, error) {
	n, err := ParseSize(v, 1<<10)
	if err != nil || n < 64<<10 {
		return "", sql.Errorf(sql.ErrInvalidValue, 0, "invalid value for parameter \"work_mem\": %q (want a size of 64kB or more, such as '256MB')", v)
	}
	return v, nil
}
