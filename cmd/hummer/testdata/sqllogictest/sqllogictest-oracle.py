#!/usr/bin/env python3
"""Fill the expected values of a classic sqllogictest file from PostgreSQL.

Each `query` record's values (or, past the file's hash-threshold, their count and
MD5) are replaced by what PostgreSQL answers, printed as sqllogictest prints them
(integers as integers, reals with three decimals, '' as (empty), NULL as NULL).
Records after `skipif postgresql` or `onlyif <another database>` are left alone.

Usage: sqllogictest-oracle.py [--statements] FILE.test  (PGHOST/PGPORT/PGUSER
select the server, which must hold the tables of ../slt/pg-oracle.py's setup;
with --statements, as for the public suite's files, which set up their own
tables, the file's `statement ok` records run on it first, in order, and a query
PostgreSQL refuses gets `skipif postgresql`: the suite's target is every query
PostgreSQL answers.)
"""
import hashlib
import subprocess
import sys


def pg(sql):
    sql = sql.replace("DATETIME", "TIMESTAMP")
    out = subprocess.run(
        ["psql", "-X", "-A", "-t", "-F", "\x1f", "-P", "null=\x1eNULL", "-v", "ON_ERROR_STOP=1", "-c", sql],
        check=True, capture_output=True, text=True).stdout
    lines = out.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.split("\x1f") for line in lines]


def value(v, t):
    if v == "\x1eNULL":
        return "NULL"
    if t == "I":
        return str(int(float(v))) if any(c in v for c in ".eE") else v
    if t == "R":
        return "%.3f" % float(v)
    if v == "":
        return "(empty)"
    return "".join(c if " " <= c <= "~" else "@" for c in v)


def main(path, statements):
    lines = open(path).read().split("\n")
    out, i, skip, threshold = [], 0, False, 0
    while i < len(lines):
        line = lines[i]
        words = line.split()
        if words[:1] == ["hash-threshold"]:
            threshold = int(words[1])
        if words[:2] == ["skipif", "postgresql"]:
            skip = True
        if words[:1] == ["onlyif"] and words[1:2] != ["postgresql"]:
            skip = True
        if statements and words[:2] == ["statement", "ok"] and not skip:
            j = i + 1
            while j < len(lines) and lines[j].strip() != "":
                j += 1
            pg("\n".join(lines[i + 1:j]))
        if words[:1] == ["query"] and not skip:
            types, mode = words[1], (words[2] if len(words) > 2 else "nosort")
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
            try:
                result = pg("\n".join(sql))
            except subprocess.CalledProcessError:
                if not statements:
                    raise
                at = len(out) - len(sql) - 2
                out[at:at] = ["skipif postgresql"]
                out.pop()
                continue
            rows = [[value(v, types[k]) for k, v in enumerate(r)] for r in result]
            if mode == "rowsort":
                rows.sort()
            vals = [v for r in rows for v in r]
            if mode == "valuesort":
                vals.sort()
            if threshold and len(vals) > threshold:
                h = hashlib.md5("".join(v + "\n" for v in vals).encode()).hexdigest()
                out.append("%d values hashing to %s" % (len(vals), h))
            else:
                out.extend(vals)
            continue
        if words[:1] in (["query"], ["statement"]):
            skip = False
        out.append(line)
        i += 1
    open(path, "w").write("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[-1], "--statements" in sys.argv[1:-1])
