#!/usr/bin/env python3
"""Fill the expected rows of an .slt file from a real PostgreSQL server.

The expected output of the SQL tests must not come from Hummer itself. This script
runs each `query` record of an .slt file against PostgreSQL (tables loaded from the
same CSV files) and writes PostgreSQL's rows into the file. Records preceded by a
`# pg: skip` comment are left alone (their expected rows are written by hand).

Usage: pg-oracle.py FILE.slt  (PGHOST/PGPORT/PGUSER select the server; the tables
must already be loaded there: pg-setup.sh, beside this file, starts a server with
all of them, as set up in the comment below.)

    CREATE TABLE emp (id BIGINT, name TEXT, dept_id BIGINT, salary DECIMAL(10,2),
                      hired TIMESTAMP, active BOOLEAN);
    CREATE TABLE dept (id BIGINT, name TEXT, floor BIGINT);
    \\copy emp FROM 'testdata/emp.csv' WITH (FORMAT csv, HEADER true)
    \\copy dept FROM 'testdata/dept.csv' WITH (FORMAT csv, HEADER true)
    CREATE TABLE dates (id BIGINT, d DATE, note TEXT);
    \\copy dates FROM 'testdata/dates.csv' WITH (FORMAT csv, HEADER true)

For tpch.slt, TPC-H's tables at scale factor 0.01, go-tpc's date_add and
date_sub, and q15's view (run from the repository's root):

    go run ./cmd/tpchgen -sf 0.01 -out /tmp/tpch
    go run ./cmd/tpchgen -ddl -out /tmp/tpch | psql
    CREATE FUNCTION date_add(d date, i interval) RETURNS date AS 'SELECT (d + i)::date' LANGUAGE sql;
    CREATE FUNCTION date_sub(d date, i interval) RETURNS date AS 'SELECT (d - i)::date' LANGUAGE sql;
    CREATE VIEW revenue0 (supplier_no, total_revenue) AS ... (q15's, standard text)
"""
import re
import subprocess
import sys


def pg(sql):
    sql = sql.replace("DATETIME", "TIMESTAMP")
    out = subprocess.run(
        ["psql", "-X", "-A", "-t", "-F", "\x1f", "-P", "null=\x1eNULL", "-v", "ON_ERROR_STOP=1", "-c", sql],
        check=True, capture_output=True, text=True).stdout
    rows = []
    lines = out.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline ending the last row; an empty line before it is a row of ''
    for line in lines:
        cells = []
        for c in line.split("\x1f"):
            cells.append("NULL" if c == "\x1eNULL" else ("(empty)" if c == "" else c))
        rows.append(" ".join(cells))
    return rows


def session(path, lines):
    """Runs every record of a file that starts with "# pg: session" in one
    PostgreSQL session, in order: statements too, which must succeed or fail as
    the file says (with the SQLSTATE its regexp names, if it names one); the
    expected rows of each query are PostgreSQL's."""
    records, i = [], 0  # (kind, header line index, sql, first expected line, end)
    while i < len(lines):
        line = lines[i]
        if line.startswith("statement ") or line.startswith("query "):
            start, i = i, i + 1
            sql = []
            while i < len(lines) and lines[i].strip() not in ("", "----"):
                sql.append(lines[i])
                i += 1
            exp = i
            if i < len(lines) and lines[i] == "----":
                i += 1
                exp = i
                while i < len(lines) and lines[i].strip() != "":
                    i += 1
            records.append((line, start, "\n".join(sql), exp, i))
            continue
        i += 1
    script = ["\\set ON_ERROR_STOP 0"]
    for n, (_, _, sql, _, _) in enumerate(records):
        script += [sql.replace("DATETIME", "TIMESTAMP") + ";", "\\echo \x1dEND %d :ERROR :SQLSTATE" % n]
    out = subprocess.run(
        ["psql", "-X", "-q", "-A", "-t", "-F", "\x1f", "-P", "null=\x1eNULL"],
        input="\n".join(script) + "\n", capture_output=True, text=True).stdout
    results, rows = [], []
    for line in out.split("\n"):
        if line.startswith("\x1dEND "):
            _, _, failed, state = line.split(" ")
            results.append((failed == "true", state, rows))
            rows = []
        elif line != "":
            rows.append(" ".join("NULL" if c == "\x1eNULL" else ("(empty)" if c == "" else c) for c in line.split("\x1f")))
    if len(results) != len(records):
        sys.exit("pg-oracle: %d results for %d records" % (len(results), len(records)))
    bad = 0
    for (header, start, sql, _, _), (failed, state, _) in zip(records, results):
        want_error = header.startswith("statement error")
        m = re.search(r"SQLSTATE (\w+)", header)
        if failed != want_error or (m and state != m.group(1)):
            print("pg-oracle: line %d: %s\n  PostgreSQL: %s" % (start + 1, sql, "error " + state if failed else "ok"), file=sys.stderr)
            bad += 1
    out_lines, last = [], 0
    for (header, start, sql, exp, end), (_, _, rows) in zip(records, results):
        if not header.startswith("query "):
            continue
        out_lines += lines[last:exp]
        out_lines += sorted(rows) if "rowsort" in header.split() else rows
        last = end
    out_lines += lines[last:]
    open(path, "w").write("\n".join(out_lines))
    if bad:
        sys.exit(1)


def main(path):
    lines = open(path).read().split("\n")
    if lines and lines[0].strip() == "# pg: session":
        return session(path, lines)
    out, i, skip = [], 0, False
    while i < len(lines):
        line = lines[i]
        if line.startswith("# pg: skip"):
            skip = True
        if line.startswith("query ") and not skip:
            rowsort = "rowsort" in line.split()
            out.append(line)
            i += 1
            sql = []
            while lines[i] != "----":
                sql.append(lines[i])
                out.append(lines[i])
                i += 1
            out.append("----")
            i += 1
            while i < len(lines) and lines[i].strip() != "":
                i += 1
            rows = pg("\n".join(sql))
            out.extend(sorted(rows) if rowsort else rows)
            continue
        if line.startswith("query ") or line.startswith("statement "):
            skip = False
        out.append(line)
        i += 1
    open(path, "w").write("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1])
