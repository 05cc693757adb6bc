// What the tests run the pages' script in: the script itself, as a page runs it, with a stand-in
// window, document and uPlot that hold just what it touches, and readers of the HTML it writes.
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const vm = require('node:vm');

const file = path.resolve(__dirname, '../../../crates/report/assets/showdown.js');
const source = fs.readFileSync(file, 'utf8');

// How the pages write numbers: the rules every page carries (report::model::number::RULES, which
// crates/report/tests/it/numbers.rs holds these to) and the text of each case, Rust's and the
// script's alike. A case is [value, text], a value of null no value.
const numbersFile = path.resolve(__dirname, '../../../crates/report/tests/numbers.json');
const numbers = JSON.parse(fs.readFileSync(numbersFile, 'utf8'));

// Runs the script once (a fresh page: its own charts, flame panels and window), with the given
// globals, and returns what it exports. `uPlot` left out: a page whose uPlot did not load.
function load({ window = {}, document = page(), uPlot } = {}) {
  const module = { exports: {} };
  // The script's first line stays line 1, so a failure's stack points into showdown.js.
  const run = vm.runInThisContext(`(function (window, document, uPlot, module) {${source}\n})`, { filename: file });
  run(window, document, uPlot, module);
  return module.exports;
}

// An element with attributes, classes, listeners, and `select`: what querySelectorAll(selector)
// finds (a list, or a function that makes one).
function el({ attrs = {}, classes = [], select = {}, ...fields } = {}) {
  const set = new Set(classes);
  const listeners = {};
  return Object.assign(
    {
      attrs,
      style: {},
      listeners,
      getAttribute(name) {
        return Object.hasOwn(attrs, name) ? attrs[name] : null;
      },
      setAttribute(name, value) {
        attrs[name] = String(value);
      },
      removeAttribute(name) {
        delete attrs[name];
      },
      classList: {
        add: (c) => set.add(c),
        contains: (c) => set.has(c),
        toggle(c, on = !set.has(c)) {
          if (on) set.add(c);
          else set.delete(c);
          return on;
        },
      },
      addEventListener(type, fn) {
        listeners[type] ??= [];
        listeners[type].push(fn);
      },
      fire(type, event = {}) {
        for (const fn of listeners[type] ?? []) fn(event);
      },
      querySelectorAll(selector) {
        const found = select[selector];
        return [...((typeof found === 'function' ? found() : found) ?? [])];
      },
      querySelector(selector) {
        return this.querySelectorAll(selector)[0] ?? null;
      },
    },
    fields,
  );
}

// An element the script makes (createElement, or createElementNS with its namespace), or a
// page's element it adds to: it holds the ones added to it, in order, in `children`; `more` as
// an element's fields (attrs, select…).
function node(tag, namespace = null, more = {}) {
  const children = [];
  return el({
    tag,
    namespace,
    children,
    clientWidth: 0,
    appendChild(child) {
      children.push(child);
      return child;
    },
    insertBefore(child, before) {
      const at = children.indexOf(before);
      children.splice(at < 0 ? children.length : at, 0, child);
      return child;
    },
    removeChild(child) {
      children.splice(children.indexOf(child), 1);
      return child;
    },
    ...more,
  });
}

// A document: `select` as an element's; ids for getElementById. Its #number-rules element holds
// `rules`, the text a page carries (the cases' rules unless told; null: a page without them).
function page({ select = {}, ids = {}, rules = JSON.stringify(numbers.rules) } = {}) {
  const all = rules === null ? ids : { 'number-rules': el({ textContent: rules }), ...ids };
  return Object.assign(el({ select }), {
    readyState: 'complete',
    documentElement: el(),
    head: el({ appendChild() {} }),
    createElement: (tag) => node(tag),
    createElementNS: (namespace, tag) => node(tag, namespace),
    getElementById: (id) => all[id] ?? null,
  });
}

// A flame graph's <details> and the box its script draws into; box.radio(value) is the mode's
// radio button in what was drawn last.
function flamePanel({ key = 'run-1/probe-0', open = true } = {}) {
  const box = el({ innerHTML: '' });
  let radios = [];
  box.querySelectorAll = (selector) => {
    if (selector !== 'input[type=radio]') return [];
    radios = [...box.innerHTML.matchAll(/<input type="radio" name="[^"]*" value="(\w+)"/g)].map((m) =>
      el({ value: m[1] }),
    );
    return radios;
  };
  box.radio = (value) => radios.find((r) => r.value === value);
  const details = node('details', null, {
    attrs: { 'data-key': key, 'data-src': 'profile.js' },
    open,
    select: { '.flame-live': [box] },
  });
  box.parentNode = details;
  details.children.push(box);
  // The search box the script puts above the graph (null before the first draw).
  const finder = () => details.children[0]?.children?.[0]?.children?.[0] ?? null;
  return { details, box, finder };
}

function unescapeHtml(text) {
  return text
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&amp;/g, '&');
}

// The flame graph as drawn: its head, whether it says to zoom first, and every frame's box.
function readFlame(html) {
  const head = html.match(
    /<p class="flame-head" data-window="([^"]*)" data-samples="(\d+)" data-rest="(\d+)">(.*?)<\/p>/,
  );
  const svg = html.match(/<svg [^>]*viewBox="0 0 (\d+) ([\d.]+)"/);
  const frames = [
    ...html.matchAll(
      /<g(?: class="[^"]*")? data-frame="([^"]*)" data-n="(\d+)"(?: data-delta="([^"]+)")? data-box="\d+"(?: opacity="[\d.]+")?><title>(.*?)<\/title><rect x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="(\d+)" rx="2" fill="([^"]+)"><\/rect>(?:<text x="[\d.]+" y="[\d.]+">(.*?)<\/text>)?<\/g>/g,
    ),
  ].map((m) => ({
    frame: unescapeHtml(m[1]),
    n: Number(m[2]),
    delta: m[3] === undefined ? null : Number(m[3]),
    title: unescapeHtml(m[4]),
    x: Number(m[5]),
    y: Number(m[6]),
    w: Number(m[7]),
    height: Number(m[8]),
    fill: m[9],
    label: m[10] === undefined ? null : unescapeHtml(m[10]),
  }));
  return {
    window: head[1],
    samples: Number(head[2]),
    rest: Number(head[3]),
    text: head[4],
    zoomFirst: html.includes('(zoom a chart first'),
    size: svg ? { width: Number(svg[1]), height: Number(svg[2]) } : null,
    frames,
    frame: (name) => frames.find((f) => f.frame === name),
  };
}

// A profile as flame_data.rs writes it: frames by index, stacks of frame indices, and slices
// whose counts are (stack, samples) pairs. `slices` is [from, to, {"a;b;c": samples, …}] each.
function profile(slices) {
  const frames = [];
  const stacks = [];
  const stackIndex = new Map();
  const frameIndex = (name) => {
    if (!frames.includes(name)) frames.push(name);
    return frames.indexOf(name);
  };
  return {
    hz: 99,
    frames,
    stacks,
    slices: slices.map(([from, to, counts]) => ({
      from,
      to,
      counts: Object.entries(counts).flatMap(([stack, n]) => {
        if (!stackIndex.has(stack)) {
          stackIndex.set(stack, stacks.length);
          stacks.push(stack.split(';').map(frameIndex));
        }
        return [stackIndex.get(stack), n];
      }),
    })),
  };
}

module.exports = { load, el, node, page, flamePanel, readFlame, profile, file, numbers };
