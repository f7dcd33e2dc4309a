/* The console's charts, drawn here as inline SVG from `GET /v1/ops/history`:
 *
 *   - asks and answers a second over the last hour: each minute's count ÷ 60, every node's
 *     minutes of the same start summed;
 *   - ask → first tab and answer → agent latency, p50 and p99 a minute: on several nodes the
 *     slowest node's figure for that minute (the max), since one slow node is what an
 *     operator looks for, and averaging percentiles would hide it;
 *   - the time a person took to answer, a bar per bucket of `answer_time_s` (each count is
 *     the answers in its bucket; one count past the last bound is the answers slower still).
 *
 * Each chart is a `<figure>`: an SVG with role="img" named by its `<title>` and described by a
 * `<desc>` summing it up in words, a legend that tells lines apart by dash as well as colour,
 * and a visually hidden table of every figure drawn, for screen readers. Colours are classes,
 * so the light and dark themes' custom properties apply (and the page's CSP allows no inline
 * style).
 */

import { make } from './page.js';
import { count, isObject } from './opsformat.js';

const SVG = 'http://www.w3.org/2000/svg';
// The drawing's height in CSS pixels; its width is its box's, measured at each drawing.
const HEIGHT = 180;
// Room for the axes' labels: left (values), bottom (times), and a little on the right and top.
const PAD = { left: 52, right: 12, top: 12, bottom: 28 };
// How far apart the time axis' marks are.
const TICK_EVERY_MS = 15 * 60 * 1000;
// Narrower than this, a bar chart labels every other bar so labels never overlap.
const MIN_LABEL_PX = 40;

let chartSeq = 0;

// Draws every chart of `history` into `container`, replacing what it held; `spanMs` is how much
// time the charts cover, back from the history's `now_ms`.
export function renderCharts(container, history, { spanMs }) {
  const minuteMs = Number.isFinite(history.minute_ms) && history.minute_ms > 0 ? history.minute_ms : 60000;
  const end = count(history.now_ms);
  const slots = Math.max(1, Math.round(spanMs / minuteMs));
  const first = Math.floor(end / minuteMs) * minuteMs - (slots - 1) * minuteMs;
  const nodes = Array.isArray(history.nodes) ? history.nodes.filter(isObject) : [];
  const several = nodes.length > 1;
  // Each slot's minutes, one per node that has it.
  const bySlot = Array.from({ length: slots }, () => []);
  for (const node of nodes) {
    for (const minute of Array.isArray(node.minutes) ? node.minutes : []) {
      if (!isObject(minute) || !Number.isFinite(minute.start_ms)) continue;
      const slot = Math.floor((minute.start_ms - first) / minuteMs);
      if (slot >= 0 && slot < slots) bySlot[slot].push(minute);
    }
  }
  const axis = { first, minuteMs, slots, end };
  const perSecond = (field) => bySlot.map((ms) => ms.reduce((sum, m) => sum + count(m[field]), 0) / (minuteMs / 1000));
  const slowest = (field, pct) => bySlot.map((ms) => {
    const values = ms.map((m) => (isObject(m[field]) && Number.isFinite(m[field][pct]) ? m[field][pct] : null))
      .filter((v) => v !== null);
    return values.length ? Math.max(...values) : null;
  });
  const latencyNote = several ? ' Each minute shows the slowest node\u2019s figure.' : '';
  const charts = [
    {
      name: 'rate', title: 'Asks and answers a second',
      note: 'Every node\u2019s asks and answers, a minute at a time, divided by 60.',
      format: rate,
      series: [
        { name: 'Asks', values: perSecond('asks') },
        { name: 'Answers', values: perSecond('answers') },
      ],
    },
    {
      name: 'ask-to-tab', title: 'From an ask to the first tab',
      note: 'How long a request took to reach the first browser tab.' + latencyNote,
      format: millis,
      series: [
        { name: 'p50', values: slowest('ask_to_tab_ms', 'p50') },
        { name: 'p99', values: slowest('ask_to_tab_ms', 'p99') },
      ],
    },
    {
      name: 'answer-to-agent', title: 'From an answer to the agent',
      note: 'How long an answer took to reach the agent.' + latencyNote,
      format: millis,
      series: [
        { name: 'p50', values: slowest('answer_to_agent_ms', 'p50') },
        { name: 'p99', values: slowest('answer_to_agent_ms', 'p99') },
      ],
    },
  ];
  const figures = charts.map((chart) => {
    const figure = make('figure', 'ops-chart');
    figure.dataset.chart = chart.name;
    return figure;
  });
  const bars = make('figure', 'ops-chart');
  bars.dataset.chart = 'answer-time';
  container.replaceChildren(...figures, bars);
  charts.forEach((chart, i) => lineChart(figures[i], chart, axis));
  barChart(bars, isObject(history.answer_time_s) ? history.answer_time_s : {});
}

