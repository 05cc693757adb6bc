'use strict';
// CPU work on the request path: SHA-256 rounds until the process has spent the CPU time asked
// for, read from its own CPU clock (process.cpuUsage(), every thread, the garbage collector's
// helpers included, as the probe counts it). Counting CPU time rather than a fixed number of
// rounds keeps M ms at M ms when the host's other CPU is busy (on a VM, a busy sibling makes
// every round slower) or the heap has grown.
//
// The rounds are PBKDF2-HMAC-SHA-256 iterations run inside OpenSSL, in batches of about 50 µs
// (sized by a calibration at start): a JavaScript loop of createHash() calls would spend much
// of its time allocating and collecting.

const { pbkdf2Sync } = require('node:crypto');

const PASSWORD = Buffer.alloc(32, 7);
const SALT = Buffer.from('showdown-compute');

function rounds(n) {
  return n < 1 ? PASSWORD : pbkdf2Sync(PASSWORD, SALT, n, 32, 'sha256');
}

function cpuMicros() {
  const { user, system } = process.cpuUsage();
  return user + system;
}

// Rounds per ms of CPU, to size the batches: a warm-up, then about 50 ms measured.
function calibrate() {
  rounds(20000);
  const start = cpuMicros();
  let done = 0;
  while (cpuMicros() - start < 50000) {
    rounds(2000);
    done += 2000;
  }
  return Math.max(1, Math.round((done * 1000) / (cpuMicros() - start)));
}

// Spends `ms` of CPU, synchronously (blocking the event loop, as CPU work on the request
// path does).
function work(ms, roundsPerMs) {
  const batch = Math.max(1, Math.round(roundsPerMs / 20));
  const end = cpuMicros() + ms * 1000;
  while (cpuMicros() < end) rounds(batch);
}

module.exports = { work, calibrate };
