'use strict';
// settings.js: the contract's settings, their defaults, and a bad value refused with a message
// that names the variable and says how to fix it (server.js prints it and exits 2).

const test = require('node:test');
const assert = require('node:assert/strict');
const os = require('node:os');
const { readSettings, SettingsError } = require('../settings');

test('the defaults are the contract’s', () => {
  assert.deepEqual(readSettings({}), {
    host: '127.0.0.1',
    port: 8080,
    databaseUrl: null,
    dbPool: 60,
    dbTimeoutMs: 5000,
    upstreamUrl: null,
    secret: null,
    cluster: 0,
  });
});

test('an empty value is the same as an unset one', () => {
  const empty = {};
  for (const name of [
    'HOST',
    'PORT',
    'DATABASE_URL',
    'DB_POOL',
    'DB_TIMEOUT_MS',
    'UPSTREAM_URL',
    'SECRET',
    'CLUSTER',
  ]) {
    empty[name] = '';
  }
  assert.deepEqual(readSettings(empty), readSettings({}));
});

test('every setting is read', () => {
  const settings = readSettings({
    HOST: '0.0.0.0',
    PORT: '0',
    DATABASE_URL: 'postgres://u:p@127.0.0.1:5432/db',
    DB_POOL: '20',
    DB_TIMEOUT_MS: '1000',
    UPSTREAM_URL: 'http://127.0.0.1:9/x',
    SECRET: 's3cret',
    CLUSTER: '3',
  });
  assert.deepEqual(settings, {
    host: '0.0.0.0',
    port: 0,
    databaseUrl: 'postgres://u:p@127.0.0.1:5432/db',
    dbPool: 20,
    dbTimeoutMs: 1000,
    upstreamUrl: 'http://127.0.0.1:9/x',
    secret: 's3cret',
    cluster: 3,
  });
});

test('the accepted spellings and the ends of the ranges', () => {
  assert.equal(readSettings({ PORT: '65535' }).port, 65535);
  assert.equal(readSettings({ PORT: ' 8081 ' }).port, 8081);
  assert.equal(readSettings({ DB_POOL: '1' }).dbPool, 1);
  assert.equal(readSettings({ DB_TIMEOUT_MS: '1' }).dbTimeoutMs, 1);
  assert.equal(readSettings({ DB_TIMEOUT_MS: '600000' }).dbTimeoutMs, 600000);
  assert.equal(readSettings({ HOST: '::1' }).host, '::1');
  assert.equal(readSettings({ CLUSTER: 'auto' }).cluster, os.availableParallelism());
  assert.equal(readSettings({ CLUSTER: '1' }).cluster, 1);
  assert.equal(readSettings({ CLUSTER: '1024' }).cluster, 1024);
  assert.equal(
    readSettings({ DATABASE_URL: 'postgresql://u@db.example/app' }).databaseUrl,
    'postgresql://u@db.example/app',
  );
  assert.equal(readSettings({ UPSTREAM_URL: 'https://127.0.0.1/x' }).upstreamUrl, 'https://127.0.0.1/x');
});

test('a bad setting is a SettingsError that names the variable and its fix', () => {
  for (const [name, value] of [
    ['PORT', 'eighty'],
    ['PORT', '70000'],
    ['PORT', '65536'],
    ['PORT', '-1'],
    ['PORT', '+80'],
    ['PORT', '1.5'],
    ['PORT', '1e3'],
    ['PORT', '0x50'],
    ['PORT', ' '],
    ['DB_POOL', '0'],
    ['DB_POOL', 'many'],
    ['DB_TIMEOUT_MS', '0'],
    ['DB_TIMEOUT_MS', '1.5'],
    ['DB_TIMEOUT_MS', '600001'],
    ['DATABASE_URL', 'mysql://u@h/db'],
    ['DATABASE_URL', 'postgres://'],
    ['DATABASE_URL', 'not a url'],
    ['DATABASE_URL', 'postgres://u:%zz@h/db'],
    ['UPSTREAM_URL', 'ftp://127.0.0.1/x'],
    ['UPSTREAM_URL', '127.0.0.1:9'],
    ['HOST', 'localhost'],
    ['HOST', '256.0.0.1'],
    ['CLUSTER', '0'],
    ['CLUSTER', 'yes'],
    ['CLUSTER', '-2'],
    ['CLUSTER', '1025'],
  ]) {
    assert.throws(
      () => readSettings({ [name]: value }),
      (err) => err instanceof SettingsError && err.message.includes(`fix ${name}`),
      `${name}=${JSON.stringify(value)}`,
    );
  }
});

test('a bad DATABASE_URL is refused without repeating its password', () => {
  for (const url of ['postgres://u:hunter2@h:notaport/db', 'postgres://u:hunter2@/db', 'mysql://u:hunter2@h/db']) {
    assert.throws(
      () => readSettings({ DATABASE_URL: url }),
      (err) =>
        err instanceof SettingsError && err.message.includes('fix DATABASE_URL') && !err.message.includes('hunter2'),
      url,
    );
  }
});
