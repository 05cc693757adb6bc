'use strict';
// The endpoints of ../CONTRACT.md, one function each, and the dispatch by path and method.

const crypto = require('node:crypto');
const { setTimeout: timeout } = require('node:timers/promises');

// Waits at least ms of wall time. A Node timer counts from the event loop's cached clock, in
// whole ms, so it may fire up to a ms early; the remainder is waited out again.
async function sleep(ms) {
  const start = process.hrtime.bigint();
  await timeout(ms);
  for (;;) {
    const left = ms - Number(process.hrtime.bigint() - start) / 1e6;
    if (left <= 0) return;
    await timeout(Math.ceil(left));
  }
}
const compute = require('./compute');
const { readJsonObject, textField, msParameter } = require('./input');
const { HttpError, sendBody, sendJson, sendError, nowBody, isDraining } = require('./reply');

// AES-256-CBC (PKCS#7 padding, OpenSSL's default) under `key` with a fresh random IV:
// "IVHEX:CIPHERHEX".
function encrypt(key, plain) {
  const iv = crypto.randomBytes(16);
  const cipher = crypto.createCipheriv('aes-256-cbc', key, iv);
  const data = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return `${iv.toString('hex')}:${data.toString('hex')}`;
}

// `db` (db.js) and `upstream` (upstream.js) are null when their setting is unset.
function createApp({ settings, db, upstream, roundsPerMs }) {
  // SHA-256(SECRET): the 32 raw bytes of the digest, computed once.
  const key = settings.secret ? crypto.createHash('sha256').update(settings.secret, 'utf8').digest() : null;

  // A statement, its failure a 503 (db.js words it).
  async function database(text, values) {
    if (!db) throw new HttpError(503, 'no database configured (set DATABASE_URL)');
    try {
      return await db.query(text, values);
    } catch (err) {
      throw new HttpError(503, err.message);
    }
  }

  async function createUser(req, res) {
    const body = await readJsonObject(req);
    const email = textField(body, 'email');
    const password = textField(body, 'password');
    const result = await database('INSERT INTO users (email, password) VALUES ($1, $2) RETURNING id', [
      email,
      password,
    ]);
    const id = result.rows[0].id;
    sendJson(res, 201, { id }, { Location: `/users/${id}` });
  }

  async function now(req, res) {
    sendJson(res, 200, nowBody());
  }

  async function delay(req, res, query) {
    const ms = msParameter(query, 'ms', 60000, true);
    await sleep(ms);
    sendJson(res, 200, nowBody());
  }

  async function computeHandler(req, res, query) {
    const ms = msParameter(query, 'ms', 10000, true);
    const delayMs = msParameter(query, 'delay_ms', 60000, false);
    if (delayMs > 0) await sleep(delayMs);
    compute.work(ms, roundsPerMs);
    sendJson(res, 200, nowBody());
  }

  async function encryptHandler(req, res) {
    const body = await readJsonObject(req);
    const userId = textField(body, 'userId');
    const password = textField(body, 'password');
    if (!key) throw new HttpError(503, 'no key configured (set SECRET)');
    sendJson(res, 200, { userId: encrypt(key, userId), password: encrypt(key, password) });
  }

  async function proxy(req, res) {
    if (!upstream) throw new HttpError(503, 'no upstream configured (set UPSTREAM_URL)');
    const { body, contentType } = await upstream.fetch();
    sendBody(res, 200, contentType || 'application/octet-stream', body);
  }

  async function health(req, res) {
    if (isDraining()) throw new HttpError(503, 'shutting down');
    if (db) await database('SELECT 1');
    sendJson(res, 200, { status: 'ok' });
  }

  // Path → the one method it answers (GET answers HEAD too, as in Go's ServeMux).
  const routes = new Map([
    ['/users', { method: 'POST', handler: createUser }],
    ['/user', { method: 'POST', handler: createUser }],
    ['/now', { method: 'GET', handler: now }],
    ['/delay', { method: 'GET', handler: delay }],
    ['/compute', { method: 'GET', handler: computeHandler }],
    ['/encrypt', { method: 'POST', handler: encryptHandler }],
    ['/proxy', { method: 'GET', handler: proxy }],
    ['/healthz', { method: 'GET', handler: health }],
  ]);

  function allows(route, method) {
    return method === route.method || (method === 'HEAD' && route.method === 'GET');
  }

  function fail(req, res, err) {
    const known = err instanceof HttpError;
    if (!known) console.error(`${req.method} ${req.url}: ${err.stack || err}`);
    if (res.headersSent || res.destroyed) return;
    if (!known) return sendError(res, 500, 'internal error');
    sendError(res, err.status, err.message, err.close ? { Connection: 'close' } : undefined);
  }

  // The request listener. The path is matched as sent, without decoding; the query string is
  // parsed only by the endpoints that take one.
  return function handle(req, res) {
    const mark = req.url.indexOf('?');
    const path = mark === -1 ? req.url : req.url.slice(0, mark);
    const route = routes.get(path);
    if (!route) return sendError(res, 404, 'not found');
    if (!allows(route, req.method)) {
      const allow = route.method === 'GET' ? 'GET, HEAD' : route.method;
      return sendError(res, 405, `method not allowed: use ${allow}`, { Allow: allow });
    }
    const query = new URLSearchParams(mark === -1 ? '' : req.url.slice(mark + 1));
    route.handler(req, res, query).catch((err) => fail(req, res, err));
  };
}

module.exports = { createApp };
