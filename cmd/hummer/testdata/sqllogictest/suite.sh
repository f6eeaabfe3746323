#!/bin/sh
# Runs public sqllogictest files (SQLite's select1-5.test, kept outside the
# repository) against Hummer with PostgreSQL 15's answers: each file is copied
# into WORK, its `statement ok` records run in a database of its own on a
# PostgreSQL server started here (socket /tmp, port 5434, data in
# /tmp/slt-suite-pg), its expected values are filled from PostgreSQL's answers
# (sqllogictest-oracle.py --statements), and TestSQLLogicClassic runs them all;
# each file's line "N records, Q queries; F not as expected" is printed.
# Run from the repository's root, as root:
#
#   sh cmd/hummer/testdata/sqllogictest/suite.sh WORK FILE.test...
set -eu
work=$1; shift
bin=/usr/lib/postgresql/15/bin
dir=/tmp/slt-suite-pg
as_pg() { runuser -u postgres -- "$@"; }
export PGHOST=/tmp PGPORT=5434 PGUSER=postgres PGOPTIONS='-c client_min_messages=warning'
if ! as_pg "$bin/pg_isready" -q -h /tmp -p 5434; then
	if [ ! -d "$dir" ]; then
		mkdir -p "$dir" && chown postgres "$dir"
		as_pg "$bin/initdb" -D "$dir" --auth=trust >/dev/null
	fi
	as_pg "$bin/pg_ctl" -D "$dir" -o "-k /tmp -p 5434" -l "$dir/log" -w start >/dev/null
fi
rm -rf "$work" && mkdir -p "$work"
for f in "$@"; do
	name=$(basename "$f" .test | tr -c 'a-z0-9\n' '_')
	cp "$f" "$work/$name.test"
	psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $name" -c "CREATE DATABASE $name"
	PGDATABASE=$name python3 cmd/hummer/testdata/sqllogictest/sqllogictest-oracle.py --statements "$work/$name.test"
done
unset PGOPTIONS
HUMMER_SLT_DIR=$(cd "$work" && pwd) go test -count=1 -run TestSQLLogicClassic -v ./cmd/hummer/ >"$work/result.log" 2>&1 || true
grep -E "records, [0-9]+ queries" "$work/result.log"
