package session

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hummer-db/hummer/exec/types"
	"github.com/hummer-db/hummer/sql"
	"github.com/hummer-db/hummer/wire/scram"
)

// This file is users and privileges: who a session acts for, the privilege
// check every statement passes before it is planned, and the statements that
// manage users (CREATE/ALTER/DROP USER, GRANT, REVOKE, SHOW GRANTS).
//
// A session of a client runs as the user it logged in as (NewUserSession); a
// session the engine opens for itself (NewSession: the CLI, --init, views
// restarting) runs with every privilege.

// Superuser is the name of the bootstrap superuser, who holds every privilege
// and whose password comes from the command line (BootstrapSuperuser).
const Superuser = "hummer"

// NewUserSession starts the session of a client logged in as user: its
// statements are checked against the privileges the catalog gives user.
func (e *Engine) NewUserSession(user string) *Session {
	su := false
	if u, ok := e.catalog.User(user); ok {
		su = u.Superuser
	}
	s, _ := e.StartSession(Startup{User: user, Superuser: su}) // no settings: cannot fail
	return s
}

// User returns a copy of the catalog's user called name (any case).
func (e *Engine) User(name string) (*sql.User, bool) {
	return e.catalog.User(name)
}

// BootstrapSuperuser creates the superuser Superuser if the catalog lacks it and,
// when password is not empty, sets its password (kept as a SCRAM verifier).
// It reports whether the superuser has a password afterwards.
func (e *Engine) BootstrapSuperuser(password string) (hasPassword bool, err error) {
	verifier := ""
	if password != "" {
		// A stored verifier that already matches is kept: no catalog write, and
		// the salt of a password does not change at every restart.
		if u, ok := e.catalog.User(Superuser); ok && checkVerifier(u.Verifier, password) {
			verifier = u.Verifier
		} else if verifier, err = newVerifier(password); err != nil {
			return false, err
		}
	}
	if err := e.catalog.EnsureSuperuser(Superuser, verifier); err != nil {
		return false, err
	}
	u, _ := e.catalog.User(Superuser)
	return u.Verifier != "", nil
}

// newVerifier is the SCRAM-SHA-256 verifier of password; a password that is
// a verifier already (what psql's \password and the drivers send, hashed on
// the client) is kept as it is, as PostgreSQL does.
func newVerifier(password string) (string, error) {
	if strings.HasPrefix(password, "SCRAM-SHA-256$") {
		if v, err := scram.ParseVerifier(password); err == nil {
			return v.String(), nil
		}
	}
	v, err := scram.NewVerifier(password)
	if err != nil {
		return "", err
	}
	return v.String(), nil
}

func checkVerifier(text, password string) bool {
	v, err := scram.ParseVerifier(text)
	return err == nil && v.CheckPassword(password)
}

// runBound checks that the session's user may run stmt, runs it (execBound)
// under the session's statement_timeout, and makes a user who created a table
// or view its owner. Every statement a client sends comes through here.
func (s *Session) runBound(ctx context.Context, stmt sql.Statement, text string) (*Result, error) {
	user, err := s.authorize(stmt)
	if err != nil {
		return nil, err
	}
	switch st := stmt.(type) {
	case *sql.CreateUser, *sql.AlterUser, *sql.DropUser, *sql.Grant, *sql.Revoke, *sql.ShowGrants:
		return s.runAuth(st)
	}
	created := s.createdName(stmt)

	timeout := s.statementTimeout()
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	res, err := s.execBound(ctx, stmt, text)
	if err != nil {
		return nil, err
	}
	if user != nil && !user.Superuser && created != "" {
		// As in PostgreSQL, the creator owns what it created: it may read,
		// write and drop it without a further GRANT.
		if err := s.e.catalog.Grant([]string{user.Name}, created, sql.PrivSelect|sql.PrivInsert|sql.PrivDrop); err != nil {
			s.e.cfg.Log.Warn("owner privileges not granted", "user", user.Name, "table", created, "err", err)
		}
	}
	if timeout > 0 && res.Rows != nil {
		res.Rows = &deadlineRows{Rows: res.Rows, deadline: deadline}
	}
	return res, nil
}

