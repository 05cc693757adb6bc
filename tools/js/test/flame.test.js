// The flame graph the script draws from a profile: each frame a box as wide as its share of the
// samples, its callees side by side on the row above it, from its left edge, by name; drawn as
// report::flame draws every flame graph's SVG (1200 px wide, 10 px margins, 17 px rows).
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { load, flamePanel, readFlame, profile } = require('./harness');

const WIDTH = 1200;
const MARGIN = 10;
const SPAN = WIDTH - 2 * MARGIN;
const ROW = 17;
// Above the boxes of a graph without a title, and below them.
const PAD = 4;

// Draws `data` in a panel of its own (the whole run: no chart has been zoomed) and reads it back.
function draw(data, mode = 'window') {
  const { drawFlame } = load();
  const { details, box } = flamePanel();
  const panel = { el: details, key: 'k', name: 'flame-mode-0', mode, data };
  drawFlame(panel);
  return { flame: readFlame(box.innerHTML), html: box.innerHTML, box, panel };
}

// Ten one-second slices of a server: main calls gc and handle, handle calls hash and parse and
// runs itself (its self time).
const server = profile(
  Array.from({ length: 10 }, (_, i) => [
    i,
    i + 1,
    { 'main;handle;hash': 600, 'main;handle;parse': 300, 'main;handle': 100, 'main;gc': 200 },
  ]),
);

// Boxes are drawn to 0.01 px.
function near(actual, expected, what) {
  assert.ok(Math.abs(actual - expected) <= 0.011, `${what}: ${actual}, expected ${expected}`);
}

test('the head counts the samples and slices of the window', () => {
  const { flame } = draw(server);
  assert.equal(flame.window, 'all');
  assert.equal(flame.samples, 12000);
  assert.equal(flame.rest, 0);
  assert.equal(flame.text, 'Stacks of 0.0–10.0 s: 12,000 samples in 10 slices; the rest of the run: 0 samples.');
});

test('every frame is as wide as its share of the samples, the root the whole width', () => {
  const { flame } = draw(server);
  // Counts written as every number of the page: 2000, 12,000.
  const { fmt } = load();
  assert.deepEqual(flame.size, { width: WIDTH, height: PAD + 4 * ROW + PAD });
  const expected = { all: 12000, main: 12000, gc: 2000, handle: 10000, hash: 6000, parse: 3000 };
  assert.deepEqual(flame.frames.map((f) => f.frame).sort(), Object.keys(expected).sort());
  assert.ok(flame.frame('gc').title.startsWith('gc (2000 samples, 16.67 %'), flame.frame('gc').title);
  for (const [name, n] of Object.entries(expected)) {
    const f = flame.frame(name);
    assert.equal(f.n, n, name);
    near(f.w, (n / 12000) * SPAN, name);
    assert.equal(f.height, ROW - 1);
    assert.ok(f.title.startsWith(`${name} (${fmt(n)} samples, `), f.title);
  }
  near(flame.frame('all').x, MARGIN, 'all');
  near(flame.frame('all').w, SPAN, 'all');
});

test('callees sit side by side from their caller left edge, sorted by name, within its width', () => {
  const { flame } = draw(server);
  const f = flame.frame;
  // main has no samples of its own: its callees fill it exactly.
  near(f('gc').w + f('handle').w, f('main').w, 'gc + handle');
  near(f('gc').x, f('main').x, 'gc');
  near(f('handle').x, f('gc').x + f('gc').w, 'handle');
  // handle runs itself a twelfth of the time: its callees leave that much of it uncovered.
  near(f('hash').w + f('parse').w, f('handle').w - (100 * 10 * SPAN) / 12000, 'hash + parse');
  near(f('hash').x, f('handle').x, 'hash');
  near(f('parse').x, f('hash').x + f('hash').w, 'parse');
  assert.ok(f('parse').x + f('parse').w < f('handle').x + f('handle').w);
});

test('rows go up from the root at the bottom, one per call depth', () => {
  const { flame } = draw(server);
  const height = flame.size.height;
  const level = (name) => (height - PAD - flame.frame(name).y) / ROW - 1;
  assert.equal(level('all'), 0);
  assert.equal(level('main'), 1);
  assert.equal(level('gc'), 2);
  assert.equal(level('handle'), 2);
  assert.equal(level('hash'), 3);
  assert.equal(level('parse'), 3);
});

