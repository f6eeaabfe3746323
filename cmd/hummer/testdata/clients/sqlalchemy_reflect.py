"""SQLAlchemy (postgresql+psycopg2) against a server: the inspector's
reflection of a table and a view, Table autoload, and select() with
LIMIT/OFFSET as bound parameters; one line per check, for
cmd/hummer/pyclients_test.go. Usage: sqlalchemy_reflect.py URL."""
import sys

import sqlalchemy as sa

engine = sa.create_engine(sys.argv[1], future=True)
out = []


def show(name, value):
    out.append("%s: %s" % (name, value))


with engine.connect() as c:
    c.exec_driver_sql("DROP VIEW IF EXISTS v")
    c.exec_driver_sql("DROP TABLE IF EXISTS t")
    c.exec_driver_sql("DROP TABLE IF EXISTS u")
    c.exec_driver_sql("CREATE TABLE t (id BIGINT PRIMARY KEY, name TEXT NOT NULL, price DECIMAL(10,2), d DATE)")
    c.exec_driver_sql("INSERT INTO t VALUES (1, 'apple', 1.50, '2024-01-01'), (2, 'banana', 0.25, '2024-02-29'), "
                      "(3, 'cherry', NULL, NULL), (4, 'date', 12.00, '2023-12-31'), (5, 'elder', 3.75, '2024-06-15')")
    c.exec_driver_sql("CREATE VIEW v AS SELECT id, name FROM t WHERE price > 1")
    c.exec_driver_sql("CREATE TABLE u (a BIGINT, b TEXT, n BIGINT DEFAULT 7, s TEXT DEFAULT 'x', "
                      "f DOUBLE PRECISION, ok BOOLEAN DEFAULT true, ts TIMESTAMP, PRIMARY KEY (b, a))")
    c.commit()

insp = sa.inspect(engine)
show("schemas", [s for s in insp.get_schema_names() if s == "public"])
show("default schema", insp.default_schema_name)
# The server may hold other tables (a PostgreSQL database's): these are ours.
show("tables", sorted(n for n in insp.get_table_names() if n in ("t", "u", "v")))
show("views", sorted(n for n in insp.get_view_names() if n in ("t", "u", "v")))
show("has_table t", insp.has_table("t"))
show("has_table nope", insp.has_table("nope"))
for name in ("t", "v", "u"):
    for col in insp.get_columns(name):
        show("column %s" % name, sorted((k, repr(v)) for k, v in col.items()))
show("pk t", insp.get_pk_constraint("t"))
show("pk u", insp.get_pk_constraint("u"))
show("fks t", insp.get_foreign_keys("t"))
show("indexes t", insp.get_indexes("t"))
show("unique t", insp.get_unique_constraints("t"))
show("checks t", insp.get_check_constraints("t"))
show("comment t", insp.get_table_comment("t"))
show("view definition", "FROM t" in insp.get_view_definition("v"))

t = sa.Table("t", sa.MetaData(), autoload_with=engine)
show("autoload columns", [(c.name, repr(c.type), c.nullable, c.primary_key) for c in t.columns])
show("autoload pk", [c.name for c in t.primary_key])
u = sa.Table("u", sa.MetaData(), autoload_with=engine)
show("autoload u", [(c.name, repr(c.type), c.nullable, c.primary_key, c.server_default is not None) for c in u.columns])
v = sa.Table("v", sa.MetaData(), autoload_with=engine)
show("autoload view", [(c.name, repr(c.type)) for c in v.columns])

with engine.connect() as c:
    q = sa.select(t).order_by(t.c.id).limit(2)
    show("limit", c.execute(q).fetchall())
    show("limit offset", c.execute(q.offset(2)).fetchall())
    show("offset", c.execute(sa.select(t.c.name).order_by(t.c.id).offset(3)).fetchall())
    q = sa.select(t.c.id, t.c.price).where(t.c.price > sa.bindparam("p")).order_by(t.c.id.desc()).limit(sa.bindparam("n"))
    show("bound limit", c.execute(q, {"p": 1, "n": 2}).fetchall())
    show("view rows", c.execute(sa.select(v).order_by(v.c.id)).fetchall())
    show("count", c.execute(sa.select(sa.func.count()).select_from(t)).scalar())

# Core: create_all (has_table, then CREATE TABLE), insert with many rows,
# update, delete, stream_results (a psycopg2 named cursor), drop_all.
md = sa.MetaData()
w = sa.Table("w", md, sa.Column("id", sa.BigInteger, primary_key=True, autoincrement=False),
             sa.Column("name", sa.Text, nullable=False), sa.Column("price", sa.Numeric(10, 2)))
md.drop_all(engine)
md.create_all(engine)
with engine.begin() as c:
    c.execute(w.insert(), [{"id": 1, "name": "a", "price": 1.5}, {"id": 2, "name": "b", "price": None}])
    c.execute(w.update().where(w.c.id == 2).values(price=3))
    show("after update", c.execute(sa.select(w).order_by(w.c.id)).fetchall())
    c.execute(w.delete().where(w.c.id == 1))
with engine.connect() as c:
    show("stream_results", c.execution_options(stream_results=True).execute(sa.select(w.c.id, w.c.price)).fetchall())
show("has_table w", sa.inspect(engine).has_table("w"))
md.drop_all(engine)
show("has_table w after drop_all", sa.inspect(engine).has_table("w"))

# Mixed-case names, which SQLAlchemy quotes: created, filled, reflected and
# read back exact; the unquoted name folds, and is another relation.
md2 = sa.MetaData()
m = sa.Table("Users", md2, sa.Column("Id", sa.BigInteger, primary_key=True, autoincrement=False),
             sa.Column("name", sa.Text), sa.Column("eMail", sa.Text))
md2.drop_all(engine)
md2.create_all(engine)
with engine.begin() as c:
    c.execute(m.insert(), [{"Id": 1, "name": "ann", "eMail": "a@x"}, {"Id": 2, "name": "bob", "eMail": None}])
show("mixed tables", [n for n in sa.inspect(engine).get_table_names() if n.lower() == "users"])
r = sa.Table("Users", sa.MetaData(), autoload_with=engine)
show("mixed autoload", [(c.name, repr(c.type), c.primary_key) for c in r.columns])
show("mixed pk", sa.inspect(engine).get_pk_constraint("Users"))
with engine.connect() as c:
    show("mixed rows", c.execute(sa.select(r).where(r.c.eMail.isnot(None)).order_by(r.c.Id)).fetchall())
    res = c.exec_driver_sql('SELECT "Id", name AS "Name", "eMail" AS mail FROM "Users" WHERE "Id" = 2')
    show("mixed description", ([d[0] for d in res.cursor.description], res.fetchall()))
    try:
        c.exec_driver_sql("SELECT * FROM Users")
    except sa.exc.ProgrammingError as e:
        show("folded name", (e.orig.pgcode, str(e.orig).splitlines()[0]))
md2.drop_all(engine)
show("has_table Users after drop_all", sa.inspect(engine).has_table("Users"))

print("\n".join(out))
