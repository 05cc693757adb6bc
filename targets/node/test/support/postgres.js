'use strict';
// Databases of the tests' own on a real PostgreSQL server: the one SHOWDOWN_TEST_POSTGRES_URL
// names (scripts/test.sh starts a throwaway one and sets it). Each is t_<pid>_<n>, made with the
// target's own `pg`, with ../../schema.sql applied unless asked otherwise, and dropped by
// dropTestDatabases() (call it from the file's `after`).

const fs = require('node:fs');
const path = require('node:path');
const { Client } = require('pg');

const SERVER_VAR = 'SHOWDOWN_TEST_POSTGRES_URL';
const SCHEMA = path.join(__dirname, '..', '..', '..', 'schema.sql');
const CONNECT_MS = 5000;

// The server's URL; a test that needs one fails without it, saying where it comes from.
function serverUrl() {
  const url = process.env[SERVER_VAR];
  if (!url) {
    throw new Error(
      `${SERVER_VAR} is not set: this test needs a real PostgreSQL server ` +
        `(postgres://USER@HOST:PORT/DATABASE, a user that may CREATE DATABASE). scripts/test.sh starts ` +
        `a throwaway one and sets it; to run npm test by hand, start one and set ${SERVER_VAR}`,
    );
  }
  return url;
}

// Runs `fn` with a client connected to `url`, closed afterwards.
async function withClient(url, fn) {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: CONNECT_MS });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

const made = new Set();
let serial = 0;

// A database of its own, { name, url, create(), applySchema(), query(text, values), client() }.
// `create: false` only names it (a database that does not exist yet; create() makes it), and
// `schema: false` leaves it empty (applySchema() fills it).
async function testDatabase({ create = true, schema = true } = {}) {
  const server = serverUrl();
  const name = `t_${process.pid}_${serial++}`;
  const url = new URL(server);
  url.pathname = `/${name}`;
  const db = {
    name,
    url: url.toString(),
    async create() {
      await withClient(server, (admin) => admin.query(`CREATE DATABASE "${name}"`));
      made.add(name);
    },
    applySchema() {
      return withClient(db.url, (client) => client.query(fs.readFileSync(SCHEMA, 'utf8')));
    },
    // One statement on a connection of its own.
    query(text, values) {
      return withClient(db.url, (client) => client.query(text, values));
    },
    // A client of the test's own on this database (end() it), e.g. to hold a lock.
    async client() {
      const client = new Client({ connectionString: db.url, connectionTimeoutMillis: CONNECT_MS });
      await client.connect();
      return client;
    },
  };
  if (create) await db.create();
  if (create && schema) await db.applySchema();
  return db;
}

// Drops every database this process made, with whatever is still connected to it.
async function dropTestDatabases() {
  if (made.size === 0) return;
  await withClient(serverUrl(), async (admin) => {
    for (const name of made) {
      await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      made.delete(name);
    }
  });
}

module.exports = { testDatabase, dropTestDatabases };
