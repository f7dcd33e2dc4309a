/* askgate inbox (/inbox#k={inbox key}, or behind the sign-in proxy): one person's open
 * questions across every session, live, answerable in place. The cards are the session
 * page's own (cards.js and the dialects); this module only gathers them from many sessions:
 *
 *   - a card's id here is `{session}/{request id}` (session ids hold no `/`), so requests of
 *     two sessions never share a card, and each frame that goes out is given back its
 *     `session` and `id` (state.outgoing);
 *   - cards are kept in deadline order, the nearest first and those without one last;
 *   - filters by session and by kind of question hide the cards that do not match;
 *   - the title counts the cards not yet seen: a card is seen once it has been on screen
 *     while the page was in view.
 *
 * An anonymous visitor (no inbox key, no proxy) is closed with 4401; the page then shows only
 * how to get in.
 */

import { state, ui, make } from './page.js';
import {
  applyAccess, createCard, escalate, finalize, markOrphaned, removeCard, reopen, tallied, tick,
  updateEmpty, whenFinalFold,
} from './cards.js';
import { onAnswerRejected } from './connection.js';
import { setYou } from './people.js';
import { setupPush, showPush } from './push.js';
import { announce, noteNew, setConnection, setupNotifyButton, showNotice, toast, updateTitle } from './status.js';

const BACKOFF_MIN_MS = 500;
const BACKOFF_MAX_MS = 15000;
// Closes after which trying again would fail the same way.
const FATAL = new Set([4400, 4401, 4404]);

const cardKey = (session, id) => String(session) + '/' + String(id);

function init() {
  for (const id of ['connection', 'notify', 'notice', 'toast', 'requests', 'empty', 'live',
    'you', 'inbox', 'sign-in', 'sign-in-why', 'filters', 'filter-session', 'filter-dialect',
    'filtered-empty']) {
    ui[id.replace(/-(\w)/g, (_, c) => c.toUpperCase())] = document.getElementById(id);
  }
  ui.list = ui.requests;
  state.title = 'askgate inbox';
  state.key = new URLSearchParams(location.hash.slice(1)).get('k') || '';
  // The cards send frames as a session's tab does; here each one names its session.
  state.outgoing = (frame) => {
    const at = typeof frame.id === 'string' ? frame.id.indexOf('/') : -1;
    if (at < 0) return frame;
    return Object.assign({}, frame, { session: frame.id.slice(0, at), id: frame.id.slice(at + 1) });
  };
  // An ended card leaves the inbox once its moment has passed: there is no finished list.
  whenFinalFold((rec) => { removeCard(rec); refreshFilters(); });
  ui.filterSession.addEventListener('change', applyFilters);
  ui.filterDialect.addEventListener('change', applyFilters);
  ui.filters.addEventListener('submit', (event) => event.preventDefault());
  setupPush();
  window.addEventListener('hashchange', () => location.reload());
  document.addEventListener('visibilitychange', markSeen);
  setInterval(tick, 250);
  connect();
}

/* ---------- the socket ---------- */

function connect() {
  clearTimeout(state.retryTimer);
  setConnection('connecting', state.attempt ? 'Reconnecting…' : 'Connecting…');
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  let ws;
  try {
    ws = new WebSocket(scheme + '//' + location.host + '/v1/inbox/live');
  } catch (_) {
    return retry();
  }
  state.ws = ws;
  ws.addEventListener('open', () => {
    state.helloSentAt = Date.now();
    ws.send(JSON.stringify(state.key ? { type: 'hello', key: state.key } : { type: 'hello' }));
  });
  ws.addEventListener('message', (event) => {
    let frame = null;
    try { frame = JSON.parse(event.data); } catch (_) { return; }
    const handler = frame && HANDLERS[frame.type];
    if (handler) handler(frame);
  });
  ws.addEventListener('close', (event) => {
    if (ws !== state.ws) return;
    state.ws = null;
    if (FATAL.has(event.code)) return refused(event.reason);
    retry();
  });
}

function retry() {
  const delay = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * Math.pow(2, state.attempt)) *
    (0.75 + Math.random() * 0.5);
  state.attempt += 1;
  setConnection('reconnecting', 'Connection lost — reconnecting');
  state.retryTimer = setTimeout(connect, delay);
}

// Nobody the gateway knows: the page says how to get in, and shows nothing else.
function refused(reason) {
  setConnection('closed', 'Not signed in');
  for (const rec of [...state.cards.values()]) removeCard(rec);
  setYou(null);
  showPush();
  ui.inbox.hidden = true;
  ui.signIn.hidden = false;
  ui.notify.hidden = true;
  // A refused key is told why (expired, not this gateway's); a visitor with none needs only
  // the page's own words.
  const why = state.key ? String(reason || '').trim() : '';
  ui.signInWhy.textContent = why ? why.charAt(0).toUpperCase() + why.slice(1) + '.' : '';
  ui.signInWhy.hidden = !why;
  announce(ui.signInWhy.textContent || 'This inbox is not yours yet.');
}

/* ---------- frames ---------- */

