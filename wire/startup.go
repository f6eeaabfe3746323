package wire

import (
	"errors"
	"net"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/hummer-db/hummer/session"
)

// startupSettings returns the run-time parameters a startup packet sets, in
// the order PostgreSQL applies them: the options parameter's first, then the
// packet's other parameters (by name: a packet's order is not kept). An
// options parameter PostgreSQL would not read is an error with a SQLSTATE.
func startupSettings(params map[string]string) ([]session.Param, error) {
	out, err := parseOptions(params["options"])
	if err != nil {
		return nil, err
	}
	var names []string
	for k := range params {
		switch {
		case k == "user", k == "database", k == "options", k == "replication", strings.HasPrefix(k, "_pq_."):
		default:
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, k := range names {
		out = append(out, session.Param{Name: k, Value: params[k]})
	}
	return out, nil
}

// parseOptions reads a startup packet's options as PostgreSQL does: words
// split at blanks, a backslash taking the next character as it is
// (pg_split_opts), each word or pair of words -c name=value, -cname=value or
// --name=value, a '-' in the name read as '_' (ParseLongOption).
func parseOptions(opts string) ([]session.Param, error) {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(opts); i++ {
		c := opts[i]
		switch {
		case c == '\\' && i+1 < len(opts):
			i++
			w.WriteByte(opts[i])
			inWord = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	var out []session.Param
	for i := 0; i < len(words); i++ {
		word := words[i]
		var setting string
		switch {
		case word == "-c":
			if i+1 == len(words) {
				return nil, protoErrorf(codeSyntaxError, "invalid command-line argument for server process: %s", word)
			}
			i++
			setting = words[i]
		case strings.HasPrefix(word, "-c"):
			setting = word[2:]
		case strings.HasPrefix(word, "--"):
			setting = word[2:]
		default:
			return nil, protoErrorf(codeSyntaxError, "invalid command-line argument for server process: %s", word)
		}
		name, value, ok := strings.Cut(setting, "=")
		if !ok {
			if strings.HasPrefix(word, "--") {
				return nil, protoErrorf(codeSyntaxError, "--%s requires a value", setting)
			}
			return nil, protoErrorf(codeSyntaxError, "-c %s requires a value", setting)
		}
		out = append(out, session.Param{Name: strings.ReplaceAll(name, "-", "_"), Value: value})
	}
	return out, nil
}

// startSession starts the session of a client that logged in as user (a
// superuser or not): the startup packet's settings applied, pg_backend_pid
// the process ID c sends. An error fails the connection with a FATAL.
func (c *conn) startSession(m *pgproto3.StartupMessage, user, database string, superuser bool) error {
	settings, err := startupSettings(m.Parameters)
	if err == nil {
		st := session.Startup{
			User: user, Database: database, Superuser: superuser, Settings: settings,
			PID: int64(c.pid), ServerVersion: c.srv.opts.ServerVersion,
		}
		if a, ok := c.raw.LocalAddr().(*net.TCPAddr); ok {
			st.ServerAddr, st.ServerPort = a.IP.String(), a.Port
		}
		c.sess, err = c.srv.backend.NewSession(st)
	}
	if err != nil {
		resp, _ := errorResponse(err)
		resp.Severity, resp.SeverityUnlocalized = "FATAL", "FATAL"
		c.send(resp)
		c.flush()
		return errors.New("session refused: " + err.Error())
	}
	return nil
}

// reportParameters sends a ParameterStatus for each reported parameter
// whose value the client has not been told, as PostgreSQL does before
// ReadyForQuery (and, at startup, for all of them).
func (c *conn) reportParameters() {
	if c.sess == nil {
		return
	}
	for _, p := range c.sess.ParameterStatus() {
		c.send(&pgproto3.ParameterStatus{Name: p.Name, Value: p.Value})
	}
}
