'use strict';
// server.js as targets/run starts it: a child process on PORT=0, its ready line, its exit code 2
// for a bad setting, the answers node:http cannot route (a request it cannot parse, headers too
// large, Expect: 100-continue), the drain on SIGTERM (exit 0), and CLUSTER.

const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { setTimeout: sleep } = require('node:timers/promises');
const { request, raw, closedPort } = require('./support/http');

const SERVER = path.join(__dirname, '..', 'server.js');
const READY = /^listening pid=(\d+) port=(\d+) stack=node workers=(\d+)\n$/;
const START_MS = 10000;

// Runs server.js with these settings alone (nothing else from this environment: no PORT or
// DATABASE_URL of the caller's). Resolves once it has exited: { code, signal, stdout, stderr }.
function run(env) {
  const child = spawn(process.execPath, [SERVER], {
    env: { PATH: process.env.PATH, HOST: '127.0.0.1', PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const out = { stdout: '', stderr: '' };
  child.stdout.setEncoding('utf8').on('data', (text) => (out.stdout += text));
  child.stderr.setEncoding('utf8').on('data', (text) => (out.stderr += text));
  // 'close': it has exited and its pipes are read to the end.
  const exited = new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal, ...out })));
  return { child, out, exited };
}

// Starts server.js and waits for its ready line; killed at the end of the test if still running.
async function start(t, env = {}) {
  const server = run(env);
  t.after(() => {
    if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
  });
  const deadline = Date.now() + START_MS;
  while (!server.out.stdout.includes('\n')) {
    if (server.child.exitCode !== null)
      assert.fail(`exited ${server.child.exitCode} before it was ready: ${server.out.stderr}`);
    if (Date.now() > deadline) assert.fail(`no ready line within ${START_MS} ms: ${server.out.stderr}`);
    await sleep(10);
  }
  const ready = server.out.stdout.match(READY);
  assert.ok(ready, `ready line ${JSON.stringify(server.out.stdout)}`);
  assert.equal(Number(ready[1]), server.child.pid);
  server.port = Number(ready[2]);
  server.workers = Number(ready[3]);
  assert.ok(server.port > 0);
  return server;
}

