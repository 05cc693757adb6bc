// A whole page as the script runs it: its charts handed to uPlot (a stand-in that records what it
// was given), one zoom for every time chart, the flame graph and the latency heatmaps following
// the charts' window, the double-click back to the whole run, and the runs tables' filter and
// sort.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { load, el, node, page, flamePanel, readFlame, profile, numbers } = require('./harness');

// uPlot as far as the script uses it: options and data kept, the x scale, setScale's hook, the
// legend's rows.
function fakeUPlot() {
  const made = [];
  class UPlot {
    constructor(opts, data, box) {
      this.opts = opts;
      this.data = data;
      this.box = box;
      this.width = opts.width;
      this.series = opts.series.map((s) => ({ ...s, show: true }));
      this.bands = opts.bands;
      this.scales = { x: { min: data[0][0], max: data[0][data[0].length - 1] } };
      const rows = opts.series.map(() => el());
      this.root = el({ select: { '.u-legend .u-series': rows } });
      this.rows = rows;
      made.push(this);
    }
    setScale(key, { min, max }) {
      this.scales[key] = { min, max };
      for (const hook of this.opts.hooks.setScale ?? []) hook(this, key);
    }
    setSize({ width }) {
      this.width = width;
    }
  }
  UPlot.made = made;
  return UPlot;
}

function figure(id, model) {
  const script = el({ textContent: JSON.stringify(model) });
  const inserted = [];
  return el({
    id,
    clientWidth: 800,
    inserted,
    select: { 'script.chart-data': [script], figcaption: [] },
    insertBefore(node) {
      inserted.push(node);
    },
  });
}

const line = (name, color, x, y, more = {}) => ({
  name,
  color,
  dashed: false,
  step: false,
  filled: false,
  points: false,
  markers_only: false,
  x,
  y,
  ...more,
});

// The run page: latency (with the attack's window, a probe event, a band and a stack's layer)
// and CPU over time, the latency distribution, and the window's flame graph. The run is 0 to
// 10 s, drawn with 2 s before and after (the CPU chart 1 s).
const latency = {
  title: 'Latency',
  x_axis: { kind: 'time' },
  x_label: 't (s)',
  y_label: 'latency (ms)',
  x_range: [-2, 12],
  y_range: null,
  attack: [0, 10],
  markers: [4.5],
  series: [
    line('p99', '#d62728', [0, 1, 2, 3], [5, null, 7, 8]),
    line('queue', '#2ca02c', [0, 2], [10, 20], { filled: true, own: [4, 6] }),
  ],
  bands: [{ name: 'p50–p99', color: '#1f77b4', x: [0, 1, 2], low: [1, 2, 3], high: [4, 5, 6] }],
};
const cpu = {
  ...latency,
  title: 'CPU',
  y_label: 'CPU (%)',
  x_range: [-1, 11],
  attack: null,
  markers: [],
  bands: [],
  series: [line('target', '#9467bd', [0, 5, 10], [30, 90, 30])],
};
const distribution = {
  title: 'Latency by percentile',
  x_axis: { kind: 'percentile' },
  x_label: 'percentile',
  y_label: 'latency (ms)',
  x_range: [1, 1000],
  y_range: [0, 40],
  attack: null,
  markers: [],
  bands: [],
  series: [line('all', '#1f77b4', [1, 10, 100, 1000], [1, 2, 5, 30], { spread: [[10, 1.5, 2.5]] })],
};
// One slice a second; from 2 s to 5 s a burst calls a frame of its own.
const run = profile(
  Array.from({ length: 10 }, (_, i) => [
    i,
    i + 1,
    i >= 2 && i < 5 ? { 'main;handle': 80, 'main;burst': 20 } : { 'main;handle': 100 },
  ]),
);

function open() {
  const uPlot = fakeUPlot();
  const figures = [figure('latency', latency), figure('probe-0-cpu', cpu), figure('distribution', distribution)];
  const flame = flamePanel();
  const window = { showdownProfiles: { 'run-1/probe-0': run } };
  const document = page({ select: { 'figure[data-chart]': figures, 'details.flame-window': [flame.details] } });
  load({ window, document, uPlot });
  const [u, c] = window.showdownCharts;
  return { uPlot, figures, flame, window, document, u, c, head: () => readFlame(flame.box.innerHTML) };
}

