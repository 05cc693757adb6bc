'use strict';
// app.js over real HTTP, in this process: the app on node:http on a free port of 127.0.0.1,
// with no database (or db.js against a closed port, or a database of its own on the real
// PostgreSQL that SHOWDOWN_TEST_POSTGRES_URL names), no upstream (or a local one), with and
// without SECRET.

const { test, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const http = require('node:http');
const { createApp } = require('../app');
const { createDatabase } = require('../db');
const { createUpstream } = require('../upstream');
const { readSettings } = require('../settings');
const compute = require('../compute');
const { request, closedPort } = require('./support/http');
const { testDatabase, dropTestDatabases } = require('./support/postgres');

const SECRET = 's3cret';
const DB_TIMEOUT_MS = 300;
const roundsPerMs = compute.calibrate();

// Serves an app on a free port until the test ends; `env` as the target would read it.
async function serve(t, env = {}) {
  const settings = readSettings({ PORT: '0', DB_TIMEOUT_MS: String(DB_TIMEOUT_MS), ...env });
  const db = createDatabase(settings, 2);
  const upstream = createUpstream(settings.upstreamUrl);
  const server = http.createServer(createApp({ settings, db, upstream, roundsPerMs }));
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    if (upstream) upstream.close();
    if (db) await db.close();
  });
  return server.address().port;
}

// A local upstream for /proxy, answering `status`, `type` and `body`, until the test ends.
async function upstreamServer(t, status, type, body) {
  const server = http.createServer((req, res) => {
    const headers = { 'Content-Length': Buffer.byteLength(body) };
    if (type) headers['Content-Type'] = type;
    res.writeHead(status, headers);
    res.end(body);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  });
  return `http://127.0.0.1:${server.address().port}/fixture`;
}

// The contract's answer: the status, application/json, a Content-Length that is the body's, a
// Date, no chunks; answers the parsed body.
function answer(res, status) {
  assert.equal(res.status, status, `status ${res.status}, want ${status}: ${res.text}`);
  assert.equal(res.headers['content-type'], 'application/json');
  assert.equal(Number(res.headers['content-length']), Buffer.byteLength(res.text));
  assert.equal(res.headers['transfer-encoding'], undefined);
  assert.ok(!Number.isNaN(Date.parse(res.headers.date)), `Date ${res.headers.date}`);
  assert.notEqual(res.json, undefined, `not JSON: ${res.text}`);
  if (status >= 400) {
    assert.deepEqual(Object.keys(res.json), ['error']);
    assert.equal(typeof res.json.error, 'string');
    assert.ok(res.json.error.length > 0);
  }
  return res.json;
}

