'use strict';
// The Node contestant of ../CONTRACT.md: node:http and pg's Pool in one process or, with
// CLUSTER=N|auto, a node:cluster primary (cluster.js) that only supervises N such workers.
//
//   - server.js: the settings, the server's life: listen, the ready line, the drain on SIGTERM.
//   - settings.js: the environment, checked once at start.
//   - app.js: one function per endpoint, and the routes; input.js: the checks on bodies and
//     query parameters; reply.js: JSON answers and errors.
//   - db.js: the pool, each statement bounded by DB_TIMEOUT_MS; upstream.js: /proxy's client;
//     compute.js: calibrated CPU work.
//
// Standard output carries the ready line and nothing else; logs go to standard error.

const cluster = require('node:cluster');

// Signals are caught first thing, so that one that comes during start-up (the calibration
// takes a tenth of a second) is a clean stop too: its handler runs from the event loop once the
// start-up is done. `onStop` is what stopping means so far: with nothing to drain, exiting.
let onStop = () => process.exit(0);
process.on('SIGTERM', () => onStop('SIGTERM'));
process.on('SIGINT', () => onStop('SIGINT'));

const { readSettings, SettingsError } = require('./settings');
const { rawError, startDraining } = require('./reply');

// Requests in flight get this long after SIGTERM before their connections are closed.
const DRAIN_MS = 10000;
// What a cluster's primary tells its workers: how many they are, to divide the pool.
const WORKERS_ENV = 'SHOWDOWN_NODE_WORKERS';

function settingsOrExit() {
  try {
    return readSettings();
  } catch (err) {
    if (!(err instanceof SettingsError)) throw err;
    console.error(`Error: ${err.message}`);
    process.exit(2);
  }
}

function printReady(pid, port, workers) {
  process.stdout.write(`listening pid=${pid} port=${port} stack=node workers=${workers}\n`);
}

// A socket node:http could not read a request from: answer it in JSON where it still can. On a
// connection that has answered before, an answer might land amid another: just close it.
function onClientError(err, socket) {
  if (err.code === 'ECONNRESET' || !socket.writable || socket.bytesWritten > 0) {
    socket.destroy();
    return;
  }
  const [status, message] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'request headers too large']
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'request timeout']
        : [400, `bad request: ${err.reason || err.message}`];
  socket.end(rawError(status, message));
}

// One server: this process alone, or one worker of a cluster (`workers` of them).
function serve(settings, workers) {
  // Required here: a cluster's primary needs none of them (nor pg's memory).
  const http = require('node:http');
  const compute = require('./compute');
  const { createApp } = require('./app');
  const { createDatabase } = require('./db');
  const { createUpstream } = require('./upstream');
  const { MAX_BODY } = require('./input');

  const roundsPerMs = compute.calibrate();
  const batch = Math.max(1, Math.round((roundsPerMs * compute.BATCH_US) / 1000));
  console.error(
    `compute: ${roundsPerMs} PBKDF2-HMAC-SHA-256 rounds per ms of CPU: ` +
      `batches of ${batch} between readings of the CPU clock (pid ${process.pid})`,
  );
  const db = createDatabase(settings, Math.max(1, Math.floor(settings.dbPool / workers)));
  const upstream = createUpstream(settings.upstreamUrl);
  const app = createApp({ settings, db, upstream, roundsPerMs });
  const server = http.createServer(app);
  server.on('clientError', onClientError);
  // Expect: 100-continue: ask for the body only when it may be accepted; one announced over the
  // limit is answered 413 at once, without being sent.
  server.on('checkContinue', (req, res) => {
    if (!(Number(req.headers['content-length']) > MAX_BODY)) res.writeContinue();
    app(req, res);
  });
  server.on('error', (err) => {
    console.error(`Error: cannot listen on ${settings.host}:${settings.port}: ${err.message} (change PORT or HOST)`);
    process.exit(1);
  });

  let stopping = false;
  function stop(why) {
    if (stopping) return;
    stopping = true;
    console.error(`stopping (${why}): finishing the requests in flight (pid ${process.pid})`);
    // From now on every answer closes its connection; idle keep-alive connections go now.
    startDraining();
    server.close(async () => {
      if (upstream) upstream.close();
      // Close the database's connections politely, but do not wait on a server that is gone.
      if (db) await Promise.race([db.close().catch(() => {}), new Promise((r) => setTimeout(r, 1000))]);
      process.exit(0);
    });
    server.closeIdleConnections();
    setTimeout(() => {
      console.error(`stopping: requests still in flight after ${DRAIN_MS} ms: closing their connections`);
      server.closeAllConnections();
      process.exit(0);
    }, DRAIN_MS).unref();
  }

  // A worker whose primary is gone stops too.
  if (cluster.isWorker) process.on('disconnect', () => stop('the primary is gone'));

  server.listen({ host: settings.host, port: settings.port }, () => {
    // A worker's primary prints the ready line once every worker listens.
    if (!cluster.isWorker && !stopping) printReady(process.pid, server.address().port, 1);
  });
  return stop;
}

// Started with V8's --perf-basic-prof-only-functions (PROFILE=1 in targets/run), each process
// writes /tmp/perf-PID.map, the names of its JIT code for profilers; it goes with the process.
if (process.execArgv.some((a) => a.startsWith('--perf-basic-prof'))) {
  process.on('exit', () => {
    try {
      require('node:fs').unlinkSync(`/tmp/perf-${process.pid}.map`);
    } catch {
      // Never written, or already gone.
    }
  });
}

const settings = settingsOrExit();
if (cluster.isWorker) {
  onStop = serve(settings, Number(process.env[WORKERS_ENV]) || 1);
} else if (settings.cluster > 0) {
  onStop = require('./cluster').supervise(settings.cluster, {
    env: { [WORKERS_ENV]: String(settings.cluster) },
    drainMs: DRAIN_MS,
    onReady: (port) => printReady(process.pid, port, settings.cluster),
  });
} else {
  onStop = serve(settings, 1);
}