test('every chart is handed to uPlot: time charts share a zoom, the others are read alone', () => {
  const { uPlot, figures, window, document } = open();
  assert.equal(document.documentElement.getAttribute('data-charts'), '3');
  assert.equal(window.showdownCharts.length, 2);
  assert.equal(window.showdownPlots.length, 1);
  assert.deepEqual(
    uPlot.made.map((p) => p.root.getAttribute('data-chart')),
    ['latency', 'probe-0-cpu', 'distribution'],
  );
  for (const f of figures) {
    assert.ok(f.classList.contains('live'), f.id);
    assert.equal(f.inserted[0].className, 'live-chart');
  }
  const [u, c, d] = uPlot.made;
  assert.equal(u.opts.cursor.sync.key, 'showdown');
  assert.equal(c.opts.cursor.sync.key, 'showdown');
  assert.deepEqual(d.opts.cursor, { drag: { x: false, y: false } });
  assert.equal(u.width, 800);
  assert.equal(u.opts.title, 'Latency');
  // The y axis as the SVG fixes it, where it does.
  assert.equal(u.opts.scales.y, undefined);
  assert.deepEqual(d.opts.scales.y.range(), [0, 40]);
});

test('a chart without series, or with a model that does not parse, keeps its SVG', () => {
  const uPlot = fakeUPlot();
  const empty = figure('empty', { ...cpu, series: [] });
  const broken = figure('broken', {});
  broken.querySelector('script.chart-data').textContent = '{"title": ';
  const document = page({ select: { 'figure[data-chart]': [empty, broken] } });
  const window = {};
  load({ window, document, uPlot });
  assert.equal(uPlot.made.length, 0);
  assert.equal(document.documentElement.getAttribute('data-charts'), '0');
  assert.ok(!empty.classList.contains('live'));
  assert.ok(!broken.classList.contains('live'));
});

test('latencies across settings on a log y axis, and the capacity a dashed rule across the plot', () => {
  const uPlot = fakeUPlot();
  const model = {
    title: 'p99 against the offered rate',
    x_axis: { kind: 'numbers', log: false },
    x_label: 'offered rate (req/s)',
    y_label: 'p99 latency (ms)',
    x_range: [900, 1300],
    y_range: [0.5, 1600],
    y_log: true,
    y_ticks: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000],
    attack: null,
    markers: [],
    bands: [],
    series: [
      line('p99', '#1f77b4', [1000, 1200], [0.8, 1250], { points: true }),
      line('capacity', '#7f7f7f', [1100], [1600], { dashed: true, rule: true }),
    ],
  };
  const document = page({ select: { 'figure[data-chart]': [figure('term-0', model)] } });
  load({ window: {}, document, uPlot });
  const [u] = uPlot.made;
  // The y axis as the SVG draws it: log 10 over the model's range.
  assert.equal(u.opts.scales.y.distr, 3);
  assert.equal(u.opts.scales.y.log, 10);
  assert.deepEqual(u.opts.scales.y.range(), [0.5, 1600]);
  assert.deepEqual(u.opts.axes[1].splits(), [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000]);
  assert.deepEqual(u.opts.axes[1].filter(u, [1, 2, 5]), [1, 2, 5]);
  assert.deepEqual(u.opts.axes[1].values(u, [1, null, 10, null, 1000]), ['1', '', '10', '', '1000']);
  // The rule is no line or point of its own: the legend reads where it stands.
  const rule = u.opts.series[2];
  assert.equal(rule.paths(), null);
  assert.deepEqual(rule.points, { show: false });
  assert.equal(rule.value(u, 1600), '1100');
  // The draw hook strokes it from the plot's top to its bottom at its x, dashed.
  const strokes = [];
  let path = [];
  const ctx = {
    save() {},
    restore() {},
    setLineDash(d) {
      this.dash = d;
    },
    beginPath() {
      path = [];
    },
    moveTo(x, y) {
      path.push([x, y]);
    },
    lineTo(x, y) {
      path.push([x, y]);
    },
    stroke() {
      strokes.push({ color: this.strokeStyle, dash: this.dash, path });
    },
  };
  u.ctx = ctx;
  u.bbox = { top: 10, height: 200 };
  u.valToPos = (v, scale) => (scale === 'x' ? v / 10 : 100);
  for (const hook of u.opts.hooks.draw) hook(u);
  assert.deepEqual(strokes, [
    {
      color: '#7f7f7f',
      dash: [6, 4],
      path: [
        [110.5, 10],
        [110.5, 210],
      ],
    },
  ]);
  // Hidden from the legend, it is not drawn.
  u.series[2].show = false;
  strokes.length = 0;
  for (const hook of u.opts.hooks.draw) hook(u);
  assert.deepEqual(strokes, []);
});

