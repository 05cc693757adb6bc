'use strict';
// reply.js: every answer whole, JSON, with its Content-Length; errors as {"error": "..."}; the
// raw answer to a request node:http could not parse; Connection: close once draining.

const test = require('node:test');
const assert = require('node:assert/strict');
const reply = require('../reply');

// A response as reply.js uses one: what writeHead and end were given.
function fakeResponse() {
  return {
    status: undefined,
    headers: undefined,
    body: undefined,
    ends: 0,
    writeHead(status, headers) {
      assert.equal(this.status, undefined, 'writeHead twice');
      this.status = status;
      this.headers = headers;
    },
    end(body) {
      this.ends++;
      this.body = body;
    },
  };
}

test('sendJson answers the JSON whole with its type and its length in bytes', () => {
  const res = fakeResponse();
  reply.sendJson(res, 201, { id: 7, name: 'é😀' }, { Location: '/users/7' });
  assert.equal(res.status, 201);
  assert.equal(res.ends, 1);
  assert.deepEqual(JSON.parse(res.body), { id: 7, name: 'é😀' });
  assert.deepEqual(res.headers, {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(res.body),
    Location: '/users/7',
  });
  // Bytes, not UTF-16 units: é is 2 bytes and 😀 is 4.
  assert.equal(res.headers['Content-Length'], res.body.length + 1 + 2);
});

test('sendError answers {"error": MESSAGE} with the status and extra headers given', () => {
  const res = fakeResponse();
  reply.sendError(res, 405, 'method not allowed: use POST', { Allow: 'POST' });
  assert.equal(res.status, 405);
  assert.deepEqual(JSON.parse(res.body), { error: 'method not allowed: use POST' });
  assert.equal(res.headers['Content-Type'], 'application/json');
  assert.equal(res.headers['Content-Length'], Buffer.byteLength(res.body));
  assert.equal(res.headers.Allow, 'POST');
});

test('sendBody passes a Buffer on with its own type and length', () => {
  const res = fakeResponse();
  const body = Buffer.from([0, 1, 2, 0xff]);
  reply.sendBody(res, 200, 'application/octet-stream', body);
  assert.equal(res.body, body);
  assert.deepEqual(res.headers, { 'Content-Type': 'application/octet-stream', 'Content-Length': 4 });
});

test('HttpError carries a status, a message and whether to close', () => {
  const plain = new reply.HttpError(400, 'bad');
  assert.ok(plain instanceof Error);
  assert.deepEqual([plain.status, plain.message, plain.close], [400, 'bad', false]);
  const closing = new reply.HttpError(413, 'too big', { close: true });
  assert.equal(closing.close, true);
});

test('nowBody is UTC, RFC 3339 with milliseconds, and now', () => {
  const before = Date.now();
  const { now } = reply.nowBody();
  assert.match(now, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  const at = Date.parse(now);
  assert.ok(at >= before && at <= Date.now(), now);
});

test('rawError is a whole HTTP/1.1 answer in JSON that closes its connection', () => {
  const text = reply.rawError(431, 'request headers too large');
  const [head, body] = text.split('\r\n\r\n');
  const lines = head.split('\r\n');
  assert.equal(lines[0], 'HTTP/1.1 431 Request Header Fields Too Large');
  const headers = Object.fromEntries(lines.slice(1).map((l) => l.split(': ')));
  assert.equal(headers['Content-Type'], 'application/json');
  assert.equal(Number(headers['Content-Length']), Buffer.byteLength(body));
  assert.equal(headers.Connection, 'close');
  assert.ok(!Number.isNaN(Date.parse(headers.Date)), headers.Date);
  assert.deepEqual(JSON.parse(body), { error: 'request headers too large' });
});

// Last: draining is for good (the module's state, in this test file's own process).
test('once draining, every answer closes its connection', () => {
  assert.equal(reply.isDraining(), false);
  let res = fakeResponse();
  reply.sendJson(res, 200, {});
  assert.equal(res.headers.Connection, undefined);
  reply.startDraining();
  assert.equal(reply.isDraining(), true);
  res = fakeResponse();
  reply.sendJson(res, 200, {});
  assert.equal(res.headers.Connection, 'close');
});
