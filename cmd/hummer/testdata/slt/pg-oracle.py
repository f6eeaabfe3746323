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


def main(path):
    lines = open(path).read().split("\n")
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
