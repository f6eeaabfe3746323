"""psycopg2's copy_from (COPY ... FROM STDIN in text format: tabs, \\N for
NULL, a column list, another separator) and copy_expert (COPY ... FROM
STDIN WITH (FORMAT csv, HEADER)) into a stored table, their row counts,
the rows, and a bad row refused with its line (nothing of that COPY kept).
The golden file is what this printed against PostgreSQL 15."""
import io, sys, psycopg2
c = psycopg2.connect(sys.argv[1])
c.autocommit = True
cur = c.cursor()
cur.execute("DROP TABLE IF EXISTS copied")
cur.execute("CREATE TABLE copied (id BIGINT, name TEXT, price DECIMAL(10,2))")
cur.copy_from(io.StringIO("1\tapple\t0.50\n2\t\\N\t1.25\n"), "copied")
print("copy_from:", cur.rowcount)
cur.copy_from(io.StringIO("3|pear\n4|fig, dried\n"), "copied", sep="|", columns=("id", "name"))
print("copy_from sep columns:", cur.rowcount)
csv = 'id,name,price\n5,"plum, red",2.00\n6,"say ""hi""",\n7,,0\n'
cur.copy_expert("COPY copied FROM STDIN WITH (FORMAT csv, HEADER)", io.StringIO(csv))
print("copy_expert csv header:", cur.rowcount)
try:
    cur.copy_expert("COPY copied FROM STDIN WITH (FORMAT csv, HEADER)", io.StringIO("id,name,price\n8,ok,1\n9,bad,x\n"))
    print("bad row: no error")
except psycopg2.Error as e:
    print("bad row:", e.pgcode, "line 3" in str(e))
cur.execute("SELECT id, name, price FROM copied ORDER BY id")
for row in cur.fetchall():
    print(row)
cur.execute("DROP TABLE copied")
c.close()
