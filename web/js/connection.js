/* The link to the gateway: the WebSocket, hello, close codes, reconnect with backoff, and
 * the handlers for the frames it brings (snapshot / request / resolved / answer_rejected /
 * history / presence / error).
 */

import { send, state, ui } from './page.js';
import {
  applyAccess, closedWhileAway, createCard, disableCard, escalate, finalize, markOrphaned, pruneDrafts,
  removeCard, reopen, tallied,
  setStatus, tick, updateEmpty,
} from './cards.js';
import { renderErrors } from './readiness.js';
import { dropFinished, fold, listFinished } from './finished.js';
import { askForHistory, onHistory } from './history.js';
import { askForRules, dropRules, onRules, onRulesError } from './rules.js';
import { setYou } from './people.js';
import { onFollowing, showFollow } from './follow.js';
import { showPush } from './push.js';
import {
  announce, noteNew, renderPresence, setConnection, showNotice, toast, updateRetryText,
} from './status.js';

const BACKOFF_MIN_MS = 500;
const BACKOFF_SLOW_MS = 5000; // after "try later" / "too many frames": back off harder
const BACKOFF_MAX_MS = 15000;
const LOST_REASONS = {
  1001: 'server restarting', 1013: 'server busy', 4408: 'connection too slow',
  4413: 'a message was too large', 4429: 'too many messages',
};
// Not `.` or `..`, which the gateway refuses as tab ids (as session ids, whose links they would break).
const TAB_ID_RE = /^(?!\.\.?$)[A-Za-z0-9._:-]{1,64}$/;

// Closes that must not be retried: retrying would fail the same way. For 4401 the gateway
// says why in the close's reason (a wrong key, an expired or another session's personal
// link), which the page shows; the words here are for a gateway that gives none.
const FATAL_CLOSES = {
  4400: ['protocol error', 'The page and the server disagree about the protocol. Reloading the page may help.'],
  4401: ['key not valid', "This link's key is not valid. Ask your agent for a fresh session link."],
  4404: ['unknown session', 'This session link is not valid. Check that you copied the whole link.'],
};
// A close reason is at most 123 bytes; one longer than this is not shown as it came.
const MAX_REASON_CHARS = 200;

export function readLocation() {
  const parts = location.pathname.split('/').filter(Boolean);
  let session = parts.length ? parts[parts.length - 1] : '';
  // A malformed escape is kept as typed; the gateway will answer 4404.
  try { session = decodeURIComponent(session); } catch (_) { /* see above */ }
  const key = new URLSearchParams(location.hash.slice(1)).get('k') || '';
  return { session, key };
}

