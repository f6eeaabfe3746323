package sql

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/auth"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// This file binds the statements about users and privileges, in TiDB's (MySQL's)
// syntax: CREATE USER u IDENTIFIED BY 'pw', ALTER USER, DROP USER, GRANT and
// REVOKE of SELECT, INSERT, CREATE and DROP on a table or on *, SHOW GRANTS.
// User names are exact, as PostgreSQL's role names: the dialect layer folds
// an unquoted name to lower case, "Mixed Case" keeps its case. They have no
// host part: 'u'@'%' and plain u are the same user, other hosts are refused.
// CREATE ROLE and DROP ROLE are CREATE USER and DROP USER (every role is a
// user who may log in).

// UserSpec is a user named by CREATE USER or ALTER USER, with its new password.
type UserSpec struct {
	Name string
	// Password is the cleartext password; the session stores only its SCRAM
	// verifier. HasPassword is false when the statement gave none.
	Password    string
	HasPassword bool
}

// CreateUser is CREATE USER [IF NOT EXISTS] u [IDENTIFIED BY 'pw'], ...
type CreateUser struct {
	Users       []UserSpec
	IfNotExists bool
}

// AlterUser is ALTER USER [IF EXISTS] u IDENTIFIED BY 'pw', ... (and
// ALTER USER USER() IDENTIFIED BY 'pw', whose UserSpec has an empty Name: the
// session's own user).
type AlterUser struct {
	Users    []UserSpec
	IfExists bool
}

// DropUser is DROP USER [IF EXISTS] u, ...
type DropUser struct {
	Names    []string
	IfExists bool
}

// Grant is GRANT privileges ON object TO users; Object is a lower-case table
// name or AllTables (ON *, ON *.*, ON db.*).
type Grant struct {
	Privileges Privileges
	Object     string
	Users      []string
}

// Revoke is REVOKE privileges ON object FROM users.
type Revoke struct {
	Privileges Privileges
	Object     string
	Users      []string
}

// ShowGrants is SHOW GRANTS [FOR u]; an empty User means the session's own.
type ShowGrants struct{ User string }

func (*CreateUser) statement() {}
func (*AlterUser) statement()  {}
func (*DropUser) statement()   {}
func (*Grant) statement()      {}
func (*Revoke) statement()     {}
func (*ShowGrants) statement() {}

// bindAuth binds the statements of this file; ok is false for any other.
func (b *binder) bindAuth(stmt ast.StmtNode) (st Statement, ok bool, err error) {
	switch s := stmt.(type) {
	case *ast.CreateUserStmt:
		st, err = b.bindCreateUser(s)
	case *ast.AlterUserStmt:
		st, err = b.bindAlterUser(s)
	case *ast.DropUserStmt:
		st, err = b.bindDropUser(s)
	case *ast.GrantStmt:
		st, err = b.bindGrant(s.Privs, s.ObjectType, s.Level, s.Users, s.WithGrant || len(s.AuthTokenOrTLSOptions) > 0, true)
	case *ast.RevokeStmt:
		st, err = b.bindGrant(s.Privs, s.ObjectType, s.Level, s.Users, false, false)
	case *ast.ShowStmt:
		if s.Tp != ast.ShowGrants {
			return nil, false, nil
		}
		st, err = b.bindShowGrants(s)
	default:
		return nil, false, nil
	}
	return st, true, err
}

// userName checks a user identity's host part and returns its name.
func (b *binder) userName(u *auth.UserIdentity) (string, error) {
	if u.CurrentUser {
		return "", nil
	}
	if u.Hostname != "" && u.Hostname != "%" {
		return "", b.errorf(ErrUnsupported, nil, "users with a host part ('%s'@'%s') are not supported: name the user alone", u.Username, u.Hostname)
	}
	if u.Username == "" {
		return "", b.errorf(ErrInvalidValue, nil, "a user needs a name")
	}
	return u.Username, nil
}

// userSpecs binds the users of CREATE USER and ALTER USER.
func (b *binder) userSpecs(specs []*ast.UserSpec) ([]UserSpec, error) {
	var out []UserSpec
	for _, sp := range specs {
		if sp.IsRole {
			return nil, b.errorf(ErrUnsupported, nil, "roles are not supported")
		}
		name, err := b.userName(sp.User)
		if err != nil {
			return nil, err
		}
		us := UserSpec{Name: name}
		if o := sp.AuthOpt; o != nil {
			switch {
			case o.AuthPlugin != "":
				return nil, b.errorf(ErrUnsupported, nil, "IDENTIFIED WITH is not supported: passwords are kept as SCRAM-SHA-256 verifiers; use IDENTIFIED BY 'password'")
			case o.ByHashString:
				return nil, b.errorf(ErrUnsupported, nil, "IDENTIFIED AS is not supported: use IDENTIFIED BY 'password'")
			case o.ByAuthString:
				us.Password, us.HasPassword = o.AuthString, true
			}
		}
		out = append(out, us)
	}
	return out, nil
}

