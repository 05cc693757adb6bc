'use strict';
// A cluster's primary: it forks the workers (each runs server.js's serve()), says ready once
// every one listens, restarts one that dies, and on SIGTERM or SIGINT passes the signal on and
// exits once they have all stopped. It serves nothing itself: node:cluster hands it the
// listening socket, and it deals the connections out to the workers (round robin).

const cluster = require('node:cluster');

// A worker that dies sooner than this after its start is restarted only after this long, so
// that one that cannot run does not fork in a tight loop.
const RESTART_BACKOFF_MS = 1000;

// Returns the function that stops the cluster (server.js calls it on SIGTERM or SIGINT).
function supervise(count, { env, drainMs, onReady }) {
  const running = new Map(); // worker id → { worker, startedAt }, until its process exits
  const listening = new Set(); // ids of the workers that listen
  let ready = false;
  let stopping = false;
  let failed = false;

  function fork() {
    if (stopping) return;
    const worker = cluster.fork(env);
    running.set(worker.id, { worker, startedAt: Date.now() });
  }

  // Sends `signal` to every worker still running.
  function signalAll(signal) {
    for (const { worker } of running.values()) worker.process.kill(signal);
  }

  cluster.on('listening', (worker, address) => {
    listening.add(worker.id);
    if (!ready && listening.size === count) {
      ready = true;
      onReady(address.port);
    }
  });

  cluster.on('exit', (worker, code, signal) => {
    const how = signal ? `signal ${signal}` : `code ${code}`;
    const lived = Date.now() - running.get(worker.id).startedAt;
    listening.delete(worker.id);
    running.delete(worker.id);
    if (stopping) {
      // SIGTERM itself ends a worker still in Node's own start-up (no handler yet): fine too.
      if (code !== 0 && signal !== 'SIGTERM') {
        failed = true;
        console.error(`cluster: worker ${worker.process.pid} stopped with ${how}`);
      }
      if (running.size === 0) process.exit(failed ? 1 : 0);
      return;
    }
    if (!ready) {
      // It could not start (the port taken, say): the others would not either.
      console.error(`cluster: worker ${worker.process.pid} exited with ${how} before it listened: stopping`);
      failed = true;
      stop('a worker could not start');
      return;
    }
    console.error(`cluster: worker ${worker.process.pid} died (${how}) after ${lived} ms: starting another`);
    setTimeout(fork, lived < RESTART_BACKOFF_MS ? RESTART_BACKOFF_MS : 0);
  });

  function stop(why) {
    if (stopping) return;
    stopping = true;
    console.error(`cluster: stopping (${why}): ${running.size} workers to stop`);
    // Each worker drains its own requests (server.js), within drainMs.
    signalAll('SIGTERM');
    if (running.size === 0) process.exit(failed ? 1 : 0);
    setTimeout(() => {
      console.error(`cluster: workers still running ${drainMs + 2000} ms after the signal: killing them`);
      signalAll('SIGKILL');
      process.exit(1);
    }, drainMs + 2000).unref();
  }
  for (let i = 0; i < count; i++) fork();
  return stop;
}

module.exports = { supervise };
