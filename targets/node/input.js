'use strict';
// The checks on request bodies and query parameters. Input is checked before any other work:
// a bad body or parameter is 400 even when the database is down or SECRET unset.

const { HttpError } = require('./reply');

// The largest request body; a larger one is 413.
const MAX_BODY = 64 * 1024;
// A body announced a little over the limit is read to its end and dropped after its 413, so
// that a client that sends the whole body before it reads the answer still gets the answer, and
// the connection is kept. Past that (or with no length announced) the rest is not read: the
// connection is closed after the 413.
const DISCARD_MAX = 1024 * 1024;
// The most characters (code points, as varchar(255) counts) of a text field.
const MAX_TEXT = 255;

// JSON is UTF-8 (RFC 8259): bytes that are not are refused rather than replaced with U+FFFD.
const utf8 = new TextDecoder('utf-8', { fatal: true });

function tooLarge(close) {
  return new HttpError(413, `the body is over ${MAX_BODY} bytes`, { close });
}

// The request's body, at most MAX_BODY bytes, as a JSON object. A body announced or found to be
// larger is refused at once.
function readJsonObject(req) {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (declared > MAX_BODY) {
      // With Expect: 100-continue the client was not asked for the body (server.js): it may
      // never come, so the connection cannot be kept waiting for it.
      return reject(tooLarge(declared > MAX_BODY + DISCARD_MAX || req.headers.expect !== undefined));
    }

    const chunks = [];
    let size = 0;
    const onData = (chunk) => {
      size += chunk.length;
      if (size > MAX_BODY) {
        req.removeListener('data', onData);
        req.removeListener('end', onEnd);
        req.pause();
        reject(tooLarge(true));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      try {
        resolve(parseObject(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size)));
      } catch (err) {
        reject(err);
      }
    };
    req.on('data', onData);
    req.on('end', onEnd);
    // The client went away mid-body: nobody will read the answer, but the handler must end.
    req.on('error', (err) => reject(new HttpError(400, `cannot read the body: ${err.message}`)));
  });
}

function parseObject(bytes) {
  let value;
  try {
    value = JSON.parse(utf8.decode(bytes));
  } catch (err) {
    throw new HttpError(400, `the body is not JSON: ${err.message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new HttpError(400, 'the body must be a JSON object');
  }
  return value;
}

// Code points, not UTF-16 units: an emoji is one character to PostgreSQL, two to .length.
function characters(text) {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

// The object's field `name`: a string of 1 to MAX_TEXT characters.
function textField(object, name) {
  const value = Object.hasOwn(object, name) ? object[name] : null;
  if (value === null) throw new HttpError(400, `${name} is missing`);
  if (typeof value !== 'string') throw new HttpError(400, `${name} must be a string`);
  if (value.length === 0) throw new HttpError(400, `${name} is empty`);
  // .length counts UTF-16 units, at least one per code point: most strings need no counting.
  if (value.length > MAX_TEXT && characters(value) > MAX_TEXT) {
    throw new HttpError(400, `${name} is over ${MAX_TEXT} characters`);
  }
  return value;
}

// The query parameter `name`, an integer in 0..=max; when it is absent, 0 if it is optional,
// else a 400.
function msParameter(query, name, max, required) {
  const text = query.get(name);
  if (text === null) {
    if (!required) return 0;
    throw new HttpError(400, `${name} is missing: ask for ?${name}=N with N in 0..=${max}`);
  }
  // Decimal digits only: no sign, no spaces, no fraction, no exponent.
  if (!/^\d+$/.test(text) || Number(text) > max) {
    throw new HttpError(400, `${name} must be an integer in 0..=${max}`);
  }
  return Number(text);
}

module.exports = { readJsonObject, textField, msParameter, MAX_BODY };