test('widths sum to their caller at every depth of a deep, wide tree', () => {
  // Every sample ends in a leaf: no frame has samples of its own, so each row fills its caller.
  const counts = {};
  for (let a = 0; a < 4; a++) {
    for (let b = 0; b < 3; b++) counts[`main;f${a};g${a}_${b};leaf`] = 7 + a * 13 + b * 5;
  }
  const { flame, panel } = draw(profile([[0, 1, counts]]));
  const { fold } = load();
  const root = fold(panel.data, panel.data.slices);
  let checked = 0;
  (function check(node, box) {
    const kids = [...node.kids.values()].sort((a, b) => (a.name < b.name ? -1 : 1));
    if (!kids.length) return;
    // A callee's box: its name, on the row above, within its caller's span (every g calls a
    // frame named leaf).
    const boxes = kids.map((k) =>
      flame.frames.find((f) => f.frame === k.name && f.y === box.y - ROW && f.x >= box.x - 0.01 && f.x < box.x + box.w),
    );
    near(
      boxes.reduce((sum, b) => sum + b.w, 0),
      box.w,
      `callees of ${node.name}`,
    );
    checked++;
    kids.forEach((k, i) => {
      check(k, boxes[i]);
    });
  })(root, flame.frame('all'));
  // all, main, f0 to f3, and the twelve g's (each with its leaf).
  assert.equal(checked, 1 + 1 + 4 + 12);
});

test('a frame under 0.02 % of the root is left out with its callees, its room kept and its share said', () => {
  const { flame, html } = draw(profile([[0, 1, { 'main;a_rare;deeper': 1, 'main;b_common': 9999 }]]));
  assert.equal(flame.frame('a_rare'), undefined);
  assert.equal(flame.frame('deeper'), undefined);
  // b_common starts where a_rare would have ended: 1 / 10,000 of 1180 px.
  near(flame.frame('b_common').x, MARGIN + 0.118, 'b_common');
  near(flame.frame('b_common').w, SPAN * 0.9999, 'b_common');
  assert.ok(html.includes('Paths narrower than a quarter of a pixel, 0.01 % of the whole together, are not drawn.'));
});

test('a label is the name, cut with "…" where the box is too narrow, and none under three characters', () => {
  const long = 'a_function_with_a_long_name_in_a_narrow_box';
  const { flame } = draw(
    profile([[0, 1, { [`main;${long}`]: 100, 'main;short': 100, 'main;tiny': 3, 'main;two': 20, 'main;zzz': 777 }]]),
  );
  // 118 px: (118 - 6) / 6.7 = 16 characters, the last of them "…".
  assert.equal(flame.frame(long).label, `${long.slice(0, 15)}…`);
  assert.equal(flame.frame('short').label, 'short');
  // 3.5 px holds no character.
  assert.equal(flame.frame('tiny').label, null);
  // 23.6 px holds two, too few for even "tw…".
  assert.equal(flame.frame('two').label, null);
  assert.equal(flame.frame('main').label, 'main');
});

test('frame names are escaped wherever they are written', () => {
  const name = '<lambda>&"x"';
  const { flame, html } = draw(profile([[0, 1, { [`main;${name}`]: 10 }]]));
  assert.ok(!html.includes(name), 'the raw name is not in the HTML');
  assert.ok(html.includes('data-frame="&lt;lambda&gt;&amp;&quot;x&quot;"'));
  const f = flame.frame(name);
  assert.equal(f.label, name);
  assert.equal(f.title, `${name} (10 samples, 100.00 %)`);
});

test('in this-window mode each frame has its warm colour and no delta', () => {
  const { warm } = load();
  const { flame } = draw(server);
  for (const f of flame.frames) {
    assert.equal(f.fill, warm(f.frame), f.frame);
    assert.equal(f.delta, null, f.frame);
  }
  assert.equal(flame.zoomFirst, false);
});

test('against the rest of the run with no rest, it says to zoom first and draws the window alone', () => {
  const { flame } = draw(server, 'against');
  assert.equal(flame.zoomFirst, true);
  assert.equal(flame.frames.length, 6);
  assert.ok(flame.frames.every((f) => f.delta === null));
});

test('the mode radios redraw the graph in the mode picked', () => {
  const { box, panel } = draw(server);
  assert.ok(box.innerHTML.includes('value="window" checked'));
  box.radio('against').fire('change');
  assert.equal(panel.mode, 'against');
  assert.ok(box.innerHTML.includes('value="against" checked'));
  assert.equal(readFlame(box.innerHTML).zoomFirst, true);
  box.radio('window').fire('change');
  assert.equal(panel.mode, 'window');
  assert.equal(readFlame(box.innerHTML).zoomFirst, false);
});

test('a window with no slice says to widen it and draws nothing', () => {
  const { flame, html } = draw(profile([]));
  assert.equal(flame.samples, 0);
  assert.equal(flame.text, "No profile slice has its middle in the charts' window: widen it.");
  assert.ok(!html.includes('<svg'));
});

test('a panel without data or without its box is left alone', () => {
  const { drawFlame } = load();
  const { details, box } = flamePanel();
  drawFlame({ el: details, mode: 'window', data: null });
  assert.equal(box.innerHTML, '');
});

// Every flame graph of the pages (a run's, a differential, a gate's) is drawn by flameSvg from
// its data; crates/report/tests/it/flames.rs holds it to report::flame's SVG, character for
// character. Here: its zoom and its search, on the window's graph of the server above.
function graph() {
  const { fold, flameOfTree, flameSvg, flameFound } = load();
  const tree = fold(server, server.slices);
  const data = flameOfTree(tree, fold(server, []), false);
  return { data, flameSvg, flameFound };
}