function assertNow(body) {
  assert.deepEqual(Object.keys(body), ['now']);
  assert.match(body.now, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  assert.ok(Math.abs(Date.parse(body.now) - Date.now()) < 5000, body.now);
}

// Undoes /encrypt as the contract suite does: lower-case IVHEX:CIPHERHEX, AES-256-CBC with
// PKCS#7 padding under SHA-256(secret).
function decrypt(secret, value) {
  assert.match(value, /^[0-9a-f]{32}:(?:[0-9a-f]{32})+$/, value);
  const [ivHex, dataHex] = value.split(':');
  const key = crypto.createHash('sha256').update(secret, 'utf8').digest();
  const decipher = crypto.createDecipheriv('aes-256-cbc', key, Buffer.from(ivHex, 'hex'));
  return Buffer.concat([decipher.update(Buffer.from(dataHex, 'hex')), decipher.final()]).toString('utf8');
}

const USER = JSON.stringify({ email: 'a@b.c', password: 'p' });

test('unknown paths are 404 and other methods 405 with Allow, in JSON', async (t) => {
  const port = await serve(t);
  for (const path of ['/', '/no/such/path', '/now/', '/NOW', '/users/1', '/now%20', '/nowhere?ms=1']) {
    answer(await request(port, 'GET', path), 404);
  }
  let res = await request(port, 'GET', '/users');
  answer(res, 405);
  assert.equal(res.headers.allow, 'POST');
  res = await request(port, 'PUT', '/user', { body: USER });
  answer(res, 405);
  assert.equal(res.headers.allow, 'POST');
  res = await request(port, 'DELETE', '/now');
  answer(res, 405);
  assert.equal(res.headers.allow, 'GET, HEAD');
  res = await request(port, 'POST', '/delay?ms=1', { body: '{}' });
  answer(res, 405);
  assert.equal(res.headers.allow, 'GET, HEAD');
});

test('GET /now is UTC with milliseconds; HEAD answers the headers alone', async (t) => {
  const port = await serve(t);
  assertNow(answer(await request(port, 'GET', '/now'), 200));
  const head = await request(port, 'HEAD', '/now');
  assert.equal(head.status, 200);
  assert.equal(head.text, '');
  assert.equal(head.headers['content-type'], 'application/json');
  assert.ok(Number(head.headers['content-length']) > 0);
});

test('GET /delay waits the time asked, without blocking', async (t) => {
  const port = await serve(t);
  const res = await request(port, 'GET', '/delay?ms=20');
  assertNow(answer(res, 200));
  assert.ok(res.ms >= 20, `answered after ${res.ms.toFixed(1)} ms`);
  assert.ok(res.ms < 2000, `answered after ${res.ms.toFixed(1)} ms`);
  // A timer, not a busy wait: ten at once take about as long as one.
  const started = performance.now();
  const all = await Promise.all(Array.from({ length: 10 }, () => request(port, 'GET', '/delay?ms=200')));
  for (const r of all) answer(r, 200);
  const took = performance.now() - started;
  assert.ok(took >= 200 && took < 1500, `ten concurrent 200 ms delays took ${took.toFixed(0)} ms`);
  answer(await request(port, 'GET', '/delay?ms=0'), 200);
});

test('GET /delay refuses a missing or bad ms with 400', async (t) => {
  const port = await serve(t);
  for (const query of ['', '?', '?ms=', '?ms=-1', '?ms=abc', '?ms=1.5', '?ms=%2B5', '?ms=60001', '?delay=5']) {
    answer(await request(port, 'GET', `/delay${query}`), 400);
  }
});

test('GET /compute spends the CPU asked, after delay_ms when given', async (t) => {
  const port = await serve(t);
  let before = process.cpuUsage();
  assertNow(answer(await request(port, 'GET', '/compute?ms=5'), 200));
  let spent = process.cpuUsage(before);
  assert.ok((spent.user + spent.system) / 1000 >= 5, 'less than 5 ms of CPU');

  before = process.cpuUsage();
  const res = await request(port, 'GET', '/compute?ms=5&delay_ms=20');
  assertNow(answer(res, 200));
  spent = process.cpuUsage(before);
  assert.ok((spent.user + spent.system) / 1000 >= 5, 'less than 5 ms of CPU');
  // Only the delay is a wall-clock promise: the 5 ms are of the process's CPU clock, which
  // counts every thread (the collector's helpers too), so they may pass in less wall time.
  assert.ok(res.ms >= 20, `answered after ${res.ms.toFixed(1)} ms`);
  answer(await request(port, 'GET', '/compute?ms=0'), 200);
});

test('GET /compute refuses a missing or bad ms or delay_ms with 400', async (t) => {
  const port = await serve(t);
  for (const query of [
    '',
    '?ms=',
    '?ms=-5',
    '?ms=10001',
    '?ms=1.0',
    '?delay_ms=5',
    '?ms=1&delay_ms=-5',
    '?ms=1&delay_ms=60001',
    '?ms=1&delay_ms=x',
  ]) {
    answer(await request(port, 'GET', `/compute${query}`), 400);
  }
});

test('POST /encrypt encrypts both values under SHA-256(SECRET), each with a fresh IV', async (t) => {
  const port = await serve(t, { SECRET });
  for (const [userId, password] of [
    ['u', 'p'],
    ['user-42', 'exactly sixteen!'],
    ['é'.repeat(255), '😀'.repeat(255)],
  ]) {
    const body = answer(await request(port, 'POST', '/encrypt', { body: JSON.stringify({ userId, password }) }), 200);
    assert.deepEqual(Object.keys(body).sort(), ['password', 'userId']);
    assert.equal(decrypt(SECRET, body.userId), userId);
    assert.equal(decrypt(SECRET, body.password), password);
    assert.notEqual(body.userId.slice(0, 32), body.password.slice(0, 32), 'the same IV twice');
    // Under another key: a padding error, or (about one time in 256) bytes that are not it.
    let other;
    try {
      other = decrypt('another secret', body.userId);
    } catch {
      other = undefined;
    }
    assert.notEqual(other, userId, 'decrypted under another key');
  }
  const first = answer(await request(port, 'POST', '/encrypt', { body: '{"userId":"u","password":"p"}' }), 200);
  const again = answer(await request(port, 'POST', '/encrypt', { body: '{"userId":"u","password":"p"}' }), 200);
  assert.notEqual(first.userId, again.userId, 'the same value encrypted the same way twice');
});

test('POST /encrypt: bad bodies are 400, even without SECRET; without it a good one is 503', async (t) => {
  for (const env of [{ SECRET }, {}]) {
    const port = await serve(t, env);
    for (const body of [
      'not json',
      '[]',
      '{"userId":"u"}',
      '{"password":"p"}',
      '{"userId":1,"password":"p"}',
      '{"userId":"","password":"p"}',
      JSON.stringify({ userId: 'u', password: 'x'.repeat(256) }),
    ]) {
      answer(await request(port, 'POST', '/encrypt', { body }), 400);
    }
  }
  const port = await serve(t);
  answer(await request(port, 'POST', '/encrypt', { body: '{"userId":"u","password":"p"}' }), 503);
});

test('POST /users and /user without a database: bad bodies 400, good ones 503, big ones 413', async (t) => {
  const port = await serve(t);
  for (const path of ['/users', '/user']) {
    answer(await request(port, 'POST', path, { body: '{"email":"a"}' }), 400);
    answer(await request(port, 'POST', path, { body: 'nope' }), 400);
    answer(await request(port, 'POST', path, { body: USER }), 503);
  }
  const big = JSON.stringify({ email: 'x'.repeat(70 * 1024), password: 'p' });
  answer(await request(port, 'POST', '/users', { body: big }), 413);
});

test('GET /healthz without a database is 200 {"status":"ok"}', async (t) => {
  const port = await serve(t);
  assert.deepEqual(answer(await request(port, 'GET', '/healthz'), 200), { status: 'ok' });
});

test('GET /proxy passes the upstream’s body and type on; 502 when it fails; 503 unset', async (t) => {
  answer(await request(await serve(t), 'GET', '/proxy'), 503);

  let port = await serve(t, { UPSTREAM_URL: await upstreamServer(t, 200, 'text/plain; charset=utf-8', 'héllo') });
  for (let i = 0; i < 3; i++) {
    const res = await request(port, 'GET', '/proxy');
    assert.equal(res.status, 200);
    assert.equal(res.text, 'héllo');
    assert.equal(res.headers['content-type'], 'text/plain; charset=utf-8');
    assert.equal(Number(res.headers['content-length']), Buffer.byteLength('héllo'));
  }

  port = await serve(t, { UPSTREAM_URL: await upstreamServer(t, 200, null, 'raw') });
  const res = await request(port, 'GET', '/proxy');
  assert.equal(res.status, 200);
  assert.equal(res.headers['content-type'], 'application/octet-stream');

  port = await serve(t, { UPSTREAM_URL: await upstreamServer(t, 500, 'application/json', '{"error":"x"}') });
  answer(await request(port, 'GET', '/proxy'), 502);
  port = await serve(t, { UPSTREAM_URL: await upstreamServer(t, 302, 'text/plain', 'moved') });
  answer(await request(port, 'GET', '/proxy'), 502);
  port = await serve(t, { UPSTREAM_URL: `http://127.0.0.1:${await closedPort()}/` });
  answer(await request(port, 'GET', '/proxy'), 502);
});

// The database cases: every 503 within DB_TIMEOUT_MS of the request (with room for a busy host).
const WITHIN = DB_TIMEOUT_MS + 400;

test('a database that refuses connections: 503 within DB_TIMEOUT_MS, for /users and /healthz', async (t) => {
  const port = await serve(t, { DATABASE_URL: `postgres://showdown@127.0.0.1:${await closedPort()}/showdown` });
  answer(await request(port, 'POST', '/users', { body: '{"email":1}' }), 400);
  for (const [method, path, body] of [
    ['POST', '/users', USER],
    ['GET', '/healthz', undefined],
    ['POST', '/user', USER],
  ]) {
    const res = await request(port, method, path, { body });
    answer(res, 503);
    assert.match(res.json.error, /^database unavailable/);
    assert.ok(res.ms < WITHIN, `${path} answered after ${res.ms.toFixed(0)} ms`);
  }
});

// The rest on the real PostgreSQL server: the file's database (the schema applied), made once;
// every database made here is dropped at the end.
after(dropTestDatabases);
let shared;
const sharedDatabase = () => (shared ??= testDatabase());

// The rows of `users` with these ids, by id.
async function rows(db, ids) {
  const result = await db.query('SELECT id, email, password FROM users WHERE id = ANY($1) ORDER BY id', [ids]);
  return result.rows;
}

test('a database that does not exist yet: 503 naming it, then 201 once it is made, without a restart', async (t) => {
  const db = await testDatabase({ create: false });
  const port = await serve(t, { DATABASE_URL: db.url });
  let res = await request(port, 'POST', '/users', { body: USER });
  answer(res, 503);
  const missing = `database error: database "${db.name}" does not exist (SQLSTATE 3D000)`;
  assert.equal(res.json.error, missing);
  assert.ok(res.ms < WITHIN, `answered after ${res.ms.toFixed(0)} ms`);
  res = await request(port, 'GET', '/healthz');
  answer(res, 503);
  assert.equal(res.json.error, missing);

  await db.create();
  await db.applySchema();
  res = await request(port, 'POST', '/users', { body: USER });
  const { id } = answer(res, 201);
  assert.deepEqual(await rows(db, [id]), [{ id, email: 'a@b.c', password: 'p' }]);
  assert.deepEqual(answer(await request(port, 'GET', '/healthz'), 200), { status: 'ok' });
});

test('a database that answers with an error: 503 naming it; the connection is not poisoned', async (t) => {
  const db = await testDatabase({ schema: false });
  const port = await serve(t, { DATABASE_URL: db.url });
  for (const path of ['/users', '/user']) {
    const res = await request(port, 'POST', path, { body: USER });
    answer(res, 503);
    assert.equal(res.json.error, 'database error: relation "users" does not exist (SQLSTATE 42P01)');
  }
  // The server is up: /healthz asks it nothing of the table.
  assert.deepEqual(answer(await request(port, 'GET', '/healthz'), 200), { status: 'ok' });
  // The table there now, the app not restarted: the next statement gets its own answer.
  await db.applySchema();
  const { id } = answer(await request(port, 'POST', '/users', { body: USER }), 201);
  assert.deepEqual(await rows(db, [id]), [{ id, email: 'a@b.c', password: 'p' }]);
});

test('POST /users inserts the values as given and answers 201 with the id and its Location', async (t) => {
  const db = await sharedDatabase();
  const port = await serve(t, { DATABASE_URL: db.url });
  assert.deepEqual(answer(await request(port, 'GET', '/healthz'), 200), { status: 'ok' });

  const given = [
    ['/users', { email: ' A@B.c ', password: 'pä😀', extra: { ignored: true } }],
    ['/user', { email: 'a@b.c', password: 'p' }],
    ['/users', { email: 'é'.repeat(255), password: "'); DROP TABLE users; --" }],
  ];
  const ids = [];
  for (const [path, value] of given) {
    const res = await request(port, 'POST', path, { body: JSON.stringify(value) });
    const body = answer(res, 201);
    assert.deepEqual(Object.keys(body), ['id']);
    assert.ok(Number.isInteger(body.id) && body.id > 0, `id ${body.id}`);
    assert.equal(res.headers.location, `/users/${body.id}`);
    ids.push(body.id);
  }
  assert.deepEqual(
    await rows(db, ids),
    given.map(([, { email, password }], i) => ({ id: ids[i], email, password })),
  );
  assert.deepEqual(answer(await request(port, 'GET', '/healthz'), 200), { status: 'ok' });
});

test('twenty at once through a pool of two: never more than two connections, every row inserted', async (t) => {
  const db = await sharedDatabase();
  // Time enough to wait for a connection while the table is locked.
  const port = await serve(t, { DATABASE_URL: db.url, DB_TIMEOUT_MS: '10000' });
  answer(await request(port, 'GET', '/healthz'), 200);

  // The app's connections to this database, and those of them waiting on a lock.
  const observer = await db.client();
  t.after(() => observer.end());
  const connections = async () => {
    const { rows } = await observer.query(
      `SELECT count(*)::int AS open, (count(*) FILTER (WHERE wait_event_type = 'Lock'))::int AS waiting
         FROM pg_stat_activity WHERE datname = $1 AND application_name = 'showdown-target-node'`,
      [db.name],
    );
    return rows[0];
  };

  // The table locked against inserts: the twenty requests pile up, two in the database.
  const holder = await db.client();
  t.after(() => holder.end());
  await holder.query('BEGIN');
  await holder.query('LOCK TABLE users IN EXCLUSIVE MODE');
  const all = Promise.all(
    Array.from({ length: 20 }, () => request(port, 'POST', '/users', { body: USER, timeoutMs: 15000 })),
  );

  let seen = { open: 0, waiting: 0 };
  let most = 0;
  const deadline = Date.now() + 5000;
  while (seen.waiting < 2 && Date.now() < deadline) {
    seen = await connections();
    most = Math.max(most, seen.open);
  }
  assert.equal(seen.waiting, 2, `${seen.waiting} of the app's connections waiting on the lock after 5 s`);
  // A while longer: still two, however many requests wait for one.
  for (const until = Date.now() + 300; Date.now() < until;) {
    seen = await connections();
    most = Math.max(most, seen.open);
  }
  assert.deepEqual(seen, { open: 2, waiting: 2 });
  assert.equal(most, 2, `${most} connections for a pool of 2`);

  await holder.query('COMMIT');
  const ids = (await all).map((r) => answer(r, 201).id);
  assert.equal(new Set(ids).size, 20);
  assert.equal((await rows(db, ids)).length, 20);
  assert.ok((await connections()).open <= 2);
});
