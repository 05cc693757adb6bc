// Showdown's pages, made explorable: each chart's model (the JSON beside its SVG) drawn with
// uPlot (hover for every series' value; on time charts one crosshair and one zoom for all
// charts of the page, double-click to reset; a series toggled from its legend), every flame graph
// drawn from its data (a click on a box zooms to it, a search marks the functions it finds), the
// flame graph of the charts' window (alone or against the rest of the run), each latency heatmap drawn from
// its data (the cell under the pointer named below it; the columns of the charts' window), and
// the runs tables filtered and sorted. Without JavaScript the SVGs and the whole tables stay:
// nothing here is needed to read a page, only to look closer.
(function () {
  'use strict';

  // How a number is written: the table every page carries once, as JSON in its #number-rules
  // element (report::model::number::RULES, which the SVG's axes follow too), read once here. Null
  // where the page has none, or one whose tie rule this script does not follow: then the charts
  // keep their SVGs and the flame graph its file, and the tables still filter and sort.
  var rules = (function () {
    try {
      var read = JSON.parse(document.getElementById('number-rules').textContent);
      return read.ties === 'half_away_from_zero' ? read : null;
    } catch (_e) {
      return null;
    }
  })();

  // A positive number's digits as its shortest text has them, the text that reads back as the
  // number (Rust's `{:e}` writes the same): 2.345 is 2345 × 10^-3, though its binary value is a
  // hair above. Neither toPrecision's rounding nor toFixed's is used: they round the binary value.
  function decimal(a) {
    var m = /^(\d)(?:\.(\d+))?e([+-]\d+)$/.exec(a.toExponential());
    var fraction = m[2] || '';
    return { digits: m[1] + fraction, exp: Number(m[3]) - fraction.length };
  }

  // A string of digits plus one: '1299' is '1300', '999' is '1000', '' is '1'.
  function increment(digits) {
    var i = digits.length;
    while (i > 0 && digits.charAt(i - 1) === '9') i--;
    var zeros = '0'.repeat(digits.length - i);
    return i === 0 ? '1' + zeros : digits.slice(0, i - 1) + (Number(digits.charAt(i - 1)) + 1) + zeros;
  }

  // digits × 10^exp rounded to a multiple of 10^at by the table's tie rule, half away from zero:
  // the digits are a magnitude, so the first digit dropped rounds it up from 5.
  function roundAt(d, at) {
    if (d.exp >= at) return d;
    var keep = d.digits.length - (at - d.exp);
    if (keep < 0) return { digits: '0', exp: at };
    var kept = d.digits.slice(0, keep);
    if (Number(d.digits.charAt(keep)) >= 5) return { digits: increment(kept), exp: at };
    return { digits: kept || '0', exp: at };
  }

  // digits × 10^exp as plain decimal text: 1235 × 10^-2 is 12.35, 32 × 10^5 is 3200000.
  function plain(d) {
    if (d.exp >= 0) return d.digits + '0'.repeat(d.exp);
    var point = d.digits.length + d.exp;
    if (point > 0) return d.digits.slice(0, point) + '.' + d.digits.slice(point);
    return '0.' + '0'.repeat(-point) + d.digits;
  }

  // Whole digits with the table's separator between each three: 3200000 is 3,200,000.
  function grouped(digits) {
    var out = '';
    for (var i = 0; i < digits.length; i++) {
      if (i > 0 && (digits.length - i) % 3 === 0) out += rules.separator;
      out += digits.charAt(i);
    }
    return out;
  }

  // Four significant digits, whole and thousands-separated from 10,000, "--" where there is no
  // value, a half away from zero: the table's rules, as the SVG's axes write them (report::number,
  // both held to crates/report/tests/numbers.json).
  function fmt(v) {
    if (v == null || !isFinite(v)) return rules.none;
    if (v === 0) return '0';
    var sign = v < 0 ? '-' : '';
    var exact = decimal(Math.abs(v));
    if (Math.abs(v) >= rules.whole_from) return sign + grouped(plain(roundAt(exact, 0)));
    var r = roundAt(exact, exact.exp + exact.digits.length - rules.significant);
    // Rounded up to the whole numbers' range (9999.5 is 10,000): written as they are.
    if (Number(plain(r)) >= rules.whole_from) return sign + grouped(plain(r));
    // The shortest text of what is kept: 3.1, not 3.100.
    var digits = r.digits.replace(/0+$/, '');
    var exp = r.exp + r.digits.length - digits.length;
    var lead = exp + digits.length - 1;
    if (lead < rules.scientific_below) {
      return sign + digits.charAt(0) + (digits.length > 1 ? '.' + digits.slice(1) : '') + 'e' + lead;
    }
    return sign + plain({ digits: digits, exp: exp });
  }

  // v with `decimals` decimals, a half away from zero as the table has it: a percentile's text, a
  // time's, a share's. A minus only where the figure written is not zero: 0.00, not -0.00; no
  // value (a share of nothing) is the table's text for none.
  function fixed(v, decimals) {
    if (v == null || !isFinite(v)) return rules.none;
    var r = v === 0 ? { digits: '0', exp: 0 } : roundAt(decimal(Math.abs(v)), -decimals);
    var digits = r.digits + '0'.repeat(r.exp + decimals);
    if (digits.length <= decimals) digits = '0'.repeat(decimals + 1 - digits.length) + digits;
    var point = digits.length - decimals;
    var text = decimals > 0 ? digits.slice(0, point) + '.' + digits.slice(point) : digits;
    return (v < 0 && /[1-9]/.test(digits) ? '-' : '') + text;
  }

  // A time on the time axis's legend: the table's decimals and unit, 1.50 s.
  function seconds(v) {
    return v == null || !isFinite(v) ? rules.none : fixed(v, rules.seconds_decimals) + rules.seconds_unit;
  }

  // An axis label: a log axis leaves the splits between decades it has no room for null.
  function tick(v) {
    return v == null ? '' : fmt(v);
  }

  // The series' points on one x array, as uPlot draws them: undefined where a series has no
  // point at that x (the line goes on across it), null where it has a gap (the line stops). An x
  // a series has more than once (a search's steps retried at one rate) is on the array as many
  // times, each of its points kept, in its order: none hides another.
  function align(series) {
    var most = new Map();
    series.forEach(function (s) {
      var here = new Map();
      s.x.forEach(function (x) {
        here.set(x, (here.get(x) || 0) + 1);
      });
      here.forEach(function (n, x) {
        most.set(x, Math.max(most.get(x) || 0, n));
      });
    });
    var unique = Array.from(most.keys()).sort(function (a, b) {
      return a - b;
    });
    var xs = [];
    var first = new Map();
    unique.forEach(function (x) {
      first.set(x, xs.length);
      for (var k = 0; k < most.get(x); k++) xs.push(x);
    });
    var data = [xs];
    series.forEach(function (s) {
      var ys = new Array(xs.length);
      var used = new Map();
      s.x.forEach(function (x, i) {
        var k = used.get(x) || 0;
        used.set(x, k + 1);
        ys[first.get(x) + k] = s.y[i];
      });
      data.push(ys);
    });
    return data;
  }

  // The attack's window and the probes' events, drawn under the lines as the SVG has them.
  function marks(model) {
    return function (u) {
      var ctx = u.ctx;
      var top = u.bbox.top;
      var height = u.bbox.height;
      ctx.save();
      if (model.attack) {
        ctx.fillStyle = 'rgba(0,0,0,0.06)';
        var x0 = u.valToPos(model.x_range[0], 'x', true);
        var a0 = u.valToPos(model.attack[0], 'x', true);
        var a1 = u.valToPos(model.attack[1], 'x', true);
        var x1 = u.valToPos(model.x_range[1], 'x', true);
        var left = Math.max(u.bbox.left, Math.min(x0, a0));
        var right = Math.min(u.bbox.left + u.bbox.width, Math.max(x1, a1));
        if (a0 > left) ctx.fillRect(left, top, a0 - left, height);
        if (right > a1) ctx.fillRect(a1, top, right - a1, height);
      }
      ctx.strokeStyle = 'rgba(0,0,0,0.35)';
      ctx.lineWidth = 1;
      model.markers.forEach(function (m) {
        var x = Math.round(u.valToPos(m, 'x', true)) + 0.5;
        ctx.beginPath();
        ctx.moveTo(x, top);
        ctx.lineTo(x, top + height);
        ctx.stroke();
      });
      ctx.restore();
    };
  }

  var charts = []; // time charts: one crosshair, one zoom
  var plots = []; // by percentile and across settings
  var syncing = false;

  // --- the flame graph of the charts' window, and that window against the rest of the run ---

  // biome-ignore lint/suspicious/noAssignInExpressions: the profile files' scripts fill this same object
  var profiles = (window.showdownProfiles = window.showdownProfiles || {});
  var flames = [];
  var view = null; // the charts' x window, or null: the whole run
  var page = null; // every chart's whole x range: the run with its pre- and post-roll
  var span = null;

  // Every chart back to the whole range (the double-click), the pre- and post-roll included.
  function whole() {
    if (!charts.length || !span) return;
    page = span;
    charts[0].setScale('x', { min: span[0], max: span[1] });
  }

  function esc(t) {
    return String(t).replace(/[&<>"]/g, function (c) {
      return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c];
    });
  }

  // The stacks of some slices as a tree of frames: each node's samples, with what it called.
  function fold(data, slices) {
    var root = { name: 'all', n: 0, kids: new Map() };
    slices.forEach(function (s) {
      for (var i = 0; i + 1 < s.counts.length; i += 2) {
        var stack = data.stacks[s.counts[i]];
        var n = s.counts[i + 1];
        root.n += n;
        var node = root;
        for (var j = 0; j < stack.length; j++) {
          var name = data.frames[stack[j]];
          var kid = node.kids.get(name);
          if (!kid) {
            kid = { name: name, n: 0, kids: new Map() };
            node.kids.set(name, kid);
          }
          kid.n += n;
          node = kid;
        }
      }
    });
    return root;
  }

  // A warm colour from the name, as flame graphs have it: the same function, the same colour
  // (report::model::flame::warm, its twin, which the SVGs beside the pages are drawn with).
  function warm(name) {
    var h = 0;
    for (var i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
    return 'hsl(' + (h % 50) + ',85%,' + (55 + ((h >>> 8) % 15)) + '%)';
  }

  // --- every flame graph drawn from its data, a report::model::flame::FlameData, as
  // report::flame draws the SVG the page shows without script: the same geometry, box for box ---

  var FLAME = { width: 1200, margin: 10, row: 17, char: 6.7, narrowest: 0.0002 };

  // Where the boxes start: below the title and its lines.
  function flameTop(data) {
    return data.title || data.lines.length ? 33 + 15 * data.lines.length : 4;
  }

  // A box's label cut to fit `w` pixels; none when under three characters fit.
  function flameLabel(name, w) {
    var fits = Math.floor((w - 6) / FLAME.char);
    if (fits < 3) return '';
    var chars = Array.from(name);
    return chars.length <= fits ? name : chars.slice(0, fits - 1).join('') + '\u2026';
  }

  // Whether box `b` is drawn when the graph is zoomed to box `z`: inside it (its callees), or
  // one of its callers (drawn across the whole width).
  function flameShown(b, z, isZ) {
    var eps = 1e-9;
    if (isZ) return 'inside';
    if (b.depth > z.depth && b.start >= z.start - eps && b.start < z.start + z.width - eps) {
      return b.start + b.width <= z.start + z.width + eps ? 'inside' : null;
    }
    if (b.depth < z.depth && b.start <= z.start + eps && b.start + b.width >= z.start + z.width - eps) {
      return 'caller';
    }
    return null;
  }

  // The graph as SVG, zoomed to box `zoom` (its index; 0, the root, for the whole graph), the
  // boxes whose names contain `find` (lower case) marked in magenta.
  function flameSvg(data, zoom, find) {
    var span = FLAME.width - 2 * FLAME.margin;
    var z = data.boxes[zoom] || data.boxes[0];
    var depth = 0;
    data.boxes.forEach(function (b) {
      depth = Math.max(depth, b.depth);
    });
    var top = flameTop(data);
    var height = top + (depth + 1) * FLAME.row + (data.hidden > 0 ? 16 : 4);
    var out = [
      '<svg xmlns="http://www.w3.org/2000/svg" class="flame-graph" width="100%" viewBox="0 0 ' +
        FLAME.width +
        ' ' +
        height +
        '" font-family="monospace" font-size="11">',
    ];
    if (data.title) {
      out.push('<text x="10" y="18" font-size="14" font-weight="bold">' + esc(data.title) + '</text>');
    }
    data.lines.forEach(function (line, i) {
      out.push('<text x="10" y="' + (36 + 15 * i) + '" font-size="11" fill="rgb(60,60,60)">' + esc(line) + '</text>');
    });
    // Unzoomed, every box where report::flame puts it, to the last bit.
    var lo = zoom ? z.start : 0;
    var wide = zoom ? Math.max(z.width, 1e-12) : 1;
    data.boxes.forEach(function (b, i) {
      var shown = zoom ? flameShown(b, z, b === z) : 'inside';
      if (!shown) return;
      var caller = shown === 'caller';
      var x = caller ? FLAME.margin : FLAME.margin + ((b.start - lo) / wide) * span;
      var w = caller ? span : (b.width / wide) * span;
      var y = top + (depth - b.depth) * FLAME.row;
      var name = data.names[b.name];
      var found = find && name.toLowerCase().indexOf(find) >= 0;
      var label = flameLabel(name, w);
      out.push(
        '<g' +
          (b.class ? ' class="' + b.class + '"' : '') +
          ' data-frame="' +
          esc(name) +
          '"' +
          (b.n != null ? ' data-n="' + Math.round(b.n) + '"' : '') +
          (b.delta != null ? ' data-delta="' + fixed(b.delta, 4) + '"' : '') +
          ' data-box="' +
          i +
          '"' +
          (caller && b !== data.boxes[0] ? ' opacity="0.6"' : '') +
          '><title>' +
          esc(b.title) +
          '</title><rect x="' +
          fixed(x, 2) +
          '" y="' +
          y +
          '" width="' +
          fixed(Math.max(w, 0.5), 2) +
          '" height="' +
          (FLAME.row - 1) +
          '" rx="2" fill="' +
          (found ? 'rgb(230,0,230)' : b.fill) +
          '"></rect>' +
          (label ? '<text x="' + fixed(x + 3, 2) + '" y="' + (y + FLAME.row - 5) + '">' + esc(label) + '</text>' : '') +
          '</g>',
      );
    });
    if (data.hidden > 0) {
      out.push(
        '<text x="10" y="' +
          (height - 4) +
          '" font-size="10" fill="rgb(90,90,90)">Paths narrower than a quarter of a pixel, ' +
          fixed(data.hidden * 100, 2) +
          ' % of the whole together, are not drawn.</text>',
      );
    }
    out.push('</svg>');
    return out.join('');
  }

  // The share of the root in boxes whose names contain `find`, each counted once (a box within
  // another that matched is in it already): the boxes are in pre-order, so a box inside the last
  // one counted starts before that one ends.
  function flameFound(data, find) {
    var share = 0;
    var until = -1;
    data.boxes.forEach(function (b) {
      if (!find || data.names[b.name].toLowerCase().indexOf(find) < 0) return;
      if (b.start < until - 1e-12) return;
      share += b.width;
      until = b.start + b.width;
    });
    return share;
  }

  // The boxes of a tree of samples (`tree`, from `fold`) as report::model::flame lays out a
  // run's: in pre-order, callees by name side by side from their caller's left edge, a path under
  // FLAME.narrowest of the root left out with its callees and counted in `hidden`; against
  // `other` (the rest of the run), each coloured by how its share changed.
  function flameOfTree(tree, other, against) {
    var data = { title: '', lines: [], names: [], boxes: [], hidden: 0 };
    var index = new Map();
    var largest = 0;
    var flat = [];
    (function walk(node, otherNode, start, depth) {
      var width = node.n / tree.n;
      if (width < FLAME.narrowest) {
        data.hidden += width;
        return;
      }
      var before = otherNode && other.n ? otherNode.n / other.n : 0;
      var delta = against ? 100 * (width - before) : null;
      if (against) largest = Math.max(largest, Math.abs(delta));
      flat.push({ node: node, start: start, width: width, depth: depth, delta: delta, before: before });
      var kids = Array.from(node.kids.values()).sort(function (a, b) {
        return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
      });
      var x = start;
      kids.forEach(function (k) {
        walk(k, otherNode ? otherNode.kids.get(k.name) : null, x, depth + 1);
        x += k.n / tree.n;
      });
    })(tree, other, 0, 0);
    flat.forEach(function (f) {
      var name = f.node.name;
      if (!index.has(name)) {
        index.set(name, data.names.length);
        data.names.push(name);
      }
      var title = name + ' (' + fmt(f.node.n) + ' samples, ' + fixed(100 * f.width, 2) + ' %';
      var fill = warm(name);
      if (f.delta !== null) {
        var k = largest > 0 ? Math.round((200 * Math.abs(f.delta)) / largest) : 0;
        fill =
          f.delta > 0 ? 'rgb(255,' + (255 - k) + ',' + (255 - k) + ')' : 'rgb(' + (255 - k) + ',' + (255 - k) + ',255)';
        var change = fixed(f.delta, 2);
        title +=
          '; ' +
          fixed(100 * f.before, 2) +
          ' % in the rest of the run: ' +
          (change.charAt(0) === '-' ? '' : '+') +
          change +
          ' points';
      }
      data.boxes.push({
        name: index.get(name),
        depth: f.depth,
        start: f.start,
        width: f.width,
        fill: fill,
        title: title + ')',
        n: f.node.n,
        delta: f.delta,
      });
    });
    return data;
  }

  function drawFlame(panel) {
    var data = panel.data;
    var box = panel.el.querySelector('.flame-live');
    if (!data || !box) return;
    var w = view || [-Infinity, Infinity];
    var inside = [];
    var rest = [];
    data.slices.forEach(function (s) {
      var mid = (s.from + s.to) / 2;
      (mid >= w[0] && mid <= w[1] ? inside : rest).push(s);
    });
    var tree = fold(data, inside);
    var other = fold(data, rest);
    var against = panel.mode === 'against' && other.n > 0 && tree.n > 0;
    var from = inside.length ? inside[0].from : NaN;
    var to = inside.length ? inside[inside.length - 1].to : NaN;
    var head =
      '<p class="flame-head" data-window="' +
      (view ? view[0] + ',' + view[1] : 'all') +
      '" data-samples="' +
      tree.n +
      '" data-rest="' +
      other.n +
      '">' +
      (inside.length
        ? 'Stacks of ' +
          fixed(from, 1) +
          '–' +
          fixed(to, 1) +
          rules.seconds_unit +
          ': ' +
          fmt(tree.n) +
          ' samples in ' +
          fmt(inside.length) +
          (inside.length === 1 ? ' slice' : ' slices') +
          '; the rest of the run: ' +
          fmt(other.n) +
          ' samples.'
        : "No profile slice has its middle in the charts' window: widen it.") +
      '</p><p class="flame-modes">' +
      '<label><input type="radio" name="' +
      panel.name +
      '" value="window"' +
      (panel.mode === 'window' ? ' checked' : '') +
      '> this window</label> ' +
      '<label><input type="radio" name="' +
      panel.name +
      '" value="against"' +
      (panel.mode === 'against' ? ' checked' : '') +
      '> this window against the rest of the run</label>' +
      (panel.mode === 'against' && !against
        ? ' <span class="meta">(zoom a chart first: the rest of the run has no samples)</span>'
        : '') +
      '</p>';
    var drawn = tree.n ? flameOfTree(tree, other, against) : null;
    // A box clicked is zoomed to (the root: the whole window again); a new window starts whole.
    if (!drawn || !drawn.boxes[panel.zoom]) panel.zoom = 0;
    flameFinder(panel, box);
    var find = panel.find || '';
    var found =
      drawn && find
        ? '<p class="flame-said">Found: ' + fixed(100 * flameFound(drawn, find), 2) + ' % of the window.</p>'
        : '';
    box.innerHTML = head + found + (drawn ? flameSvg(drawn, panel.zoom, find) : '');
    if (!panel.clicks) {
      panel.clicks = true;
      box.addEventListener('click', function (e) {
        var g = e.target && e.target.closest ? e.target.closest('g[data-box]') : null;
        if (!g) return;
        panel.zoom = Number(g.getAttribute('data-box'));
        drawFlame(panel);
      });
    }
    box.querySelectorAll('input[type=radio]').forEach(function (r) {
      r.addEventListener('change', function () {
        panel.mode = r.value;
        drawFlame(panel);
      });
    });
  }

  // The window's graph's search box, made once above it (outside what each draw rewrites, so
  // that typing keeps its focus): what is typed marks the functions whose names hold it.
  function flameFinder(panel, box) {
    var parent = box.parentNode;
    if (panel.finder || !parent || !parent.insertBefore) return;
    var tools = document.createElement('p');
    tools.className = 'flame-tools';
    var label = document.createElement('label');
    label.textContent = 'Find a function ';
    var input = document.createElement('input');
    input.type = 'search';
    input.className = 'flame-find';
    label.appendChild(input);
    tools.appendChild(label);
    parent.insertBefore(tools, box);
    panel.finder = input;
    input.addEventListener('input', function (e) {
      panel.find = e.target.value.trim().toLowerCase();
      drawFlame(panel);
    });
  }

  // Each flame graph figure drawn live from its data, beside the page (data-src, a script that
  // files it under data-key) or in it (script.flame-data): a click on a box zooms to it, one on
  // the root (or "Whole graph") back out, and what is typed in its search box is marked. The
  // figure's SVG (or the SVG file it embeds) stays for print and where the data does not load.
  // biome-ignore lint/suspicious/noAssignInExpressions: the graphs' files fill this same object
  var graphs = (window.showdownFlames = window.showdownFlames || {});

  function flameLive(figure, data) {
    if (!data || !data.boxes || !data.boxes.length) return;
    var state = { zoom: 0, find: '' };
    var live = document.createElement('div');
    live.className = 'flame-graph-live';
    live.innerHTML =
      '<p class="flame-tools"><label>Find a function <input type="search" class="flame-find"></label> ' +
      '<button type="button" class="flame-whole">Whole graph</button> <span class="flame-said"></span></p>' +
      '<div class="flame-pic"></div>';
    figure.appendChild(live);
    var pic = live.querySelector('.flame-pic');
    var said = live.querySelector('.flame-said');
    function redraw() {
      pic.innerHTML = flameSvg(data, state.zoom, state.find);
      var z = data.boxes[state.zoom];
      var parts = [];
      if (state.zoom)
        parts.push('Zoomed to ' + data.names[z.name] + ' (' + fixed(100 * z.width, 2) + ' % of the whole).');
      if (state.find) parts.push('Found: ' + fixed(100 * flameFound(data, state.find), 2) + ' % of the whole.');
      said.textContent = parts.join(' ');
      figure.setAttribute('data-zoom', String(state.zoom));
    }
    pic.addEventListener('click', function (e) {
      var g = e.target.closest('g[data-box]');
      if (!g) return;
      state.zoom = Number(g.getAttribute('data-box'));
      redraw();
    });
    live.querySelector('.flame-whole').addEventListener('click', function () {
      state.zoom = 0;
      redraw();
    });
    live.querySelector('.flame-find').addEventListener('input', function (e) {
      state.find = e.target.value.trim().toLowerCase();
      redraw();
    });
    redraw();
    figure.classList.add('live');
  }

  function flameFigures() {
    document.querySelectorAll('figure.flame-figure').forEach(function (figure) {
      var inline = figure.querySelector('script.flame-data');
      if (inline) {
        try {
          flameLive(figure, JSON.parse(inline.textContent));
        } catch (_e) {
          // Data that does not parse: the SVG stays.
        }
        return;
      }
      var key = figure.getAttribute('data-key');
      var src = figure.getAttribute('data-src');
      if (!key || !src) return;
      var script = document.createElement('script');
      script.src = src;
      script.onload = function () {
        flameLive(figure, graphs[key]);
      };
      document.head.appendChild(script);
    });
  }
  function flamePanels() {
    document.querySelectorAll('details.flame-window').forEach(function (el, i) {
      var panel = { el: el, key: el.getAttribute('data-key'), name: 'flame-mode-' + i, mode: 'window', data: null };
      flames.push(panel);
      function open() {
        if (!el.open) return;
        if (panel.data || profiles[panel.key]) {
          panel.data = profiles[panel.key];
          drawFlame(panel);
          return;
        }
        if (panel.loading) return;
        panel.loading = true;
        var script = document.createElement('script');
        script.src = el.getAttribute('data-src');
        script.onload = function () {
          panel.data = profiles[panel.key] || null;
          drawFlame(panel);
        };
        script.onerror = function () {
          el.querySelector('.flame-live').textContent =
            'Could not load ' + el.getAttribute('data-src') + ': keep it beside the page.';
        };
        document.head.appendChild(script);
      }
      el.addEventListener('toggle', open);
      open();
    });
  }

  // --- the latency heatmaps: drawn from their data, a cell named on hover, the charts' window ---

  var heatmaps = [];
  // The picture's size and margins, the SVG's beside it (report::heatmap): the same drawing.
  var HEAT = { width: 720, height: 300, left: 64, right: 16, top: 28, bottom: 40 };
  // Light yellow for one request, through orange and red, to dark purple for the most.
  var HEAT_STOPS = [
    [0, [255, 237, 160]],
    [0.4, [253, 141, 60]],
    [0.7, [215, 25, 28]],
    [1, [73, 0, 106]],
  ];

  // A cell's colour from its shade, the log of its count over the log of the most in one cell
  // (report::heatmap's colour scale, its twin).
  function heatColor(shade) {
    var s = Math.min(1, Math.max(0, shade));
    var i = 0;
    while (i < 2 && HEAT_STOPS[i + 1][0] <= s) i++;
    var a = HEAT_STOPS[i];
    var b = HEAT_STOPS[i + 1];
    var f = Math.min(1, Math.max(0, (s - a[0]) / (b[0] - a[0])));
    var hex = '#';
    for (var k = 0; k < 3; k++) {
      var v = Math.round(a[1][k] + (b[1][k] - a[1][k]) * f);
      hex += (v < 16 ? '0' : '') + v.toString(16);
    }
    return hex;
  }

  // A latency (ns) in the unit the SVG's axis writes it in, its figure by the page's rules:
  // 100µs, 177.8µs, 1ms, 42.17ms, 1.5s.
  function latency(ns) {
    if (ns >= 1e9 - 0.5) return fmt(ns / 1e9) + 's';
    if (ns >= 1e6 - 0.5) return fmt(ns / 1e6) + 'ms';
    return fmt(ns / 1e3) + 'µs';
  }

  // A round step near `raw`: 1, 2 or 5 times a power of ten, as the SVG's time axis steps.
  function niceStep(raw) {
    var r = Math.max(raw, 1e-6);
    var p = 10 ** Math.floor(Math.log10(r));
    var m = r / p;
    return p * (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10);
  }

  // An SVG element with its attributes (and its text), added to `parent`.
  function svgAdd(parent, tag, attrs, text) {
    var node = document.createElementNS('http://www.w3.org/2000/svg', tag);
    Object.keys(attrs).forEach(function (name) {
      node.setAttribute(name, attrs[name]);
    });
    if (text != null) node.textContent = text;
    if (parent) parent.appendChild(node);
    return node;
  }

  // What a cell holds, for the line under the heatmap: its count, its latencies, its slice.
  function cellText(data, c, r) {
    var column = data.columns[c];
    var n = column.counts[r];
    var took = latency(data.edges[r]) + '–' + latency(data.edges[r + 1]);
    var when = seconds(column.from) + ' to ' + seconds(column.to);
    return fmt(n) + (n === 1 ? ' request took ' : ' requests took ') + took + ', from ' + when + '.';
  }

  // The heatmap of the charts' window: the columns that overlap it (every one with no window),
  // drawn across the whole plot, its rows and colours as the whole run has them.
  function drawHeatmap(panel) {
    var data = panel.data;
    var w = view || [-Infinity, Infinity];
    var shown = [];
    data.columns.forEach(function (column, c) {
      if (column.to > w[0] && column.from < w[1]) shown.push(c);
    });
    if (panel.svg) panel.box.removeChild(panel.svg);
    panel.svg = null;
    if (!shown.length) {
      panel.hint = "No column of this heatmap is in the charts' window: widen it.";
      panel.line.textContent = panel.hint;
      return;
    }
    var low = data.rows[0];
    var rows = data.rows[1] - low;
    var t0 = data.columns[shown[0]].from;
    var t1 = Math.max(data.columns[shown[shown.length - 1]].to, t0 + 1e-9);
    var pw = HEAT.width - HEAT.left - HEAT.right;
    var ph = HEAT.height - HEAT.top - HEAT.bottom;
    var rowH = ph / rows;
    function x(t) {
      return HEAT.left + ((t - t0) / (t1 - t0)) * pw;
    }
    // Where the bottom of row r lies (row r is bin low + r).
    function y(r) {
      return HEAT.top + ph - r * rowH;
    }
    var svg = svgAdd(null, 'svg', {
      viewBox: '0 0 ' + HEAT.width + ' ' + HEAT.height,
      width: HEAT.width,
      height: HEAT.height,
      class: 'heatmap',
      'data-total': data.total,
      'data-window': view ? view[0] + ',' + view[1] : 'all',
      'data-columns': shown.length,
      'font-family': 'sans-serif',
      'font-size': 11,
      role: 'img',
      'aria-label': panel.title,
    });
    svgAdd(svg, 'text', { x: HEAT.left, y: 16, 'font-size': 13, 'font-weight': 600 }, panel.title);
    svgAdd(svg, 'rect', { x: HEAT.left, y: HEAT.top, width: pw, height: ph, fill: '#fafafa', stroke: '#ccc' });
    var scale = Math.log(data.max + 1);
    shown.forEach(function (c) {
      var column = data.columns[c];
      var x0 = x(column.from);
      var width = Math.max(x(column.to) - x0, 0.5);
      column.counts.forEach(function (n, row) {
        if (!n || row >= rows) return;
        svgAdd(svg, 'rect', {
          x: x0.toFixed(2),
          y: y(row + 1).toFixed(2),
          width: width.toFixed(2),
          height: rowH.toFixed(2),
          fill: heatColor(Math.log(n + 1) / scale),
          'data-count': n,
          'data-column': c,
          'data-row': row,
        });
      });
    });
    // The latency axis: a tick and a label each decade.
    for (var r = 0; r <= rows; r++) {
      if ((low + r) % data.bins_per_decade !== 0) continue;
      var yy = y(r);
      svgAdd(svg, 'line', { x1: HEAT.left - 4, x2: HEAT.left, y1: yy.toFixed(2), y2: yy.toFixed(2), stroke: '#999' });
      var label = { x: HEAT.left - 6, y: (yy + 4).toFixed(2), 'text-anchor': 'end' };
      svgAdd(svg, 'text', label, latency(data.edges[r]));
    }
    // The time axis: a tick and a label at round steps of seconds.
    var step = niceStep((t1 - t0) / 8);
    var bottom = HEAT.top + ph;
    for (var k = Math.ceil(t0 / step); k * step <= t1 + 1e-9; k++) {
      var xx = x(k * step).toFixed(2);
      svgAdd(svg, 'line', { x1: xx, x2: xx, y1: bottom, y2: bottom + 4, stroke: '#999' });
      svgAdd(svg, 'text', { x: xx, y: bottom + 16, 'text-anchor': 'middle' }, fmt(k * step));
    }
    var along = { x: HEAT.left + pw / 2, y: HEAT.height - 6, 'text-anchor': 'middle' };
    svgAdd(svg, 'text', along, 'time since the attack started (s)');
    var up = { transform: 'translate(14 ' + (HEAT.top + ph / 2) + ') rotate(-90)', 'text-anchor': 'middle' };
    svgAdd(svg, 'text', up, data.kind + ' latency');
    // The cell under the pointer, named in the line below; the window's hint when it leaves.
    svg.addEventListener('mouseover', function (e) {
      var cell = e.target;
      var c = cell && cell.getAttribute ? cell.getAttribute('data-column') : null;
      if (c === null) {
        panel.line.textContent = panel.hint;
        return;
      }
      panel.line.textContent = cellText(data, Number(c), Number(cell.getAttribute('data-row')));
    });
    svg.addEventListener('mouseleave', function () {
      panel.line.textContent = panel.hint;
    });
    panel.hint = view
      ? "The charts' window: " +
        fmt(shown.length) +
        ' of ' +
        fmt(data.columns.length) +
        ' columns, ' +
        seconds(t0) +
        ' to ' +
        seconds(t1) +
        '. Hover a cell for its count, its latencies and its slice of the run.'
      : 'Hover a cell for its count, its latencies and its slice of the run.';
    panel.line.textContent = panel.hint;
    panel.box.insertBefore(svg, panel.line);
    panel.svg = svg;
  }

  // Each heatmap drawn from the data beside its SVG, which it hides (print keeps the SVG); a
  // heatmap whose data does not parse keeps its SVG.
  function heatmapFigures() {
    document.querySelectorAll('figure.heatmap').forEach(function (figure) {
      var data;
      try {
        data = JSON.parse(figure.querySelector('script.heatmap-data').textContent);
      } catch (_e) {
        return;
      }
      if (!data || !data.columns || !data.columns.length) return;
      var box = document.createElement('div');
      box.className = 'live-chart heatmap-live';
      var line = document.createElement('p');
      line.className = 'heatmap-hover';
      box.appendChild(line);
      figure.appendChild(box);
      var panel = {
        data: data,
        box: box,
        line: line,
        svg: null,
        hint: '',
        title: figure.getAttribute('data-title') || data.kind + ' latency',
      };
      try {
        drawHeatmap(panel);
      } catch (_e) {
        // Data that parsed but cannot be drawn: the static SVG stays, the charts are drawn.
        figure.removeChild(box);
        return;
      }
      heatmaps.push(panel);
      figure.classList.add('live');
    });
  }

  // The window the charts show: the flame graphs and the heatmaps follow it.
  function windowChanged(u) {
    var min = u.scales.x.min;
    var max = u.scales.x.max;
    if (!page) return;
    view = min <= page[0] && max >= page[1] ? null : [min, max];
    flames.forEach(function (p) {
      p.zoom = 0;
      if (p.el.open) drawFlame(p);
    });
    heatmaps.forEach(function (p) {
      drawHeatmap(p);
    });
  }

  // Every chart of the page follows a zoom made on any of them, however it was made.
  function follow(u, key) {
    if (key !== 'x' || syncing) return;
    windowChanged(u);
    syncing = true;
    var min = u.scales.x.min;
    var max = u.scales.x.max;
    charts.forEach(function (o) {
      if (o !== u && (o.scales.x.min !== min || o.scales.x.max !== max)) {
        o.setScale('x', { min: min, max: max });
      }
    });
    syncing = false;
  }

  // x = 1 / (1 - p) as the percentile it stands for: 90%, 99.9%, 99.95%, a half away from zero
  // as the table has it (report::model::number::percentile, its twin).
  function percentile(x) {
    if (x == null || !isFinite(x) || x < 1) return rules.none;
    var digits = Math.max(0, Math.ceil(Math.log10(x) - 1e-9) - 2);
    return fixed(100 * (1 - 1 / x), digits) + '%';
  }

  // What each kind of chart's x axis is: its scale (the range the SVG draws, from the model),
  // ticks, and how the legend writes a value.
  function xAxis(model) {
    var axis = model.x_axis;
    var range = function () {
      return model.x_range.slice();
    };
    switch (axis.kind) {
      case 'percentile':
        return {
          scale: { time: false, distr: 3, log: 10, range: range },
          label: 'percentile',
          value: percentile,
          ticks: {
            splits: function () {
              var out = [];
              for (var v = 1; v <= model.x_range[1] * 1.0001; v *= 10) out.push(v);
              return out;
            },
            values: function (u, vals) {
              return vals.map(function (v) {
                return v === 1 ? '0%' : percentile(v);
              });
            },
          },
        };
      case 'names':
        return {
          scale: { time: false, range: range },
          label: model.x_label,
          value: function (v) {
            return v == null ? rules.none : axis.names[Math.round(v)] || rules.none;
          },
          ticks: {
            splits: function () {
              return axis.names.map(function (n, i) {
                return i;
              });
            },
            values: function (u, vals) {
              return vals.map(function (v) {
                return axis.names[v] || '';
              });
            },
          },
        };
      case 'numbers':
        return {
          scale: axis.log ? { time: false, distr: 3, log: 10, range: range } : { time: false, range: range },
          label: model.x_label,
          value: fmt,
          ticks: {
            values: function (u, vals) {
              return vals.map(tick);
            },
          },
        };
      default:
        return {
          scale: { time: false },
          label: 't (s)',
          value: seconds,
          ticks: {},
        };
    }
  }

  // A rule across the plot where a series marks one x (a capacity), and a bar from the lowest
  // to the highest of the repetitions at each setting.
  function spreads(model) {
    return function (u) {
      var ctx = u.ctx;
      ctx.save();
      ctx.lineWidth = 1.5;
      model.series.forEach(function (s, i) {
        if (!s.rule || !u.series[i + 1].show) return;
        var x = Math.round(u.valToPos(s.x[0], 'x', true)) + 0.5;
        ctx.strokeStyle = s.color;
        ctx.setLineDash([6, 4]);
        ctx.beginPath();
        ctx.moveTo(x, u.bbox.top);
        ctx.lineTo(x, u.bbox.top + u.bbox.height);
        ctx.stroke();
        ctx.setLineDash([]);
      });
      model.series.forEach(function (s, i) {
        if (!s.spread || !u.series[i + 1].show) return;
        ctx.strokeStyle = s.color;
        s.spread.forEach(function (b) {
          var x = Math.round(u.valToPos(b[0], 'x', true)) + 0.5;
          ctx.beginPath();
          ctx.moveTo(x, u.valToPos(b[1], 'y', true));
          ctx.lineTo(x, u.valToPos(b[2], 'y', true));
          ctx.stroke();
        });
      });
      ctx.restore();
    };
  }

  function draw(figure) {
    var script = figure.querySelector('script.chart-data');
    var model;
    try {
      model = JSON.parse(script.textContent);
    } catch (_e) {
      return; // the SVG stays
    }
    if (!model.series.length) return;
    var timeline = model.x_axis.kind === 'time';
    if (timeline) {
      span = span ? [Math.min(span[0], model.x_range[0]), Math.max(span[1], model.x_range[1])] : model.x_range.slice();
    }
    var x = xAxis(model);
    var box = document.createElement('div');
    box.className = 'live-chart';
    figure.insertBefore(box, figure.querySelector('figcaption'));
    var stepped = uPlot.paths && uPlot.paths.stepped ? uPlot.paths.stepped({ align: 1 }) : null;
    var series = [
      {
        label: x.label,
        value: function (u, v) {
          return x.value(v);
        },
      },
    ];
    model.series.forEach(function (s) {
      var opts = {
        label: s.name,
        stroke: s.color,
        width: 1.5,
        spanGaps: !timeline,
        value: function (u, v) {
          return fmt(v);
        },
        points:
          s.points || s.markers_only ? { show: true, size: s.markers_only ? 10 : 7, fill: s.color } : { show: false },
      };
      if (s.markers_only || s.rule)
        opts.paths = function () {
          return null;
        };
      if (s.rule) {
        // Drawn across the plot by the draw hook; the legend reads where it stands.
        opts.points = { show: false };
        opts.value = function () {
          return fmt(s.x[0]);
        };
      }
      if (s.own) {
        // A stack's layer: the legend reads the layer's own value, not the sum drawn.
        var own = new Map();
        s.x.forEach(function (x, i) {
          if (s.own[i] != null) own.set(x, s.own[i]);
        });
        opts.value = function (u, v, si, di) {
          var o = di == null ? undefined : own.get(u.data[0][di]);
          return fmt(o === undefined ? v : o);
        };
      }
      if (s.dashed) opts.dash = [6, 4];
      if (s.filled) opts.fill = s.color + '55';
      if (s.step && stepped) opts.paths = stepped;
      series.push(opts);
    });
    // A band is two edges no legend lists, filled between (p50 to p99 of each interval).
    var edges = [];
    var bands = [];
    (model.bands || []).forEach(function (b) {
      var low = series.length + edges.length;
      edges.push({ x: b.x, y: b.low }, { x: b.x, y: b.high });
      bands.push({ series: [low + 1, low], fill: b.color + '2e' });
    });
    edges.forEach(function (e, i) {
      series.push({
        label: model.bands[i >> 1].name + (i % 2 ? ' (high)' : ' (low)'),
        stroke: 'transparent',
        width: 0,
        spanGaps: false,
        value: function (u, v) {
          return fmt(v);
        },
        points: { show: false },
      });
    });
    // Where the SVG fixes the y axis (from 0, up to the highest bar, or on a log scale for
    // latencies spanning more than a decade and a half), so does this chart.
    var scales = { x: x.scale };
    if (model.y_range) {
      var yRange = function () {
        return model.y_range.slice();
      };
      scales.y = model.y_log ? { distr: 3, log: 10, range: yRange } : { range: yRange };
    }
    var width = Math.max(320, box.clientWidth || figure.clientWidth || 640);
    var u = new uPlot(
      {
        title: model.title,
        width: width,
        height: 260,
        scales: scales,
        // Time charts share one crosshair and one zoom; the others are read one at a time.
        cursor: timeline
          ? {
              sync: { key: 'showdown', setSeries: true },
              drag: { x: true, y: false, setScale: true },
              bind: {
                dblclick: function () {
                  return function () {
                    whole();
                    return null;
                  };
                },
              },
            }
          : { drag: { x: false, y: false } },
        legend: { live: true },
        series: series,
        bands: bands,
        axes: [
          Object.assign({ label: model.x_label, size: 40 }, x.ticks),
          Object.assign(
            {
              label: model.y_label,
              size: 60,
              values: function (u, vals) {
                return vals.map(tick);
              },
            },
            // A log y axis labelled where the SVG labels it (1, 2, 5 times powers of ten).
            model.y_ticks && model.y_ticks.length
              ? {
                  splits: function () {
                    return model.y_ticks.slice();
                  },
                  // Every one of them labelled: uPlot's log filter would keep only some.
                  filter: function (u, splits) {
                    return splits;
                  },
                }
              : {},
          ),
        ],
        hooks: timeline ? { drawClear: [marks(model)], setScale: [follow] } : { draw: [spreads(model)] },
      },
      align(model.series.concat(edges)),
      box,
    );
    u.root.setAttribute('data-chart', figure.id);
    var rows = u.root.querySelectorAll('.u-legend .u-series');
    for (var i = series.length - edges.length; i < series.length; i++) {
      if (rows[i]) rows[i].style.display = 'none';
    }
    (timeline ? charts : plots).push(u);
    figure.classList.add('live');
    if (window.ResizeObserver) {
      new ResizeObserver(function () {
        var w = Math.max(320, box.clientWidth);
        if (Math.abs(w - u.width) > 4) u.setSize({ width: w, height: 260 });
      }).observe(box);
    }
  }

  // --- the runs tables: a filter, and every column sorted by a click on its header ---

  function filterRows(input) {
    var words = input.value.toLowerCase().split(/\s+/).filter(Boolean);
    document.querySelectorAll('tr[data-search]').forEach(function (tr) {
      var text = tr.getAttribute('data-search');
      var hit = words.every(function (w) {
        return text.indexOf(w) >= 0;
      });
      tr.classList.toggle('filtered', !hit);
    });
  }

  function sortBy(th) {
    var table = th.closest('table');
    var index = Array.prototype.indexOf.call(th.parentNode.children, th);
    var down = th.getAttribute('aria-sort') === 'ascending';
    table.querySelectorAll('th').forEach(function (h) {
      h.removeAttribute('aria-sort');
    });
    th.setAttribute('aria-sort', down ? 'descending' : 'ascending');
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    function key(tr) {
      var td = tr.cells[index];
      if (!td) return '';
      var v = td.getAttribute('data-v');
      return v !== null && v !== '' && !isNaN(Number(v)) ? Number(v) : td.textContent.trim().toLowerCase();
    }
    rows.sort(function (a, b) {
      var ka = key(a);
      var kb = key(b);
      var c = typeof ka === 'number' && typeof kb === 'number' ? ka - kb : String(ka).localeCompare(String(kb));
      return down ? -c : c;
    });
    rows.forEach(function (r) {
      body.appendChild(r);
    });
  }

  function tables() {
    var input = document.getElementById('filter');
    if (input) {
      input.hidden = false;
      input.addEventListener('input', function () {
        filterRows(input);
      });
    }
    document.querySelectorAll('table.sortable th').forEach(function (th) {
      th.tabIndex = 0;
      th.title = 'sort by this column';
      th.addEventListener('click', function () {
        sortBy(th);
      });
      th.addEventListener('keydown', function (e) {
        if (e.key === 'Enter') sortBy(th);
      });
    });
  }

  function start() {
    tables();
    if (!rules) return;
    flamePanels();
    flameFigures();
    heatmapFigures();
    if (typeof uPlot === 'undefined') return;
    document.querySelectorAll('figure[data-chart]').forEach(draw);
    whole();
    document.documentElement.setAttribute('data-charts', String(charts.length + plots.length));
  }

  window.showdownCharts = charts;
  window.showdownPlots = plots;
  if (document.readyState === 'loading') {
    document.addEventListener('DOMContentLoaded', start);
  } else {
    start();
  }

  // Node's unit tests (tools/js/test) run this file with a stand-in window and document, and
  // take its functions from here. A page has no `module` (or, should an element's id be "module",
  // one without exports): nothing happens there.
  if (typeof module !== 'undefined' && module.exports) {
    module.exports = {
      fmt: fmt,
      percentile: percentile,
      seconds: seconds,
      align: align,
      xAxis: xAxis,
      fold: fold,
      warm: warm,
      esc: esc,
      drawFlame: drawFlame,
      flameSvg: flameSvg,
      flameFound: flameFound,
      flameOfTree: flameOfTree,
      heatColor: heatColor,
      filterRows: filterRows,
      sortBy: sortBy,
    };
  }
})();