test('a page whose uPlot did not load keeps its SVGs and still sorts its tables', () => {
  const th = el();
  const document = page({ select: { 'figure[data-chart]': [figure('latency', latency)], 'table.sortable th': [th] } });
  load({ document });
  assert.equal(document.documentElement.getAttribute('data-charts'), null);
  assert.equal(th.tabIndex, 0);
  assert.equal(th.title, 'sort by this column');
});

// The rules missing, with a tie rule the script does not follow, or not JSON.
test('a page without number rules the script can follow keeps its SVGs and still sorts its tables', () => {
  const rounded = JSON.stringify({ ...numbers.rules, ties: 'half_to_even' });
  for (const rules of [null, rounded, '{"ties": ']) {
    const uPlot = fakeUPlot();
    const th = el();
    const flame = flamePanel();
    const select = {
      'figure[data-chart]': [figure('latency', latency)],
      'table.sortable th': [th],
      'details.flame-window': [flame.details],
    };
    const document = page({ select, rules });
    load({ window: { showdownProfiles: { 'run-1/probe-0': run } }, document, uPlot });
    assert.equal(uPlot.made.length, 0, String(rules));
    assert.equal(document.documentElement.getAttribute('data-charts'), null);
    assert.equal(flame.box.innerHTML, '');
    assert.equal(th.title, 'sort by this column');
  }
});

test("a time chart's data: the series and the band's edges on one x array, the edges out of the legend", () => {
  const { u } = open();
  assert.deepEqual(u.data[0], [0, 1, 2, 3]);
  assert.equal(u.data.length, 1 + 2 + 2);
  assert.deepEqual(Array.from(u.data[1]), [5, null, 7, 8]);
  assert.deepEqual(Array.from(u.data[2]), [10, undefined, 20, undefined]);
  assert.deepEqual(Array.from(u.data[3]), [1, 2, 3, undefined]);
  assert.deepEqual(Array.from(u.data[4]), [4, 5, 6, undefined]);
  // The band fills from its high edge (series 4) down to its low one (series 3).
  assert.deepEqual(u.opts.bands, [{ series: [4, 3], fill: '#1f77b42e' }]);
  assert.deepEqual(
    u.opts.series.map((s) => s.label),
    ['t (s)', 'p99', 'queue', 'p50–p99 (low)', 'p50–p99 (high)'],
  );
  assert.deepEqual(
    u.rows.map((r) => r.style.display),
    [undefined, undefined, undefined, 'none', 'none'],
  );
  // On the timeline a gap stops the line; the filled layer is filled.
  assert.equal(u.opts.series[1].spanGaps, false);
  assert.equal(u.opts.series[2].fill, '#2ca02c55');
});

test('the legend writes x in seconds, values as fmt does, and a layer its own value, not the stack', () => {
  const { u } = open();
  const [x, p99, queue] = u.opts.series;
  assert.equal(x.value(u, 2.345), '2.35 s');
  assert.equal(p99.value(u, 25000), '25,000');
  assert.equal(p99.value(u, null), '--');
  // At x = 2 the stack is 20 high; the layer itself is 6.
  assert.equal(queue.value(u, 20, 2, 2), '6');
  assert.equal(queue.value(u, 20, 2, null), '20');
  assert.deepEqual(u.opts.axes[1].values(u, [0, 12.5, 25000]), ['0', '12.5', '25,000']);
});

