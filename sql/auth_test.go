package sql

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func bindOne(t *testing.T, query string) (Statement, error) {
	t.Helper()
	stmts, err := Parse(query)
	if err != nil {
		return nil, err
	}
	return Bind(stmts[0], newTestCatalog(t), query)
}

func TestBindUsersAndGrants(t *testing.T) {
	for _, tc := range []struct{ query, want string }{
		{"CREATE USER u IDENTIFIED BY 'pw'", `&{Users:[{Name:u Password:pw HasPassword:true}] IfNotExists:false}`},
		{"CREATE USER IF NOT EXISTS 'Bob'@'%', carol IDENTIFIED BY 'x'", `&{Users:[{Name:Bob Password: HasPassword:false} {Name:carol Password:x HasPassword:true}] IfNotExists:true}`},
		{"ALTER USER u IDENTIFIED BY 'pw2'", `&{Users:[{Name:u Password:pw2 HasPassword:true}] IfExists:false}`},
		{"ALTER USER USER() IDENTIFIED BY 'mine'", `&{Users:[{Name: Password:mine HasPassword:true}] IfExists:false}`},
		{"DROP USER IF EXISTS u, V", `&{Names:[u v] IfExists:true}`},
		{`DROP ROLE "Mixed Case", r`, `&{Names:[Mixed Case r] IfExists:false}`},
		{`CREATE ROLE "Mixed Case" WITH LOGIN PASSWORD 'pw'`, `&{Users:[{Name:Mixed Case Password:pw HasPassword:true}] IfNotExists:false}`},
		{"GRANT SELECT ON t TO u", `&{Privileges:SELECT Object:t Users:[u]}`},
		{"GRANT SELECT, INSERT ON TABLE Docs TO u, v", `&{Privileges:SELECT, INSERT Object:docs Users:[u v]}`},
		{"GRANT ALL ON *.* TO u", `&{Privileges:SELECT, INSERT, CREATE, DROP Object:* Users:[u]}`},
		{"GRANT CREATE, DROP ON hummer.* TO u", `&{Privileges:CREATE, DROP Object:* Users:[u]}`},
		{"GRANT ALL PRIVILEGES ON * TO u", `&{Privileges:SELECT, INSERT, CREATE, DROP Object:* Users:[u]}`},
		{"REVOKE INSERT ON db.t FROM u", `&{Privileges:INSERT Object:t Users:[u]}`},
		{"SHOW GRANTS", `&{User:}`},
		{"SHOW GRANTS FOR Eve", `&{User:eve}`},
	} {
		st, err := bindOne(t, tc.query)
		if err != nil {
			t.Errorf("%s: %v", tc.query, err)
			continue
		}
		if got := fmt.Sprintf("%+v", st); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.query, got, tc.want)
		}
	}
	for _, q := range []string{
		"CREATE USER 'u'@'localhost' IDENTIFIED BY 'pw'",
		"CREATE ROLE r",
		"CREATE USER u IDENTIFIED WITH 'mysql_native_password' BY 'pw'",
		"CREATE USER u IDENTIFIED BY 'pw' ACCOUNT LOCK",
		"ALTER USER u ACCOUNT LOCK",
		"GRANT UPDATE ON t TO u",
		"GRANT SELECT (a) ON t TO u",
		"GRANT SELECT ON t TO u WITH GRANT OPTION",
	} {
		if _, err := bindOne(t, q); !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: %v, want unsupported", q, err)
		}
	}
}

