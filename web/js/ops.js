/* askgate operator console (/ops): what the gateway holds now, its open requests (withdrawn
 * from here), the last hour in charts, and how its notifications fare. Everything comes from
 * the operator API, read again every REFRESH_EVERY_MS:
 *
 *   GET /v1/ops/summary            the figures now, and each node's on a shared store
 *   GET /v1/requests?state=open    the open requests (opsrequests.js)
 *   GET /v1/ops/history            the last hour, minute by minute (opscharts.js)
 *
 * Who the operator is: the key typed in the form, kept in this tab's sessionStorage and sent
 * as `Authorization: Bearer`; or nobody needs a key at all, when a proxy the gateway trusts
 * signs operators in. So the first call goes without a key, and only a refusal shows the form.
 *
 * A refresh that cannot reach the gateway (a restart, say) keeps the figures last shown, says
 * so in the status line, and the next one tries again: the key is kept and nothing reloads.
 */

import { make } from './page.js';
import { ago, clockTime, count, errorMessage, isObject } from './opsformat.js';
import { renderCharts } from './opscharts.js';
import { renderRequests, setupRequests } from './opsrequests.js';

// How often the figures are read again: often enough to watch a tab arrive, rarely enough
// that a console left open all day costs the gateway nothing worth counting.
const REFRESH_EVERY_MS = 3000;
// A call that has not answered by then counts as the gateway being unreachable.
const FETCH_TIMEOUT_MS = 5000;
// Where the accepted key is kept: this tab only, gone when it closes.
const KEY_STORAGE = 'askgate-operator-key';
// The newest notification errors shown; the history may hold more.
const MAX_ERRORS_SHOWN = 20;
// The charts and the notification counts cover this much time.
const HOUR_MS = 60 * 60 * 1000;

const ui = {};

const state = {
  key: '', // the key sent, '' for none
  trying: false, // `key` was just typed and is not yet known to be accepted
  generation: 0, // bumped when the key changes, so a refresh begun before is ignored
  timer: 0,
  reads: 0, // refreshes begun, numbered
  shown: 0, // the number of the last one shown: an older one finishing later is dropped
  lastHistory: null, // the last history read (null: none), redrawn when the window resizes
  historyStatus: 0, // the status it came with
  offset: 0, // the gateway's clock minus this computer's
  statusText: '',
  focusConsole: false, // a key was just accepted: the console's heading takes the focus
  paused: false, // the tab was hidden when a read ended: the next waits for it to be shown
};

function init() {
  for (const id of ['connection', 'forget-key', 'sign-in', 'key-form', 'key', 'key-error',
    'console', 'console-heading', 'updated', 'now', 'nodes-box', 'nodes', 'charts', 'charts-none', 'channels-box',
    'channels', 'notify-none', 'errors-box', 'errors', 'errors-none']) {
    ui[id.replace(/-(\w)/g, (_, c) => c.toUpperCase())] = document.getElementById(id);
  }
  try {
    state.key = sessionStorage.getItem(KEY_STORAGE) || '';
  } catch (_) {
    // Storage refused (a privacy setting): the key is asked for on each load instead.
  }
  ui.keyForm.addEventListener('submit', (event) => {
    event.preventDefault();
    tryKey(ui.key.value.trim());
  });
  ui.forgetKey.addEventListener('click', forgetKey);
  setupRequests({
    call: (method, path) => call(method, path, state.key),
    serverNow,
    refresh,
  });
  window.addEventListener('resize', () => { if (state.lastHistory && !ui.console.hidden) drawCharts(); });
  refresh();
}

/* ---------- talking to the gateway ---------- */

// One call: `{ status, body, sent, arrived, date }` (`body` null when the answer is not JSON;
// `sent` and `arrived` on this computer's clock). Throws when the gateway cannot be reached,
// or has not answered within FETCH_TIMEOUT_MS.
async function call(method, path, key) {
  const headers = { Accept: 'application/json' };
  if (key) headers.Authorization = 'Bearer ' + key;
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), FETCH_TIMEOUT_MS);
  const sent = Date.now();
  try {
    const response = await fetch(path, { method, headers, cache: 'no-store', signal: abort.signal });
    let body = null;
    try { body = await response.json(); } catch (_) { /* not JSON: the status says enough */ }
    return { status: response.status, body, sent, arrived: Date.now(), date: response.headers.get('Date') };
  } finally {
    clearTimeout(timer);
  }
}

