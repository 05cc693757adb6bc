'use strict';
// GET /proxy's client: UPSTREAM_URL fetched through one keep-alive agent that every request
// shares, so that connections to the upstream are reused under load. Redirects are not
// followed (a 3xx is not a 2xx).

const http = require('node:http');
const https = require('node:https');
const { HttpError } = require('./reply');

// The longest /proxy waits for the upstream's whole answer.
const TIMEOUT_MS = 10000;

function createUpstream(urlText) {
  if (!urlText) return null;
  const url = new URL(urlText);
  const client = url.protocol === 'https:' ? https : http;
  // Node keeps 256 idle sockets per host by default; under a deep load more are in use at once.
  const agent = new client.Agent({ keepAlive: true, maxFreeSockets: 1024, scheduling: 'lifo' });

  // The upstream's body and Content-Type; a 502 HttpError when it cannot be reached, answers
  // other than 2xx, or takes over TIMEOUT_MS in all.
  function fetch() {
    return new Promise((resolve, reject) => {
      let settled = false;
      const settle = (err, value) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (err) reject(new HttpError(502, `upstream: ${err.message}`));
        else resolve(value);
      };
      const request = client.get(url, { agent }, (response) => {
        const chunks = [];
        response.on('data', (chunk) => chunks.push(chunk));
        // Read to the end even when the status is refused, so that the connection is reused.
        response.on('end', () => {
          const { statusCode } = response;
          if (!response.complete) return settle(new Error('the answer was cut short'));
          if (statusCode < 200 || statusCode > 299) return settle(new Error(`answered ${statusCode}`));
          settle(null, { body: Buffer.concat(chunks), contentType: response.headers['content-type'] });
        });
        response.on('error', settle);
        response.on('close', () => settle(new Error('the connection closed mid-answer')));
      });
      request.on('error', settle);
      const timer = setTimeout(() => {
        settle(new Error(`no whole answer within ${TIMEOUT_MS} ms`));
        request.destroy();
      }, TIMEOUT_MS);
    });
  }

  function close() {
    agent.destroy();
  }

  return { fetch, close };
}

module.exports = { createUpstream };
