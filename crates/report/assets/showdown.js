// Showdown's pages, made explorable: each time chart's model (the JSON beside its SVG) drawn
// with uPlot (hover for every series' value, one crosshair and one zoom for all charts of the
// page, double-click to reset, a series toggled from its legend), and the runs tables filtered
// and sorted. Without JavaScript the SVGs and the whole tables stay: nothing here is needed to
// read a page, only to look closer.
(function () {
  'use strict';

  // Four significant digits, as the SVG's axes write them; "--" where there is no value.
  function fmt(v) {
    if (v == null || !isFinite(v)) return '--';
    if (v === 0) return '0';
    var a = Math.abs(v);
    if (a >= 1e4) return Math.round(v).toLocaleString('en-US');
    return String(Number(v.toPrecision(4)));
  }

  // The series' points on one x array, as uPlot draws them: undefined where a series has no
  // point at that x (the line goes on across it), null where it has a gap (the line stops).
  function align(series) {
    var xs = [];
    var seen = new Set();
    series.forEach(function (s) {
      s.x.forEach(function (x) {
        if (!seen.has(x)) { seen.add(x); xs.push(x); }
      });
    });
    xs.sort(function (a, b) { return a - b; });
    var at = new Map();
    xs.forEach(function (x, i) { at.set(x, i); });
    var data = [xs];
    series.forEach(function (s) {
      var ys = new Array(xs.length);
      s.x.forEach(function (x, i) { ys[at.get(x)] = s.y[i]; });
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

  var charts = [];
  var syncing = false;

  // Every chart of the page follows a zoom made on any of them, however it was made.
  function follow(u, key) {
    if (key !== 'x' || syncing) return;
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

  function draw(figure) {
    var script = figure.querySelector('script.chart-data');
    var model;
    try {
      model = JSON.parse(script.textContent);
    } catch (e) {
      return; // the SVG stays
    }
    if (!model.series.length) return;
    var box = document.createElement('div');
    box.className = 'live-chart';
    figure.insertBefore(box, figure.querySelector('figcaption'));
    var stepped = uPlot.paths && uPlot.paths.stepped ? uPlot.paths.stepped({ align: 1 }) : null;
    var series = [{ label: 't (s)', value: function (u, v) { return v == null ? '--' : v.toFixed(2) + ' s'; } }];
    model.series.forEach(function (s) {
      var opts = {
        label: s.name,
        stroke: s.color,
        width: 1.5,
        spanGaps: false,
        value: function (u, v) { return fmt(v); },
        points: { show: false }
      };
      if (s.dashed) opts.dash = [6, 4];
      if (s.filled) opts.fill = s.color + '55';
      if (s.step && stepped) opts.paths = stepped;
      series.push(opts);
    });
    var width = Math.max(320, box.clientWidth || figure.clientWidth || 640);
    var u = new uPlot({
      title: model.title,
      width: width,
      height: 260,
      scales: { x: { time: false } },
      cursor: { sync: { key: 'showdown', setSeries: true }, drag: { x: true, y: false, setScale: true } },
      legend: { live: true },
      series: series,
      axes: [
        { label: model.x_label, size: 40 },
        { label: model.y_label, size: 60, values: function (u, vals) { return vals.map(fmt); } }
      ],
      hooks: { drawClear: [marks(model)], setScale: [follow] }
    }, align(model.series), box);
    u.root.setAttribute('data-chart', figure.id);
    charts.push(u);
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
      var hit = words.every(function (w) { return text.indexOf(w) >= 0; });
      tr.classList.toggle('filtered', !hit);
    });
  }

  function sortBy(th) {
    var table = th.closest('table');
    var index = Array.prototype.indexOf.call(th.parentNode.children, th);
    var down = th.getAttribute('aria-sort') === 'ascending';
    table.querySelectorAll('th').forEach(function (h) { h.removeAttribute('aria-sort'); });
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
      var c = (typeof ka === 'number' && typeof kb === 'number') ? ka - kb : String(ka).localeCompare(String(kb));
      return down ? -c : c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }

  function tables() {
    var input = document.getElementById('filter');
    if (input) {
      input.hidden = false;
      input.addEventListener('input', function () { filterRows(input); });
    }
    document.querySelectorAll('table.sortable th').forEach(function (th) {
      th.tabIndex = 0;
      th.title = 'sort by this column';
      th.addEventListener('click', function () { sortBy(th); });
      th.addEventListener('keydown', function (e) { if (e.key === 'Enter') sortBy(th); });
    });
  }

  function start() {
    tables();
    if (typeof uPlot === 'undefined') return;
    document.querySelectorAll('figure[data-chart]').forEach(draw);
    document.documentElement.setAttribute('data-charts', String(charts.length));
  }

  window.showdownCharts = charts;
  if (document.readyState === 'loading') {
    document.addEventListener('DOMContentLoaded', start);
  } else {
    start();
  }
})();
