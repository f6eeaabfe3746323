"""psycopg2 and psycopg 3 (text and binary parameters) against a server
with a session TimeZone: timestamptz values come back in the zone the
server reports (ParameterStatus), text without a zone is read in it, and
timedelta parameters (psycopg2 sends '... seconds'::interval) take part in
interval arithmetic; one line per check, for cmd/hummer/pyclients_test.go.
Usage: timezone_clients.py DSN."""
import datetime
import sys

import psycopg
import psycopg2

out = []
paris = datetime.timezone(datetime.timedelta(hours=2))
params = [
    ("SELECT %s::timestamptz", ("2024-07-01 12:00",)),
    ("SELECT %s", (datetime.datetime(2024, 1, 1, 12, 0, tzinfo=paris),)),
    ("SELECT %s::timestamptz::text, %s::timestamptz::timestamp", ("2024-01-01 12:00+00", "2024-07-01 12:00+00")),
    ("SELECT %s AT TIME ZONE 'UTC'", (datetime.datetime(2024, 7, 1, 12, 0, tzinfo=paris),)),
    ("SELECT %s::interval, %s + INTERVAL '1 hour'", (datetime.timedelta(days=1, seconds=3661, microseconds=5),
                                                    datetime.timedelta(hours=2))),
    ("SELECT %s - %s", (datetime.timedelta(days=-2, seconds=5), datetime.timedelta(minutes=90))),
    ("SELECT current_setting('TimeZone')", None),
]

c = psycopg2.connect(sys.argv[1])
cur = c.cursor()
cur.execute("SET TIME ZONE 'Europe/Paris'")
for q, p in params:
    cur.execute(q, p)
    out.append("psycopg2 %s: %r" % (q, cur.fetchall()))
c.rollback()

with psycopg.connect(sys.argv[1], autocommit=True) as c3:
    c3.execute("SET TimeZone = 'America/New_York'")
    for binary in (False, True):
        cur = c3.cursor(binary=binary)
        for q, p in params:
            cur.execute(q, p)
            out.append("psycopg binary=%s %s: %r" % (binary, q, cur.fetchall()))

print("\n".join(out))
