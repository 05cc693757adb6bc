'use strict';
// A client for the tests: one request on a connection of its own (no keep-alive left behind),
// its answer read whole, with the time it took.

const http = require('node:http');
const net = require('node:net');

// Answers { status, headers, text, json, ms }; `body` a string or Buffer, sent with its length.
function request(port, method, path, { body, headers = {}, timeoutMs = 5000 } = {}) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const head = { ...headers };
    if (body !== undefined) head['Content-Length'] = Buffer.byteLength(body);
    const req = http.request({ host: '127.0.0.1', port, method, path, headers: head, agent: false }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode, headers: res.headers, text, json, ms: performance.now() - started });
      });
      res.on('error', reject);
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`${method} ${path}: no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}

// Writes `bytes` on a raw connection and answers everything read until the server closes it.
function raw(port, bytes, timeoutMs = 5000) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks = [];
    socket.setTimeout(timeoutMs, () => socket.destroy(new Error(`no close within ${timeoutMs} ms`)));
    socket.on('connect', () => socket.write(bytes));
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    socket.on('error', reject);
  });
}

// A port nothing listens on: one the kernel just gave out, closed again.
function closedPort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

module.exports = { request, raw, closedPort };
