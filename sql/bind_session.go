package sql

// The session's side of binding: the session commands the dialect layer read
// (dialect_session.go), and the functions that answer from the session a
// statement runs in (version(), current_user, current_setting, ...).

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/hummer-db/hummer/exec/expr"
	"github.com/hummer-db/hummer/exec/types"
)

// SessionInfo is what binding a statement may ask of the session it runs in.
// The session functions become constants of its values when the statement is
// bound (a prepared statement is bound again at each run, so it sees the
// values of that run).
type SessionInfo struct {
	// User is the session's user: current_user, session_user, user and
	// current_role (the engine has no SET ROLE, so they are one).
	User string
	// Database is the database the client asked for: current_database(),
	// current_catalog.
	Database string
	// PID is pg_backend_pid(): the process ID BackendKeyData gave the client.
	PID int64
	// Version is version()'s text.
	Version string
	// ServerAddr and ServerPort are inet_server_addr() and inet_server_port();
	// empty and 0 (NULL, as PostgreSQL answers over a Unix socket) when unknown.
	ServerAddr string
	ServerPort int64
	// Now is the start of the current transaction: now(), current_timestamp,
	// localtimestamp, current_date (zero: the time the statement is bound).
	Now time.Time
	// Settings reads and checks the session's parameters: current_setting,
	// set_config, current_schema.
	Settings Settings
}

// Settings are a session's run-time parameters, as SHOW and SET see them.
type Settings interface {
	// Setting returns a parameter's value as SHOW shows it; an unknown name
	// is an ErrUnknownVariable error.
	Setting(name string) (string, error)
	// CheckSetting returns the value that SET name = value would give the
	// parameter, or the error SET would fail with; it changes nothing.
	CheckSetting(name, value string) (string, error)
}

// SetConfig is a set_config(name, value, is_local) call of a query: the
// session applies it when the query runs (binding has no side effects: a
// statement is also bound to be prepared).
type SetConfig struct {
	Name string
	// Value is nil to reset the parameter (a NULL value).
	Value *string
	Local bool
}

// BindSession is Bind for a statement that runs in a client's session: the
// session functions answer from sess. Bind (a nil sess) refuses them.
func BindSession(stmt ast.StmtNode, cat CatalogReader, query string, sess *SessionInfo, paramTypes []types.Type) (Statement, error) {
	return bindWith(stmt, cat, query, sess, paramTypes)
}

func (*Reset) statement()      {}
func (*Discard) statement()    {}
func (*Deallocate) statement() {}

// bindSessionCommand binds DO 0, the placeholder of a session command the
// dialect layer read: the command is the fact recorded at the statement's
// start. Without one, DO is MySQL's, which is not supported.
func (b *binder) bindSessionCommand(s *ast.DoStmt) (Statement, error) {
	// The statement's text may start with blanks or a comment before the
	// command's first word, where its fact is.
	var cmd *sessionCommand
	if !b.facts.empty() {
		for off, c := range b.facts.session {
			if off >= b.start && off < b.start+len(b.text) {
				cmd = c
				if b.used == nil {
					b.used = map[int]bool{}
				}
				b.used[off] = true
			}
		}
	}
	if cmd == nil {
		return nil, b.errorf(ErrUnsupported, nil, "%s is not supported", statementName(s))
	}
	switch cmd.verb {
	case "SET":
		return &Set{Name: cmd.name, Values: cmd.values, Local: cmd.local}, nil
	case "RESET":
		return &Reset{Name: cmd.name}, nil
	case "DISCARD":
		return &Discard{What: cmd.name}, nil
	case "DEALLOCATE":
		return &Deallocate{Name: cmd.name}, nil
	}
	return nil, b.errorf(ErrUnsupported, nil, "%s is not supported", statementName(s))
}

// sessionFuncs are the functions bindSessionFunc answers, with their number
// of arguments (-1: one or two).
var sessionFuncs = map[string]int{
	"version": 0, "current_database": 0, "current_user": 0, "session_user": 0, "user": 0,
	"current_role": 0, "current_schema": 0, "current_schemas": 1, "current_setting": -1,
	"set_config": 3, "pg_backend_pid": 0, "inet_server_addr": 0, "inet_server_port": 0,
}

// sessionWords are the SQL keywords PostgreSQL reads as session functions
// without parentheses (the parser reads them as column names); a column of
// that name in scope wins, which PostgreSQL, where they are reserved, never
// has to decide.
var sessionWords = map[string]string{
	"user": "user", "session_user": "session_user", "current_schema": "current_schema",
	"current_catalog": "current_database",
}

// quoted reports whether the column name n was written as a quoted
// identifier ("user"), which PostgreSQL reads as a name, never a keyword.
func (b *binder) quoted(n *ast.ColumnNameExpr) bool {
	off := n.OriginTextPosition()
	return off >= 0 && off < len(b.query) && b.query[off] == '"'
}