test('time charts open on the whole run, each with its pre- and post-roll: the widest of them', () => {
  const { u, c, head } = open();
  assert.deepEqual(u.scales.x, { min: -2, max: 12 });
  assert.deepEqual(c.scales.x, { min: -2, max: 12 });
  const flame = head();
  assert.equal(flame.window, 'all');
  assert.equal(flame.samples, 1000);
  assert.equal(flame.rest, 0);
});

test('a zoom on any time chart zooms them all, and the flame graph follows it', () => {
  const { u, c, head } = open();
  u.setScale('x', { min: 2, max: 5 });
  assert.deepEqual(c.scales.x, { min: 2, max: 5 });
  let flame = head();
  assert.equal(flame.window, '2,5');
  // The slices whose middle is in the window: 2–3, 3–4 and 4–5.
  assert.equal(flame.samples, 300);
  assert.equal(flame.rest, 700);
  assert.equal(flame.frame('burst').n, 60);
  c.setScale('x', { min: 6, max: 9.5 });
  assert.deepEqual(u.scales.x, { min: 6, max: 9.5 });
  flame = head();
  assert.equal(flame.window, '6,9.5');
  // 6–7, 7–8, 8–9, and 9–10, whose middle is the window's edge.
  assert.equal(flame.samples, 400);
  assert.equal(flame.frame('burst'), undefined);
  // A y zoom is not the window.
  u.setScale('y', { min: 0, max: 1 });
  assert.deepEqual(c.scales.x, { min: 6, max: 9.5 });
});

test('against the rest of the run, each frame is coloured by how much more of the window it is', () => {
  const { u, flame, head } = open();
  u.setScale('x', { min: 2, max: 5 });
  flame.box.radio('against').fire('change');
  const drawn = head();
  assert.equal(drawn.zoomFirst, false);
  // burst: 60 of the window's 300 samples, none of the rest's 700: +20 points.
  const burst = drawn.frame('burst');
  assert.equal(burst.delta, 20);
  assert.ok(burst.title.endsWith('(60 samples, 20.00 %; 0.00 % in the rest of the run: +20.00 points)'), burst.title);
  // handle: 240 of 300 (80 %), 700 of 700 (100 %): 20 points less.
  const handle = drawn.frame('handle');
  assert.equal(handle.delta, -20);
  assert.equal(drawn.frame('main').delta, 0);
  // The largest change in either direction is the deepest colour: red for more, blue for less.
  assert.equal(burst.fill, 'rgb(255,55,55)');
  assert.equal(handle.fill, 'rgb(55,55,255)');
  // main is all of both: no change, white.
  assert.equal(drawn.frame('main').fill, 'rgb(255,255,255)');
});

test('a double-click takes every time chart, and the flame graph, back to the whole run', () => {
  const { u, c, head } = open();
  u.setScale('x', { min: 2, max: 5 });
  const dblclick = c.opts.cursor.bind.dblclick(c, null, () => {});
  assert.equal(dblclick(), null);
  assert.deepEqual(u.scales.x, { min: -2, max: 12 });
  assert.deepEqual(c.scales.x, { min: -2, max: 12 });
  const flame = head();
  assert.equal(flame.window, 'all');
  assert.equal(flame.samples, 1000);
});

