// Run by cmd/hummer/nodepg_test.go: node-postgres (the `pg` package) against
// `hummer serve`. Every query here has parameters, so pg sends it with the
// extended protocol (Parse/Bind/Describe/Execute/Sync), its values as text
// and their types left to the server. The connection comes from the PG*
// environment variables; argv[2] is a JSON object of the values to bind. The
// results, or the server's error fields, go to stdout as one JSON object for
// the Go test to check against its own counts.
'use strict';

const { Client } = require('pg');

const args = JSON.parse(process.argv[2]);

// WordCount's inner query, as the README spells it.
const words = "(SELECT unnest(string_split(lower(line), ' ')) AS word FROM docs) AS t";
const countText = `SELECT COUNT(*) AS n FROM ${words} WHERE word = $1`;

// run runs one query and describes its outcome; a server error is an outcome,
// anything else (a broken connection, a protocol error in pg) ends the script.
async function run(client, config) {
  try {
    const r = await client.query(config);
    return {
      text: config.text,
      fields: r.fields.map((f) => ({ name: f.name, type: f.dataTypeID })),
      rows: r.rows,
      command: r.command,
      rowCount: r.rowCount,
    };
  } catch (e) {
    if (!e.code) {
      throw e;
    }
    return {
      text: config.text,
      error: { severity: e.severity, code: e.code, message: e.message, position: e.position },
    };
  }
}

async function main() {
  const client = new Client();
  await client.connect();
  const out = {};
  try {
    // The unnamed statement, one text parameter.
    out.count = await run(client, { text: countText, values: [args.word] });
    // A NULL parameter: word = NULL holds for no row.
    out.nullParam = await run(client, { text: countText, values: [null] });
    // A text and a numeric parameter; pg sends the number as its text.
    out.mixed = await run(client, {
      text: `SELECT word, COUNT(*) AS n FROM ${words} WHERE word LIKE $1 GROUP BY word HAVING COUNT(*) >= $2 ORDER BY n DESC, word`,
      values: [args.prefix + '%', args.min],
    });
    // A named statement: pg parses it once per connection, then only binds.
    out.prepared = [];
    for (const w of args.prepared) {
      out.prepared.push(await run(client, { name: 'count_word', text: countText, values: [w] }));
    }
    // Errors: a misspelt column (SQLSTATE and position), then a value that is not
    // a number for a numeric parameter.
    out.badColumn = await run(client, {
      text: `SELECT word, COUNT(*) AS n FROM ${words} WHERE wrod = $1 GROUP BY word`,
      values: [args.word],
    });
    out.badParam = await run(client, {
      text: `SELECT COUNT(*) AS n FROM ${words} WHERE length(word) > $1`,
      values: ['many'],
    });
    // The connection and its named statement outlive the errors.
    out.afterErrors = await run(client, { name: 'count_word', text: countText, values: [args.word] });
  } finally {
    await client.end();
  }
  process.stdout.write(JSON.stringify(out) + '\n');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
