'use strict';
// CPU work of a known length on the request path (GET /compute): SHA-256 rounds until the
// process's CPU clock (process.cpuUsage(): every thread, the garbage collector's helpers
// included, as the probe counts it) has advanced by the time asked, read every ~50 µs of work.
// Counting CPU time rather than a fixed number of rounds keeps M ms at M ms when the host's
// other CPU is busy (on a VM, a busy sibling makes every round slower) or the heap has grown;
// the calibration at start only sizes the batches between two readings of the clock.
//
// The rounds are PBKDF2-HMAC-SHA-256 iterations run inside OpenSSL: a JavaScript loop of
// createHash() calls would spend much of its time allocating and collecting, not hashing.

const { pbkdf2Sync } = require('node:crypto');

const PASSWORD = Buffer.alloc(32, 0x5a);
const SALT = Buffer.from('showdown-compute');
// The time between two readings of the CPU clock.
const BATCH_US = 50;

function rounds(n) {
  return pbkdf2Sync(PASSWORD, SALT, n, 32, 'sha256');
}

// The process's CPU time, user and system, in µs.
function cpuMicros() {
  const { user, system } = process.cpuUsage();
  return user + system;
}

// Rounds per ms of CPU: a warm-up, then five windows of about 20 ms of CPU each (about 100 ms
// in all). The median window's rate is kept, so that one window the host disturbed (a
// collection, a busy sibling CPU) does not skew every request.
function calibrate() {
  rounds(20000);
  const rates = [];
  let batch = 1000;
  for (let i = 0; i < 5; i++) {
    const start = cpuMicros();
    let done = 0;
    let spent = 0;
    while (spent < 20000) {
      rounds(batch);
      done += batch;
      spent = cpuMicros() - start;
    }
    rates.push((done * 1000) / spent);
    // About a quarter of a millisecond between readings from now on.
    batch = Math.max(100, Math.round(rates[i] / 4));
  }
  rates.sort((a, b) => a - b);
  return Math.max(1, Math.round(rates[2]));
}

// Spends `ms` of CPU, synchronously: the event loop is blocked, as CPU work on the request
// path blocks it.
function work(ms, roundsPerMs) {
  const batch = Math.max(1, Math.round((roundsPerMs * BATCH_US) / 1000));
  const end = cpuMicros() + ms * 1000;
  while (cpuMicros() < end) rounds(batch);
}

module.exports = { calibrate, work, BATCH_US };