test("the latency chart shades what is outside the attack's window and marks the probe's events", () => {
  const { u } = open();
  // A canvas context that records every call and style set.
  const calls = [];
  const ctx = new Proxy(
    {},
    {
      get: (state, name) => (name in state ? state[name] : (...args) => calls.push([name, ...args])),
      set: (state, name, value) => {
        state[name] = value;
        calls.push([`${name}=`, value]);
        return true;
      },
    },
  );
  // x from -2 to 12 s over 140 px from the left edge at 10: 10 px a second.
  const drawn = {
    ctx,
    bbox: { left: 10, top: 5, width: 140, height: 50 },
    valToPos: (v) => 10 + (v + 2) * 10,
  };
  u.opts.hooks.drawClear[0](drawn);
  const fills = calls.filter((c) => c[0] === 'fillRect');
  // The pre-roll (-2 to 0 s) and the post-roll (10 to 12 s).
  assert.deepEqual(fills, [
    ['fillRect', 10, 5, 20, 50],
    ['fillRect', 130, 5, 20, 50],
  ]);
  // The event at 4.5 s: a line on the pixel's middle, top to bottom.
  assert.deepEqual(
    calls.filter((c) => c[0] === 'moveTo' || c[0] === 'lineTo'),
    [
      ['moveTo', 75.5, 5],
      ['lineTo', 75.5, 55],
    ],
  );
  assert.equal(calls[0][0], 'save');
  assert.equal(calls.at(-1)[0], 'restore');
});

test('the distribution draws each shown series spread as a vertical bar, a hidden one none', () => {
  const { window } = open();
  const d = window.showdownPlots[0];
  const calls = [];
  const ctx = { save() {}, restore() {}, beginPath() {}, stroke() {} };
  ctx.moveTo = (...a) => calls.push(['moveTo', ...a]);
  ctx.lineTo = (...a) => calls.push(['lineTo', ...a]);
  const drawn = { ctx, series: d.series, valToPos: (v, axis) => (axis === 'x' ? v * 2.3 : 100 - v * 10) };
  d.opts.hooks.draw[0](drawn);
  // At x = 10 (23 px, on the pixel's middle), from 1.5 ms up to 2.5 ms.
  assert.deepEqual(calls, [
    ['moveTo', 23.5, 85],
    ['lineTo', 23.5, 75],
  ]);
  assert.equal(ctx.strokeStyle, '#1f77b4');
  calls.length = 0;
  d.series[1].show = false;
  d.opts.hooks.draw[0](drawn);
  assert.deepEqual(calls, []);
});

test('the percentile chart writes its axis and legend in percentiles', () => {
  const { window } = open();
  const d = window.showdownPlots[0];
  assert.equal(d.opts.series[0].value(d, 1000), '99.9%');
  assert.deepEqual(d.opts.axes[0].values(d, [1, 10, 100]), ['0%', '90%', '99%']);
  assert.equal(d.opts.series[1].spanGaps, true);
});

test('a flame graph that is closed loads nothing until it is opened, then loads its profile file', () => {
  const flame = flamePanel({ key: 'run-2/probe-0', open: false });
  const appended = [];
  const document = page({ select: { 'details.flame-window': [flame.details] } });
  document.head.appendChild = (script) => appended.push(script);
  const window = {};
  load({ window, document });
  assert.equal(appended.length, 0);
  assert.equal(flame.box.innerHTML, '');
  flame.details.open = true;
  flame.details.fire('toggle');
  assert.equal(appended.length, 1);
  assert.equal(appended[0].src, 'profile.js');
  // Opened again while it loads: no second script.
  flame.details.fire('toggle');
  assert.equal(appended.length, 1);
  // The file files its profile under the key, as flame_data.rs writes it, then loads.
  window.showdownProfiles['run-2/probe-0'] = run;
  appended[0].onload();
  assert.equal(readFlame(flame.box.innerHTML).samples, 1000);
});

test('a profile file that does not load says to keep it beside the page', () => {
  const flame = flamePanel();
  const appended = [];
  const document = page({ select: { 'details.flame-window': [flame.details] } });
  document.head.appendChild = (script) => appended.push(script);
  load({ document });
  appended[0].onerror();
  assert.equal(flame.box.textContent, 'Could not load profile.js: keep it beside the page.');
});