function randomTabId() {
  if (window.crypto && typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  // randomUUID needs a secure context; plain-http LAN deployments still have getRandomValues.
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

// Storage can be disabled; a reload then just counts as a new tab.
function storeTabId(id) {
  try { sessionStorage.setItem('askgate.tab', id); } catch (_) { /* see above */ }
}

export function loadTabId() {
  let id = '';
  try { id = sessionStorage.getItem('askgate.tab') || ''; } catch (_) { /* see above */ }
  if (!TAB_ID_RE.test(id)) {
    id = randomTabId();
    storeTabId(id);
  }
  return id;
}

export function connect() {
  clearTimeout(state.retryTimer);
  state.retryAt = 0;
  setConnection('connecting', state.attempt ? 'Reconnecting…' : 'Connecting…');
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const url = scheme + '//' + location.host + '/v1/sessions/' +
    encodeURIComponent(state.session) + '/live';
  let ws;
  try {
    ws = new WebSocket(url);
  } catch (_) {
    scheduleReconnect(1006);
    return;
  }
  state.ws = ws;
  ws.addEventListener('open', () => {
    state.helloSentAt = Date.now();
    send({ type: 'hello', key: state.key, tab: state.tab });
    setConnection('connecting', 'Joining the session…');
  });
  ws.addEventListener('message', (event) => onMessage(event.data));
  ws.addEventListener('close', (event) => onClose(ws, event));
}

function onClose(ws, event) {
  if (ws !== state.ws) return;
  state.ws = null;
  renderPresence(null);
  // Cards still "Sending…" stay so until the next snapshot says whether the answer landed.
  const fatal = FATAL_CLOSES[event.code];
  if (fatal) {
    const words = event.code === 4401 ? refusalText(event.reason) || fatal[1] : fatal[1];
    setConnection('closed', 'Disconnected: ' + fatal[0]);
    showNotice(words);
    for (const rec of [...state.cards.values()]) removeCard(rec);
    dropFinished();
    dropRules();
    setYou(null);
    showFollow();
    showPush();
    state.synced = false;
    updateEmpty();
    announce(words);
    return;
  }
  scheduleReconnect(event.code);
}

// The gateway's reason for refusing a key, as a sentence ("This personal link has expired;
// ask for a new one."), or '' when it gave none. It is shown as text, never as markup.
function refusalText(reason) {
  const text = String(reason || '').trim();
  if (!text || text.length > MAX_REASON_CHARS) return '';
  const sentence = text.charAt(0).toUpperCase() + text.slice(1) + (/[.!?]$/.test(text) ? '' : '.');
  return /viewer key/i.test(text)
    ? sentence + ' Ask your agent for a fresh session link.'
    : sentence;
}

function scheduleReconnect(code) {
  const base = code === 1013 || code === 4429 ? BACKOFF_SLOW_MS : BACKOFF_MIN_MS;
  const jitter = 0.75 + Math.random() * 0.5;
  const delay = Math.min(BACKOFF_MAX_MS, base * Math.pow(2, state.attempt) * jitter);
  state.attempt += 1;
  state.lostReason = LOST_REASONS[code] || 'connection lost';
  state.retryAt = Date.now() + delay;
  state.retryTimer = setTimeout(connect, delay);
  updateRetryText();
}

/* ---------- frame handlers ---------- */

const HANDLERS = {
  snapshot: onSnapshot,
  request: (f) => onRequest(f.request),
  resolved: onResolved,
  escalated: onEscalated,
  orphaned: onOrphaned,
  tally: onTally,
  answer_rejected: onAnswerRejected,
  history: onHistory,
  presence: (f) => renderPresence(f.tabs, f.agent_online, true),
  following: onFollowing,
  rules: onRules,
  // A refused revocation is said beside the list of rules; every other error in a toast.
  error: (f) => onRulesError(f) || toast(f.message || f.code || 'Something went wrong.'),
};

function onMessage(data) {
  let frame = null;
  try { frame = JSON.parse(data); } catch (_) { return; }
  const handler = frame && HANDLERS[frame.type];
  if (handler) handler(frame);
}

function onSnapshot(f) {
  if (typeof f.now_ms === 'number') {
    // The gateway read its clock between our hello and the snapshot's arrival, which for a
    // large snapshot on a slow link can be seconds apart: take the middle, not the arrival,
    // so countdowns do not show more time than is left.
    const arrived = Date.now();
    const sent = Math.min(state.helloSentAt || arrived, arrived);
    state.offset = f.now_ms - (sent + arrived) / 2;
  }
  if (typeof f.tab === 'string' && TAB_ID_RE.test(f.tab)) {
    // The gateway may have replaced an id it did not like, or one it still thought in use;
    // answers are matched against its, and against the ones this page was given before. An id
    // only asked for is not one of them: a duplicated browser tab asks for the id of the tab
    // it copied, whose answers are not its own.
    if (f.tab !== state.tab && state.tabGranted) state.pastTabs.add(state.tab);
    state.tab = f.tab;
    state.tabGranted = true;
    storeTabId(f.tab);
  }
  if (Number.isSafeInteger(f.max_frame_bytes) && f.max_frame_bytes > 0) {
    state.maxFrameBytes = f.max_frame_bytes;
  }
  state.attempt = 0;
  state.synced = true;
  showNotice('');
  setConnection('open', 'Connected');
  renderPresence(f.tabs, f.agent_online);
  // Who this tab is decides which cards it may answer, so it comes before them.
  setYou(f.you);
  showFollow();
  showPush();
  const views = Array.isArray(f.requests) ? f.requests.filter((v) => v && v.id) : [];
  const ids = new Set(views.map((v) => String(v.id)));
  // The session's recent endings, oldest first; a gateway from before `finished` sends none.
  const endings = Array.isArray(f.finished) ? f.finished.filter((e) => e && e.id && e.outcome) : [];
  const lastEnding = new Map(endings.map((e) => [String(e.id), e]));
  // A card that ended while the page was away stays a moment to say so, like any other: how it
  // ended when the snapshot says, else only that it did.
  for (const rec of [...state.cards.values()]) {
    if (ids.has(rec.id) || rec.phase === 'final') continue;
    const ending = lastEnding.get(rec.id);
    if (ending) finalize(rec, ending);
    else {
      closedWhileAway(rec, rec.phase === 'sending'
        ? 'Closed while the connection was down. Your answer may be the one that counted.'
        : 'Closed while the connection was down.');
    }
  }
  listFinished(endings);
  // Drafts kept for requests that ended while this tab was away go.
  pruneDrafts(ids);
  const fresh = [];
  let cursor = ui.list.firstElementChild;
  for (const view of views) {
    let rec = liveCard(view);
    if (!rec) {
      rec = createCard(view);
      fresh.push(rec);
    } else if (rec.phase === 'sending') {
      reopen(rec, 'Your answer may not have arrived before the connection dropped. Please send it again.');
      applyAccess(rec);
    } else if (rec.phase === 'open') {
      applyAccess(rec);
    }
    if (rec.phase !== 'final' && rec.phase !== 'folded') markOrphaned(rec, view.orphaned === true);
    // Only move nodes that are out of place, so focus and typing survive a resync.
    while (cursor && cursor !== rec.el && cursor.classList.contains('is-final')) {
      cursor = cursor.nextElementSibling;
    }
    if (cursor === rec.el) cursor = cursor.nextElementSibling;
    else ui.list.insertBefore(rec.el, cursor);
  }
  updateEmpty();
  noteNew(fresh);
  tick();
  // Once a snapshot, then kept up from `resolved` frames: a tab may send only so many frames.
  askForHistory();
  // Once a snapshot, then kept up from the `rules` frames every change brings.
  askForRules();
}

// The card of request `view`, if there is one. A card just finished under the same id but
// asked at another time belongs to an earlier request (the agent acked it and asked again):
// it folds into the finished list now, to make way. One that timed out here first is the
// same request: it stays.
function liveCard(view) {
  const rec = state.cards.get(String(view.id));
  if (rec && rec.phase === 'final' && rec.view.asked_at_ms !== view.asked_at_ms) {
    fold(rec);
    return undefined;
  }
  return rec;
}

function onRequest(view) {
  if (!view || !view.id) return;
  const known = liveCard(view);
  // Sent again for a card already shown: its agent is back (it had been orphaned).
  if (known) {
    if (known.phase !== 'final' && known.phase !== 'folded') markOrphaned(known, view.orphaned === true);
    return;
  }
  const rec = createCard(view);
  ui.list.appendChild(rec.el);
  updateEmpty();
  noteNew([rec]);
  tick();
}

function onTally(f) {
  const rec = state.cards.get(String(f.id));
  if (rec && rec.phase !== 'final' && rec.phase !== 'folded') tallied(rec, f);
}

function onOrphaned(f) {
  const rec = state.cards.get(String(f.id));
  if (rec && rec.phase !== 'final' && rec.phase !== 'folded') markOrphaned(rec, true);
}

function onEscalated(f) {
  const rec = state.cards.get(String(f.id));
  if (rec && rec.phase !== 'final' && rec.phase !== 'folded') escalate(rec, f);
}

function onResolved(f) {
  const rec = state.cards.get(String(f.id));
  // `resolved` carries no time today; the page dates the ending itself until it does.
  if (rec) finalize(rec, f);
}

// The question a refusal at `response.answers[i]...` or `response.decisions[i]...` is about,
// and the rest of its path; or null.
function placeIndexed(path) {
  const match = /^response\.(?:answers|decisions)\[(\d+)\](.*)$/.exec(path);
  return match ? { index: Number(match[1]), rest: match[2] } : null;
}

export function onAnswerRejected(f) {
  const rec = state.cards.get(String(f.id));
  if (!rec) return;
  const errors = Array.isArray(f.errors) ? f.errors : [];
  let resolvedAlready = false;
  let forbidden = false;
  for (const err of errors.map((e) => e || {})) {
    const message = String(err.message || 'The answer was not accepted.');
    const path = String(err.path || '');
    const already = err.code === 'already_resolved' || /already resolved/i.test(message);
    resolvedAlready = resolvedAlready || already;
    // A refusal inside one answer (`response.answers[i]`, an approval's
    // `response.decisions[i]`, where the dialect places it: a form's `response.content.NAME`)
    // goes beside its question; any other, above the card.
    const place = rec.dialect && rec.dialect.place;
    const match = place ? place(rec, path) : placeIndexed(path);
    const question = match && !already ? rec.questions[match.index] : null;
    const refusal = rec.dialect && rec.dialect.refusal;
    if (question) question.serverErrors.push(refusal ? refusal(match.rest, message) : message);
    else rec.cardErrors.push(message);
    // Only a refusal of the whole answer says who may answer.
    forbidden = forbidden || (!question && err.code === 'forbidden');
  }
  if (!errors.length) rec.cardErrors.push('The answer was not accepted.');
  renderErrors(rec);
  if (rec.phase === 'final') return;
  if (resolvedAlready) {
    setStatus(rec, 'This question was already resolved.');
    disableCard(rec);
    return;
  }
  if (forbidden) {
    // The gateway knows better who may answer: the card waits for them, read-only.
    rec.denied = true;
    reopen(rec, 'Not accepted: this question is not yours to answer.');
    applyAccess(rec);
    announce('Your answer was not accepted: ' + (errors[0] ? errors[0].message : ''));
    return;
  }
  reopen(rec, 'Not accepted — please check the highlighted questions.');
  announce('Your answer was not accepted: ' + (errors[0] ? errors[0].message : ''));
}
