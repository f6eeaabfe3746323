"""psycopg2 named cursors with scrollable=True: DECLARE "sc" SCROLL CURSOR, then
fetchmany (FETCH FORWARD n), scroll(-1) (MOVE BACKWARD 1), absolute scrolls
(MOVE ABSOLUTE n). The golden file is what this printed against PostgreSQL 15."""
import sys, psycopg2
dsn = sys.argv[1]
c = psycopg2.connect(dsn)
cur = c.cursor("sc", scrollable=True)
cur.execute("SELECT x FROM (VALUES (1), (2), (3), (4)) AS v(x) ORDER BY x")
print(cur.fetchmany(2))
cur.scroll(-1)
print(cur.fetchone())
cur.scroll(0, mode="absolute")
print(cur.fetchall())
cur.scroll(1, mode="absolute")
print(cur.fetchone())
cur.close()
c.rollback()
