'use strict';
// The answers of ../CONTRACT.md: JSON serialised before anything is written, so that the body
// goes out whole with its Content-Length (never chunked); node:http adds the Date header.

const http = require('node:http');

// An answer other than 2xx: its status and the message of its {"error": "..."}. `close` asks
// for the connection to be closed after it (a body left unread).
class HttpError extends Error {
  constructor(status, message, { close = false } = {}) {
    super(message);
    this.status = status;
    this.close = close;
  }
}

// Once the server drains (SIGTERM), every answer closes its connection, so that keep-alive
// clients move on and the server can finish.
let draining = false;

function startDraining() {
  draining = true;
}

function isDraining() {
  return draining;
}

// Sends `body` (a Buffer or string) whole, with the headers given.
function sendBody(res, status, contentType, body, headers) {
  const head = {
    'Content-Type': contentType,
    'Content-Length': typeof body === 'string' ? Buffer.byteLength(body) : body.length,
    ...headers,
  };
  if (draining) head.Connection = 'close';
  res.writeHead(status, head);
  res.end(body);
}

function sendJson(res, status, value, headers) {
  sendBody(res, status, 'application/json', JSON.stringify(value), headers);
}

function sendError(res, status, message, headers) {
  sendJson(res, status, { error: message }, headers);
}

// The body of /now, /delay and /compute: UTC, RFC 3339 with milliseconds.
function nowBody() {
  return { now: new Date().toISOString() };
}

// The answer to a request node:http could not parse, written on the socket itself (there is
// no response object then), in JSON like every other answer.
function rawError(status, message) {
  const body = JSON.stringify({ error: message });
  return (
    `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\n` +
    'Content-Type: application/json\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    `Date: ${new Date().toUTCString()}\r\n` +
    'Connection: close\r\n\r\n' +
    body
  );
}

module.exports = { HttpError, sendBody, sendJson, sendError, nowBody, rawError, startDraining, isDraining };
