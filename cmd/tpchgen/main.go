// Command tpchgen writes TPC-H's eight tables as CSV files (connectors/tpch), for
// the TPC-H benchmark in bench/ and for loading the same data into PostgreSQL
// when the expected answers of testdata/slt/tpch.slt are made.
//
//	go run ./cmd/tpchgen -sf 0.01 -out /tmp/tpch
//
// With -ddl it prints, instead, the CREATE TABLE statements of the tables for
// PostgreSQL, reading the files in -out.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/hummer-db/hummer/connectors/tpch"
)

func main() {
	sf := flag.Float64("sf", 0.01, "scale factor: a whole number, or below 1 (0.01 is about 10 MB)")
	out := flag.String("out", "", "directory to write the CSV files into (created if missing)")
	ddl := flag.Bool("ddl", false, "print PostgreSQL statements that create the tables and load them from -out")
	flag.Parse()
	if *out == "" {
		log.Fatal("tpchgen: -out is required")
	}
	dir, err := filepath.Abs(*out)
	if err != nil {
		log.Fatal(err)
	}
	if *ddl {
		for _, t := range tpch.Tables {
			cols := make([]string, len(t.Columns))
			for i, c := range t.Columns {
				cols[i] = c.Name + " " + c.Type
			}
			fmt.Printf("DROP TABLE IF EXISTS %s;\nCREATE TABLE %s (%s);\n\\copy %s FROM '%s' WITH (FORMAT csv, HEADER true)\n",
				t.Name, t.Name, strings.Join(cols, ", "), t.Name, filepath.Join(dir, tpch.File(t.Name)))
		}
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		log.Fatal(err)
	}
	if err := tpch.Write(dir, *sf); err != nil {
		log.Fatal(err)
	}
}
