'use strict';
// The settings of ../CONTRACT.md, read from the environment once at start. An empty value is
// the same as an unset one. A setting that cannot be used throws a SettingsError whose message
// names the variable and says how to fix it (server.js prints it and exits 2).

const net = require('node:net');
const os = require('node:os');

class SettingsError extends Error {}

// An integer setting in min..=max: decimal digits only (no sign, no fraction, no exponent).
function integer(env, name, fallback, min, max) {
  const text = env[name];
  if (text === undefined || text === '') return fallback;
  const digits = text.trim();
  const value = Number(digits);
  if (!/^\d+$/.test(digits) || value < min || value > max) {
    throw new SettingsError(`${name}=${JSON.stringify(text)} is not an integer in ${min}..=${max}: fix ${name}`);
  }
  return value;
}

function parseUrl(text) {
  try {
    return new URL(text);
  } catch {
    return null;
  }
}

// postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE (or postgresql://). The message never repeats
// the URL: it may hold a password.
function databaseUrl(env) {
  const text = env.DATABASE_URL;
  if (!text) return null;
  const fix =
    'DATABASE_URL is not a PostgreSQL URL (postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE): fix DATABASE_URL';
  const url = parseUrl(text);
  if (!url || !['postgres:', 'postgresql:'].includes(url.protocol) || !url.hostname) {
    throw new SettingsError(fix);
  }
  try {
    // pg decodes these when it connects; a bad escape would only show up then.
    decodeURIComponent(url.username);
    decodeURIComponent(url.password);
    decodeURIComponent(url.pathname);
  } catch {
    throw new SettingsError(`${fix} (a bad %-escape)`);
  }
  return text;
}

function upstreamUrl(env) {
  const text = env.UPSTREAM_URL;
  if (!text) return null;
  const url = parseUrl(text);
  if (!url || !['http:', 'https:'].includes(url.protocol) || !url.hostname) {
    throw new SettingsError(`UPSTREAM_URL=${JSON.stringify(text)} is not an http:// or https:// URL: fix UPSTREAM_URL`);
  }
  return text;
}

// 0 when unset (one process); else the number of workers.
function clusterWorkers(env) {
  const text = env.CLUSTER;
  if (text === undefined || text === '') return 0;
  if (text.trim() === 'auto') return os.availableParallelism();
  try {
    return integer(env, 'CLUSTER', 0, 1, 1024);
  } catch {
    throw new SettingsError(
      `CLUSTER=${JSON.stringify(text)} is neither "auto" nor an integer in 1..=1024: fix CLUSTER (or unset it)`,
    );
  }
}

function host(env) {
  const text = env.HOST;
  if (!text) return '127.0.0.1';
  if (net.isIP(text) === 0) {
    throw new SettingsError(`HOST=${JSON.stringify(text)} is not an IP address: fix HOST (e.g. 127.0.0.1 or 0.0.0.0)`);
  }
  return text;
}

function readSettings(env = process.env) {
  return {
    host: host(env),
    port: integer(env, 'PORT', 8080, 0, 65535),
    databaseUrl: databaseUrl(env),
    dbPool: integer(env, 'DB_POOL', 60, 1, 10000),
    dbTimeoutMs: integer(env, 'DB_TIMEOUT_MS', 5000, 1, 600000),
    upstreamUrl: upstreamUrl(env),
    secret: env.SECRET || null,
    cluster: clusterWorkers(env),
  };
}

module.exports = { readSettings, SettingsError };