// The runs table: rows with their search text and cells, in a table whose headers sort it.
function runsTable(rows) {
  const trs = rows.map(({ search, cells }) =>
    el({
      attrs: { 'data-search': search },
      cells: cells.map(([text, v]) => el({ textContent: ` ${text} `, attrs: v === undefined ? {} : { 'data-v': v } })),
    }),
  );
  const body = {
    rows: trs,
    appendChild(tr) {
      body.rows = body.rows.filter((r) => r !== tr).concat(tr);
    },
  };
  const headerRow = { children: [] };
  const table = el({ tBodies: [body] });
  const ths = ['label', 'rate', 'p99'].map(() => el({ parentNode: headerRow, closest: () => table }));
  headerRow.children.push(...ths);
  table.querySelectorAll = (selector) => (selector === 'th' ? ths : []);
  const order = () => body.rows.map((r) => r.cells[0].textContent.trim());
  return { trs, ths, body, order };
}

const runs = [
  { search: 'node cluster p99 baseline', cells: [['Node cluster'], ['1.5k', '1500'], ['12.5 ms', '12.5']] },
  { search: 'go p99 baseline', cells: [['go'], ['900', '900'], ['—', '']] },
  { search: 'rust tuned', cells: [['Rust'], ['10k', '10000'], ['3.2 ms', '3.2']] },
];

test('the filter hides the rows that lack any of its words, whatever their case', () => {
  const table = runsTable(runs);
  const input = el({ hidden: true, value: '' });
  const document = page({ select: { 'tr[data-search]': table.trs }, ids: { filter: input } });
  load({ document });
  assert.equal(input.hidden, false);
  const hidden = () =>
    table.trs.filter((tr) => tr.classList.contains('filtered')).map((tr) => tr.cells[0].textContent.trim());
  input.value = '  P99   Baseline ';
  input.fire('input');
  assert.deepEqual(hidden(), ['Rust']);
  input.value = 'node p99';
  input.fire('input');
  assert.deepEqual(hidden(), ['go', 'Rust']);
  input.value = 'nothing';
  input.fire('input');
  assert.deepEqual(hidden(), ['Node cluster', 'go', 'Rust']);
  input.value = '';
  input.fire('input');
  assert.deepEqual(hidden(), []);
});

test('a header sorts by its data-v as numbers, ascending then descending, and only it is marked', () => {
  const table = runsTable(runs);
  const document = page({ select: { 'table.sortable th': table.ths } });
  load({ document });
  const [label, rate] = table.ths;
  rate.fire('click');
  // 900 < 1500 < 10000, not "10k" < "1.5k" < "900".
  assert.deepEqual(table.order(), ['go', 'Node cluster', 'Rust']);
  assert.equal(rate.getAttribute('aria-sort'), 'ascending');
  rate.fire('keydown', { key: 'Enter' });
  assert.deepEqual(table.order(), ['Rust', 'Node cluster', 'go']);
  assert.equal(rate.getAttribute('aria-sort'), 'descending');
  rate.fire('keydown', { key: 'a' });
  assert.equal(rate.getAttribute('aria-sort'), 'descending');
  label.fire('click');
  assert.equal(rate.getAttribute('aria-sort'), null);
  assert.equal(label.getAttribute('aria-sort'), 'ascending');
  // Text, trimmed and without case: go, Node cluster, Rust.
  assert.deepEqual(table.order(), ['go', 'Node cluster', 'Rust']);
});

test('a cell without a number sorts by its text', () => {
  const { sortBy } = load();
  const table = runsTable(runs);
  const p99 = table.ths[2];
  sortBy(p99);
  // 3.2 before 12.5, as numbers; go's cell has an empty data-v, so its text "—" is its key,
  // compared with the others as text: a dash comes before digits.
  assert.deepEqual(table.order(), ['go', 'Rust', 'Node cluster']);
});

// --- the latency heatmaps ---

// Eight bins a decade from 1 µs: bin b's bottom edge, ns (report::model::heatmap::edge).
const edge = (bin) => 1e3 * 10 ** (bin / 8);