// bindSessionFunc binds a session function; ok is false for another name.
func (b *binder) bindSessionFunc(ctx *exprCtx, n ast.ExprNode, name string, argNodes []ast.ExprNode) (e *expr.Expr, ok bool, err error) {
	want, known := sessionFuncs[name]
	if !known {
		return nil, false, nil
	}
	if want >= 0 && len(argNodes) != want || want < 0 && (len(argNodes) < 1 || len(argNodes) > 2) {
		return nil, true, b.errorf(ErrUnknownFunction, n, "function %s() with %d arguments does not exist", name, len(argNodes))
	}
	if b.session == nil {
		return nil, true, b.errorf(ErrUnsupported, n, "%s() reads the client's session, which a view's query has not: it cannot be used in a view", name)
	}
	if name == "current_setting" && len(argNodes) == 1 {
		if e, ok, err := b.settingOfColumn(ctx, argNodes[0]); ok || err != nil {
			return e, true, err
		}
	}
	args := make([]types.Value, len(argNodes))
	for i, a := range argNodes {
		v, err := b.constArg(ctx, a, name)
		if err != nil {
			return nil, true, err
		}
		args[i] = v
	}
	v, err := b.sessionValue(name, args)
	if err != nil {
		return nil, true, err // unpositioned, as PostgreSQL's, found at run time
	}
	return expr.Literal(v), true, nil
}

// SettingLister is Settings that can name every parameter it has, as
// pg_settings lists them.
type SettingLister interface {
	SettingNames() []string
}

// settingOfColumn binds current_setting(x) of a name that is not a constant
// (psql's \dconfig reads current_setting(s.name) of pg_settings' rows) as
// a CASE over every parameter's value now, NULL for a name it does not know;
// ok is false when x is a constant, or the session cannot list its
// parameters.
func (b *binder) settingOfColumn(ctx *exprCtx, a ast.ExprNode) (*expr.Expr, bool, error) {
	lister, ok := b.session.Settings.(SettingLister)
	if !ok {
		return nil, false, nil
	}
	x, err := b.bindExpr(ctx, a)
	if err != nil || constant(x) {
		return nil, false, err
	}
	lower, err := b.call(a, "lower", x)
	if err != nil {
		return nil, true, err
	}
	var args []*expr.Expr
	for _, name := range lister.SettingNames() {
		v, err := b.session.Settings.Setting(name)
		if err != nil {
			continue
		}
		is, err := b.call(a, "=", lower, expr.Literal(types.StringValue(strings.ToLower(name))))
		if err != nil {
			return nil, true, err
		}
		args = append(args, is, expr.Literal(types.StringValue(v)))
	}
	e, err := b.call(a, "case", append(args, expr.Literal(types.NullValue(types.StringType)))...)
	return e, true, err
}

// constArg binds a session function's argument, which must be a constant.
func (b *binder) constArg(ctx *exprCtx, a ast.ExprNode, fn string) (types.Value, error) {
	e, err := b.bindExpr(ctx, a)
	if err != nil {
		return types.Value{}, err
	}
	if !constant(e) {
		return types.Value{}, b.errorf(ErrUnsupported, a, "the arguments of %s() must be constants", fn)
	}
	v, err := expr.EvalConst(e)
	if err != nil {
		return types.Value{}, b.errorf(ErrInvalidValue, a, "%s", err.Error())
	}
	return v, nil
}