function serverNow() {
  return Date.now() + state.offset;
}

// Reads everything once and shows it, then plans the next read (unless the page waits for a
// key). A refresh already planned is replaced, so calling this early never doubles the pace.
async function refresh() {
  clearTimeout(state.timer);
  const generation = state.generation;
  const key = state.key;
  state.reads += 1;
  const number = state.reads;
  let read;
  try {
    read = await readAll(key);
  } catch (_) {
    read = { unreachable: true };
  }
  // The key changed meanwhile: what was read belongs to a page that no longer exists.
  if (generation !== state.generation) return;
  // A refresh begun early (after a withdrawal) overtook this one: what it read is newer.
  if (number < state.shown) return;
  state.shown = number;
  clearTimeout(state.timer);
  if (read.refused) return refused(read.refused);
  if (state.trying) acceptKey();
  if (read.unreachable) {
    setStatus('reconnecting', 'Gateway unreachable — retrying');
  } else if (read.failed) {
    setStatus('reconnecting', read.failed + ' — retrying');
  } else {
    setStatus('open', 'Live');
    show(read);
  }
  // A console nobody looks at reads nothing (each read walks every open request and every
  // node's report): it reads again when its tab is shown.
  if (document.hidden) {
    state.paused = true;
    if (!read.unreachable && !read.failed) setStatus('paused', 'Paused while this tab is hidden');
  } else {
    state.timer = setTimeout(refresh, REFRESH_EVERY_MS);
  }
}

document.addEventListener('visibilitychange', () => {
  if (!document.hidden && state.paused) {
    state.paused = false;
    refresh();
  }
});

// The three reads side by side. `refused`: the key (or its absence) is not an operator's;
// `failed`: the gateway answered, but not with the figures.
async function readAll(key) {
  const [summary, requests, history] = await Promise.all([
    call('GET', '/v1/ops/summary', key),
    call('GET', '/v1/requests?state=open&limit=1000', key),
    call('GET', '/v1/ops/history', key),
  ]);
  if (summary.status === 401 || summary.status === 403) return { refused: summary };
  for (const [what, answer] of [['the summary', summary], ['the open requests', requests]]) {
    if (answer.status !== 200 || !answer.body) {
      return { failed: 'The gateway could not give ' + what + ' (' + errorMessage(answer.body, 'status ' + answer.status) + ')' };
    }
  }
  noteClock(summary, history);
  return {
    summary: summary.body,
    requests: requests.body,
    // A gateway without the history endpoint answers 404: the charts say so, the rest works.
    history: history.status === 200 && history.body ? history.body : null,
    historyStatus: history.status,
  };
}

// The gateway's clock: the history's `now_ms` when there is one, else the `Date` header
// (whole seconds, so taken as the middle of its second).
function noteClock(summary, history) {
  let serverMs = null;
  let answer = summary;
  if (history.status === 200 && history.body && Number.isFinite(history.body.now_ms)) {
    serverMs = history.body.now_ms;
    answer = history;
  } else if (summary.date) {
    const parsed = Date.parse(summary.date);
    if (Number.isFinite(parsed)) serverMs = parsed + 500;
  }
  if (serverMs !== null) state.offset = serverMs - (answer.sent + answer.arrived) / 2;
}

/* ---------- the key ---------- */

function tryKey(key) {
  if (!key) {
    ui.keyError.textContent = 'Type the operator key first.';
    return;
  }
  // Only these can go in an HTTP header; the gateway's keys are made of them.
  if (!/^[\x21-\x7e]+$/.test(key)) {
    ui.keyError.textContent = 'An operator key is printable ASCII without spaces; this one is not.';
    return;
  }
  ui.keyError.textContent = '';
  setStatus('connecting', 'Checking the key…');
  state.key = key;
  state.trying = true;
  state.generation += 1;
  refresh();
}

