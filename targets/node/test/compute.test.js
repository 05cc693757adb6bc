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
  for (const ms of [5, 50]) {
    const start = cpuMs();
    const wallStart = performance.now();
    compute.work(ms, perMs);
    const spent = cpuMs() - start;
    const wall = performance.now() - wallStart;
    // At least what was asked; past it by at most a batch (~50 µs) and a reading of the clock,
    // with room for a busy test host.
    assert.ok(
      spent >= ms && spent <= ms * 1.1 + 2,
      `${ms} ms asked (${perMs} rounds per ms), ${spent.toFixed(2)} ms spent`,
    );
    // And it ends: a loop that misreads the clock would not.
    assert.ok(wall < ms * 20 + 1000, `${ms} ms of CPU took ${wall.toFixed(1)} ms`);
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
