'use strict';
// The Node contestant of ../CONTRACT.md: node:http and pg's Pool in one process, or with
// CLUSTER=N|auto a node:cluster primary that only supervises N workers.

const cluster = require('node:cluster');
const http = require('node:http');
const { readSettings, SettingsError } = require('./settings');
const { createApp } = require('./app');
const { createPool } = require('./db');
const compute = require('./compute');

// Requests in flight get this long after SIGTERM before their connections are closed.
const DRAIN_MS = 10000;

function settingsOrExit() {
  try {
    return readSettings();
  } catch (err) {
    if (!(err instanceof SettingsError)) throw err;
    console.error(`Error: ${err.message}`);
    process.exit(2);
  }
}

function ready(port, workers) {
  process.stdout.write(`listening pid=${process.pid} port=${port} stack=node workers=${workers}\n`);
}

// One server: this process alone, or one worker of a cluster.
function serve(settings, workers) {
  const roundsPerMs = compute.calibrate();
  console.error(`compute: ${roundsPerMs} SHA-256 rounds per ms of CPU (pid ${process.pid})`);
  const pool = createPool(settings, Math.max(1, Math.floor(settings.dbPool / workers)));
  const handle = createApp({ settings, pool, roundsPerMs });
  let stopping = false;
  const server = http.createServer((req, res) => {
    if (stopping) res.setHeader('Connection', 'close');
    handle(req, res);
  });

  server.listen({ host: settings.host, port: settings.port }, () => {
    const { port } = server.address();
    if (cluster.isWorker) {
      process.send({ listening: port });
    } else {
      ready(port, 1);
    }
  });
  server.on('error', (err) => {
    console.error(`Error: cannot listen on ${settings.host}:${settings.port}: ${err.message} (change PORT or HOST)`);
    process.exit(1);
  });

  function stop() {
    if (stopping) return;
    stopping = true;
    server.close(async () => {
      if (pool) await pool.end().catch(() => {});
      process.exit(0);
    });
    // Idle keep-alive connections go now, busy ones once their response is sent.
    server.closeIdleConnections();
    const idle = setInterval(() => server.closeIdleConnections(), 50);
    idle.unref();
    setTimeout(() => {
      console.error(`stopping: requests still in flight after ${DRAIN_MS} ms, closing them`);
      server.closeAllConnections();
      process.exit(0);
    }, DRAIN_MS).unref();
  }
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  // A worker whose primary is gone stops too.
  if (cluster.isWorker) process.on('disconnect', stop);
}

// The primary: forks the workers, restarts one that dies, says ready once all listen, and on
// SIGTERM passes it on and exits once they have.
function supervise(settings) {
  const workers = settings.cluster;
  const env = { SHOWDOWN_CLUSTER_WORKERS: String(workers) };
  const listening = new Set();
  let port = null;
  let stopping = false;
  let announced = false;

  const fork = () => cluster.fork(env);
  cluster.on('message', (worker, message) => {
    if (message && typeof message.listening === 'number') {
      port = message.listening;
      listening.add(worker.id);
      if (!announced && listening.size === workers) {
        announced = true;
        ready(port, workers);
      }
    }
  });
  cluster.on('exit', (worker, code, signal) => {
    listening.delete(worker.id);
    if (stopping) {
      if (Object.keys(cluster.workers).length === 0) process.exit(0);
      return;
    }
    if (code === 2) {
      console.error('Error: a worker could not start (see above)');
      process.exit(2);
    }
    console.error(`worker ${worker.process.pid} died (${signal || `code ${code}`}): starting another`);
    fork();
  });
  for (let i = 0; i < workers; i++) fork();

  function stop() {
    if (stopping) return;
    stopping = true;
    for (const worker of Object.values(cluster.workers)) worker.process.kill('SIGTERM');
    if (Object.keys(cluster.workers).length === 0) process.exit(0);
    setTimeout(() => {
      for (const worker of Object.values(cluster.workers)) worker.process.kill('SIGKILL');
      process.exit(0);
    }, DRAIN_MS + 2000).unref();
  }
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

const settings = settingsOrExit();
if (settings.cluster > 0 && cluster.isPrimary) {
  supervise(settings);
} else {
  serve(settings, Number(process.env.SHOWDOWN_CLUSTER_WORKERS) || 1);
}
