// The pages' script's own functions: how it writes numbers and percentiles, lines series up on
// one x array, folds profile stacks into a tree, colours and escapes frame names, and what each
// kind of chart's x axis is.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { load, page, profile, numbers } = require('./harness');

const { fmt, percentile, seconds, align, xAxis, fold, warm, esc } = load();

// Every case of crates/report/tests/numbers.json, the list report::number (the SVG's axes) is
// held to as well: [value, text], a value of null no value.
function each(cases, write, name) {
  for (const [value, text] of cases) assert.equal(write(value), text, `${name}(${value})`);
}

test('fmt writes every number as the SVG does, by the rules the page carries', () => {
  each(numbers.numbers, fmt, 'fmt');
  each(numbers.percentiles, percentile, 'percentile');
  each(numbers.seconds, seconds, 'seconds');
});

test('fmt writes four significant digits, thousands separated from 10,000 up', () => {
  assert.equal(fmt(25000), '25,000');
  assert.equal(fmt(10000), '10,000');
  assert.equal(fmt(1234567.8), '1,234,568');
  assert.equal(fmt(9999), '9999');
  assert.equal(fmt(1234.56), '1235');
  assert.equal(fmt(12.3456), '12.35');
  assert.equal(fmt(-0.5), '-0.5');
  // No trailing zeros: 3.1, not 3.100.
  assert.equal(fmt(3.1), '3.1');
  assert.equal(fmt(0.000123456), '0.0001235');
});

test('fmt rounds a half away from zero, as the number is written, not as it is stored', () => {
  // 1.0625 is exact in binary: toPrecision would give 1.063, Rust's format! 1.062 (to even).
  assert.equal(fmt(1.0625), '1.063');
  assert.equal(fmt(-1.0625), '-1.063');
  // Math.round would give -12,345.
  assert.equal(fmt(-12345.5), '-12,346');
  assert.equal(fmt(12345.5), '12,346');
  // 12.345 is a hair above in binary, 1.005 a hair below: both are halves as written.
  assert.equal(fmt(12.345), '12.35');
  assert.equal(seconds(1.005), '1.01 s');
  assert.equal(seconds(-0.001), '0.00 s');
});

test("the rules are the page's: another separator or number of digits is followed", () => {
  const rules = JSON.stringify({ ...numbers.rules, significant: 2, separator: ' ', none: 'n/a' });
  const other = load({ document: page({ rules }) });
  assert.equal(other.fmt(1234.56), '1200');
  assert.equal(other.fmt(0.0125), '0.013');
  assert.equal(other.fmt(25000), '25 000');
  assert.equal(other.fmt(null), 'n/a');
});