/* ---------- the line charts ---------- */

function lineChart(figure, chart, axis) {
  const width = Math.max(240, figure.clientWidth || 600);
  const plotW = width - PAD.left - PAD.right;
  const plotH = HEIGHT - PAD.top - PAD.bottom;
  const drawn = chart.series.flatMap((s) => s.values).filter((v) => v !== null);
  const top = niceCeiling(Math.max(0, ...drawn));
  const x = (slot) => PAD.left + (axis.slots > 1 ? (slot / (axis.slots - 1)) * plotW : plotW / 2);
  const y = (value) => PAD.top + plotH - (value / top) * plotH;

  const { svg, title, desc } = svgFor(width, chart.title);
  desc.textContent = describeLines(chart, axis);
  const grid = el('g', { class: 'chart-grid' });
  for (const value of [0, top / 2, top]) {
    grid.append(el('line', { x1: PAD.left, x2: width - PAD.right, y1: y(value), y2: y(value) }));
    const label = el('text', { x: PAD.left - 6, y: y(value) + 4, 'text-anchor': 'end', class: 'chart-label' });
    label.textContent = chart.format(value);
    grid.append(label);
  }
  // Time marks back from now, every TICK_EVERY_MS.
  const spanMs = (axis.slots - 1) * axis.minuteMs;
  for (let back = 0; back <= spanMs; back += TICK_EVERY_MS) {
    const slot = axis.slots - 1 - back / axis.minuteMs;
    const label = el('text', { x: x(slot), y: HEIGHT - 8, class: 'chart-label',
      'text-anchor': back === 0 ? 'end' : 'middle' });
    label.textContent = back === 0 ? 'now' : '\u2212' + Math.round(back / 60000) + ' min';
    grid.append(label);
  }
  svg.append(title, desc, grid);
  chart.series.forEach((series, index) => {
    const line = el('g', { class: 'chart-series chart-series-' + index });
    let d = '';
    let pen = false;
    series.values.forEach((value, slot) => {
      if (value === null) { pen = false; return; }
      d += (pen ? 'L' : 'M') + x(slot).toFixed(1) + ' ' + y(value).toFixed(1);
      // A minute with no neighbour would be a line of no length: a dot shows it.
      const alone = (slot === 0 || series.values[slot - 1] === null)
        && (slot === series.values.length - 1 || series.values[slot + 1] === null);
      if (alone) line.append(el('circle', { cx: x(slot), cy: y(value), r: 2.5 }));
      pen = true;
    });
    if (d) line.prepend(el('path', { d }));
    svg.append(line);
  });
  figure.append(make('figcaption', 'ops-chart-title', chart.title), svg, legend(chart.series),
    make('p', 'ops-chart-note', chart.note), linesTable(chart, axis));
}

