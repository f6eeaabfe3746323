// Run by cmd/hummer/nodepg_test.go (TestNodePostgresExtras): the two
// node-postgres extensions most applications add, pg-cursor and
// pg-copy-streams, against `hummer serve`, and the same script against
// PostgreSQL for testdata/nodepg/extras.expected.json. The connection comes
// from the PG* environment variables. What each step saw goes to stdout as one
// JSON object, formatted for a diff.
//
// pg-cursor binds a named portal and reads it with Execute messages limited to
// a row count, each followed by Flush rather than Sync: the server must
// answer PortalSuspended and keep the portal open until the cursor sends Sync
// after the last rows (or after closing it early). pg-copy-streams runs COPY
// ... TO STDOUT and COPY ... FROM STDIN through the simple protocol, streaming
// CopyData.
'use strict';

const { Client } = require('pg');
const Cursor = require('pg-cursor');
const { to: copyTo, from: copyFrom } = require('pg-copy-streams');
const { pipeline } = require('stream/promises');
const { Readable, Writable } = require('stream');

// Hummer keeps every integer as bigint, so the table says so (pg hands int8
// over as a string, int4 as a number).
const table = 'nodepg_items';

// readAll reads a cursor n rows at a time until a read returns none, and
// returns each read's rows.
async function readAll(cursor, n) {
  const reads = [];
  for (;;) {
    const rows = await cursor.read(n);
    reads.push(rows);
    if (rows.length === 0) {
      break;
    }
  }
  await cursor.close();
  return reads;
}

// copyOut runs a COPY ... TO STDOUT and returns what it streamed.
async function copyOut(client, sql) {
  const chunks = [];
  const stream = client.query(copyTo(sql));
  await pipeline(
    stream,
    new Writable({
      write(chunk, _enc, done) {
        chunks.push(chunk);
        done();
      },
    })
  );
  return { text: Buffer.concat(chunks).toString('utf8'), rowCount: stream.rowCount };
}

// copyIn streams parts (sent as separate CopyData messages) into a COPY ...
// FROM STDIN.
async function copyIn(client, sql, parts) {
  const stream = client.query(copyFrom(sql));
  await pipeline(Readable.from(parts.map((p) => Buffer.from(p))), stream);
  return { rowCount: stream.rowCount };
}

// outcome runs f and returns its result, or the server's error fields.
async function outcome(f) {
  try {
    return await f();
  } catch (e) {
    if (!e.code) {
      throw e;
    }
    return { error: { code: e.code, message: e.message } };
  }
}

async function main() {
  const client = new Client();
  await client.connect();
  const out = {};
  try {
    await client.query(`DROP TABLE IF EXISTS ${table}`);
    await client.query(`CREATE TABLE ${table} (id BIGINT, name TEXT, price DOUBLE PRECISION)`);
    await client.query(`INSERT INTO ${table} VALUES (1, 'apple', 0.5), (2, 'pear', 0.75), (3, 'plum, red', 1.25), (4, NULL, 2), (5, 'fig "dried"', 3.5)`);

    // All the rows, two at a time: reads of 2, 2, 1 and then none.
    out.cursor = await readAll(client.query(new Cursor(`SELECT id, name, price FROM ${table} ORDER BY id`)), 2);
    // A cursor with a parameter.
    out.cursorParam = await readAll(
      client.query(new Cursor(`SELECT id, name FROM ${table} WHERE id > $1 ORDER BY id`, [2])),
      2
    );
    // A cursor closed after its first read; the connection goes on.
    {
      const cursor = client.query(new Cursor(`SELECT id FROM ${table} ORDER BY id`));
      const first = await cursor.read(2);
      await cursor.close();
      const after = await client.query(`SELECT count(*) AS n FROM ${table}`);
      out.cursorClosed = { first, after: after.rows };
    }
    // A cursor over a query that fails when it runs.
    out.cursorError = await outcome(() => readAll(client.query(new Cursor(`SELECT no_such_column FROM ${table}`)), 2));

    out.copyTo = await copyOut(client, `COPY (SELECT id, name, price FROM ${table} ORDER BY id) TO STDOUT`);
    out.copyToCSV = await copyOut(client, `COPY ${table} TO STDOUT WITH (FORMAT csv, HEADER)`);

    // CSV in three CopyData messages, one of them splitting a row; quoted
    // commas and quotes, an empty unquoted field as NULL.
    out.copyFromCSV = await copyIn(client, `COPY ${table} FROM STDIN WITH (FORMAT csv)`, [
      '6,kiwi,0.25\n7,"lime, green",',
      '1.5\n8,,4\n',
      '9,"say ""hi""",5\n',
    ]);
    out.copyFromText = await copyIn(client, `COPY ${table} (id, name) FROM STDIN`, ['10\tdate\n11\t\\N\n']);
    out.copyFromBad = await outcome(() => copyIn(client, `COPY ${table} FROM STDIN WITH (FORMAT csv)`, ['12,x,not a number\n']));
    const all = await client.query(`SELECT id, name, price FROM ${table} ORDER BY id`);
    out.afterCopy = all.rows;
    // Rows of several COPYs: in order only by ORDER BY (Hummer scans a
    // table's segments in parallel; PostgreSQL promises no order either).
    out.copyToAfter = await copyOut(client, `COPY (SELECT * FROM ${table} ORDER BY id) TO STDOUT WITH (FORMAT csv)`);
    await client.query(`DROP TABLE ${table}`);
  } finally {
    await client.end();
  }
  process.stdout.write(JSON.stringify(out, null, 1) + '\n');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
