'use strict';
// input.js: the checks on bodies and query parameters, each a 400 (or 413) HttpError.

const test = require('node:test');
const assert = require('node:assert/strict');
const { Readable } = require('node:stream');
const { readJsonObject, textField, msParameter, MAX_BODY } = require('../input');
const { HttpError } = require('../reply');

// A request as readJsonObject sees it: headers and a body stream sent in `chunks`.
function fakeRequest(chunks, headers = {}) {
  const req = Readable.from(chunks.map((c) => Buffer.from(c)));
  req.headers = headers;
  return req;
}

// The status of what `fn` threw (or resolved to): 0 when it did not throw.
async function statusOf(fn) {
  try {
    await fn();
    return 0;
  } catch (err) {
    assert.ok(err instanceof HttpError, `not an HttpError: ${err && err.stack}`);
    assert.ok(err.message.length > 0);
    return err.status;
  }
}

test('user bodies are checked strictly', async () => {
  const long = 'x'.repeat(256);
  for (const [body, want] of [
    ['{"email":"a@b.c","password":"p"}', 0],
    ['{"email":"a@b.c","password":"p","other":[1]}', 0],
    [`{"email":"${'é'.repeat(255)}","password":"p"}`, 0],
    // 255 emoji: 510 UTF-16 units, 255 code points, as varchar(255) counts.
    [`{"email":"${'😀'.repeat(255)}","password":"p"}`, 0],
    [`{"email":"${'x'.repeat(255)}","password":"${'y'.repeat(255)}"}`, 0],
    ['not json', 400],
    ['', 400],
    ['{"email":"a@b.c","password":"p"', 400],
    ['[1,2]', 400],
    ['"text"', 400],
    ['42', 400],
    ['null', 400],
    ['{}', 400],
    ['{"email":"a@b.c"}', 400],
    ['{"password":"p"}', 400],
    ['{"EMAIL":"a@b.c","password":"p"}', 400],
    ['{"email":null,"password":"p"}', 400],
    ['{"email":1,"password":"p"}', 400],
    ['{"email":true,"password":"p"}', 400],
    ['{"email":["a"],"password":"p"}', 400],
    ['{"email":{"a":1},"password":"p"}', 400],
    ['{"email":"","password":"p"}', 400],
    ['{"email":"a@b.c","password":""}', 400],
    [`{"email":"${long}","password":"p"}`, 400],
    [`{"email":"a@b.c","password":"${long}"}`, 400],
    [`{"email":"${'é'.repeat(256)}","password":"p"}`, 400],
    [`{"email":"${'😀'.repeat(256)}","password":"p"}`, 400],
  ]) {
    const status = await statusOf(async () => {
      const object = await readJsonObject(fakeRequest([body]));
      textField(object, 'email');
      textField(object, 'password');
    });
    assert.equal(status, want, body.slice(0, 60));
  }
});

test('textField ignores inherited properties and answers the value', () => {
  assert.equal(textField({ email: 'a@b.c' }, 'email'), 'a@b.c');
  assert.throws(
    () => textField({}, 'toString'),
    (err) => err.status === 400 && /toString is missing/.test(err.message),
  );
  assert.throws(
    () => textField({ email: 3 }, 'email'),
    (err) => err.status === 400 && /email must be a string/.test(err.message),
  );
});

test('a body split across chunks is read whole', async () => {
  const body = Buffer.from(`{"email":"${'é'.repeat(100)}","password":"p"}`);
  // Split inside the two bytes of an é: decoding happens on the whole body.
  const object = await readJsonObject(fakeRequest([body.subarray(0, 12), body.subarray(12)]));
  assert.equal(object.email, 'é'.repeat(100));
});

test('a body that is not UTF-8 is refused, not mended', async () => {
  const body = Buffer.concat([Buffer.from('{"email":"a'), Buffer.from([0xff, 0xfe]), Buffer.from('","password":"p"}')]);
  assert.equal(await statusOf(() => readJsonObject(fakeRequest([body]))), 400);
});

test('a body of MAX_BODY bytes is read; one byte more is 413', async () => {
  const pad = (n) => `{"email":"a","password":"p","x":"${'x'.repeat(n - 35)}"}`;
  assert.equal(pad(MAX_BODY).length, MAX_BODY);
  assert.equal(await statusOf(() => readJsonObject(fakeRequest([pad(MAX_BODY)]))), 0);
  assert.equal(await statusOf(() => readJsonObject(fakeRequest([pad(MAX_BODY + 1)]))), 413);
});

test('an oversized body: refused by its length at once, or once it runs over, closing when it must', async () => {
  const over = async (req) => {
    try {
      await readJsonObject(req);
    } catch (err) {
      return err;
    }
    assert.fail('an oversized body was accepted');
  };
  // Announced a little over: answered at once, the connection kept (the rest is read and dropped).
  let err = await over(fakeRequest([], { 'content-length': String(MAX_BODY + 1) }));
  assert.equal(err.status, 413);
  assert.equal(err.close, false);
  // Announced far over, or with Expect: 100-continue (the body may never come): closed.
  err = await over(fakeRequest([], { 'content-length': String(MAX_BODY + 2 * 1024 * 1024) }));
  assert.deepEqual([err.status, err.close], [413, true]);
  err = await over(fakeRequest([], { 'content-length': String(MAX_BODY + 1), expect: '100-continue' }));
  assert.deepEqual([err.status, err.close], [413, true]);
  // No length announced (chunked): refused once it runs over, the rest left unread.
  const chunk = 'x'.repeat(16 * 1024);
  err = await over(fakeRequest([chunk, chunk, chunk, chunk, chunk, chunk]));
  assert.deepEqual([err.status, err.close], [413, true]);
});

test('ms parameters are integers in 0..=max, required or not', () => {
  for (const [query, required, want, status] of [
    ['ms=100', true, 100, 0],
    ['ms=0', true, 0, 0],
    ['ms=60000', true, 60000, 0],
    ['ms=007', true, 7, 0],
    ['', false, 0, 0],
    ['other=5', false, 0, 0],
    ['', true, undefined, 400],
    ['ms=', true, undefined, 400],
    ['ms=-1', true, undefined, 400],
    ['ms=%2B5', true, undefined, 400],
    ['ms=+5', true, undefined, 400],
    ['ms=%205', true, undefined, 400],
    ['ms=abc', true, undefined, 400],
    ['ms=1.5', true, undefined, 400],
    ['ms=1e3', true, undefined, 400],
    ['ms=0x10', true, undefined, 400],
    ['ms=60001', true, undefined, 400],
    ['ms=99999999999999999999999', true, undefined, 400],
    ['ms=', false, undefined, 400],
  ]) {
    const query_ = new URLSearchParams(query);
    if (status === 0) {
      assert.equal(msParameter(query_, 'ms', 60000, required), want, `?${query}`);
    } else {
      assert.throws(
        () => msParameter(query_, 'ms', 60000, required),
        (err) => err instanceof HttpError && err.status === status && err.message.startsWith('ms '),
        `?${query}`,
      );
    }
  }
});