function acceptKey() {
  state.trying = false;
  try {
    sessionStorage.setItem(KEY_STORAGE, state.key);
  } catch (_) {
    // Not kept: this page still works until it is closed or reloaded.
  }
  ui.key.value = '';
  // The form (and the button just pressed) goes: the focus goes to what replaces it.
  state.focusConsole = true;
}

function forgetKey() {
  try {
    sessionStorage.removeItem(KEY_STORAGE);
  } catch (_) {
    // Nothing was kept.
  }
  state.key = '';
  state.trying = false;
  state.generation += 1;
  ui.keyError.textContent = '';
  hideConsole();
  // Behind a proxy that signs operators in, no key is needed: the figures come straight back.
  refresh();
}

// The gateway refused the key (or the lack of one): the form, saying why when there is a why.
function refused(answer) {
  const sentKey = state.key !== '';
  if (sentKey) {
    try { sessionStorage.removeItem(KEY_STORAGE); } catch (_) { /* nothing kept */ }
  }
  state.key = '';
  state.trying = false;
  state.generation += 1;
  hideConsole();
  setStatus('closed', 'Not signed in');
  ui.signIn.hidden = false;
  // With a key, a 403 (one that would let an agent in) is no different to the operator: in
  // local mode every key lets an agent in, so saying "agent key" would mislead. Without one, a
  // 403 means the sign-in proxy named someone who is not an operator: the gateway says who.
  if (sentKey) {
    ui.keyError.textContent = 'That key is not an operator key of this gateway.';
  } else {
    ui.keyError.textContent = answer.status === 403 ? errorMessage(answer.body, '') : '';
  }
  if (sentKey) ui.key.focus();
}

function hideConsole() {
  clearTimeout(state.timer);
  ui.console.hidden = true;
  ui.forgetKey.hidden = true;
}

/* ---------- what the page shows ---------- */

// The connection line, which is a status region: only a change is written, so a screen
// reader hears "unreachable" once, not at every retry.
function setStatus(name, text) {
  ui.connection.dataset.state = name;
  if (state.statusText === text) return;
  state.statusText = text;
  ui.connection.textContent = text;
}

function show(read) {
  ui.signIn.hidden = true;
  ui.console.hidden = false;
  ui.forgetKey.hidden = !state.key;
  ui.updated.textContent = 'Updated at ' + clockTime(Date.now(), 0) + ', every ' + REFRESH_EVERY_MS / 1000 + ' s.';
  showNow(read.summary);
  showNodes(read.summary);
  renderRequests(read.requests);
  state.lastHistory = read.history;
  state.historyStatus = read.historyStatus;
  drawCharts();
  showNotifications(read.summary, read.history);
  if (state.focusConsole) {
    state.focusConsole = false;
    ui.consoleHeading.focus();
  }
}

// Sums `pick(counts)` over every channel of the summary's notifications.
function channelSum(summary, pick) {
  const channels = isObject(summary.notifications) ? Object.values(summary.notifications) : [];
  return channels.reduce((sum, counts) => sum + (isObject(counts) ? count(pick(counts)) : 0), 0);
}

function showNow(summary) {
  const requests = isObject(summary.requests) ? summary.requests : {};
  const figures = [
    ['sessions', 'Sessions', summary.sessions],
    ['tabs', 'Tabs', summary.tabs],
    ['agents', 'Agents', summary.agents],
    ['open', 'Open requests', requests.open],
    ['orphaned', 'Orphaned requests', requests.orphaned],
    ['due', 'Notifications due', channelSum(summary, (c) => c.due)],
    ['given-up', 'Notifications given up since start', channelSum(summary, (c) => c.given_up)],
  ];
  const items = figures.map(([name, label, value]) => {
    const item = make('div', 'ops-figure');
    item.dataset.figure = name;
    item.append(make('dt', '', label), make('dd', '', String(count(value))));
    return item;
  });
  ui.now.replaceChildren(...items);
}