// A heatmap as the page carries it (report::model::heatmap::HeatmapData as JSON): rows 16 to 40
// (100 µs to 100 ms), three one-second columns; 12,345 requests near 200 µs and 10 a row above
// in the first, a slow mode near 50 ms in the last two: six cells, 13,406 requests.
const heatmap = (() => {
  const rows = [16, 40];
  const column = (from, cells) => {
    const counts = Array.from({ length: rows[1] - rows[0] }, () => 0);
    for (const [bin, n] of Object.entries(cells)) counts[Number(bin) - rows[0]] = n;
    return { from, to: from + 1, counts };
  };
  return {
    kind: 'corrected',
    total: 13406,
    max: 12345,
    rows,
    bins_per_decade: 8,
    edges: Array.from({ length: rows[1] - rows[0] + 1 }, (_, i) => edge(rows[0] + i)),
    columns: [column(0, { 18: 12345, 19: 10 }), column(1, { 18: 900, 37: 100 }), column(2, { 18: 1, 37: 50 })],
  };
})();

const HOVER = 'Hover a cell for its count, its latencies and its slice of the run.';

// A heatmap's figure as pages::heatmaps writes it: its title, and its data as the text of its
// script element.
function heatmapFigure(json = JSON.stringify(heatmap)) {
  return node('figure', null, {
    attrs: { 'data-title': 'corrected latency, count by time and latency' },
    select: { 'script.heatmap-data': [el({ textContent: json })] },
  });
}

// What the script drew into a heatmap's figure: its SVG (null where it drew none) and how many
// it holds, the hover line under it, and the SVG's cells and texts.
function drawnHeatmap(map) {
  const box = map.children.find((n) => n.className === 'live-chart heatmap-live');
  const svg = box.children.find((n) => n.tag === 'svg') ?? null;
  const parts = svg ? svg.children : [];
  return {
    svg,
    svgs: box.children.filter((n) => n.tag === 'svg').length,
    hover: box.children.find((n) => n.className === 'heatmap-hover'),
    cells: parts.filter((n) => n.tag === 'rect' && n.getAttribute('data-count') !== null),
    texts: parts.filter((n) => n.tag === 'text').map((n) => n.textContent),
  };
}

// A page with the heatmap, and these time charts drawn by `uPlot`.
function openHeatmap({ uPlot, charts = [] } = {}) {
  const map = heatmapFigure();
  const document = page({ select: { 'figure[data-chart]': charts, 'figure.heatmap': [map] } });
  const window = {};
  load({ window, document, uPlot });
  return { map, window, drawn: () => drawnHeatmap(map) };
}

test('a heatmap is drawn from its data: a cell for each count, its colour and place as the SVG has them', () => {
  const { map, drawn } = openHeatmap();
  const { svg, cells, texts, hover } = drawn();
  // The script's drawing replaces the SVG beside it (which print keeps).
  assert.ok(map.classList.contains('live'));
  assert.equal(svg.namespace, 'http://www.w3.org/2000/svg');
  assert.equal(svg.getAttribute('data-window'), 'all');
  const counts = heatmap.columns.flatMap((c) => c.counts).filter((n) => n > 0);
  assert.equal(cells.length, counts.length);
  assert.equal(cells.length, 6);
  assert.equal(
    cells.reduce((sum, c) => sum + Number(c.getAttribute('data-count')), 0),
    heatmap.total,
  );
  // The most requests in one cell are the darkest colour; one request, light yellow.
  const cell = (count) => cells.find((c) => c.getAttribute('data-count') === String(count));
  assert.equal(cell(12345).getAttribute('fill'), '#49006a');
  assert.equal(cell(1).getAttribute('fill'), '#ffdb8e');
  // At 200 µs in the first second: the plot's left edge (64), a third of its 640 px, the third
  // of 24 rows up its 232 px.
  const place = ['x', 'y', 'width', 'height'].map((a) => cell(12345).getAttribute(a));
  assert.deepEqual(place, ['64.00', '231.00', '213.33', '9.67']);
  // Its title, each decade's latency, round seconds, the latency's kind.
  assert.equal(texts[0], 'corrected latency, count by time and latency');
  for (const label of ['100µs', '1ms', '10ms', '100ms', '0', '0.5', '1', '2.5', '3', 'corrected latency']) {
    assert.ok(texts.includes(label), `${label}: ${texts}`);
  }
  assert.equal(hover.textContent, HOVER);
});

