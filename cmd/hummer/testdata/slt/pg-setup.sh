#!/bin/sh
# Starts the PostgreSQL 15 server pg-oracle.py asks (socket /tmp, port 5433,
# user postgres) with every table the .slt files query: emp, dept, dates, t1,
# TPC-H at scale factor 0.01 with go-tpc's date_add/date_sub and q15's view.
# Run from the repository's root, as root; DIR (default /tmp/pgdata) is
# created when missing, and a running server there is left running.
#
#   sh cmd/hummer/testdata/slt/pg-setup.sh [DIR]
#   cd cmd/hummer && PGHOST=/tmp PGPORT=5433 PGUSER=postgres python3 testdata/slt/pg-oracle.py testdata/slt/FILE.slt
set -eu
dir=${1:-/tmp/pgdata}
bin=/usr/lib/postgresql/15/bin
as_pg() { runuser -u postgres -- "$@"; }
export PGHOST=/tmp PGPORT=5433 PGUSER=postgres PGOPTIONS='-c client_min_messages=warning'
if as_pg "$bin/pg_isready" -q -h /tmp -p 5433; then
	echo "a server is already running on /tmp:5433"
	exit 0
fi
if [ ! -d "$dir" ]; then
	mkdir -p "$dir" && chown postgres "$dir"
	as_pg "$bin/initdb" -D "$dir" --auth=trust >/dev/null
fi
as_pg "$bin/pg_ctl" -D "$dir" -o "-k /tmp -p 5433" -l "$dir/log" -w start >/dev/null
data=$(pwd)/cmd/hummer/testdata
tpch=$dir/tpch
[ -d "$tpch" ] || { go run ./cmd/tpchgen -sf 0.01 -out "$tpch" && chmod -R a+rX "$tpch"; }
cp "$data"/emp.csv "$data"/dept.csv "$data"/dates.csv "$data"/t1.csv "$dir"/ && chmod a+r "$dir"/*.csv
psql -X -q -v ON_ERROR_STOP=1 <<EOF
DROP VIEW IF EXISTS revenue0;
DROP TABLE IF EXISTS emp, dept, dates, t1;
CREATE TABLE emp (id BIGINT, name TEXT, dept_id BIGINT, salary DECIMAL(10,2), hired TIMESTAMP, active BOOLEAN);
CREATE TABLE dept (id BIGINT, name TEXT, floor BIGINT);
CREATE TABLE dates (id BIGINT, d DATE, note TEXT);
CREATE TABLE t1 (a BIGINT, b BIGINT, c BIGINT, d BIGINT, e BIGINT);
COPY emp FROM '$dir/emp.csv' WITH (FORMAT csv, HEADER true);
COPY dept FROM '$dir/dept.csv' WITH (FORMAT csv, HEADER true);
COPY dates FROM '$dir/dates.csv' WITH (FORMAT csv, HEADER true);
COPY t1 FROM '$dir/t1.csv' WITH (FORMAT csv, HEADER true);
CREATE OR REPLACE FUNCTION date_add(d date, i interval) RETURNS date AS 'SELECT (d + i)::date' LANGUAGE sql;
CREATE OR REPLACE FUNCTION date_sub(d date, i interval) RETURNS date AS 'SELECT (d - i)::date' LANGUAGE sql;
EOF
go run ./cmd/tpchgen -ddl -out "$tpch" | psql -X -q -v ON_ERROR_STOP=1 >/dev/null
psql -X -q -v ON_ERROR_STOP=1 <<EOF
CREATE VIEW revenue0 (supplier_no, total_revenue) AS
	SELECT l_suppkey, sum(l_extendedprice * (1 - l_discount)) FROM lineitem
	WHERE l_shipdate >= date '1997-07-01' AND l_shipdate < date '1997-07-01' + interval '3' month
	GROUP BY l_suppkey;
EOF
echo "PostgreSQL ready on /tmp:5433 ($dir)"
