"""psycopg 3 against a server: a named (server-side) cursor over a table,
fetched in pieces (DECLARE ... CURSOR, FETCH FORWARD n), and the types
cursor.description reports; one line per check, for
cmd/hummer/pyclients_test.go. Usage: psycopg_cursor.py DSN."""
import sys

import psycopg

out = []


def show(name, value):
    out.append("%s: %s" % (name, value))


def describe(cur):
    return [(d.name, d.type_code, d.display_size, d.internal_size, d.precision, d.scale) for d in cur.description]


with psycopg.connect(sys.argv[1], autocommit=True) as c:
    c.execute("DROP TABLE IF EXISTS nc")
    c.execute("CREATE TABLE nc (id BIGINT PRIMARY KEY, name TEXT NOT NULL, price DECIMAL(10,2), d DATE, "
              "f DOUBLE PRECISION, b BOOLEAN, ts TIMESTAMP)")
    c.execute("INSERT INTO nc VALUES " + ", ".join(
        "(%d, 'n%d', %d.25, DATE '2024-01-%02d', %d.5, %s, TIMESTAMP '2024-01-%02d 10:00:00')"
        % (i, i, i, i, i, "true" if i % 2 else "false", i) for i in range(1, 8)))

with psycopg.connect(sys.argv[1]) as c:
    with c.cursor(name="nc_cur") as cur:
        cur.itersize = 3
        cur.execute("SELECT id, name, price, d FROM nc WHERE id > %s ORDER BY id", (1,))
        show("description", describe(cur))
        show("fetchone", cur.fetchone())
        show("fetchmany 2", cur.fetchmany(2))
        show("rownumber", cur.rownumber)
        show("iterate", [r[0] for r in cur])
        show("fetchall after end", cur.fetchall())
    c.commit()
    with c.cursor(name="nc_all") as cur:
        cur.execute("SELECT * FROM nc ORDER BY id")
        show("description all", describe(cur))
        show("fetchall", cur.fetchall())
    c.commit()
    with c.cursor(name="nc_hold", withhold=True) as cur:
        cur.execute("SELECT id FROM nc ORDER BY id")
        show("withhold fetchmany 3", cur.fetchmany(3))
        c.commit()
        show("withhold after commit", cur.fetchmany(2))
    cur = c.cursor()
    cur.execute("SELECT id, name, price, d, f, b, ts, id + 1 AS next, count(*) OVER () AS n FROM nc WHERE id = 1")
    show("client description", describe(cur))
    show("client row", cur.fetchone())
    cur.execute("SELECT (SELECT max(id) FROM nc), (SELECT 'a' AS x), EXISTS (SELECT 1 FROM nc), (SELECT 1), "
                "(SELECT n.name FROM nc n WHERE n.id = 1)")
    show("subquery names", [d.name for d in cur.description])
    show("subquery row", cur.fetchone())
    c.commit()

print("\n".join(out))
