// Command duckgroup runs the group-by benchmark's query (bench/cmd/wordcount,
// suite groupby) in an in-memory DuckDB under a memory limit and prints the
// number of groups and the sum of their sums, "groups sum". Like duckwc it is
// its own program, so each run is its own process (its own CPU seconds and
// peak RSS) and DuckDB's cgo stays out of the engine's build.
//
//	duckgroup [-threads N] [-memory-limit 1GiB] [-temp DIR] FILE
//	duckgroup -print FILE   (print the SQL instead of running it)
package main

import (
	"database/sql"
	"flag"
	"fmt"
	"os"
	"strings"

	_ "github.com/duckdb/duckdb-go/v2"
)

// Query is the group-by query in DuckDB's spelling; %s is the table expression
// that reads the CSV file of (k VARCHAR, v BIGINT) rows.
const Query = `SELECT COUNT(*), SUM(s) FROM (SELECT k, SUM(v) AS s FROM %s GROUP BY k) AS t`

func table(path string) string {
	return fmt.Sprintf("read_csv('%s', header = false, columns = {'k': 'VARCHAR', 'v': 'BIGINT'}, auto_detect = false)",
		strings.ReplaceAll(path, "'", "''"))
}

func main() {
	threads := flag.Int("threads", 2, "DuckDB worker threads (SET threads)")
	limit := flag.String("memory-limit", "", "SET memory_limit (empty: DuckDB's default, 80% of RAM)")
	temp := flag.String("temp", "", "SET temp_directory, where DuckDB spills")
	print := flag.Bool("print", false, "print the query for FILE and exit")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: duckgroup [-threads N] [-memory-limit SIZE] [-temp DIR] FILE")
		os.Exit(2)
	}
	if *print {
		fmt.Printf(Query+"\n", table(flag.Arg(0)))
		return
	}
	if err := run(*threads, *limit, *temp, flag.Arg(0)); err != nil {
		fmt.Fprintln(os.Stderr, "duckgroup:", err)
		os.Exit(1)
	}
}

func run(threads int, limit, temp, path string) error {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return err
	}
	defer db.Close()
	settings := []string{fmt.Sprintf("SET threads = %d", threads)}
	if limit != "" {
		settings = append(settings, fmt.Sprintf("SET memory_limit = '%s'", limit))
	}
	if temp != "" {
		settings = append(settings, fmt.Sprintf("SET temp_directory = '%s'", strings.ReplaceAll(temp, "'", "''")))
	}
	for _, s := range settings {
		if _, err := db.Exec(s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	var groups, sum int64
	if err := db.QueryRow(fmt.Sprintf(Query, table(path))).Scan(&groups, &sum); err != nil {
		return err
	}
	fmt.Println(groups, sum)
	return nil
}