test('zoomed to a box, it fills the width, its callees within it and its callers across it, faded', () => {
  const { data, flameSvg } = graph();
  const handle = data.boxes.findIndex((b) => data.names[b.name] === 'handle');
  const html = flameSvg(data, handle, '');
  const flame = readFlame(`<p class="flame-head" data-window="all" data-samples="0" data-rest="0"></p>${html}`);
  near(flame.frame('handle').x, MARGIN, 'handle');
  near(flame.frame('handle').w, SPAN, 'handle');
  // hash is 6000 of handle's 10,000 samples.
  near(flame.frame('hash').w, 0.6 * SPAN, 'hash');
  near(flame.frame('parse').x, MARGIN + 0.6 * SPAN, 'parse');
  // gc is not under handle: not drawn; main, handle's caller, spans the graph, faded.
  assert.equal(flame.frame('gc'), undefined);
  near(flame.frame('main').w, SPAN, 'main');
  assert.ok(/<g data-frame="main" data-n="12000" data-box="\d+" opacity="0.6">/.test(html), html);
  assert.ok(!/data-frame="all"[^>]*opacity/.test(html), 'the root is never faded');
});

test('a search marks each box whose name holds it, and counts the share of the whole once', () => {
  const { data, flameSvg, flameFound } = graph();
  const html = flameSvg(data, 0, 'a');
  // handle, hash, parse and main hold an "a"; gc and all do not ("all" does: it is marked too).
  const marked = [
    ...html.matchAll(/data-frame="([^"]+)"[^>]*><title>[^<]*<\/title><rect [^>]*fill="rgb\(230,0,230\)"/g),
  ].map((m) => m[1]);
  assert.deepEqual(marked.sort(), ['all', 'handle', 'hash', 'main', 'parse']);
  // Every box under the root is inside it: the root's share, once.
  assert.equal(flameFound(data, 'a'), 1);
  // hash and parse: 9000 of 12,000, neither inside the other.
  assert.equal(flameFound(data, 'hash') + flameFound(data, 'parse'), 0.75);
  assert.equal(flameFound(data, 'pars'), 0.25);
  assert.equal(flameFound(data, 'nothing'), 0);
});

test("a click on a box of the window's graph zooms to it, one on the root zooms out", () => {
  const { box, panel } = draw(server);
  const click = (name) => {
    const at = readFlame(box.innerHTML).frames.findIndex((f) => f.frame === name);
    const index = box.innerHTML.match(new RegExp(`data-frame="${name}"[^>]*data-box="(\\d+)"`))[1];
    assert.ok(at >= 0, name);
    box.fire('click', { target: { closest: () => ({ getAttribute: () => index }) } });
  };
  click('handle');
  let flame = readFlame(box.innerHTML);
  near(flame.frame('handle').w, SPAN, 'handle');
  assert.equal(flame.frame('gc'), undefined);
  assert.ok(panel.zoom > 0);
  // A click outside any box changes nothing.
  box.fire('click', { target: { closest: () => null } });
  assert.equal(readFlame(box.innerHTML).frame('gc'), undefined);
  click('all');
  flame = readFlame(box.innerHTML);
  near(flame.frame('gc').w, (2000 / 12000) * SPAN, 'gc');
  assert.equal(panel.zoom, 0);
});

test("the window's graph has a search box above it: it marks what it finds and says its share", () => {
  const { details, box, finder } = flamePanel();
  const { drawFlame } = load();
  const panel = { el: details, key: 'k', name: 'flame-mode-0', mode: 'window', data: server };
  drawFlame(panel);
  const input = finder();
  assert.equal(input.className, 'flame-find');
  assert.equal(details.children[1], box, 'the search box is above the graph, outside what each draw rewrites');
  input.fire('input', { target: { value: '  HANDLE ' } });
  assert.equal(panel.find, 'handle');
  const found = box.innerHTML.match(/Found: ([\d.]+) % of the window\./);
  assert.ok(found, box.innerHTML.slice(0, 400));
  const flame = readFlame(box.innerHTML);
  near(Number(found[1]) / 100, flame.frame('handle').w / SPAN, 'the share said is the box found');
  assert.match(box.innerHTML, /data-frame="handle"[^>]*>.*?fill="rgb\(230,0,230\)"/);
  // A second draw (a new window) keeps the one search box and what it holds.
  drawFlame(panel);
  assert.equal(details.children.filter((c) => c.className === 'flame-tools').length, 1);
  assert.match(box.innerHTML, /Found: /);
  input.fire('input', { target: { value: '' } });
  assert.doesNotMatch(box.innerHTML, /Found: /);
});

test('the warm colour is report::model::flame::warm, unsigned above 2^31 too', () => {
  const { warm } = load();
  // The cases model::flame's own test holds Rust to.
  assert.equal(warm('hash'), 'hsl(0,85%,56%)');
  assert.equal(warm('handle'), 'hsl(0,85%,65%)');
  assert.equal(warm('uv__io_poll'), 'hsl(41,85%,66%)');
});
