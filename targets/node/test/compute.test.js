'use strict';
// compute.js: the calibration, and M ms of CPU asked is M ms of the process's CPU spent.

const test = require('node:test');
const assert = require('node:assert/strict');
const compute = require('../compute');

const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

test('the calibration answers a positive whole number of rounds per ms', () => {
  const perMs = compute.calibrate();
  assert.ok(Number.isInteger(perMs) && perMs >= 1, String(perMs));
});

test('the CPU asked is the CPU spent', () => {
  const perMs = compute.calibrate();
  // Warm first: V8 optimises the loop on a background thread of this process, whose CPU
  // process.cpuUsage() counts too.
  compute.work(50, perMs);
  for (const ms of [5, 50]) {
    // Node 20 reads only the whole process's CPU, so a collector or compiler thread can add
    // to one reading (up to 5 ms measured here in a 5 ms ask): every reading is at least what
    // was asked, and the least of three is within it.
    const spent = [];
    for (let i = 0; i < 3; i += 1) {
      const start = cpuMs();
      const wallStart = performance.now();
      compute.work(ms, perMs);
      spent.push(cpuMs() - start);
      const wall = performance.now() - wallStart;
      // And it ends: a loop that misreads the clock would not.
      assert.ok(wall < ms * 20 + 1000, `${ms} ms of CPU took ${wall.toFixed(1)} ms`);
    }
    const least = Math.min(...spent);
    // At least what was asked; past it by at most a batch (~50 µs) and a reading of the clock,
    // with room for a busy test host.
    assert.ok(
      least >= ms && least <= ms * 1.1 + 2,
      `${ms} ms asked (${perMs} rounds per ms), ${spent.map((s) => s.toFixed(2)).join(', ')} ms spent`,
    );
  }
});

test('0 ms is no work at all', () => {
  const perMs = compute.calibrate();
  const start = cpuMs();
  compute.work(0, perMs);
  assert.ok(cpuMs() - start < 1);
});

test('a calibration far off only sizes the batches: the CPU spent is still the CPU asked', () => {
  const start = cpuMs();
  compute.work(20, 1);
  const spent = cpuMs() - start;
  assert.ok(spent >= 20 && spent <= 25, `${spent.toFixed(2)} ms spent`);
});
