'use strict';
// The endpoints of ../CONTRACT.md, one function each, and the dispatch by path and method.

const crypto = require('node:crypto');
const http = require('node:http');
const compute = require('./compute');

const MAX_BODY = 64 * 1024;
const UPSTREAM_TIMEOUT_MS = 10000;

class HttpError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

function send(res, status, value, headers = {}) {
  const body = JSON.stringify(value);
  res.writeHead(status, {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(body),
    ...headers,
  });
  res.end(body);
}

function nowBody() {
  return { now: new Date().toISOString() };
}

// The body, at most 64 KiB, as a JSON object.
function readJsonObject(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    let over = false;
    req.on('data', (chunk) => {
      size += chunk.length;
      if (size > MAX_BODY) {
        over = true;
      } else {
        chunks.push(chunk);
      }
    });
    req.on('end', () => {
      if (over) return reject(new HttpError(413, `body over ${MAX_BODY} bytes`));
      let value;
      try {
        value = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch (err) {
        return reject(new HttpError(400, `the body is not JSON: ${err.message}`));
      }
      if (value === null || typeof value !== 'object' || Array.isArray(value)) {
        return reject(new HttpError(400, 'the body must be a JSON object'));
      }
      resolve(value);
    });
    req.on('error', (err) => reject(new HttpError(400, `cannot read the body: ${err.message}`)));
  });
}

// A required string of 1 to 255 characters (code points, as varchar(255) counts).
function textField(body, name) {
  const value = body[name];
  if (value === undefined || value === null) throw new HttpError(400, `${name} is missing`);
  if (typeof value !== 'string') throw new HttpError(400, `${name} must be a string`);
  if (value.length === 0) throw new HttpError(400, `${name} is empty`);
  if (value.length > 255 && [...value].length > 255) {
    throw new HttpError(400, `${name} is over 255 characters`);
  }
  return value;
}

// An integer query parameter in 0..=max.
function msParameter(url, name, max, required = true) {
  const text = url.searchParams.get(name);
  if (text === null) {
    if (!required) return 0;
    throw new HttpError(400, `${name} is missing: ask for ?${name}=N with N in 0..=${max}`);
  }
  if (!/^\d+$/.test(text) || Number(text) > max) {
    throw new HttpError(400, `${name} must be an integer in 0..=${max}`);
  }
  return Number(text);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function createApp({ settings, pool, roundsPerMs }) {
  const key = settings.secret ? crypto.createHash('sha256').update(settings.secret, 'utf8').digest() : null;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1024 });

  function encrypt(plain) {
    const iv = crypto.randomBytes(16);
    const cipher = crypto.createCipheriv('aes-256-cbc', key, iv);
    const data = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return `${iv.toString('hex')}:${data.toString('hex')}`;
  }

  function fetchUpstream() {
    return new Promise((resolve, reject) => {
      const request = http.get(settings.upstreamUrl, { agent }, (response) => {
        const chunks = [];
        response.on('data', (c) => chunks.push(c));
        response.on('end', () => {
          if (response.statusCode < 200 || response.statusCode > 299) {
            return reject(new HttpError(502, `upstream: answered ${response.statusCode}`));
          }
          resolve({ body: Buffer.concat(chunks), type: response.headers['content-type'] });
        });
        response.on('error', (err) => reject(new HttpError(502, `upstream: ${err.message}`)));
      });
      request.setTimeout(UPSTREAM_TIMEOUT_MS, () => {
        request.destroy(new Error(`no answer within ${UPSTREAM_TIMEOUT_MS} ms`));
      });
      request.on('error', (err) => reject(new HttpError(502, `upstream: ${err.message}`)));
    });
  }

  async function database(run) {
    if (!pool) throw new HttpError(503, 'no database configured (set DATABASE_URL)');
    try {
      return await run(pool);
    } catch (err) {
      throw new HttpError(503, `database unavailable: ${err.message}`);
    }
  }

  const routes = {
    '/users': ['POST', createUser],
    '/user': ['POST', createUser],
    '/now': ['GET', async (req, res) => send(res, 200, nowBody())],
    '/delay': ['GET', delay],
    '/compute': ['GET', computeHandler],
    '/encrypt': ['POST', encryptHandler],
    '/proxy': ['GET', proxy],
    '/healthz': ['GET', health],
  };

  async function createUser(req, res) {
    const body = await readJsonObject(req);
    const email = textField(body, 'email');
    const password = textField(body, 'password');
    const result = await database((p) =>
      p.query('INSERT INTO users (email, password) VALUES ($1, $2) RETURNING id', [email, password]),
    );
    const id = result.rows[0].id;
    send(res, 201, { id }, { Location: `/users/${id}` });
  }

  async function delay(req, res, url) {
    await sleep(msParameter(url, 'ms', 60000));
    send(res, 200, nowBody());
  }

  async function computeHandler(req, res, url) {
    const ms = msParameter(url, 'ms', 10000);
    const wait = msParameter(url, 'delay_ms', 60000, false);
    if (wait > 0) await sleep(wait);
    compute.work(ms, roundsPerMs);
    send(res, 200, nowBody());
  }

  async function encryptHandler(req, res) {
    const body = await readJsonObject(req);
    const userId = textField(body, 'userId');
    const password = textField(body, 'password');
    if (!key) throw new HttpError(503, 'no key configured (set SECRET)');
    send(res, 200, { userId: encrypt(userId), password: encrypt(password) });
  }

  async function proxy(req, res) {
    if (!settings.upstreamUrl) throw new HttpError(503, 'no upstream configured (set UPSTREAM_URL)');
    const { body, type } = await fetchUpstream();
    res.writeHead(200, {
      'Content-Type': type || 'application/octet-stream',
      'Content-Length': body.length,
    });
    res.end(body);
  }

  async function health(req, res) {
    if (pool) await database((p) => p.query('SELECT 1'));
    send(res, 200, { status: 'ok' });
  }

  return async function handle(req, res) {
    const url = new URL(req.url, 'http://target');
    const route = routes[url.pathname];
    try {
      if (!route) throw new HttpError(404, 'not found');
      const [method, handler] = route;
      if (req.method !== method) {
        req.resume();
        return send(res, 405, { error: `method not allowed: use ${method}` }, { Allow: method });
      }
      await handler(req, res, url);
    } catch (err) {
      req.resume();
      const status = err instanceof HttpError ? err.status : 500;
      if (status === 500) console.error(err);
      if (!res.headersSent) send(res, status, { error: err.message });
    }
  };
}

module.exports = { createApp };