// What `promise` resolves to, if it does within `ms`; the timer does not outlive it.
function within(promise, ms, message) {
  let timer;
  const late = new Promise((resolve, reject) => {
    timer = setTimeout(() => reject(new assert.AssertionError({ message: message() })), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

// Waits for the process to exit, within `ms`.
function exitWithin(server, ms) {
  return within(server.exited, ms, () => `still running ${ms} ms later: ${server.out.stderr}`);
}

const sendTerm = (server) => server.child.kill('SIGTERM');

test(
  'the ready line, the endpoints, and SIGTERM with nothing in flight: exit 0, nothing else on stdout',
  { timeout: 30000 },
  async (t) => {
    const dbPort = await closedPort();
    const server = await start(t, {
      SECRET: 's3cret',
      DATABASE_URL: `postgres://showdown:hunter2@127.0.0.1:${dbPort}/showdown`,
      DB_TIMEOUT_MS: '300',
    });
    assert.equal(server.workers, 1);
    const { port } = server;

    let res = await request(port, 'GET', '/now');
    assert.equal(res.status, 200);
    assert.match(res.json.now, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    assert.equal(res.headers['content-type'], 'application/json');
    assert.equal(Number(res.headers['content-length']), Buffer.byteLength(res.text));
    assert.ok(res.headers.date);

    res = await request(port, 'GET', '/delay?ms=20');
    assert.equal(res.status, 200);
    assert.ok(res.ms >= 20, `/delay?ms=20 answered after ${res.ms.toFixed(1)} ms`);
    res = await request(port, 'GET', '/compute?ms=5');
    assert.equal(res.status, 200);

    res = await request(port, 'POST', '/encrypt', { body: '{"userId":"u-1","password":"pw"}' });
    assert.equal(res.status, 200);
    const key = crypto.createHash('sha256').update('s3cret').digest();
    for (const [field, plain] of [
      ['userId', 'u-1'],
      ['password', 'pw'],
    ]) {
      const [iv, data] = res.json[field].split(':');
      const decipher = crypto.createDecipheriv('aes-256-cbc', key, Buffer.from(iv, 'hex'));
      assert.equal(Buffer.concat([decipher.update(Buffer.from(data, 'hex')), decipher.final()]).toString(), plain);
    }

    for (const [method, target, body] of [
      ['GET', '/delay?ms=-1'],
      ['GET', '/compute?ms=x'],
      ['POST', '/encrypt', '{"userId":"u"}'],
      ['POST', '/users', '{"email":"a@b.c","password":""}'],
    ]) {
      res = await request(port, method, target, { body });
      assert.equal(res.status, 400, `${method} ${target}: ${res.text}`);
    }
    assert.equal((await request(port, 'GET', '/nope')).status, 404);

    // The database is a closed port: 503 within DB_TIMEOUT_MS, the password never told.
    for (const [method, target, body] of [
      ['GET', '/healthz'],
      ['POST', '/users', '{"email":"a@b.c","password":"p"}'],
    ]) {
      res = await request(port, method, target, { body });
      assert.equal(res.status, 503, `${method} ${target}: ${res.text}`);
      assert.ok(res.ms < 300 + 400, `${method} ${target} answered after ${res.ms.toFixed(0)} ms`);
      assert.ok(!res.text.includes('hunter2'), res.text);
    }

    sendTerm(server);
    const result = await exitWithin(server, 5000);
    assert.deepEqual([result.code, result.signal], [0, null], result.stderr);
    assert.match(result.stdout, READY, 'anything but the ready line on standard output');
    assert.ok(!result.stderr.includes('hunter2'), result.stderr);
  },
);

test('a bad setting ends the target at start: exit 2, one line on stderr naming it', { timeout: 30000 }, async () => {
  for (const [name, value] of [
    ['PORT', 'eighty'],
    ['PORT', '65536'],
    ['DB_POOL', '0'],
    ['DB_TIMEOUT_MS', 'soon'],
    ['DATABASE_URL', 'mysql://u:hunter2@127.0.0.1/db'],
    ['UPSTREAM_URL', 'ftp://127.0.0.1/'],
    ['HOST', 'localhost'],
    ['CLUSTER', 'yes'],
  ]) {
    const result = await exitWithin(run({ [name]: value }), 5000);
    const what = `${name}=${value}: ${result.stderr}`;
    assert.deepEqual([result.code, result.signal], [2, null], what);
    assert.equal(result.stdout, '', what);
    assert.match(result.stderr, /^Error: [^\n]*\n$/, what);
    assert.ok(result.stderr.includes(`fix ${name}`), what);
    assert.ok(!result.stderr.includes('hunter2'), what);
  }
});

test('a port in use ends the target with an error naming it', { timeout: 30000 }, async (t) => {
  const taken = net.createServer();
  await new Promise((resolve) => taken.listen(0, '127.0.0.1', resolve));
  t.after(() => taken.close());
  const result = await exitWithin(run({ PORT: String(taken.address().port) }), START_MS);
  assert.notEqual(result.code, 0);
  assert.equal(result.stdout, '');
  assert.match(result.stderr, /cannot listen on 127\.0\.0\.1:\d+: .*\(change PORT or HOST\)/);
});

test('what node:http cannot route is answered in JSON too', { timeout: 30000 }, async (t) => {
  const { port } = await start(t);
  const answerOf = (text) => {
    const [head, body] = text.split('\r\n\r\n');
    return { statusLine: head.split('\r\n')[0], head, json: JSON.parse(body) };
  };

  // A request that does not parse: 400, and the connection closed.
  let res = answerOf(await raw(port, 'NOT HTTP AT ALL\r\n\r\n'));
  assert.equal(res.statusLine, 'HTTP/1.1 400 Bad Request');
  assert.match(res.head, /\r\nContent-Type: application\/json\r\n/);
  assert.match(res.json.error, /^bad request: /);

  // Headers over node:http's limit (16 KiB): 431.
  res = answerOf(await raw(port, `GET /now HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20000)}\r\n\r\n`));
  assert.equal(res.statusLine, 'HTTP/1.1 431 Request Header Fields Too Large');
  assert.ok(res.json.error);

  // Expect: 100-continue with a body over the limit: 413 at once, no 100 Continue, closed.
  const text = await raw(
    port,
    'POST /users HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
      'Content-Length: 100000\r\nExpect: 100-continue\r\n\r\n',
  );
  assert.ok(!text.includes('100 Continue'), text);
  res = answerOf(text);
  assert.equal(res.statusLine, 'HTTP/1.1 413 Payload Too Large');
  assert.match(res.head, /\r\nConnection: close\r\n/i);

  // A body a little over the limit, sent whole: 413, and the connection is kept for the next.
  const big = JSON.stringify({ email: 'x'.repeat(70 * 1024), password: 'p' });
  const both = await raw(
    port,
    `POST /users HTTP/1.1\r\nHost: x\r\nContent-Length: ${Buffer.byteLength(big)}\r\n\r\n${big}` +
      'GET /now HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
  );
  const statuses = both.match(/HTTP\/1\.1 \d{3}/g);
  assert.deepEqual(statuses, ['HTTP/1.1 413', 'HTTP/1.1 200'], both.slice(0, 500));
});

test(
  'SIGTERM: requests in flight are answered, idle connections closed, new ones refused, exit 0',
  { timeout: 30000 },
  async (t) => {
    const server = await start(t);
    const { port } = server;

    // An idle keep-alive connection, after one answer.
    const idle = net.connect(port, '127.0.0.1');
    let idleText = '';
    idle.setEncoding('utf8').on('data', (text) => (idleText += text));
    const idleClosed = new Promise((resolve) => idle.on('close', resolve));
    idle.on('error', () => {});
    idle.write('GET /now HTTP/1.1\r\nHost: x\r\n\r\n');
    while (!idleText.includes('"now"')) await sleep(5);

    const slow = [request(port, 'GET', '/delay?ms=600'), request(port, 'GET', '/compute?ms=5&delay_ms=500')];
    await sleep(150);
    const signalled = performance.now();
    sendTerm(server);

    // The idle connection goes; a new one is refused.
    await within(idleClosed, 3000, () => 'the idle connection was kept');
    await sleep(50);
    await assert.rejects(request(port, 'GET', '/now'), { code: 'ECONNREFUSED' });

    for (const res of await Promise.all(slow)) {
      assert.equal(res.status, 200, res.text);
      assert.equal(res.headers.connection, 'close');
    }
    const result = await exitWithin(server, 5000);
    assert.deepEqual([result.code, result.signal], [0, null], result.stderr);
    assert.ok(performance.now() - signalled >= 300, 'exited before its requests were answered');
    assert.match(result.stderr, /stopping \(SIGTERM\)/);
    assert.match(result.stdout, READY);
  },
);

test('SIGINT stops it too, exit 0', { timeout: 30000 }, async (t) => {
  const server = await start(t);
  server.child.kill('SIGINT');
  const result = await exitWithin(server, 5000);
  assert.deepEqual([result.code, result.signal], [0, null], result.stderr);
});

// The children of `pid`, where Linux lists them.
function childrenOf(pid) {
  try {
    return fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return null;
  }
}

test(
  'CLUSTER=2: one ready line for two workers, a dead worker replaced, SIGTERM passed on, exit 0',
  { timeout: 30000 },
  async (t) => {
    const server = await start(t, { CLUSTER: '2' });
    assert.equal(server.workers, 2);
    const { port } = server;
    for (let i = 0; i < 6; i++) assert.equal((await request(port, 'GET', '/now')).status, 200);
    assert.equal((await request(port, 'GET', '/healthz')).status, 200);

    const workers = childrenOf(server.child.pid);
    if (workers !== null) {
      assert.equal(workers.length, 2, `workers ${workers}`);
      process.kill(workers[0], 'SIGKILL');
      // Restarted after at most the back-off (1 s), and serving.
      const deadline = Date.now() + 8000;
      let now;
      while (Date.now() < deadline) {
        now = childrenOf(server.child.pid);
        if (now.length === 2 && !now.includes(workers[0])) break;
        await sleep(50);
      }
      assert.equal(now.length, 2, `workers ${now} after ${workers[0]} was killed`);
      assert.ok(!now.includes(workers[0]));
      for (let i = 0; i < 6; i++) assert.equal((await request(port, 'GET', '/now')).status, 200);
      assert.match(server.out.stderr, /cluster: worker \d+ died \(signal SIGKILL\)/);
    } else {
      t.diagnostic('no /proc/PID/task/PID/children here: the restart of a dead worker is not checked');
    }

    const inFlight = request(port, 'GET', '/delay?ms=300');
    await sleep(100);
    sendTerm(server);
    assert.equal((await inFlight).status, 200);
    const result = await exitWithin(server, 8000);
    assert.deepEqual([result.code, result.signal], [0, null], result.stderr);
    assert.match(result.stdout, READY, 'anything but the one ready line on standard output');
  },
);