func (b *binder) sessionValue(name string, args []types.Value) (types.Value, error) {
	s := b.session
	text := types.StringValue
	null := types.NullValue(types.StringType)
	switch name {
	case "version":
		return text(s.Version), nil
	case "current_database":
		return text(s.Database), nil
	case "current_user", "session_user", "user", "current_role":
		return text(s.User), nil
	case "pg_backend_pid":
		return types.IntValue(s.PID), nil
	case "inet_server_addr":
		if s.ServerAddr == "" {
			return null, nil
		}
		return text(s.ServerAddr), nil
	case "inet_server_port":
		if s.ServerPort == 0 {
			return types.NullValue(types.Int64Type), nil
		}
		return types.IntValue(s.ServerPort), nil
	case "current_schema", "current_schemas":
		path, err := s.Settings.Setting("search_path")
		if err != nil {
			return types.Value{}, err
		}
		schemas := searchPath(path, s.User)
		if name == "current_schema" {
			if len(schemas) == 0 {
				return null, nil
			}
			return text(schemas[0]), nil
		}
		implicit, ok := boolArg(args[0])
		if !ok {
			return null, nil
		}
		if implicit && !contains(schemas, "pg_catalog") {
			schemas = append([]string{"pg_catalog"}, schemas...)
		}
		// PostgreSQL returns a name[]; the engine has no array type, so the
		// array's text form stands for it: what a client reading the result
		// as text (pgcli, psql) sees from PostgreSQL too.
		return text(arrayText(schemas)), nil
	case "current_setting":
		if args[0].Null {
			return null, nil
		}
		missingOK := false
		if len(args) == 2 {
			missingOK, _ = boolArg(args[1])
		}
		// A set_config earlier in the statement has set it by now.
		for i := len(b.setConfigs) - 1; i >= 0; i-- {
			if sc := b.setConfigs[i]; strings.EqualFold(sc.Name, formatSetting(args[0])) && sc.Value != nil {
				if v, err := s.Settings.CheckSetting(sc.Name, *sc.Value); err == nil {
					return text(v), nil
				}
			}
		}
		v, err := s.Settings.Setting(formatSetting(args[0]))
		if err != nil {
			if missingOK && errors.Is(err, ErrUnknownVariable) {
				return null, nil
			}
			return types.Value{}, err
		}
		return text(v), nil
	case "set_config":
		if args[0].Null {
			return types.Value{}, Errorf(ErrInvalidValue, 0, "SET requires parameter name")
		}
		local, _ := boolArg(args[2])
		sc := SetConfig{Name: strings.ToLower(formatSetting(args[0])), Local: local}
		var v string
		var err error
		if args[1].Null {
			v, err = s.Settings.CheckSetting(sc.Name, ResetValue)
		} else {
			raw := formatSetting(args[1])
			sc.Value = &raw
			v, err = s.Settings.CheckSetting(sc.Name, raw)
		}
		if err != nil {
			return types.Value{}, err
		}
		b.setConfigs = append(b.setConfigs, sc)
		return text(v), nil
	}
	return types.Value{}, fmt.Errorf("sql: no session function %s", name)
}

// ResetValue, given to Settings.CheckSetting as the value, asks for the
// parameter's value after RESET (set_config(name, NULL, ...)).
const ResetValue = "\x00default"

func boolArg(v types.Value) (value, ok bool) {
	if v.Null {
		return false, false
	}
	switch v.Type.ID {
	case types.Bool:
		return v.Bool, true
	case types.Int64:
		return v.Int != 0, true
	case types.String:
		switch strings.ToLower(strings.TrimSpace(v.Str)) {
		case "t", "true", "on", "yes", "y", "1":
			return true, true
		case "f", "false", "off", "no", "n", "0":
			return false, true
		}
	}
	return false, false
}

// formatSetting is a constant argument as the text a parameter is set to.
func formatSetting(v types.Value) string {
	if v.Type.ID == types.String {
		return v.Str
	}
	return expr.FormatValue(v)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// knownSchemas are the schemas the engine has: its tables are in public, and
// PostgreSQL's system schemas are there for clients that name them.
var knownSchemas = map[string]bool{"public": true, "pg_catalog": true, "information_schema": true}

// searchPath returns the schemas of a search_path that exist, in order:
// "$user" stands for the schema named as the user, if there is one.
func searchPath(path, user string) []string {
	var out []string
	for _, item := range splitIdentifiers(path) {
		if item == "$user" {
			item = user
		}
		if knownSchemas[item] && !contains(out, item) {
			out = append(out, item)
		}
	}
	return out
}

// splitIdentifiers splits a list of identifiers as PostgreSQL's
// SplitIdentifierString does: separated by commas, each either quoted ("My
// Schema", a doubled quote inside read as one) or bare (lower-cased, blanks
// around it dropped).
func splitIdentifiers(s string) []string {
	var out []string
	for i := 0; i < len(s); {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
			i++
		}
		if i == len(s) {
			break
		}
		var item strings.Builder
		if s[i] == '"' {
			for i++; i < len(s); i++ {
				if s[i] == '"' {
					if i+1 < len(s) && s[i+1] == '"' {
						item.WriteByte('"')
						i++
						continue
					}
					i++
					break
				}
				item.WriteByte(s[i])
			}
			for i < len(s) && s[i] != ',' {
				i++
			}
		} else {
			j := strings.IndexByte(s[i:], ',')
			if j < 0 {
				j = len(s) - i
			}
			item.WriteString(strings.ToLower(strings.TrimSpace(s[i : i+j])))
			i += j
		}
		out = append(out, item.String())
		if i < len(s) && s[i] == ',' {
			i++
		}
	}
	return out
}

// arrayText writes a text array as PostgreSQL's array output does: {a,b},
// an element quoted where it holds a delimiter, a quote, a backslash or a
// blank, or is empty or NULL.
func arrayText(items []string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, it := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		if it == "" || strings.EqualFold(it, "null") || strings.ContainsAny(it, "{},\"\\ \t\n\r") {
			b.WriteByte('"')
			b.WriteString(strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(it))
			b.WriteByte('"')
			continue
		}
		b.WriteString(it)
	}
	b.WriteByte('}')
	return b.String()
}