// userOptions refuses the account options of CREATE USER and ALTER USER that
// the engine does not have (TLS requirements, resource limits, locking,
// comments, resource groups).
func (b *binder) userOptions(tls []*ast.AuthTokenOrTLSOption, res []*ast.ResourceOption, lock []*ast.PasswordOrLockOption,
	comment *ast.CommentOrAttributeOption, group *ast.ResourceGroupNameOption) error {
	if len(tls) > 0 || len(res) > 0 || len(lock) > 0 || comment != nil || group != nil {
		return b.errorf(ErrUnsupported, nil, "user options other than IDENTIFIED BY are not supported")
	}
	return nil
}

func (b *binder) bindCreateUser(s *ast.CreateUserStmt) (Statement, error) {
	if err := b.userOptions(s.AuthTokenOrTLSOptions, s.ResourceOptions, s.PasswordOrLockOptions, s.CommentOrAttributeOption, s.ResourceGroupNameOption); err != nil {
		return nil, err
	}
	users, err := b.userSpecs(s.Specs)
	if err != nil {
		return nil, err
	}
	return &CreateUser{Users: users, IfNotExists: s.IfNotExists}, nil
}

func (b *binder) bindAlterUser(s *ast.AlterUserStmt) (Statement, error) {
	if err := b.userOptions(s.AuthTokenOrTLSOptions, s.ResourceOptions, s.PasswordOrLockOptions, s.CommentOrAttributeOption, s.ResourceGroupNameOption); err != nil {
		return nil, err
	}
	if s.CurrentAuth != nil {
		// ALTER USER USER() IDENTIFIED BY 'pw': the session's own password.
		users, err := b.userSpecs([]*ast.UserSpec{{User: &auth.UserIdentity{CurrentUser: true}, AuthOpt: s.CurrentAuth}})
		if err != nil {
			return nil, err
		}
		return &AlterUser{Users: users}, nil
	}
	users, err := b.userSpecs(s.Specs)
	if err != nil {
		return nil, err
	}
	for _, u := range users {
		if !u.HasPassword {
			return nil, b.errorf(ErrUnsupported, nil, "ALTER USER changes passwords only: ALTER USER %s IDENTIFIED BY 'password'", u.Name)
		}
	}
	return &AlterUser{Users: users, IfExists: s.IfExists}, nil
}

func (b *binder) bindDropUser(s *ast.DropUserStmt) (Statement, error) {
	var names []string
	for _, u := range s.UserList {
		name, err := b.userName(u)
		if err != nil {
			return nil, err
		}
		if name == "" {
			return nil, b.errorf(ErrInvalidValue, nil, "DROP USER names the users to drop")
		}
		names = append(names, name)
	}
	return &DropUser{Names: names, IfExists: s.IfExists}, nil
}

// bindGrant binds GRANT (grant true) or REVOKE.
func (b *binder) bindGrant(privs []*ast.PrivElem, obj ast.ObjectTypeType, level *ast.GrantLevel, users []*ast.UserSpec,
	extra, grant bool) (Statement, error) {
	verb := "REVOKE"
	if grant {
		verb = "GRANT"
	}
	if extra {
		return nil, b.errorf(ErrUnsupported, nil, "GRANT ... WITH GRANT OPTION and REQUIRE are not supported")
	}
	if obj != ast.ObjectTypeNone && obj != ast.ObjectTypeTable {
		return nil, b.errorf(ErrUnsupported, nil, "%s applies to tables only", verb)
	}
	var p Privileges
	for _, pe := range privs {
		if len(pe.Cols) > 0 {
			return nil, b.errorf(ErrUnsupported, nil, "column privileges are not supported")
		}
		switch pe.Priv {
		case mysql.AllPriv:
			p |= PrivAll
		case mysql.SelectPriv:
			p |= PrivSelect
		case mysql.InsertPriv:
			p |= PrivInsert
		case mysql.CreatePriv:
			p |= PrivCreate
		case mysql.DropPriv:
			p |= PrivDrop
		default:
			name := mysql.Priv2Str[pe.Priv]
			if pe.Priv == mysql.ExtendedPriv {
				name = pe.Name
			}
			return nil, b.errorf(ErrUnsupported, nil, "privilege %s is not supported: Hummer grants SELECT, INSERT, CREATE, DROP and ALL", strings.ToUpper(name))
		}
	}
	object := AllTables
	switch level.Level {
	case ast.GrantLevelGlobal, ast.GrantLevelDB:
		// The engine has one database, so db.* is every table, as *.* is.
	case ast.GrantLevelTable:
		object = level.TableName
	default:
		return nil, b.errorf(ErrUnsupported, nil, "%s ON this object is not supported", verb)
	}
	var names []string
	for _, u := range users {
		if u.AuthOpt != nil {
			return nil, b.errorf(ErrUnsupported, nil, "%s ... IDENTIFIED BY is not supported: CREATE USER first", verb)
		}
		name, err := b.userName(u.User)
		if err != nil {
			return nil, err
		}
		if name == "" {
			return nil, b.errorf(ErrInvalidValue, nil, "%s names its users", verb)
		}
		names = append(names, name)
	}
	if grant {
		return &Grant{Privileges: p, Object: object, Users: names}, nil
	}
	return &Revoke{Privileges: p, Object: object, Users: names}, nil
}

func (b *binder) bindShowGrants(s *ast.ShowStmt) (Statement, error) {
	if s.User == nil {
		return &ShowGrants{}, nil
	}
	name, err := b.userName(s.User)
	if err != nil {
		return nil, err
	}
	return &ShowGrants{User: name}, nil
}