test('fmt writes 0 for zero and "--" where there is no value', () => {
  assert.equal(fmt(0), '0');
  assert.equal(fmt(-0), '0');
  for (const none of [null, undefined, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
    assert.equal(fmt(none), '--', String(none));
  }
});

test('percentile writes x = 1 / (1 - p) as p, with as many decimals as x has decades past 100', () => {
  assert.equal(percentile(1), '0%');
  assert.equal(percentile(2), '50%');
  assert.equal(percentile(10), '90%');
  assert.equal(percentile(100), '99%');
  assert.equal(percentile(1000), '99.9%');
  assert.equal(percentile(2000), '99.95%');
  assert.equal(percentile(1e4), '99.99%');
  assert.equal(percentile(1e6), '99.9999%');
  // Below x = 1 there is no percentile.
  for (const none of [0.5, 0, -10, null, undefined, Number.NaN, Number.POSITIVE_INFINITY]) {
    assert.equal(percentile(none), '--', String(none));
  }
});

test('align puts every series on the sorted union of their xs: undefined where a series has no point, null kept', () => {
  const data = align([
    { x: [10, 2, 100], y: [1, 2, null] },
    { x: [9, 10], y: [3, 4] },
  ]);
  assert.equal(data.length, 3);
  // Sorted as numbers (2, 9, 10, 100), not as text (10, 100, 2, 9); 10 once.
  assert.deepEqual(data[0], [2, 9, 10, 100]);
  assert.deepEqual(Array.from(data[1]), [2, undefined, 1, null]);
  assert.deepEqual(Array.from(data[2]), [undefined, 3, 4, undefined]);
  // Where a series has no point, the slot is left empty: uPlot carries the line across it. A
  // gap (null) is a value that stops the line.
  assert.equal(1 in data[1], false);
  assert.equal(3 in data[1], true);
  assert.equal(data[1][3], null);
});

test('align keeps every point of an x a series has more than once, in its order', () => {
  // A search retried at 949 req/s: a fail at 18.1 ms, then passes at 4.2 and 3.4 ms.
  const data = align([
    { x: [930, 949, 949, 949, 968], y: [2.4, 18.1, 4.2, 3.4, 6.4] },
    { x: [930, 968], y: [10, 10] },
  ]);
  assert.deepEqual(data[0], [930, 949, 949, 949, 968]);
  assert.deepEqual(Array.from(data[1]), [2.4, 18.1, 4.2, 3.4, 6.4]);
  assert.deepEqual(Array.from(data[2]), [10, undefined, undefined, undefined, 10]);
});

test('align with one series is that series, and with none an empty x array', () => {
  assert.deepEqual(align([{ x: [0, 1, 2], y: [5, 6, 7] }]), [
    [0, 1, 2],
    [5, 6, 7],
  ]);
  assert.deepEqual(align([]), [[]]);
});

test('fold makes one tree of the slices given: every node counts the samples of the stacks through it', () => {
  const data = profile([
    [0, 1, { 'main;handle;hash': 60, 'main;gc': 5 }],
    [1, 2, { 'main;handle;hash': 30, 'main;handle': 10 }],
    [2, 3, { 'main;main;handle': 7 }],
  ]);
  const root = fold(data, data.slices);
  assert.equal(root.name, 'all');
  assert.equal(root.n, 112);
  assert.deepEqual([...root.kids.keys()], ['main']);
  const main = root.kids.get('main');
  assert.equal(main.n, 112);
  assert.deepEqual([...main.kids.keys()].sort(), ['gc', 'handle', 'main']);
  const handle = main.kids.get('handle');
  // 90 in hash, 10 in handle itself.
  assert.equal(handle.n, 100);
  assert.equal(handle.kids.get('hash').n, 90);
  assert.equal(main.kids.get('gc').n, 5);
  // A recursive frame is a level of its own; its handle is another node than main;handle.
  assert.equal(main.kids.get('main').n, 7);
  assert.equal(main.kids.get('main').kids.get('handle').n, 7);
  assert.notEqual(main.kids.get('main').kids.get('handle'), handle);
});

test('fold counts only the slices it is given', () => {
  const data = profile([
    [0, 1, { 'main;a': 3 }],
    [1, 2, { 'main;b': 4 }],
  ]);
  const second = fold(data, [data.slices[1]]);
  assert.equal(second.n, 4);
  assert.deepEqual([...second.kids.get('main').kids.keys()], ['b']);
  const none = fold(data, []);
  assert.equal(none.n, 0);
  assert.equal(none.kids.size, 0);
});

test('warm gives a name the same warm colour every time', () => {
  const names = ['main', 'handle', 'JS:*hashSync /srv/server.js:3', '', 'a'.repeat(500), 'ünïcödé'];
  for (const name of names) {
    const colour = warm(name);
    assert.equal(colour, warm(name));
    const [, hue, light] = colour.match(/^hsl\((\d+),85%,(\d+)%\)$/).map(Number);
    // Red to orange.
    assert.ok(hue >= 0 && hue < 50, `${name}: hue ${hue}`);
    // 55 % to 69 %, a name whose hash has its top bit set ('handle') too: the shift is
    // unsigned, as report::model::flame::warm's is.
    assert.ok(light >= 55 && light < 70, `${name}: lightness ${light}`);
  }
  assert.equal(warm('handle'), 'hsl(0,85%,65%)');
  assert.notEqual(warm('main'), warm('handle'));
});

test('esc escapes what would break out of an attribute or an element', () => {
  assert.equal(esc('<lambda>&"x"'), '&lt;lambda&gt;&amp;&quot;x&quot;');
  assert.equal(esc("it's"), "it's");
  assert.equal(esc(42), '42');
  // Each character once: &amp; is not escaped again into &amp;amp;.
  assert.equal(esc('&lt;'), '&amp;lt;');
});

test('a time axis writes seconds with two decimals and leaves the scale to the zoom', () => {
  const axis = xAxis({ x_axis: { kind: 'time' }, x_label: 't (s)', x_range: [-2, 12] });
  assert.equal(axis.label, 't (s)');
  assert.deepEqual(axis.scale, { time: false });
  assert.equal(axis.value(1.5), '1.50 s');
  assert.equal(axis.value(-0.125), '-0.13 s');
  assert.equal(axis.value(null), '--');
});

test('a percentile axis is log 10 over the model range, with a tick at each decade', () => {
  const model = { x_axis: { kind: 'percentile' }, x_label: 'percentile', x_range: [1, 1000] };
  const axis = xAxis(model);
  assert.equal(axis.scale.distr, 3);
  assert.equal(axis.scale.log, 10);
  const range = axis.scale.range();
  assert.deepEqual(range, [1, 1000]);
  // A copy: uPlot may change it, the model stays.
  range[0] = 5;
  assert.deepEqual(model.x_range, [1, 1000]);
  assert.deepEqual(axis.ticks.splits(), [1, 10, 100, 1000]);
  assert.deepEqual(axis.ticks.values(null, [1, 10, 100, 1000]), ['0%', '90%', '99%', '99.9%']);
  assert.equal(axis.value(2000), '99.95%');
  // The last decade is there even when the range ends a hair under it.
  assert.deepEqual(xAxis({ ...model, x_range: [1, 9999.5] }).ticks.splits(), [1, 10, 100, 1000, 1e4]);
});

test('a names axis writes the name at each index, and "--" off them', () => {
  const axis = xAxis({
    x_axis: { kind: 'names', names: ['node', 'go', 'rust'] },
    x_label: 'target',
    x_range: [-0.5, 2.5],
  });
  assert.equal(axis.label, 'target');
  assert.deepEqual(axis.scale.range(), [-0.5, 2.5]);
  assert.deepEqual(axis.ticks.splits(), [0, 1, 2]);
  assert.deepEqual(axis.ticks.values(null, [0, 1, 2, 3]), ['node', 'go', 'rust', '']);
  assert.equal(axis.value(1), 'go');
  assert.equal(axis.value(1.4), 'go');
  assert.equal(axis.value(5), '--');
  assert.equal(axis.value(null), '--');
});

test('a numbers axis is log only when the model says so, and writes values as fmt does', () => {
  const model = { x_axis: { kind: 'numbers', log: true }, x_label: 'rate (req/s)', x_range: [100, 50000] };
  const log = xAxis(model);
  assert.equal(log.scale.distr, 3);
  assert.deepEqual(log.scale.range(), [100, 50000]);
  assert.equal(log.value(25000), '25,000');
  assert.deepEqual(log.ticks.values(null, [100, 1000, 25000]), ['100', '1000', '25,000']);
  // A log axis leaves the splits it has no room to label null: they are blank, not "--".
  assert.deepEqual(log.ticks.values(null, [100, null, null, 1000]), ['100', '', '', '1000']);
  const linear = xAxis({ ...model, x_axis: { kind: 'numbers', log: false } });
  assert.equal(linear.scale.distr, undefined);
  assert.equal(linear.label, 'rate (req/s)');
});
