package session

import (
	"runtime"

	"github.com/hummer-db/hummer/sql"
)

// DefaultServerVersion is the server_version of a session whose Startup
// names none. Clients parse its leading PostgreSQL version.
const DefaultServerVersion = "15.0 (Hummer)"

// Startup is what a client's startup packet asked of its session, once the
// client proved who it is, and what the server knows of the connection.
type Startup struct {
	User, Database string
	Superuser      bool
	// Settings are the run-time parameters the packet sets, in the order
	// PostgreSQL applies them: those of its options parameter (-c name=value,
	// --name=value), then its own name/value pairs (application_name,
	// TimeZone, ...). Names are as sent; values are raw text, as set_config
	// takes them.
	Settings []Param
	// PID is the process ID the client was given (BackendKeyData).
	PID int64
	// ServerVersion is server_version (DefaultServerVersion when empty).
	ServerVersion string
	// ServerAddr and ServerPort are the server's end of the connection; ""
	// and 0 over a Unix socket.
	ServerAddr string
	ServerPort int
}

// StartSession starts the session of a client: its user's, with the
// startup packet's settings applied. An unknown parameter (42704) or a value
// one does not take (22023) fails it, as PostgreSQL fails the connection;
// the values become what RESET returns to.
func (e *Engine) StartSession(st Startup) (*Session, error) {
	s := e.newSession(st)
	s.user = st.User
	for _, p := range st.Settings {
		key, v, err := s.checkText(p.Name, p.Value)
		if err != nil {
			return nil, err
		}
		s.assign(key, v, false)
		s.resets[key] = v
	}
	return s, nil
}

// checkText checks setting parameter name to the raw text v (a startup
// packet's, set_config's), returning its key and the value it would take.
func (s *Session) checkText(name, v string) (key, value string, err error) {
	key, p, err := s.settable(name, true)
	if err != nil {
		return "", "", err
	}
	if p.check != nil {
		if v, err = p.check(s, p, v); err != nil {
			return "", "", err
		}
	}
	return key, v, nil
}

// info is what binding a statement of this session may ask of it.
func (s *Session) info() *sql.SessionInfo {
	user := s.user
	if user == "" {
		user = Superuser // the engine's own sessions run as the superuser
	}
	db := s.start.Database
	if db == "" {
		db = user
	}
	return &sql.SessionInfo{
		User: user, Database: db, PID: s.start.PID, Version: versionText(s.vars["server_version"]),
		ServerAddr: s.start.ServerAddr, ServerPort: int64(s.start.ServerPort), Now: s.txStart, Settings: s,
	}
}

// versionText is version()'s answer: PostgreSQL's shape, which drivers
// (SQLAlchemy, pgjdbc) parse for the version after "PostgreSQL ".
func versionText(serverVersion string) string {
	platform := runtime.GOARCH + "-unknown-" + runtime.GOOS
	switch runtime.GOARCH {
	case "amd64":
		platform = "x86_64-pc-" + runtime.GOOS + "-gnu"
	case "arm64":
		platform = "aarch64-unknown-" + runtime.GOOS + "-gnu"
	}
	return "PostgreSQL " + serverVersion + " on " + platform + ", compiled by " + runtime.Version() + ", 64-bit"
}

// setConfigs applies a query's set_config calls. is_local's last to the end
// of the transaction block, which outside one is the statement's: nothing.
func (s *Session) setConfigs(scs []sql.SetConfig) error {
	for _, sc := range scs {
		var key, v string
		if sc.Value == nil {
			k, p, err := s.settable(sc.Name, false)
			if err != nil {
				return err
			}
			key, v = k, s.resetValue(k, p)
		} else {
			k, value, err := s.checkText(sc.Name, *sc.Value)
			if err != nil {
				return err
			}
			key, v = k, value
		}
		s.assign(key, v, sc.Local)
	}
	return nil
}
