/* gputriage report: draws the charts described in the page's JSON block with uPlot.
   Each chart: {id, title, kind: "line"|"bars", x, x_label, sync, axes: [{scale, label, side, range, zero}],
   series: [{label, values, scale, color, unit}], bands: [{start, end, label, color}], marks: [{x, label}]} */
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("gt-data").textContent);

  function bandsHook(bands) {
    return function (u) {
      var ctx = u.ctx, top = u.bbox.top, height = u.bbox.height;
      ctx.save();
      ctx.font = Math.round(10 * devicePixelRatio) + "px sans-serif";
      bands.forEach(function (b) {
        var left = u.bbox.left, right = u.bbox.left + u.bbox.width;
        var x0 = Math.max(left, u.valToPos(b.start, "x", true)), x1 = Math.min(right, u.valToPos(b.end, "x", true));
        if (x1 <= x0) return;
        ctx.fillStyle = b.color;
        ctx.fillRect(x0, top, Math.max(1, x1 - x0), height);
        if (b.label && x1 - x0 > ctx.measureText(b.label).width + 6) {
          ctx.fillStyle = "rgba(40,40,40,0.75)";
          ctx.fillText(b.label, x0 + 3, top + 12 * devicePixelRatio);
        }
      });
      ctx.restore();
    };
  }

  function marksHook(marks) {
    return function (u) {
      var ctx = u.ctx, top = u.bbox.top, bottom = u.bbox.top + u.bbox.height;
      ctx.save();
      ctx.strokeStyle = "#b03a2e";
      ctx.fillStyle = "#b03a2e";
      ctx.setLineDash([4 * devicePixelRatio, 3 * devicePixelRatio]);
      ctx.font = Math.round(10 * devicePixelRatio) + "px sans-serif";
      marks.forEach(function (m) {
        var x = u.valToPos(m.x, "x", true);
        ctx.beginPath();
        ctx.moveTo(x, top);
        ctx.lineTo(x, bottom);
        ctx.stroke();
        if (m.label) ctx.fillText(m.label, x + 3, bottom - 4 * devicePixelRatio);
      });
      ctx.restore();
    };
  }

  function fmt(unit) {
    return function (u, v) { return v == null ? "-" : (Math.round(v * 10) / 10) + (unit || ""); };
  }

  function draw(c) {
    var el = document.getElementById(c.id);
    if (!el) return;
    var width = Math.max(320, (el.clientWidth || 900));
    var scales = { x: { time: false } };
    if (c.x_log) { scales.x.distr = 3; scales.x.log = c.x_log; }
    if (c.kind === "bars" && c.x.length) {
      var lo = c.x[0] - 0.5, hi = c.x[c.x.length - 1] + 0.5;
      scales.x.range = function () { return [lo, hi]; };
    }
    var axes = [{ label: c.x_label || "", labelSize: 18 }];
    (c.axes || []).forEach(function (a) {
      scales[a.scale] = a.range ? { range: a.range }
        : a.zero ? { range: function (u, mn, mx) { return [0, mx > 0 ? mx * 1.05 : 1]; } } : {};
      axes.push({ scale: a.scale, label: a.label, side: a.side === "right" ? 1 : 3, labelSize: 18,
                  grid: { show: a.side !== "right" } });
    });
    var series = [{ label: c.x_label || "x" }];
    var bars = c.kind === "bars" ? uPlot.paths.bars({ size: [0.7, 60] }) : null;
    c.series.forEach(function (s) {
      var one = { label: s.label, scale: s.scale, stroke: s.color, width: 1.5, value: fmt(s.unit),
                  spanGaps: false, points: { show: false } };
      if (bars && !s.line) { one.paths = bars; one.fill = s.color; one.points = { show: false }; }
      if (s.line) { one.points = { show: true, size: 4 }; one.width = 0; }
      series.push(one);
    });
    var hooks = { drawClear: [], draw: [] };
    if (c.bands && c.bands.length) hooks.drawClear.push(bandsHook(c.bands));
    if (c.marks && c.marks.length) hooks.draw.push(marksHook(c.marks));
    var opts = { title: c.title, width: width, height: c.height || 240, scales: scales, axes: axes,
                 series: series, hooks: hooks, legend: { live: true } };
    if (c.sync) opts.cursor = { sync: { key: c.sync } };
    var cols = [c.x].concat(c.series.map(function (s) { return s.values; }));
    new uPlot(opts, cols, el);
    el.setAttribute("data-drawn", "1");
  }

  data.charts.forEach(draw);
  document.body.setAttribute("data-charts-drawn", String(data.charts.length));
})();