// createdName is the name of the table or view stmt would create if no
// relation of that name exists yet, else "".
func (s *Session) createdName(stmt sql.Statement) string {
	var name string
	switch st := stmt.(type) {
	case *sql.CreateTable:
		name = st.Table.Name
	case *sql.CreateView:
		name = st.View.Name
	default:
		return ""
	}
	if _, exists := s.e.catalog.Table(name); exists {
		return ""
	}
	return strings.ToLower(name)
}

// authorize checks the privileges stmt needs (42501 insufficient_privilege
// when one lacks) and returns the session's user, nil for the engine's own
// sessions, which may do anything.
func (s *Session) authorize(stmt sql.Statement) (*sql.User, error) {
	if s.user == "" {
		return nil, nil
	}
	u, ok := s.e.catalog.User(s.user)
	if !ok {
		return nil, sql.Errorf(sql.ErrInsufficientPrivilege, 0, "role \"%s\" does not exist any more", s.user)
	}
	if u.Superuser {
		return u, nil
	}
	need := func(p sql.Privileges, table string) error {
		if u.Can(p, table) {
			return nil
		}
		if p == sql.PrivCreate {
			return sql.Errorf(sql.ErrInsufficientPrivilege, 0, "permission denied to create \"%s\": CREATE privilege required", table)
		}
		return sql.Errorf(sql.ErrInsufficientPrivilege, 0, "permission denied for table %s", table)
	}
	reads := func(q *sql.Query) error {
		for _, t := range tablesRead(q.Plan, nil) {
			if err := need(sql.PrivSelect, t); err != nil {
				return err
			}
		}
		return nil
	}
	superuserOnly := func(what string) error {
		return sql.Errorf(sql.ErrInsufficientPrivilege, 0, "permission denied: only a superuser may %s", what)
	}
	var err error
	switch st := stmt.(type) {
	case *sql.Query:
		err = reads(st)
	case *sql.RecursiveQuery:
		for _, r := range st.Recursions {
			if err = reads(&sql.Query{Plan: r.Base}); err == nil {
				err = reads(&sql.Query{Plan: r.Step})
			}
			if err != nil {
				break
			}
		}
		if err == nil {
			err = reads(st.Main)
		}
	case *sql.Explain:
		err = reads(st.Query)
	case *sql.Insert:
		if err = need(sql.PrivInsert, st.Table.Name); err == nil {
			err = reads(st.Query)
		}
	case *sql.CreateTable:
		if err = need(sql.PrivCreate, st.Table.Name); err == nil && st.Query != nil {
			err = reads(st.Query)
		}
	case *sql.Update: // writing a table takes its INSERT privilege
		if err = need(sql.PrivInsert, st.Table.Name); err == nil {
			err = reads(st.Query)
		}
	case *sql.Delete:
		if err = need(sql.PrivInsert, st.Table.Name); err == nil && st.Query != nil {
			err = reads(st.Query)
		}
	case *sql.Truncate:
		err = need(sql.PrivInsert, st.Table.Name)
	case *sql.CreateView:
		if err = need(sql.PrivCreate, st.View.Name); err == nil {
			err = reads(st.Query)
		}
	case *sql.DropTable:
		for _, n := range st.Names {
			if err = need(sql.PrivDrop, n); err != nil {
				break
			}
		}
	case *sql.DropView:
		for _, n := range st.Names {
			if err = need(sql.PrivDrop, n); err != nil {
				break
			}
		}
	case *sql.Kill:
		err = superuserOnly("KILL a job")
	case *sql.CreateUser:
		err = superuserOnly("create users")
	case *sql.DropUser:
		err = superuserOnly("drop users")
	case *sql.Grant:
		err = superuserOnly("GRANT")
	case *sql.Revoke:
		err = superuserOnly("REVOKE")
	case *sql.AlterUser:
		// Anyone may change their own password.
		for _, us := range st.Users {
			if us.Name != "" && us.Name != u.Name {
				err = superuserOnly("change another user's password")
				break
			}
		}
	case *sql.ShowGrants:
		if st.User != "" && st.User != u.Name {
			err = superuserOnly("show another user's grants")
		}
	}
	return u, err
}

