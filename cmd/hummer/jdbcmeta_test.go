package main

import (
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestJDBCMetaData: pgjdbc's DatabaseMetaData as DBeaver and BI tools call
// it (getSchemas, getCatalogs, getTableTypes, getTables, getColumns,
// getPrimaryKeys, getIndexInfo, getImportedKeys, getExportedKeys,
// getTypeInfo, the product's name and version) and the ResultSetMetaData
// of a query, through testdata/clients/Meta.java, against
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
	out := clientScript(t, []string{"java", "-version"}, func(addr string) *exec.Cmd {
		return exec.Command("java", "-cp", jar, "Meta.java", "jdbc:postgresql://"+addr+"/hummer", "hummer")
	})
	diffSections(t, "Hummer", out, string(golden))

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
