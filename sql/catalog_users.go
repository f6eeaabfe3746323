package sql

import (
	"encoding/json"
	"fmt"
	"maps"
	"sort"
	"strings"
)

// Privileges is a set of the privileges GRANT gives on a table.
type Privileges uint8

// The privileges. A table is read with Select, written with Insert, created
// with Create and dropped with Drop.
const (
	PrivSelect Privileges = 1 << iota
	PrivInsert
	PrivCreate
	PrivDrop

	PrivAll = PrivSelect | PrivInsert | PrivCreate | PrivDrop
)

// AllTables is the object name of a grant on every table (GRANT ... ON *).
const AllTables = "*"

var privNames = []struct {
	p    Privileges
	name string
}{{PrivSelect, "SELECT"}, {PrivInsert, "INSERT"}, {PrivCreate, "CREATE"}, {PrivDrop, "DROP"}}

// Names lists the privileges in p, upper case, in a fixed order.
func (p Privileges) Names() []string {
	var names []string
	for _, pn := range privNames {
		if p&pn.p != 0 {
			names = append(names, pn.name)
		}
	}
	return names
}

// String lists the privileges as GRANT spells them: "SELECT, INSERT".
func (p Privileges) String() string { return strings.Join(p.Names(), ", ") }

// MarshalJSON writes p as a list of names, so the catalog file reads plainly.
func (p Privileges) MarshalJSON() ([]byte, error) {
	names := p.Names()
	if names == nil {
		names = []string{}
	}
	return json.Marshal(names)
}

// UnmarshalJSON reads a list of names.
func (p *Privileges) UnmarshalJSON(data []byte) error {
	var names []string
	if err := json.Unmarshal(data, &names); err != nil {
		return err
	}
	*p = 0
next:
	for _, n := range names {
		for _, pn := range privNames {
			if strings.EqualFold(n, pn.name) {
				*p |= pn.p
				continue next
			}
		}
		return fmt.Errorf("unknown privilege %q", n)
	}
	return nil
}

// User is a login role. Names are case-insensitive and stored lower case.
type User struct {
	Name string `json:"name"`
	// Verifier is the password's SCRAM-SHA-256 verifier in PostgreSQL's text form
	// (SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>); "" when no
	// password is set, so that password logins fail. The password itself is
	// never stored.
	Verifier  string `json:"scram_verifier,omitempty"`
	Superuser bool   `json:"superuser,omitempty"`
	// Grants maps a table name, or AllTables, to the privileges granted on it.
	Grants map[string]Privileges `json:"grants,omitempty"`
	// OID is the user's object id (pg_roles.oid): 10 for the superuser
	// hummer, as PostgreSQL's bootstrap superuser has; others get one from
	// the catalog when created.
	OID int64 `json:"oid,omitempty"`
}

// Can reports whether u may exercise p on table: a superuser may do anything,
// others need p granted on the table or on every table.
func (u *User) Can(p Privileges, table string) bool {
	if u.Superuser {
		return true
	}
	return (u.Grants[table]|u.Grants[AllTables])&p == p
}

func (u *User) clone() *User {
	c := *u
	c.Grants = maps.Clone(u.Grants)
	return &c
}

// User returns a copy of the user called name (exactly: role names keep
// their case, as in PostgreSQL).
func (c *Catalog) User(name string) (*User, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	u, ok := c.users[name]
	if !ok {
		return nil, false
	}
	return u.clone(), true
}

// Users returns copies of every user, sorted by name.
func (c *Catalog) Users() []*User {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.usersLocked()
}

// usersLocked lists the users (the catalog's own values) by name. Lock should be held.
func (c *Catalog) usersLocked() []*User {
	us := make([]*User, 0, len(c.users))
	for _, u := range c.users {
		us = append(us, u)
	}
	sort.Slice(us, func(i, j int) bool { return us[i].Name < us[j].Name })
	return us
}

// updateUsersLocked applies change to a copy of the users and persists the result;
// on any error the catalog is left as it was. Lock should be held.
func (c *Catalog) updateUsersLocked(change func(users map[string]*User) error) error {
	next := make(map[string]*User, len(c.users))
	for n, u := range c.users {
		next[n] = u.clone()
	}
	if err := change(next); err != nil {
		return err
	}
	for _, u := range next {
		c.giveOIDLocked(&u.OID, u.Name)
	}
	old := c.users
	c.users = next
	if err := c.saveLocked(); err != nil {
		c.users = old
		return err
	}
	return nil
}

