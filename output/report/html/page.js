// SPDX-License-Identifier: Apache-2.0
// The page's script: it renders the aggregates in #data (threadcap's output/report summed
// them by bucket and by every column below) and narrows them by the selected buckets and the
// filter chips. It never writes text from the data as HTML: textContent, or esc() in the
// tooltips ECharts takes as HTML.
(function () {
  'use strict';
  const D = JSON.parse(document.getElementById('data').textContent);
  const $ = (id) => document.getElementById(id);

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function esc(s) {
    return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
  }
  const shown = (v) => (v === '' ? '-' : v);

  // Colours of the states, as the ASH chart has them: CPU green, waits for a CPU light
  // green, D state (disk and other uninterruptible waits) blue, sleeping orange.
  const stateColours = { on_cpu: '#2ca02c', runnable: '#a6d96a', uninterruptible: '#1f63b4', sleeping: '#f0a030',
    sleeping_in_span: '#f0a030', stopped: '#9467bd', stopped_in_span: '#9467bd', other: '#8c8c8c', dead: '#c7c7c7' };
  const stateColour = (s, k) => stateColours[s] || palette[k % palette.length];
  const palette = ['#2f6fdf', '#e8743b', '#19a979', '#ed4a7b', '#945ecf', '#13a4b4', '#525df4', '#bf399e', '#6c8893', '#ee6868'];

  function header(empty) {
    const host = $('host');
    host.textContent = D.host;
    if (D.host_note) host.title = D.host + ': ' + D.host_note;
    if (empty) {
      $('main').hidden = true;
      const p = $('empty');
      p.hidden = false;
      p.textContent = D.empty + ' (' + D.from + ' to ' + D.to + ')';
    }
    const lacks = D.lacks.slice();
    $('lacks').textContent = lacks.length ? 'The recording lacks: ' + lacks.join('; ') + '.' : '';
  }

  if (D.empty) {
    header(true);
    setFacts([['window', D.from + ' to ' + D.to], ['ticks', '0', 'ticks', 0], ['rows', '0', 'rows', 0],
      ['files read', String(D.files.length)]]);
    document.body.dataset.ready = 'true';
    return;
  }

  const C = D.cube;
  const dim = {};
  C.dims.forEach((d, i) => { dim[d] = i + 1; }); // a cell's column index: 0 is the bucket
  const nd = C.dims.length;
  const TH = nd + 1; // the cell's thread, in C.threads
  const ROWS = nd + 2;
  const CPU = nd + 3;
  const tdim = {};
  C.thread_dims.forEach((d, k) => { tdim[d] = k; });
  const nb = C.buckets.length;
  // The states the rows hold, those the timeline names first, in its order.
  const stateNames = C.values[dim.state - 1];
  const laneStates = D.states.filter((s) => stateNames.includes(s))
    .concat(stateNames.filter((s) => !D.states.includes(s) && s !== 'dead')); // a dead row is no active thread
  const S = { lo: 0, hi: nb - 1, filters: [], groupBy: D.columns[0], stackBy: 'state', flamePath: [], search: '' };

  function value(col, cell) {
    if (col in dim) return C.values[dim[col] - 1][cell[dim[col]]];
    const k = tdim[col];
    return C.values[nd + k][C.threads[cell[TH]][k]];
  }

  // The filters as report applies --where: values of one column are alternatives, columns
  // must all match.
  function filterTest() {
    const by = {};
    for (const f of S.filters) {
      const i = dim[f.col] - 1;
      const idx = C.values[i].indexOf(f.value);
      (by[f.col] = by[f.col] || new Set()).add(idx);
    }
    const tests = Object.keys(by).map((col) => [dim[col], by[col]]);
    return (cell) => tests.every(([j, set]) => set.has(cell[j]));
  }
  function filtered() {
    const ok = filterTest();
    return C.cells.filter(ok);
  }
  function selected(cells) { return cells.filter((c) => c[0] >= S.lo && c[0] <= S.hi); }
  // selection is the selected stretch as --from and --to take it: the window itself at
  // either end, where no bucket may start or end (no tick before the first or after the last).
  function selection() {
    return { from: S.lo === 0 ? D.from : C.buckets[S.lo].start, to: S.hi === nb - 1 ? D.to : C.buckets[S.hi].end };
  }
  function selTicks() {
    let t = 0;
    for (let b = S.lo; b <= S.hi; b++) t += C.buckets[b].ticks;
    return t;
  }

  function setFacts(facts) {
    const dl = $('facts');
    dl.textContent = '';
    for (const [name, text, key, raw] of facts) {
      const d = el('div');
      d.appendChild(el('dt', '', name));
      const dd = el('dd', '', text);
      if (key) { dd.id = 'fact-' + key; dd.dataset.value = String(raw); }
      d.appendChild(dd);
      dl.appendChild(d);
    }
  }

  function renderHeader(cells) {
    let rows = 0; let cpu = 0;
    for (const c of cells) { rows += c[ROWS]; cpu += c[CPU]; }
    const ticks = selTicks();
    const avg = ticks ? rows / ticks : 0;
    const { from, to } = selection();
    setFacts([
      ['window', from + ' to ' + to, 'window', from + ' ' + to],
      ['ticks', String(ticks), 'ticks', ticks],
      ['CPUs', String(D.cpus), 'cpus', D.cpus],
      ['rows', String(rows), 'rows', rows],
      ['average active threads', avg.toFixed(2), 'avg', avg],
      ['CPU seconds', (cpu / 1e6).toFixed(2), 'cpu', cpu / 1e6],
      ['files read', String(D.files.length), 'files', D.files.length],
    ]);
    $('fact-files').title = D.files.join('\n');
  }

  // groups sums cells by one column, most active first, as report orders its groups.
  function groups(cells, col) {
    const j = dim[col];
    const m = new Map();
    for (const c of cells) {
      let g = m.get(c[j]);
      if (!g) { g = { value: C.values[j - 1][c[j]], rows: 0, cpu: 0 }; m.set(c[j], g); }
      g.rows += c[ROWS]; g.cpu += c[CPU];
    }
    return [...m.values()].sort((a, b) => (b.rows - a.rows) || (b.cpu - a.cpu) || (a.value < b.value ? -1 : a.value > b.value ? 1 : 0));
  }

  const TOP = 20;
  function renderTable(cells) {
    const ticks = selTicks();
    const gs = groups(cells, S.groupBy);
    const head = $('top').tHead; const body = $('top').tBodies[0];
    head.textContent = ''; body.textContent = '';
    const hr = el('tr');
    hr.appendChild(el('th', '', S.groupBy));
    hr.appendChild(el('th', 'num', 'avg threads'));
    hr.appendChild(el('th', 'num', 'CPU s'));
    hr.appendChild(el('th', 'num', 'rows'));
    hr.appendChild(el('th', '', ''));
    head.appendChild(hr);
    const top = gs.length ? gs[0].rows : 0;
    const row = (label, g, cls) => {
      const tr = el('tr', cls);
      const avg = ticks ? g.rows / ticks : 0;
      const v = el('td', 'value', label);
      v.title = label;
      tr.appendChild(v);
      const a = el('td', 'num avg', avg.toFixed(2)); a.dataset.value = String(avg); tr.appendChild(a);
      const c = el('td', 'num cpu', (g.cpu / 1e6).toFixed(2)); c.dataset.value = String(g.cpu / 1e6); tr.appendChild(c);
      const r = el('td', 'num rows', String(g.rows)); r.dataset.value = String(g.rows); tr.appendChild(r);
      const bar = el('td', 'barcell');
      const fill = el('div', 'barfill');
      fill.style.width = (top ? 100 * g.rows / top : 0) + '%';
      bar.appendChild(fill);
      tr.appendChild(bar);
      body.appendChild(tr);
      return tr;
    };
    for (const g of gs.slice(0, TOP)) {
      const tr = row(shown(g.value), g, 'group');
      tr.dataset.value = g.value;
      tr.addEventListener('click', () => drill(g.value));
    }
    if (gs.length > TOP) {
      const rest = { rows: 0, cpu: 0 };
      for (const g of gs.slice(TOP)) { rest.rows += g.rows; rest.cpu += g.cpu; }
      row('(' + (gs.length - TOP) + ' more groups)', rest, 'other');
    }
    if (!gs.length) {
      const tr = el('tr'); const td = el('td', 'none', 'No row matches in this selection.');
      td.colSpan = 5; tr.appendChild(td); body.appendChild(tr);
    }
  }

  // drill adds the group as a filter and regroups by the next column not filtered on.
  function drill(v) {
    S.filters.push({ col: S.groupBy, value: v });
    const used = new Set(S.filters.map((f) => f.col));
    const i = D.columns.indexOf(S.groupBy);
    const next = D.columns.slice(i + 1).concat(D.columns.slice(0, i)).find((c) => !used.has(c));
    if (next) S.groupBy = next;
    $('group-by').value = S.groupBy;
    update(true);
  }

  function renderChips() {
    const box = $('chips');
    box.textContent = '';
    for (const m of D.where) {
      const c = el('span', 'chip fixed', m.Column + '=' + shown(m.Value));
      c.title = 'given with --where';
      box.appendChild(c);
    }
    S.filters.forEach((f, i) => {
      const c = el('span', 'chip', f.col + '=' + shown(f.value));
      c.dataset.col = f.col;
      const x = el('button', '', '×');
      x.type = 'button';
      x.title = 'remove this filter';
      x.addEventListener('click', () => { S.filters.splice(i, 1); update(true); });
      c.appendChild(x);
      box.appendChild(c);
    });
  }

  // The ASH chart.
  const chart = echarts.init($('chart'), null, { renderer: 'canvas' });
  // Bucket labels: the time of day, to the tenth of a second for buckets shorter than one.
  const times = C.buckets.map((b) => {
    const m = /T(\d\d:\d\d:\d\d)(\.\d)?/.exec(b.start);
    return m ? m[1] + (D.step_ms < 1000 ? (m[2] || '.0') : '') : b.start;
  });
  function chartSeries(cells) {
    const col = S.stackBy;
    let names;
    if (col === 'state') {
      const present = new Set(groups(cells, 'state').filter((g) => g.rows > 0).map((g) => g.value));
      names = D.states.filter((s) => present.has(s));
      for (const v of present) if (!names.includes(v)) names.push(v);
    } else {
      names = groups(cells, col).filter((g) => g.rows > 0).slice(0, 9).map((g) => g.value);
    }
    const index = new Map(names.map((n, i) => [n, i]));
    const other = names.length;
    const sums = Array.from({ length: names.length + 1 }, () => new Array(nb).fill(0));
    const j = dim[col];
    for (const c of cells) {
      const v = C.values[j - 1][c[j]];
      const k = index.has(v) ? index.get(v) : other;
      sums[k][c[0]] += c[ROWS];
    }
    const series = [];
    const all = names.concat(['(other)']);
    all.forEach((n, k) => {
      if (k === other && sums[k].every((x) => x === 0)) return;
      const colour = col === 'state' ? stateColour(n, k) : (k === other ? '#b0b0b0' : palette[k % palette.length]);
      series.push({
        name: shown(n), type: 'line', stack: 'active', symbol: 'none', step: 'middle', areaStyle: { opacity: 0.9 },
        lineStyle: { width: 0 }, color: colour, emphasis: { focus: 'series' },
        data: sums[k].map((x, b) => (C.buckets[b].ticks ? x / C.buckets[b].ticks : 0)),
      });
    });
    series.push({ name: 'CPUs', type: 'line', symbol: 'none', color: '#d62728', lineStyle: { type: 'dashed', width: 1.5 },
      data: new Array(nb).fill(D.cpus), tooltip: { show: false } });
    return series;
  }
  function drawChart(cells) {
    chart.setOption({
      animation: false,
      grid: { left: 50, right: 20, top: 48, bottom: 28 },
      legend: { type: 'scroll', top: 0, left: 0, right: 0 },
      tooltip: {
        trigger: 'axis', confine: true,
        formatter: (ps) => {
          const b = ps.length ? ps[0].dataIndex : 0;
          let s = esc(C.buckets[b].start) + '<br>';
          for (const p of ps) if (p.seriesName !== 'CPUs' && p.value > 0) s += p.marker + esc(p.seriesName) + ': ' + p.value.toFixed(2) + '<br>';
          return s;
        },
      },
      xAxis: { type: 'category', data: times, boundaryGap: false },
      yAxis: { type: 'value', name: 'active threads', nameGap: 8, nameTextStyle: { align: 'left' } },
      brush: { xAxisIndex: 0, brushType: 'lineX', brushMode: 'single', transformable: false, throttleType: 'debounce',
        throttleDelay: 50, brushStyle: { color: 'rgba(47,111,223,0.12)', borderColor: 'rgba(47,111,223,0.6)', borderWidth: 1 } },
      toolbox: { show: false },
      series: chartSeries(cells),
    }, { notMerge: true });
    chart.dispatchAction({ type: 'takeGlobalCursor', key: 'brush', brushOption: { brushType: 'lineX', brushMode: 'single' } });
    if (S.lo !== 0 || S.hi !== nb - 1) {
      chart.dispatchAction({ type: 'brush', areas: [{ brushType: 'lineX', xAxisIndex: 0, coordRange: [S.lo, S.hi] }] });
    }
  }
  chart.on('brushEnd', (e) => {
    const a = e.areas && e.areas[0];
    if (a && a.coordRange) {
      S.lo = Math.max(0, Math.min(a.coordRange[0], a.coordRange[1]));
      S.hi = Math.min(nb - 1, Math.max(a.coordRange[0], a.coordRange[1]));
    } else {
      S.lo = 0; S.hi = nb - 1;
    }
    update(false);
  });

  function stackButtons() {
    const box = $('stack-by');
    box.textContent = '';
    box.appendChild(el('span', 'hint', 'stack by'));
    for (const col of D.columns) {
      const b = el('button', col === S.stackBy ? 'on' : '', col);
      b.type = 'button';
      b.dataset.col = col;
      b.addEventListener('click', () => { S.stackBy = col; stackButtons(); drawChart(filtered()); });
      box.appendChild(b);
    }
  }

  // The flame graph: process, then user frames, then kernel frames, as report --folded.
  const flame = echarts.init($('flame'), null, { renderer: 'canvas' });
  const stackCols = [dim.user_stack, dim.kernel_stack];
  function flameTree(cells) {
    const root = { name: 'all', value: 0, children: new Map() };
    for (const c of cells) {
      if (c[ROWS] === 0) continue;
      const hashes = stackCols.map((j) => (j ? C.values[j - 1][c[j]] : ''));
      if (hashes.every((h) => h === '')) continue;
      const frames = [value('process', c)];
      for (const h of hashes) {
        if (h === '') continue;
        const f = D.frames[h];
        if (f === undefined) frames.push('[stack ' + h + ']'); else frames.push(...f.split(';'));
      }
      root.value += c[ROWS];
      let n = root;
      for (const f of frames) {
        let k = n.children.get(f);
        if (!k) { k = { name: f, value: 0, children: new Map() }; n.children.set(f, k); }
        k.value += c[ROWS];
        n = k;
      }
    }
    return root;
  }
  function frameColour(name) {
    let h = 0;
    for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
    return 'hsl(' + (10 + h % 40) + ',' + (70 + h % 20) + '%,' + (55 + (h >> 8) % 15) + '%)';
  }
  function drawFlame(cells) {
    let root = flameTree(cells);
    const path = [];
    for (const name of S.flamePath) {
      const k = root.children.get(name);
      if (!k) break;
      path.push(name); root = k;
    }
    S.flamePath = path;
    const data = [];
    let depth = 0;
    const walk = (n, x, d, trail) => {
      depth = Math.max(depth, d + 1);
      const hit = S.search !== '' && n.name.toLowerCase().includes(S.search.toLowerCase());
      data.push({ name: n.name, value: [x, x + n.value, d, n.value], trail, itemStyle: { color: hit ? '#c026d3' : frameColour(n.name) } });
      let cx = x;
      for (const k of [...n.children.values()].sort((a, b) => (a.name < b.name ? -1 : 1))) {
        walk(k, cx, d + 1, trail.concat([k.name]));
        cx += k.value;
      }
    };
    if (root.value > 0) walk(root, 0, 0, path.slice());
    const total = root.value;
    flame.setOption({
      animation: false,
      grid: { left: 4, right: 4, top: 4, bottom: 4 },
      title: total ? { show: false } : { show: true, text: 'No stacks in this selection: rows off CPU carry one when stacks are on', left: 'center', top: 'middle', textStyle: { fontSize: 13, color: '#5b6577', fontWeight: 'normal' } },
      tooltip: { confine: true, formatter: (p) => esc(p.name) + '<br>' + p.value[3] + ' rows (' + (100 * p.value[3] / total).toFixed(1) + '%)' },
      xAxis: { type: 'value', min: 0, max: Math.max(total, 1), show: false },
      yAxis: { type: 'value', min: 0, max: Math.max(depth, 12), inverse: true, show: false },
      series: [{
        type: 'custom', data,
        renderItem: (params, api) => {
          const a = api.coord([api.value(0), api.value(2)]);
          const b = api.coord([api.value(1), api.value(2) + 1]);
          const w = b[0] - a[0];
          const item = data[params.dataIndex];
          return {
            type: 'rect', shape: { x: a[0], y: a[1], width: Math.max(w - 0.5, 0.5), height: b[1] - a[1] - 1 },
            style: { fill: item.itemStyle.color },
            textContent: { style: { text: w > 30 ? item.name : '', fill: '#222', fontSize: 11, width: w - 6, overflow: 'truncate' } },
            textConfig: { position: 'insideLeft' },
          };
        },
        encode: { x: [0, 1], y: 2 },
      }],
    }, { notMerge: true });
  }
  flame.on('click', (p) => {
    const item = p.data;
    if (item && item.trail) { S.flamePath = item.trail; drawFlame(selected(filtered())); }
  });
  $('flame-reset').addEventListener('click', () => { S.flamePath = []; drawFlame(selected(filtered())); });
  $('flame-search').addEventListener('input', (e) => { S.search = e.target.value; drawFlame(selected(filtered())); });

  // Latency heatmaps, from the spans and io files' log2 histograms per minute.
  function durLabel(us) {
    const n = (v) => String(Number(v.toPrecision(3)));
    if (us < 1000) return n(us) + ' µs';
    if (us < 1e6) return n(us / 1000) + ' ms';
    return n(us / 1e6) + ' s';
  }
  // Bucket b holds [2^(b-1), 2^b) µs; bucket 0 under 1 µs.
  const bucketLabel = (b) => (b === 0 ? '< 1 µs' : '< ' + durLabel(2 ** b));
  // One chart per heatmap: the syscalls' time so far at the ticks (from the buckets), then
  // the files' (spans, disks).
  const heatCharts = [];
  function buildHeatmaps() {
    const box = $('heatmaps');
    const add = (h) => {
      const div = el('div', 'heatmap');
      box.appendChild(div);
      heatCharts.push({ h, chart: echarts.init(div, null, { renderer: 'canvas' }) });
    };
    add(null);
    for (const h of D.heatmaps) add(h);
    if (!D.heatmaps.length) {
      box.appendChild(el('p', '', 'No span ended and no block request completed in this window (spans need spans in the config; block I/O needs io on).'));
    }
  }
  // heatSpec is what a heatmap shows of the selection: its columns' times (full, and as
  // labelled) and its cells, [column, log2 bucket, count].
  function heatSpec(h) {
    if (h === null) {
      const stamps = []; const short = []; const cells = [];
      for (let b = S.lo; b <= S.hi; b++) {
        stamps.push(C.buckets[b].start); short.push(times[b]);
        for (const [k, n] of C.buckets[b].hist || []) cells.push([b - S.lo, k, n]);
      }
      return { title: 'Syscalls at the ticks: time so far', stamps, short, cells };
    }
    const from = Date.parse(selection().from); const to = Date.parse(selection().to);
    const idx = [];
    h.minutes.forEach((m, i) => { const t = Date.parse(m); if (t + 60000 > from && t < to) idx.push(i); });
    const pos = new Map(idx.map((i, k) => [i, k]));
    return { title: h.title + ', per minute',
      stamps: idx.map((i) => h.minutes[i]), short: idx.map((i) => h.minutes[i].replace(/^.*T/, '').slice(0, 5)),
      cells: h.cells.filter((c) => pos.has(c[0])).map((c) => [pos.get(c[0]), c[1], c[2]]) };
  }
  function drawHeatmaps() {
    for (const { h, chart: hc } of heatCharts) {
      const spec = heatSpec(h);
      let lo = 31; let hi = 0; let max = 1;
      for (const c of spec.cells) { lo = Math.min(lo, c[1]); hi = Math.max(hi, c[1]); max = Math.max(max, c[2]); }
      if (lo > hi) { lo = 0; hi = 0; }
      const ys = []; for (let b = lo; b <= hi; b++) ys.push(bucketLabel(b));
      hc.setOption({
        animation: false,
        title: [{ text: spec.title, left: 0, top: 0, textStyle: { fontSize: 12 } },
          spec.cells.length ? { show: false } : { text: 'none in this selection', left: 'center', top: 'middle', textStyle: { fontSize: 12, color: '#5b6577', fontWeight: 'normal' } }],
        grid: { left: 70, right: 60, top: 30, bottom: 26 },
        tooltip: { confine: true, formatter: (p) => esc(spec.stamps[p.value[0]]) + '<br>' + esc(bucketLabel(p.value[1] + lo)) + ': ' + p.value[2] },
        xAxis: { type: 'category', data: spec.short },
        yAxis: { type: 'category', data: ys },
        visualMap: { min: 1, max, calculable: false, orient: 'vertical', right: 0, top: 'middle', itemHeight: 100, itemWidth: 10,
          inRange: { color: ['#fff5eb', '#fd8d3c', '#a63603'] }, textStyle: { fontSize: 10 } },
        series: [{ type: 'heatmap', data: spec.cells.map((c) => [c[0], c[1] - lo, c[2]]) }],
      }, { notMerge: true });
    }
  }

  // Swimlanes of the busiest threads: each selected bucket coloured by the state the thread
  // had in most of its rows there.
  const lanes = echarts.init($('threads'), null, { renderer: 'canvas' });
  const LANES = 16;
  function drawThreads(cells) {
    const byTid = new Map();
    for (const c of cells) {
      if (c[ROWS] === 0) continue;
      let t = byTid.get(c[TH]);
      if (!t) { t = { rows: 0, cell: c, buckets: new Map() }; byTid.set(c[TH], t); }
      t.rows += c[ROWS];
      let b = t.buckets.get(c[0]);
      if (!b) { b = new Map(); t.buckets.set(c[0], b); }
      const st = value('state', c);
      b.set(st, (b.get(st) || 0) + c[ROWS]);
    }
    const top = [...byTid.entries()].sort((a, b) => b[1].rows - a[1].rows || a[0] - b[0]).slice(0, LANES);
    const states = laneStates;
    const data = [];
    const info = top.map(([, t]) => ({ tid: value('tid', t.cell), pid: value('pid', t.cell), process: value('process', t.cell),
      thread: value('thread', t.cell), cmdline: value('cmdline', t.cell) }));
    top.forEach(([, t], lane) => {
      for (const [b, m] of t.buckets) {
        let best = ''; let n = -1;
        for (const [st, k] of m) if (k > n || (k === n && st < best)) { best = st; n = k; }
        data.push([b - S.lo, lane, states.indexOf(best)]);
      }
    });
    const labels = info.map((t) => t.process + ' ' + t.tid);
    lanes.setOption({
      animation: false,
      grid: { left: 160, right: 20, top: 30, bottom: 26 },
      legend: { show: false },
      title: top.length ? { show: false } : { show: true, text: 'No active thread in this selection', left: 'center', top: 'middle', textStyle: { fontSize: 13, color: '#5b6577', fontWeight: 'normal' } },
      tooltip: {
        confine: true,
        formatter: (p) => {
          const t = info[p.value[1]];
          return esc(t.process) + ' pid ' + esc(t.pid) + ' tid ' + esc(t.tid) + '<br>thread ' + esc(t.thread) +
            '<br>' + esc(t.cmdline) + '<br>' + esc(C.buckets[p.value[0] + S.lo].start) + ': ' + esc(states[p.value[2]]);
        },
      },
      xAxis: { type: 'category', data: times.slice(S.lo, S.hi + 1) },
      yAxis: { type: 'category', data: labels, inverse: true, axisLabel: { width: 150, overflow: 'truncate' } },
      visualMap: { type: 'piecewise', dimension: 2, orient: 'horizontal', top: 0, left: 'center', itemWidth: 12, itemHeight: 10,
        pieces: states.map((s, i) => ({ value: i, label: s, color: stateColour(s, i) })) },
      series: [{ type: 'heatmap', data, itemStyle: { borderColor: '#fff', borderWidth: 0.5 } }],
    }, { notMerge: true });
  }

  function groupSelect() {
    const sel = $('group-by');
    sel.textContent = '';
    for (const col of D.columns) {
      const o = el('option', '', col);
      o.value = col;
      sel.appendChild(o);
    }
    sel.value = S.groupBy;
    sel.addEventListener('change', () => { S.groupBy = sel.value; update(false); });
  }

  // update redraws the panels the selection narrows; the chart too when the filters changed.
  function update(filtersChanged) {
    const t0 = performance.now();
    const cells = filtered();
    const sel = selected(cells);
    if (filtersChanged) { renderChips(); drawChart(cells); }
    renderHeader(sel);
    renderTable(sel);
    drawFlame(sel);
    drawHeatmaps();
    drawThreads(sel);
    S.renderMs = performance.now() - t0;
    if (S.loadMs === undefined) S.loadMs = performance.now();
    document.body.dataset.ready = 'true';
  }

  $('reset').addEventListener('click', () => {
    S.lo = 0; S.hi = nb - 1;
    chart.dispatchAction({ type: 'brush', areas: [] });
    update(false);
  });
  window.addEventListener('resize', () => { for (const c of [chart, flame, lanes].concat(heatCharts.map((h) => h.chart))) c.resize(); });

  // What the tests read: the selected window, as report's --from and --to take it.
  window.threadcapPage = {
    selection,
    filters: () => S.filters.slice(),
    groupBy: () => S.groupBy,
    // How long the last update took, and the first one ended after the page began loading, in ms.
    renderMs: () => S.renderMs,
    loadMs: () => S.loadMs,
  };

  header(false);
  groupSelect();
  stackButtons();
  buildHeatmaps();
  update(true);
}());