const HANDLERS = {
  snapshot: onSnapshot,
  request: (f) => addCard(f.session, f.request, true),
  resolved: (f) => {
    const rec = state.cards.get(cardKey(f.session, f.id));
    if (rec) finalize(rec, f);
  },
  escalated: (f) => {
    const rec = state.cards.get(cardKey(f.session, f.id));
    if (rec && rec.phase !== 'final') escalate(rec, f);
  },
  tally: (f) => {
    const rec = state.cards.get(cardKey(f.session, f.id));
    if (rec && rec.phase !== 'final') tallied(rec, f);
  },
  orphaned: (f) => {
    const rec = state.cards.get(cardKey(f.session, f.id));
    if (rec && rec.phase !== 'final') markOrphaned(rec, true);
  },
  answer_rejected: (f) => onAnswerRejected(Object.assign({}, f, { id: cardKey(f.session, f.id) })),
  error: (f) => toast(f.message || f.code || 'Something went wrong.'),
};

function onSnapshot(f) {
  if (typeof f.now_ms === 'number') {
    const arrived = Date.now();
    const sent = Math.min(state.helloSentAt || arrived, arrived);
    state.offset = f.now_ms - (sent + arrived) / 2;
  }
  if (typeof f.tab === 'string') {
    if (state.tab && f.tab !== state.tab) state.pastTabs.add(state.tab);
    state.tab = f.tab;
  }
  if (Number.isSafeInteger(f.max_frame_bytes) && f.max_frame_bytes > 0) {
    state.maxFrameBytes = f.max_frame_bytes;
  }
  state.attempt = 0;
  if (!state.synced) setupNotifyButton();
  state.synced = true;
  ui.signIn.hidden = true;
  ui.inbox.hidden = false;
  showNotice('');
  setConnection('open', 'Connected');
  setYou(f.you);
  showPush();
  const views = Array.isArray(f.requests) ? f.requests.filter((v) => v && v.id && v.session) : [];
  const listed = new Set(views.map((v) => cardKey(v.session, v.id)));
  // Gone from the inbox while away (answered, or a session no longer followed): the snapshot
  // does not say how they ended, so they go.
  for (const rec of [...state.cards.values()]) {
    if (!listed.has(rec.id) && rec.phase !== 'final') removeCard(rec);
  }
  const fresh = [];
  for (const view of views) {
    const rec = addCard(view.session, view, false);
    if (rec) fresh.push(rec);
  }
  noteNew(fresh);
  refreshFilters();
  updateEmpty();
  tick();
}

// The card of `view` (a request of `session`), made if new and put in its place; the new
// card, if one was made.
function addCard(session, view, live) {
  if (!view || !view.id || !session) return null;
  const key = cardKey(session, view.id);
  const known = state.cards.get(key);
  if (known && known.phase !== 'final') {
    if (known.phase === 'sending') {
      reopen(known, 'Your answer may not have arrived before the connection dropped. Please send it again.');
    }
    applyAccess(known);
    markOrphaned(known, view.orphaned === true);
    return null;
  }
  if (known) removeCard(known);
  const rec = createCard(Object.assign({}, view, { id: key, session }));
  rec.session = String(session);
  rec.el.insertBefore(make('p', 'card-session', 'Session ' + rec.session), rec.el.firstChild);
  place(rec);
  state.unseen.add(rec.id);
  seen.observe(rec.el);
  if (live) {
    noteNew([rec]);
    refreshFilters();
    updateEmpty();
    tick();
  }
  updateTitle();
  return rec;
}

// The nearest deadline first, no deadline last; among equals, in the order they came.
function place(rec) {
  const due = (r) => (typeof r.view.deadline_ms === 'number' ? r.view.deadline_ms : Infinity);
  const mine = due(rec);
  const after = [...state.cards.values()].find((other) => other !== rec &&
    other.el.parentNode === ui.list && due(other) > mine);
  ui.list.insertBefore(rec.el, after ? after.el : null);
}

/* ---------- seen, and the title ---------- */

const onScreen = new Set();
const seen = new IntersectionObserver((entries) => {
  for (const entry of entries) {
    const id = entry.target.dataset.requestId;
    if (entry.isIntersecting) onScreen.add(id);
    else onScreen.delete(id);
  }
  markSeen();
});

function markSeen() {
  if (document.hidden) return;
  for (const id of onScreen) state.unseen.delete(id);
  updateTitle();
}

/* ---------- filters ---------- */

function refreshFilters() {
  const open = [...state.cards.values()];
  fillSelect(ui.filterSession, open.map((r) => r.session), (s) => s);
  fillSelect(ui.filterDialect, open.map((r) => String(r.view.dialect)), (d) => d);
  ui.filters.hidden = open.length === 0;
  applyFilters();
}

// Keeps `select`'s options those of `values` (the first, "all", stays), and its choice.
function fillSelect(select, values, label) {
  const chosen = select.value;
  const unique = [...new Set(values)].sort();
  if (chosen && !unique.includes(chosen)) unique.push(chosen);
  const options = [select.options[0]];
  for (const value of unique) options.push(make('option', '', label(value), { value }));
  select.replaceChildren(...options);
  select.value = chosen;
}

function applyFilters() {
  const session = ui.filterSession.value;
  const dialect = ui.filterDialect.value;
  let shown = 0;
  let open = 0;
  for (const rec of state.cards.values()) {
    const match = (!session || rec.session === session) &&
      (!dialect || String(rec.view.dialect) === dialect);
    rec.el.hidden = !match;
    if (rec.phase !== 'final') {
      open += 1;
      if (match) shown += 1;
    }
  }
  ui.filteredEmpty.hidden = open === 0 || shown > 0;
}

init();