// CreateUser adds u, whose name is lower-cased. A user of that name already
// existing is an *Error of kind ErrDuplicateUser unless ifNotExists, in which
// case CreateUser does nothing.
func (c *Catalog) CreateUser(u *User, ifNotExists bool) error {
	return c.CreateUsers([]*User{u}, ifNotExists)
}

// CreateUsers adds every user, or none.
func (c *Catalog) CreateUsers(us []*User, ifNotExists bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.updateUsersLocked(func(users map[string]*User) error {
		for _, u := range us {
			n := u.Name
			if _, ok := users[n]; ok {
				if ifNotExists {
					continue
				}
				return Errorf(ErrDuplicateUser, 0, "role \"%s\" already exists", n)
			}
			nu := u.clone()
			nu.Name = n
			users[n] = nu
		}
		return nil
	})
}

// SetPasswords replaces the verifiers of the named users (name -> verifier).
// A missing user is an *Error of kind ErrUnknownUser unless ifExists.
func (c *Catalog) SetPasswords(verifiers map[string]string, ifExists bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.updateUsersLocked(func(users map[string]*User) error {
		for name, v := range verifiers {
			u, ok := users[name]
			if !ok {
				if ifExists {
					continue
				}
				return Errorf(ErrUnknownUser, 0, "role \"%s\" does not exist", name)
			}
			u.Verifier = v
		}
		return nil
	})
}

// DropUsers removes every named user, or none: a missing user is an *Error of
// kind ErrUnknownUser unless ifExists.
func (c *Catalog) DropUsers(names []string, ifExists bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.updateUsersLocked(func(users map[string]*User) error {
		for _, name := range names {
			n := name
			if _, ok := users[n]; !ok && !ifExists {
				return Errorf(ErrUnknownUser, 0, "role \"%s\" does not exist", n)
			}
			delete(users, n)
		}
		return nil
	})
}

// Grant adds privileges p on object (a table name or AllTables) to every named
// user, or to none if one does not exist (an *Error of kind ErrUnknownUser).
func (c *Catalog) Grant(names []string, object string, p Privileges) error {
	return c.changeGrants(names, object, func(old Privileges) Privileges { return old | p })
}

// Revoke removes privileges p on object from every named user. Revoking on
// AllTables removes only what was granted on AllTables, as in MySQL: grants on
// single tables stay.
func (c *Catalog) Revoke(names []string, object string, p Privileges) error {
	return c.changeGrants(names, object, func(old Privileges) Privileges { return old &^ p })
}

func (c *Catalog) changeGrants(names []string, object string, change func(Privileges) Privileges) error {
	// object is exact, as table names are (CatalogReader).
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.updateUsersLocked(func(users map[string]*User) error {
		for _, name := range names {
			u, ok := users[name]
			if !ok {
				return Errorf(ErrUnknownUser, 0, "role \"%s\" does not exist", name)
			}
			p := change(u.Grants[object])
			if p == 0 {
				delete(u.Grants, object)
				continue
			}
			if u.Grants == nil {
				u.Grants = map[string]Privileges{}
			}
			u.Grants[object] = p
		}
		return nil
	})
}

// EnsureSuperuser makes sure the superuser called name exists, creating it if
// needed, and sets its verifier when verifier is not empty (a bootstrap
// password given at start-up replaces the stored one).
func (c *Catalog) EnsureSuperuser(name, verifier string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if u, ok := c.users[name]; ok && u.Superuser && (verifier == "" || verifier == u.Verifier) {
		return nil
	}
	return c.updateUsersLocked(func(users map[string]*User) error {
		u, ok := users[name]
		if !ok {
			u = &User{Name: name}
			users[name] = u
		}
		u.Superuser = true
		if verifier != "" {
			u.Verifier = verifier
		}
		return nil
	})
}

// forgetGrantsLocked removes every grant on the named tables, which are being
// dropped: a table created later under the same name starts without them. It
// returns a function that puts them back. Lock should be held.
func (c *Catalog) forgetGrantsLocked(tables []string) (undo func()) {
	type grant struct {
		u     *User
		table string
		p     Privileges
	}
	var removed []grant
	for _, u := range c.users {
		for _, t := range tables {
			if p, ok := u.Grants[t]; ok {
				removed = append(removed, grant{u, t, p})
				delete(u.Grants, t)
			}
		}
	}
	return func() {
		for _, g := range removed {
			if g.u.Grants == nil {
				g.u.Grants = map[string]Privileges{}
			}
			g.u.Grants[g.table] = g.p
		}
	}
}