// One node needs no table: its figures are the ones above.
function showNodes(summary) {
  const nodes = Array.isArray(summary.nodes) ? summary.nodes.filter(isObject) : [];
  ui.nodesBox.hidden = nodes.length < 2;
  if (nodes.length < 2) return;
  const now = serverNow();
  const rows = nodes.map((node) => {
    const row = make('tr');
    row.dataset.node = String(node.id);
    const seen = Number.isFinite(node.last_seen_ms) ? ago(now - node.last_seen_ms) : '—';
    const cells = [
      make('th', 'mono', String(node.id), { scope: 'row' }),
      make('td', node.alive ? 'ops-ok' : 'ops-bad', node.alive ? 'alive' : 'gone'),
      make('td', '', seen),
    ];
    for (const field of ['sessions', 'tabs', 'agents', 'open_requests', 'connections']) {
      cells.push(make('td', 'num', String(count(node[field]))));
    }
    row.append(...cells);
    return row;
  });
  ui.nodes.tBodies[0].replaceChildren(...rows);
}

function drawCharts() {
  const history = state.lastHistory;
  if (!history) {
    ui.charts.replaceChildren();
    ui.chartsNone.hidden = false;
    ui.chartsNone.textContent = state.historyStatus === 404
      ? 'This gateway keeps no history (it has no GET /v1/ops/history).'
      : 'The history could not be read (status ' + state.historyStatus + '); the next refresh tries again.';
    return;
  }
  ui.chartsNone.hidden = true;
  renderCharts(ui.charts, history, { spanMs: HOUR_MS });
}

// The history's minutes of the last hour, every node's.
function lastHourMinutes(history) {
  if (!history || !Array.isArray(history.nodes)) return [];
  const since = count(history.now_ms) - HOUR_MS;
  return history.nodes.filter(isObject).flatMap((node) => (Array.isArray(node.minutes) ? node.minutes : []))
    .filter((minute) => isObject(minute) && count(minute.start_ms) >= since);
}

function showNotifications(summary, history) {
  const due = isObject(summary.notifications) ? summary.notifications : {};
  const hour = {};
  for (const minute of lastHourMinutes(history)) {
    if (!isObject(minute.notifications)) continue;
    for (const [channel, counts] of Object.entries(minute.notifications)) {
      if (!isObject(counts)) continue;
      const sums = hour[channel] || (hour[channel] = { sent: 0, retried: 0, given_up: 0 });
      for (const field of ['sent', 'retried', 'given_up']) sums[field] += count(counts[field]);
    }
  }
  const channels = [...new Set([...Object.keys(due), ...Object.keys(hour)])].sort();
  ui.notifyNone.hidden = channels.length > 0;
  ui.channelsBox.hidden = channels.length === 0;
  const rows = channels.map((channel) => {
    const row = make('tr');
    row.dataset.channel = channel;
    const sums = hour[channel];
    const cells = [make('th', '', channel, { scope: 'row' })];
    for (const field of ['sent', 'retried', 'given_up']) {
      // Without a history the last hour is unknown, which is not the same as nothing.
      const text = history ? String(sums ? sums[field] : 0) : '—';
      const cell = make('td', 'num', text);
      if (field === 'given_up' && sums && sums.given_up > 0) cell.classList.add('ops-bad');
      cells.push(cell);
    }
    cells.push(make('td', 'num', String(count(isObject(due[channel]) ? due[channel].due : 0))));
    row.append(...cells);
    return row;
  });
  ui.channels.tBodies[0].replaceChildren(...rows);

  const errors = history && Array.isArray(history.notification_errors)
    ? history.notification_errors.filter(isObject) : [];
  errors.sort((a, b) => count(b.at_ms) - count(a.at_ms));
  const shown = errors.slice(0, MAX_ERRORS_SHOWN);
  ui.errorsNone.hidden = shown.length > 0;
  ui.errorsNone.textContent = history ? 'None in the last hour.' : 'Unknown: this gateway keeps no history.';
  ui.errorsBox.hidden = shown.length === 0;
  ui.errors.tBodies[0].replaceChildren(...shown.map((error) => {
    const row = make('tr');
    row.append(
      make('td', '', clockTime(count(error.at_ms), state.offset)),
      make('td', 'mono', String(error.node ?? '')),
      make('td', '', String(error.channel ?? '')),
      make('td', 'ops-target', String(error.target ?? '')),
      make('td', 'ops-error', String(error.error ?? '')),
    );
    return row;
  }));
}

init();
