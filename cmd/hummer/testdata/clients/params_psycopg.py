"""Parameters of every type through psycopg 3 (server-side binding, the
extended protocol) and psycopg2 (client-side interpolation, the simple
protocol), one line per check, for cmd/hummer/params_test.go. Usage:
params_psycopg.py DSN."""
import datetime
import decimal
import sys

import psycopg
import psycopg2

dsn = sys.argv[1]
out = []


def show(name, value):
    out.append("%s: %r" % (name, value))


with psycopg.connect(dsn, autocommit=True) as c:
    cur = c.cursor()
    cur.execute("CREATE TABLE pt (id BIGINT, d DATE, ts TIMESTAMP, s TEXT, n DECIMAL(10,2), f DOUBLE PRECISION, b BOOLEAN)")
    for i in range(1, 5):
        cur.execute("INSERT INTO pt VALUES (%s, %s, %s, %s, %s, %s, %s)",
                    (i, datetime.date(2024, 1, i), datetime.datetime(2024, 1, i, 10, 30, 0, 250000),
                     "s%d" % i, decimal.Decimal("%d.50" % i), i + 0.25, i % 2 == 0))
    # The same with binary parameters (%b).
    cur.execute("INSERT INTO pt VALUES (%b, %b, %b, %b, %b, %b, %b)",
                (5, datetime.date(2024, 1, 5), datetime.datetime(2024, 1, 5, 10, 30, 0, 250000),
                 "s5", decimal.Decimal("5.50"), 5.25, False))
    cur.execute("SELECT id, d, ts, s, n, f, b FROM pt WHERE id = %s", (5,))
    show("row 5", cur.fetchone())
    for binary in (False, True):
        cur.execute("SELECT id, d, ts, s, n, f, b FROM pt WHERE id = %s", (2,), binary=binary)
        show("row 2 binary=%s" % binary, cur.fetchone())
    cur.execute("SELECT id FROM pt ORDER BY id LIMIT %s OFFSET %s", (2, 1))
    show("limit offset", cur.fetchall())
    cur.execute("SELECT id FROM pt ORDER BY id LIMIT %s", (1,))
    show("limit", cur.fetchall())
    cur.execute("SELECT id FROM pt WHERE d = %s", (datetime.date(2024, 1, 3),))
    show("date =", cur.fetchall())
    cur.execute("SELECT id FROM pt WHERE d BETWEEN %b AND %b ORDER BY id", (datetime.date(2024, 1, 2), datetime.date(2024, 1, 3)))
    show("date between binary", cur.fetchall())
    cur.execute("SELECT id FROM pt WHERE ts > %s ORDER BY id", (datetime.datetime(2024, 1, 4),))
    show("timestamp >", cur.fetchall())
    cur.execute("SELECT id FROM pt WHERE ts < %s ORDER BY id", (datetime.datetime(2024, 1, 2, 9, 0, tzinfo=datetime.timezone(datetime.timedelta(hours=-1))),))
    show("timestamptz <", cur.fetchall())
    cur.execute("SELECT id FROM pt WHERE n > %s AND f < %s AND b = %s ORDER BY id", (decimal.Decimal("1.5"), 4.5, True))
    show("numeric float bool", cur.fetchall())
    cur.execute("SELECT %s, %s, %s, %s, %s", (42, 1.5, True, datetime.date(2024, 1, 2), "x"))
    show("select params", cur.fetchone())
    cur.execute("SELECT %s + 1", (41,))
    show("param + 1", cur.fetchone())
    try:
        cur.execute("SELECT %s", (b"ab\x00c",))
        show("bytea", cur.fetchone())
    except psycopg.Error as e:
        show("bytea error", e.sqlstate)

c2 = psycopg2.connect(dsn)
c2.autocommit = True
if True:
    cur = c2.cursor()
    cur.execute("SELECT %s, %s", (datetime.date(2024, 1, 2), datetime.datetime(2024, 1, 2, 3, 4, 5, 6)))
    show("psycopg2 date timestamp", cur.fetchone())
    cur.execute("SELECT id FROM pt WHERE d = %s", (datetime.date(2024, 1, 4),))
    show("psycopg2 date =", cur.fetchall())
    cur.execute("SELECT id FROM pt ORDER BY id LIMIT %s OFFSET %s", (2, 3))
    show("psycopg2 limit offset", cur.fetchall())
    cur.execute("SELECT %s, %s, %s", (decimal.Decimal("12.34"), True, 1.5))
    show("psycopg2 numeric bool float", cur.fetchone())

c2.close()
print("\n".join(out))
