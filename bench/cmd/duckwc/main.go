// Command duckwc runs the benchmark's WordCount query in an in-memory DuckDB and
// prints "word count" lines. It is a separate program, and this a separate module, so
// that DuckDB's cgo build stays out of the engine's and each run is its own process
// (its own CPU seconds and peak RSS).
//
//	duckwc [-threads N] FILE
//	duckwc -print FILE   (print the SQL instead of running it)
//	duckwc -version
package main

import (
	"bufio"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	_ "github.com/duckdb/duckdb-go/v2"
)

// Query is the WordCount query in DuckDB's spelling; %s is the table expression that
// reads the file as one VARCHAR column of lines.
const Query = `SELECT word, COUNT(*) AS n
FROM (SELECT unnest(string_split(lower(line), ' ')) AS word FROM %s) AS t
WHERE word <> '' GROUP BY word`

// lines reads a text file as one row per line. read_csv with a delimiter that never
// occurs (\x01), no quote or escape character and no sniffing is DuckDB's parallel
// line reader; read_text + string_split(content, chr(10)) gives the same counts but
// runs single-threaded over one huge string (about 18x slower on 44 MB here).
func lines(path string) string {
	return fmt.Sprintf("read_csv('%s', columns = {'line': 'VARCHAR'}, header = false, "+
		"delim = '\x01', quote = '', escape = '', auto_detect = false)", strings.ReplaceAll(path, "'", "''"))
}

func main() {
	threads := flag.Int("threads", 2, "DuckDB worker threads (SET threads)")
	version := flag.Bool("version", false, "print DuckDB's version and exit")
	print := flag.Bool("print", false, "print the query for FILE and exit")
	flag.Parse()
	if *print && flag.NArg() == 1 {
		fmt.Printf(Query+"\n", lines(flag.Arg(0)))
		return
	}
	if err := run(*threads, *version); err != nil {
		fmt.Fprintln(os.Stderr, "duckwc:", err)
		os.Exit(1)
	}
}

// bindingVersion returns the version of duckdb-go this program was built with.
func bindingVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == "github.com/duckdb/duckdb-go/v2" {
				return m.Version
			}
		}
	}
	return "unknown"
}

func run(threads int, version bool) error {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // SET applies to the connection; keep to one
	if version {
		var v string
		if err := db.QueryRow("SELECT version()").Scan(&v); err != nil {
			return err
		}
		fmt.Printf("DuckDB %s (github.com/duckdb/duckdb-go/v2 %s)\n", v, bindingVersion())
		return nil
	}
	if flag.NArg() != 1 {
		return errors.New("usage: duckwc [-threads N] FILE")
	}
	if _, err := db.Exec(fmt.Sprintf("SET threads = %d", threads)); err != nil {
		return err
	}
	rows, err := db.Query(fmt.Sprintf(Query, lines(flag.Arg(0))))
	if err != nil {
		return err
	}
	defer rows.Close()
	w := bufio.NewWriterSize(os.Stdout, 1<<16)
	var word string
	var n int64
	var line []byte
	for rows.Next() {
		if err := rows.Scan(&word, &n); err != nil {
			return err
		}
		line = append(append(line[:0], word...), ' ')
		w.Write(append(strconv.AppendInt(line, n, 10), '\n'))
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return w.Flush()
}