test('hovering a cell names its count as fmt writes it, its latencies and its slice of the run', () => {
  const { drawn } = openHeatmap();
  const { svg, cells, hover } = drawn();
  const cell = (count) => cells.find((c) => c.getAttribute('data-count') === String(count));
  svg.fire('mouseover', { target: cell(12345) });
  assert.equal(hover.textContent, '12,345 requests took 177.8µs–237.1µs, from 0.00 s to 1.00 s.');
  svg.fire('mouseover', { target: cell(1) });
  assert.equal(hover.textContent, '1 request took 177.8µs–237.1µs, from 2.00 s to 3.00 s.');
  svg.fire('mouseover', { target: cell(100) });
  assert.equal(hover.textContent, '100 requests took 42.17ms–56.23ms, from 1.00 s to 2.00 s.');
  // Over a label, no cell is named (the line says what to do again), nor off the heatmap.
  svg.fire('mouseover', { target: svg.children.find((n) => n.tag === 'text') });
  assert.equal(hover.textContent, HOVER);
  svg.fire('mouseover', { target: cell(100) });
  svg.fire('mouseleave');
  assert.equal(hover.textContent, HOVER);
});

test("a zoom on the time charts keeps the heatmap's columns in the window; the double-click, all of them", () => {
  const uPlot = fakeUPlot();
  const { window, drawn } = openHeatmap({ uPlot, charts: [figure('latency', latency)] });
  const [u] = window.showdownCharts;
  assert.equal(drawn().svg.getAttribute('data-window'), 'all');
  u.setScale('x', { min: 1.2, max: 1.8 });
  const zoomed = drawn();
  assert.equal(zoomed.svg.getAttribute('data-window'), '1.2,1.8');
  assert.equal(zoomed.svgs, 1, 'the heatmap drawn before is replaced');
  // The second second's column alone, across the whole plot.
  assert.deepEqual(
    zoomed.cells.map((c) => c.getAttribute('data-count')),
    ['900', '100'],
  );
  for (const c of zoomed.cells) assert.equal(`${c.getAttribute('x')} ${c.getAttribute('width')}`, '64.00 640.00');
  assert.ok(zoomed.hover.textContent.startsWith("The charts' window: 1 of 3 columns, 1.00 s to 2.00 s."));
  zoomed.svg.fire('mouseover', { target: zoomed.cells[0] });
  assert.equal(zoomed.hover.textContent, '900 requests took 177.8µs–237.1µs, from 1.00 s to 2.00 s.');
  // A window with no column: no cell, and the line says so.
  u.setScale('x', { min: 5, max: 8 });
  const empty = drawn();
  assert.equal(empty.svg, null);
  assert.equal(empty.hover.textContent, "No column of this heatmap is in the charts' window: widen it.");
  const dblclick = u.opts.cursor.bind.dblclick(u, null, () => {});
  dblclick();
  const whole = drawn();
  assert.equal(whole.svg.getAttribute('data-window'), 'all');
  assert.equal(whole.cells.length, 6);
  assert.equal(whole.svgs, 1);
  assert.equal(whole.hover.textContent, HOVER);
});

test('a heatmap whose data does not parse or has no column, or on a page without number rules, keeps its SVG', () => {
  const keeps = (json, rules) => {
    const map = heatmapFigure(json);
    load({ document: page({ select: { 'figure.heatmap': [map] }, rules }) });
    assert.equal(map.children.length, 0, json);
    assert.ok(!map.classList.contains('live'), json);
  };
  keeps('{"kind": ');
  keeps(JSON.stringify({ ...heatmap, columns: [] }));
  // Data that parses but cannot be drawn (no bin edges): the SVG stays, nothing is left half made.
  keeps(JSON.stringify({ ...heatmap, edges: undefined, rows: undefined }));
  keeps(JSON.stringify(heatmap), null);
});