// The chart in words: each line's latest, highest and average figure.
function describeLines(chart, axis) {
  const parts = chart.series.map((series) => {
    const known = series.values.map((v, slot) => [v, slot]).filter(([v]) => v !== null);
    if (!known.length) return series.name + ': no figures';
    const [latest] = known[known.length - 1];
    const [peak, peakSlot] = known.reduce((best, one) => (one[0] > best[0] ? one : best));
    const mean = known.reduce((sum, [v]) => sum + v, 0) / known.length;
    return series.name + ': latest ' + chart.format(latest) + ', highest ' + chart.format(peak) + ' ('
      + minutesAgo(axis, peakSlot) + '), average ' + chart.format(mean);
  });
  return chart.title + ' over the last hour. ' + parts.join('; ') + '.';
}

// Every minute with a figure other than 0, a row each, for those who cannot see the lines
// (an hour of idle minutes would be sixty rows of nothing).
function linesTable(chart, axis) {
  const table = make('table', 'visually-hidden');
  table.append(make('caption', '', chart.title + ', minute by minute'));
  const head = make('tr');
  head.append(make('th', '', 'Minute', { scope: 'col' }),
    ...chart.series.map((s) => make('th', '', s.name, { scope: 'col' })));
  const body = make('tbody');
  for (let slot = 0; slot < axis.slots; slot += 1) {
    if (chart.series.every((s) => !s.values[slot])) continue;
    const row = make('tr');
    row.append(make('th', '', minutesAgo(axis, slot), { scope: 'row' }),
      ...chart.series.map((s) => make('td', '', s.values[slot] === null ? 'none' : chart.format(s.values[slot]))));
    body.append(row);
  }
  table.append(make('thead'), body);
  table.tHead.append(head);
  return table;
}

function minutesAgo(axis, slot) {
  const back = axis.slots - 1 - slot;
  return back === 0 ? 'this minute' : back === 1 ? '1 minute ago' : back + ' minutes ago';
}

function legend(series) {
  const list = make('ul', 'ops-legend');
  series.forEach((one, index) => {
    const item = make('li', 'chart-series-' + index);
    const swatch = el('svg', { width: 24, height: 10, 'aria-hidden': 'true', class: 'ops-swatch' });
    swatch.append(el('line', { x1: 1, x2: 23, y1: 5, y2: 5 }));
    item.append(swatch, document.createTextNode(one.name));
    list.append(item);
  });
  return list;
}

/* ---------- the bar chart ---------- */