// tablesRead appends the names of the tables (and views) plan p reads.
func tablesRead(p sql.Plan, names []string) []string {
	if scan, ok := p.(*sql.Scan); ok {
		names = append(names, scan.Table.Name)
	}
	for _, in := range p.Inputs() {
		names = tablesRead(in, names)
	}
	return names
}

// runAuth runs the statements about users and privileges; authorize has
// checked the session may.
func (s *Session) runAuth(stmt sql.Statement) (*Result, error) {
	cat := s.e.catalog
	switch st := stmt.(type) {
	case *sql.CreateUser:
		var users []*sql.User
		for _, us := range st.Users {
			u := &sql.User{Name: us.Name}
			if us.Password != "" { // '' means no password, as in PostgreSQL
				v, err := newVerifier(us.Password)
				if err != nil {
					return nil, err
				}
				u.Verifier = v
			}
			users = append(users, u)
		}
		if err := cat.CreateUsers(users, st.IfNotExists); err != nil {
			return nil, err
		}
		return &Result{Tag: "CREATE ROLE"}, nil
	case *sql.AlterUser:
		verifiers := map[string]string{}
		for _, us := range st.Users {
			name := us.Name
			if name == "" {
				name = s.user
				if name == "" {
					name = Superuser
				}
			}
			v := ""
			if us.Password != "" {
				var err error
				if v, err = newVerifier(us.Password); err != nil {
					return nil, err
				}
			}
			verifiers[name] = v
		}
		if err := cat.SetPasswords(verifiers, st.IfExists); err != nil {
			return nil, err
		}
		return &Result{Tag: "ALTER ROLE"}, nil
	case *sql.DropUser:
		for _, n := range st.Names {
			if n == Superuser || n == s.user {
				return nil, sql.Errorf(sql.ErrInvalidValue, 0, "user \"%s\" cannot be dropped: it is the bootstrap superuser or the current user", n)
			}
		}
		if err := cat.DropUsers(st.Names, st.IfExists); err != nil {
			return nil, err
		}
		return &Result{Tag: "DROP ROLE"}, nil
	case *sql.Grant:
		if err := cat.Grant(st.Users, st.Object, st.Privileges); err != nil {
			return nil, err
		}
		return &Result{Tag: "GRANT"}, nil
	case *sql.Revoke:
		if err := cat.Revoke(st.Users, st.Object, st.Privileges); err != nil {
			return nil, err
		}
		return &Result{Tag: "REVOKE"}, nil
	case *sql.ShowGrants:
		return s.showGrants(st.User)
	}
	return nil, fmt.Errorf("session: %T is not a user statement", stmt)
}

// showGrantsSchema is SHOW GRANTS's one column.
var showGrantsSchema = types.Schema{{Name: "grants", Type: types.StringType}}

// showGrants lists a user's privileges as the GRANT statements that give them.
func (s *Session) showGrants(name string) (*Result, error) {
	if name == "" {
		name = s.user
		if name == "" {
			name = Superuser
		}
	}
	u, ok := s.e.catalog.User(name)
	if !ok {
		return nil, sql.Errorf(sql.ErrUnknownUser, 0, "role \"%s\" does not exist", name)
	}
	var rows [][]types.Value
	if u.Superuser {
		rows = append(rows, []types.Value{types.StringValue("GRANT ALL ON *.* TO " + u.Name + " WITH GRANT OPTION")})
	}
	objects := make([]string, 0, len(u.Grants))
	for o := range u.Grants {
		objects = append(objects, o)
	}
	slices.Sort(objects)
	for _, o := range objects {
		on := o
		if o == sql.AllTables {
			on = "*.*"
		}
		rows = append(rows, []types.Value{types.StringValue(fmt.Sprintf("GRANT %s ON %s TO %s", u.Grants[o], on, u.Name))})
	}
	return s.valuesResult("SHOW", showGrantsSchema, rows)
}
