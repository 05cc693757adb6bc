'use strict';
// The contract's settings (../CONTRACT.md), read from the environment once at start.

const os = require('node:os');

class SettingsError extends Error {}

function integer(env, name, fallback, min, max) {
  const text = env[name];
  if (text === undefined || text === '') return fallback;
  const value = Number(text);
  if (!/^\d+$/.test(text.trim()) || value < min || value > max) {
    throw new SettingsError(`${name}=${JSON.stringify(text)} is not an integer in ${min}..=${max}: fix ${name}`);
  }
  return value;
}

function readSettings(env = process.env) {
  const databaseUrl = env.DATABASE_URL || null;
  if (databaseUrl) {
    let url;
    try {
      url = new URL(databaseUrl);
    } catch {
      url = null;
    }
    if (!url || !['postgres:', 'postgresql:'].includes(url.protocol) || !url.hostname) {
      throw new SettingsError('DATABASE_URL is not a PostgreSQL URL (postgres://USER@HOST:PORT/DATABASE): fix DATABASE_URL');
    }
  }
  const upstreamUrl = env.UPSTREAM_URL || null;
  if (upstreamUrl) {
    let url;
    try {
      url = new URL(upstreamUrl);
    } catch {
      url = null;
    }
    if (!url || url.protocol !== 'http:') {
      throw new SettingsError(`UPSTREAM_URL=${JSON.stringify(upstreamUrl)} must be an http:// URL: fix UPSTREAM_URL`);
    }
  }
  let cluster = 0;
  const clusterText = env.CLUSTER;
  if (clusterText === 'auto') {
    cluster = os.availableParallelism();
  } else if (clusterText !== undefined && clusterText !== '') {
    cluster = integer(env, 'CLUSTER', 0, 1, 1024);
  }
  const host = env.HOST || '127.0.0.1';
  if (require('node:net').isIP(host) === 0) {
    throw new SettingsError(`HOST=${JSON.stringify(host)} is not an IP address: fix HOST`);
  }
  return {
    host,
    port: integer(env, 'PORT', 8080, 0, 65535),
    databaseUrl,
    dbPool: integer(env, 'DB_POOL', 60, 1, 10000),
    dbTimeoutMs: integer(env, 'DB_TIMEOUT_MS', 5000, 1, 600000),
    upstreamUrl,
    secret: env.SECRET || null,
    cluster,
  };
}

module.exports = { readSettings, SettingsError };
