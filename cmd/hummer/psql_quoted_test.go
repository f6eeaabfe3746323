package main

import (
	"net"
	"os/exec"
	"strings"
	"testing"
)

// psqlQuotedWant is what psql 15 printed against PostgreSQL 15 holding
// only the table "Users" and the view "Active" below (the owner, postgres
// there, is hummer here, and \dt's title centred on the narrower table): mixed-case names, which psql quotes in its
// patterns, and an unquoted pattern that psql folds.
var psqlQuotedWant = map[string]string{
	`\dt`: `        List of relations
 Schema | Name  | Type  | Owner  
--------+-------+-------+--------
 public | Users | table | hummer
(1 row)
`,
	`\d "Users"`: `               Table "public.Users"
 Column |  Type  | Collation | Nullable | Default 
--------+--------+-----------+----------+---------
 Id     | bigint |           | not null | 
 eMail  | text   |           | not null | 
 name   | text   |           |          | 
Indexes:
    "Users_pkey" PRIMARY KEY, btree ("Id")
`,
	`\d "Active"`: `               View "public.Active"
 Column |  Type  | Collation | Nullable | Default 
--------+--------+-----------+----------+---------
 Id     | bigint |           |          | 
 Name   | text   |           |          | 
`,
	`\d Users`: `Did not find any relation named "Users".
`,
}

// TestPsqlDescribeQuoted: psql's \dt and \d of a table and a view whose
// names keep their case, compared with what psql printed against
// PostgreSQL.
func TestPsqlDescribeQuoted(t *testing.T) {
	addr := startTestServer(t)
	psql(t, addr, `CREATE TABLE "Users" ("Id" BIGINT PRIMARY KEY, "eMail" TEXT NOT NULL, name TEXT);
CREATE VIEW "Active" AS SELECT "Id", name AS "Name" FROM "Users";`)
	host, port, _ := net.SplitHostPort(addr)
	for cmd, want := range psqlQuotedWant {
		out, _ := exec.Command("psql", "-X", "-h", host, "-p", port, "-U", "hummer", "-d", "hummer", "-c", cmd).CombinedOutput()
		if got := strings.TrimRight(string(out), "\n") + "\n"; got != want {
			t.Errorf("%s printed:\n%s\nPostgreSQL's psql printed:\n%s", cmd, got, want)
		}
	}
}
