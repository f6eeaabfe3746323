package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestJDBCMetaData: pgjdbc's DatabaseMetaData as DBeaver and BI tools call
// it (getSchemas, getCatalogs, getTableTypes, getTables, getColumns,
// getPrimaryKeys, getIndexInfo, getImportedKeys, getExportedKeys,
// getTypeInfo, the product's name and version) and the ResultSetMetaData
// of a query, through testdata/clients/Meta.java, in both protocols, against
// testdata/clients/meta.pg.out: what Meta.java prints against PostgreSQL
// 15.18 (the database's name, which differs, printed as DB, the version as
// its major, getTypeInfo kept to the types Hummer has; Meta.java
// normalises them). When the PostgreSQL oracle is reachable
// (HUMMER_JDBC_ORACLE, a JDBC URL; by default the one on 127.0.0.1:5433,
// database h_jdbc), Meta.java runs against it too, to check that the golden
// file is what PostgreSQL prints.
func TestJDBCMetaData(t *testing.T) {
	jar := "/usr/share/java/postgresql.jar"
	if _, err := os.Stat(jar); err != nil {
		t.Skipf("%s: %v (install libpostgresql-jdbc-java to run this test)", jar, err)
	}
	golden, err := os.ReadFile("testdata/clients/meta.pg.out")
	if err != nil {
		t.Fatal(err)
	}
	// The extended protocol (pgjdbc's default) and the simple one.
	for _, mode := range []string{"", "?preferQueryMode=simple"} {
		out := clientScript(t, []string{"java", "-version"}, func(addr string) *exec.Cmd {
			return exec.Command("java", "-cp", jar, "Meta.java", "jdbc:postgresql://"+addr+"/hummer"+mode, "hummer")
		})
		diffSections(t, "Hummer"+mode, out, string(golden))
	}

	oracle := os.Getenv("HUMMER_JDBC_ORACLE")
	if oracle == "" {
		oracle = "jdbc:postgresql://127.0.0.1:5433/h_jdbc"
	}
	host := strings.TrimPrefix(oracle, "jdbc:postgresql://")
	host, _, _ = strings.Cut(host, "/")
	c, err := net.DialTimeout("tcp", host, time.Second)
	if err != nil {
		t.Logf("PostgreSQL oracle %s not reachable (%v): checked against the golden file only", oracle, err)
		return
	}
	c.Close()
	cmd := exec.Command("java", "-cp", jar, "Meta.java", oracle, "postgres")
	cmd.Dir = "testdata/clients"
	pg, err := cmd.CombinedOutput()
	if err != nil {
		t.Logf("PostgreSQL oracle %s: %v\n%s", oracle, err, pg)
		return
	}
	diffSections(t, "PostgreSQL (the golden file is stale)", string(pg), string(golden))
}

// diffSections reports each section (from one "== name" line to the next)
// of got that differs from want's.
func diffSections(t *testing.T, who, got, want string) {
	t.Helper()
	g, w := sections(got), sections(want)
	for _, name := range w.names {
		if g.text[name] != w.text[name] {
			t.Errorf("%s: %s:\n%s\nwant:\n%s", who, name, g.text[name], w.text[name])
		}
	}
	for _, name := range g.names {
		if _, ok := w.text[name]; !ok {
			t.Errorf("%s: unexpected section %s:\n%s", who, name, g.text[name])
		}
	}
}

type outSections struct {
	names []string
	text  map[string]string
}

func sections(out string) outSections {
	s := outSections{text: map[string]string{}}
	name := ""
	for _, line := range strings.SplitAfter(out, "\n") {
		if strings.HasPrefix(line, "== ") {
			name = strings.TrimSpace(line)
			s.names = append(s.names, name)
		}
		s.text[name] += line
	}
	return s
}

// TestRowDescriptionOrigins: in both protocols the RowDescription names the
// table (its pg_class oid) and the column number of each column a query
// reads as it is, through a view too, and none for a computed one, as
// PostgreSQL's does.
func TestRowDescriptionOrigins(t *testing.T) {
	addr := startTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn := connectPgx(t, ctx, addr)
	defer conn.Close(ctx)
	for _, q := range []string{
		"CREATE TABLE ot (id BIGINT PRIMARY KEY, name TEXT)",
		"CREATE VIEW ov AS SELECT name, id FROM ot",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	oid := func(name string) uint32 {
		var o uint32
		if err := conn.QueryRow(ctx, "SELECT oid FROM pg_class WHERE relname = $1", name).Scan(&o); err != nil {
			t.Fatal(err)
		}
		return o
	}
	ot, ov := oid("ot"), oid("ov")
	type origin struct {
		table uint32
		col   uint16
	}
	want := []origin{{ot, 2}, {0, 0}, {ot, 1}, {ov, 1}}
	q := "SELECT ot.name, ot.id + 1, ot.id, ov.name FROM ot JOIN ov ON ov.id = ot.id ORDER BY 1"
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeDescribeExec} {
		rows, err := conn.Query(ctx, q, mode)
		if err != nil {
			t.Fatal(err)
		}
		fds := rows.FieldDescriptions()
		rows.Close()
		if len(fds) != len(want) {
			t.Fatalf("mode %v: %d fields", mode, len(fds))
		}
		for i, fd := range fds {
			if got := (origin{fd.TableOID, fd.TableAttributeNumber}); got != want[i] {
				t.Errorf("mode %v: column %d (%s): origin %v, want %v", mode, i, fd.Name, got, want[i])
			}
		}
	}
}