function barChart(figure, histogram) {
  const bounds = Array.isArray(histogram.bounds) ? histogram.bounds.filter(Number.isFinite) : [];
  const counts = Array.isArray(histogram.counts) ? histogram.counts.map(count) : [];
  const buckets = counts.slice(0, bounds.length + 1).map((n, i) => ({
    label: i < bounds.length ? '\u2264 ' + seconds(bounds[i]) : '> ' + seconds(bounds[bounds.length - 1] ?? 0),
    words: i < bounds.length
      ? (i === 0 ? 'at most ' + seconds(bounds[0]) : 'over ' + seconds(bounds[i - 1]) + ', at most ' + seconds(bounds[i]))
      : 'over ' + seconds(bounds[bounds.length - 1] ?? 0),
    n,
  }));
  const title = 'Time to a person\u2019s answer';
  const total = buckets.reduce((sum, b) => sum + b.n, 0);
  const width = Math.max(240, figure.clientWidth || 600);
  const plotW = width - PAD.left - PAD.right;
  const plotH = HEIGHT - PAD.top - PAD.bottom;
  const top = niceCeiling(Math.max(0, ...buckets.map((b) => b.n)), true);
  const y = (value) => PAD.top + plotH - (value / top) * plotH;
  const { svg, title: titleEl, desc } = svgFor(width, title);
  desc.textContent = total === 0
    ? title + ': no answers in the last hour.'
    : title + ', ' + total + (total === 1 ? ' answer: ' : ' answers: ')
      + buckets.filter((b) => b.n > 0).map((b) => b.n + ' ' + b.words).join('; ') + '.';
  const grid = el('g', { class: 'chart-grid' });
  for (const value of [0, top / 2, top]) {
    grid.append(el('line', { x1: PAD.left, x2: width - PAD.right, y1: y(value), y2: y(value) }));
    const label = el('text', { x: PAD.left - 6, y: y(value) + 4, 'text-anchor': 'end', class: 'chart-label' });
    label.textContent = Number.isInteger(value) ? String(value) : value.toFixed(1);
    grid.append(label);
  }
  svg.append(titleEl, desc, grid);
  const slot = buckets.length ? plotW / buckets.length : plotW;
  const every = Math.max(1, Math.ceil(MIN_LABEL_PX / slot));
  const bars = el('g', { class: 'chart-bars' });
  buckets.forEach((bucket, i) => {
    const left = PAD.left + i * slot;
    if (bucket.n > 0) {
      bars.append(el('rect', { x: left + slot * 0.15, width: slot * 0.7, y: y(bucket.n),
        height: Math.max(1, PAD.top + plotH - y(bucket.n)) }));
    }
    if (i % every === 0) {
      const label = el('text', { x: left + slot / 2, y: HEIGHT - 8, 'text-anchor': 'middle', class: 'chart-label' });
      label.textContent = bucket.label;
      grid.append(label);
    }
  });
  svg.append(bars);
  const table = make('table', 'visually-hidden');
  table.append(make('caption', '', title + ', answers by time taken'));
  const body = make('tbody');
  for (const bucket of buckets) {
    const row = make('tr');
    row.append(make('th', '', bucket.words, { scope: 'row' }), make('td', '', String(bucket.n)));
    body.append(row);
  }
  table.append(body);
  figure.append(make('figcaption', 'ops-chart-title', title), svg,
    make('p', 'ops-chart-note', buckets.length
      ? 'Answers by how long the person took, from the ask.'
      : 'The gateway gave no buckets of answer times.'), table);
}

/* ---------- shared pieces ---------- */

// An SVG `width`×HEIGHT with role="img", named by its title and described by its desc.
function svgFor(width, name) {
  chartSeq += 1;
  const svg = el('svg', { width, height: HEIGHT, viewBox: '0 0 ' + width + ' ' + HEIGHT, role: 'img',
    'aria-labelledby': 'chart-title-' + chartSeq, 'aria-describedby': 'chart-desc-' + chartSeq,
    class: 'ops-svg' });
  const title = el('title', { id: 'chart-title-' + chartSeq });
  title.textContent = name;
  const desc = el('desc', { id: 'chart-desc-' + chartSeq });
  return { svg, title, desc };
}

function el(tag, attrs) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, String(value));
  return node;
}

// The round number at or above `value` an axis ends at: 1, 2, 2.5 or 5 times a power of ten
// (`whole`, for counts: an even whole number, at least 2).
function niceCeiling(value, whole) {
  if (!(value > 0)) return 1;
  const power = Math.pow(10, Math.floor(Math.log10(value)));
  // Counts' axes end on an even whole number, so the middle mark is a whole one too.
  for (const step of whole ? [1, 2, 4, 6, 10] : [1, 2, 2.5, 5, 10]) {
    const top = step * power;
    if (top >= value && (!whole || top % 2 === 0)) return top;
  }
  return 10 * power;
}

function rate(value) {
  if (value === 0) return '0/s';
  return (value >= 10 ? value.toFixed(0) : value >= 1 ? value.toFixed(1) : value.toPrecision(2)) + '/s';
}

function millis(value) {
  if (value === 0) return '0 ms';
  if (value >= 1000) return (value / 1000).toFixed(value >= 10000 ? 0 : 1) + ' s';
  return (value >= 10 ? value.toFixed(0) : value.toFixed(1)) + ' ms';
}

function seconds(value) {
  if (value >= 3600) return +(value / 3600).toFixed(1) + ' h';
  if (value >= 60) return +(value / 60).toFixed(1) + ' min';
  return +value.toFixed(2) + ' s';
}