func TestCatalogUsersPersist(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	cat, err := OpenCatalog(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.EnsureSuperuser("hummer", "SCRAM-SHA-256$v1"); err != nil {
		t.Fatal(err)
	}
	if err := cat.CreateUser(&User{Name: "ann", Verifier: "SCRAM-SHA-256$a"}, false); err != nil {
		t.Fatal(err)
	}
	if err := cat.CreateUser(&User{Name: "ann"}, false); !errors.Is(err, ErrDuplicateUser) {
		t.Fatalf("duplicate user: %v", err)
	}
	// Role names are exact, as PostgreSQL's: "Ann" is another role.
	if err := cat.CreateUser(&User{Name: "Ann", Verifier: "SCRAM-SHA-256$A"}, false); err != nil {
		t.Fatal(err)
	}
	if err := cat.CreateUser(&User{Name: "ann"}, true); err != nil {
		t.Fatalf("IF NOT EXISTS: %v", err)
	}
	if err := cat.Grant([]string{"ann"}, "t", PrivSelect|PrivInsert); err != nil {
		t.Fatal(err)
	}
	if err := cat.Grant([]string{"ann"}, AllTables, PrivCreate); err != nil {
		t.Fatal(err)
	}
	if err := cat.Grant([]string{"ann", "nobody"}, "t", PrivDrop); !errors.Is(err, ErrUnknownUser) {
		t.Fatalf("grant to a missing user: %v", err)
	}
	if u, _ := cat.User("ann"); u.Can(PrivDrop, "t") {
		t.Error("a failed GRANT granted to the users before the missing one")
	}
	if err := cat.Revoke([]string{"ann"}, "t", PrivInsert); err != nil {
		t.Fatal(err)
	}
	if err := cat.Create(testTable("t"), false); err != nil {
		t.Fatal(err)
	}

	again, err := OpenCatalog(dir)
	if err != nil {
		t.Fatal(err)
	}
	ann, ok := again.User("ann")
	if !ok || ann.Verifier != "SCRAM-SHA-256$a" || ann.Superuser {
		t.Fatalf("ann after reopen: %+v %v", ann, ok)
	}
	if u, ok := again.User("Ann"); !ok || u.Verifier != "SCRAM-SHA-256$A" || u.Can(PrivSelect, "t") {
		t.Errorf("Ann after reopen: %+v %v", u, ok)
	}
	if _, ok := again.User("ANN"); ok {
		t.Error("ANN found: role names are exact")
	}
	for _, c := range []struct {
		p     Privileges
		table string
		want  bool
	}{{PrivSelect, "t", true}, {PrivSelect, "T", false}, {PrivInsert, "t", false}, {PrivCreate, "anything", true},
		{PrivSelect, "other", false}, {PrivSelect | PrivCreate, "t", true}, {PrivDrop, "t", false}} {
		if got := ann.Can(c.p, c.table); got != c.want {
			t.Errorf("ann.Can(%s, %s) = %v", c.p, c.table, got)
		}
	}
	if root, _ := again.User("hummer"); !root.Superuser || !root.Can(PrivAll, "x") || root.Verifier != "SCRAM-SHA-256$v1" {
		t.Errorf("superuser: %+v", root)
	}
	// Restarting without a password keeps the stored one; with one, replaces it.
	again.EnsureSuperuser("hummer", "")
	if root, _ := again.User("hummer"); root.Verifier != "SCRAM-SHA-256$v1" {
		t.Errorf("verifier lost: %q", root.Verifier)
	}
	again.EnsureSuperuser("hummer", "SCRAM-SHA-256$v2")
	if root, _ := again.User("hummer"); root.Verifier != "SCRAM-SHA-256$v2" {
		t.Errorf("verifier not replaced: %q", root.Verifier)
	}

	// The file holds verifiers and grants by name, never a password.
	data, err := os.ReadFile(filepath.Join(dir, catalogFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"scram_verifier": "SCRAM-SHA-256$a"`, `"SELECT"`, `"superuser": true`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("catalog file lacks %s:\n%s", want, data)
		}
	}

	// Dropping a table drops the grants on it.
	if err := again.DropTables([]string{"t"}, false); err != nil {
		t.Fatal(err)
	}
	if ann, _ := again.User("ann"); ann.Can(PrivSelect, "t") || !ann.Can(PrivCreate, "t") {
		t.Errorf("after DROP TABLE t: %+v", ann.Grants)
	}
	if err := again.SetPasswords(map[string]string{"ann": "SCRAM-SHA-256$b"}, false); err != nil {
		t.Fatal(err)
	}
	if err := again.SetPasswords(map[string]string{"zed": "x"}, false); !errors.Is(err, ErrUnknownUser) {
		t.Errorf("ALTER missing user: %v", err)
	}
	if err := again.DropUsers([]string{"ann", "zed"}, false); !errors.Is(err, ErrUnknownUser) {
		t.Errorf("DROP missing user: %v", err)
	}
	if _, ok := again.User("ann"); !ok {
		t.Error("a failed DROP USER dropped a user")
	}
	if err := again.DropUsers([]string{"ann", "Ann", "zed"}, true); err != nil {
		t.Fatal(err)
	}
	if len(again.Users()) != 1 {
		t.Errorf("users: %v", again.Users())
	}
}

// TestGrantsExactNames: a grant on "Users" is on that table, not on users,
// as table names are exact.
func TestGrantsExactNames(t *testing.T) {
	cat, err := OpenCatalog("")
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.CreateUser(&User{Name: "bob"}, false); err != nil {
		t.Fatal(err)
	}
	if err := cat.Grant([]string{"bob"}, "Users", PrivSelect); err != nil {
		t.Fatal(err)
	}
	bob, _ := cat.User("bob")
	if !bob.Can(PrivSelect, "Users") || bob.Can(PrivSelect, "users") {
		t.Errorf("bob.Can(SELECT, Users) = %v, (SELECT, users) = %v, want true, false", bob.Can(PrivSelect, "Users"), bob.Can(PrivSelect, "users"))
	}
}
