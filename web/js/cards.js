/* A card per request: building its DOM, reading answers, submit / decline, the countdown,
 * final states, and its keyboard; then, folded, the list of finished requests, kept until
 * the person dismisses them. Each dialect (DIALECTS) builds its own questions, reads their
 * answers and summarises an answer.
 */

import { make, serverNow, state, ui } from './page.js';
import { send, updateRetryText } from './connection.js';
import { announce, updateTitle } from './status.js';
import { buildQuestion, readAnswer, summarizeResponse } from './harness.js';
import { buildDeepQuestion, readDeepAnswer, summarizeDeep } from './deepagents.js';

const FOLD_DELAY_MS = 4000;
const DECLINE_CONFIRM_MS = 5000;
const DECLINE_PROMPT = 'Press again within 5 seconds to decline. The agent is told you will ' +
  'not answer, and this cannot be undone.';
const LOCAL_TIMEOUT_FOLD_MS = 10000; // in case the server's `resolved` never reaches us
const AGENT_NOTE = 'Question from the agent — askgate never asks for passwords or keys; ' +
  "don't share secrets here.";

// A question record (qr) holds: fieldset, errorEl, inputs (the options keys 1–9 pick),
// name and detail (for announcements and notifications), serverErrors and localError.
// `read(qr)` returns {answer}, {problem: message} or {} (not answered yet).
const DIALECTS = {
  harness: {
    build: buildQuestion, read: readAnswer, summarize: summarizeResponse,
    incomplete: 'Answer every question (pick an option or write your own) to submit.',
  },
  deepagents: {
    build: buildDeepQuestion, read: readDeepAnswer, summarize: summarizeDeep,
    incomplete: 'Answer every question that is not marked optional to submit.',
  },
};

// A new open card, which the page keeps as request `view.id`'s.
export function createCard(view) {
  const rec = buildCard(view);
  state.cards.set(rec.id, rec);
  return rec;
}

function buildCard(view) {
  state.seq += 1;
  const el = make('article', 'card');
  const dialect = Object.prototype.hasOwnProperty.call(DIALECTS, view.dialect)
    ? DIALECTS[view.dialect] : null;
  const rec = {
    id: String(view.id), view, el, prefix: 'c' + state.seq, dialect,
    // open -> sending -> (open again if rejected) -> final -> folded (in the finished list)
    phase: 'open',
    end: null, // how it ended, once it has: see endOf()
    questions: [], cardErrors: [], foldTimer: 0,
    supported: Boolean(dialect) && Array.isArray(view.questions) && view.questions.length > 0,
  };
  el.dataset.requestId = rec.id;
  const origin = el.appendChild(make('p', 'card-origin', AGENT_NOTE, { id: rec.prefix + '-origin' }));
  let labelledBy = origin.id;
  if (view.title) {
    labelledBy = rec.prefix + '-title ' + origin.id;
    el.appendChild(make('h2', 'card-title', view.title, { id: rec.prefix + '-title' }));
  }
  el.setAttribute('aria-labelledby', labelledBy);
  if (typeof view.deadline_ms === 'number') el.appendChild(buildCountdown(rec));
  rec.errorEl = el.appendChild(make('div', 'card-error'));
  if (rec.supported) {
    view.questions.forEach((q, i) => el.appendChild(dialect.build(rec, q || {}, i)));
  } else {
    el.appendChild(make('p', 'unsupported',
      'This is an unsupported question type (' + String(view.dialect) +
      '), so it cannot be answered here. You can decline it.'));
  }
  el.appendChild(buildActions(rec));
  el.addEventListener('keydown', (event) => onCardKeydown(rec, event));
  updateReadiness(rec);
  return rec;
}

function buildCountdown(rec) {
  const bar = make('div', 'bar');
  bar.setAttribute('aria-hidden', 'true');
  rec.barFill = bar.appendChild(make('div', 'bar-fill'));
  rec.countdownEl = make('span', 'countdown');
  const row = make('div', 'countdown-row');
  row.append(bar, rec.countdownEl);
  return row;
}

function buildActions(rec) {
  const actions = make('div', 'card-actions');
  if (rec.supported) {
    rec.submitBtn = actions.appendChild(make('button', 'submit', 'Submit', { type: 'button' }));
    rec.submitBtn.addEventListener('click', () => submitCard(rec));
  }
  rec.declineBtn = actions.appendChild(make('button', 'decline', 'Decline', { type: 'button' }));
  rec.declineBtn.addEventListener('click', (event) => onDeclineClick(rec, event));
  const wrap = make('div', 'card-footer');
  rec.statusEl = make('p', 'card-status');
  wrap.append(actions, rec.statusEl);
  if (rec.supported) {
    wrap.appendChild(make('p', 'key-hint',
      'Enter submits · Ctrl+Enter inside a text box · keys 1–9 pick options'));
  }
  return wrap;
}

export function updateReadiness(rec) {
  let ready = rec.supported;
  for (const qr of rec.questions) {
    const result = rec.dialect.read(qr);
    qr.localError = result.problem || '';
    ready = ready && 'answer' in result;
    for (const input of qr.fieldset.querySelectorAll('.option > input')) {
      input.parentNode.classList.toggle('is-picked', input.checked);
    }
  }
  renderErrors(rec);
  if (rec.submitBtn) rec.submitBtn.disabled = !(ready && rec.phase === 'open');
  return ready;
}

export function renderErrors(rec) {
  rec.errorEl.replaceChildren(...rec.cardErrors.map((m) => make('p', '', m)));
  for (const qr of rec.questions) {
    const messages = qr.serverErrors.concat(qr.localError ? [qr.localError] : []);
    qr.errorEl.replaceChildren(...messages.map((m) => make('p', '', m)));
    qr.fieldset.classList.toggle('has-error', messages.length > 0);
  }
}

function clearServerErrors(rec) {
  rec.cardErrors = [];
  rec.questions.forEach((qr) => { qr.serverErrors = []; });
}

function submitCard(rec) {
  if (rec.phase !== 'open') return;
  clearServerErrors(rec);
  if (!updateReadiness(rec)) return setStatus(rec, rec.dialect.incomplete);
  const answers = rec.questions.map((qr) => rec.dialect.read(qr).answer);
  sendFor(rec, { type: 'answer', id: rec.id, response: { answers } });
}

// A decline cannot be taken back and its button sits beside Submit, so the first press only
// asks for a second within a few seconds. Keyboard presses are clicks too; Escape backs out.
function onDeclineClick(rec, event) {
  if (rec.phase !== 'open') return;
  if (!rec.declineArmed) return armDecline(rec);
  // The second click of a double-click belongs to the first press: it confirms nothing.
  if (event.detail > 1) return;
  disarmDecline(rec);
  clearServerErrors(rec);
  renderErrors(rec);
  sendFor(rec, { type: 'decline', id: rec.id });
}

function armDecline(rec) {
  rec.declineArmed = true;
  rec.declineBtn.textContent = 'Confirm decline';
  rec.declineBtn.classList.add('is-confirming');
  setStatus(rec, DECLINE_PROMPT);
  // The button's new name is not read out while it keeps focus; the prompt is.
  announce(DECLINE_PROMPT);
  rec.declineTimer = setTimeout(() => disarmDecline(rec), DECLINE_CONFIRM_MS);
}

function disarmDecline(rec) {
  clearTimeout(rec.declineTimer);
  if (!rec.declineArmed) return;
  rec.declineArmed = false;
  rec.declineBtn.textContent = 'Decline';
  rec.declineBtn.classList.remove('is-confirming');
  if (rec.statusEl.textContent === DECLINE_PROMPT) setStatus(rec, '');
}

function sendFor(rec, frame) {
  disarmDecline(rec);
  const sent = send(frame);
  if (sent === 'offline') return setStatus(rec, 'Not connected — wait until the page reconnects, then try again.');
  if (sent === 'too-large') {
    const limit = Math.floor(state.maxFrameBytes / 1024);
    rec.cardErrors.push(`This answer is too long to send (the gateway takes at most ${limit} KB). Please shorten it.`);
    renderErrors(rec);
    return setStatus(rec, 'Not sent: too long.');
  }
  const hadFocus = rec.el.contains(document.activeElement);
  rec.phase = 'sending';
  rec.el.classList.add('is-sending');
  setStatus(rec, 'Sending…');
  if (rec.submitBtn) rec.submitBtn.disabled = true;
  rec.declineBtn.disabled = true;
  if (hadFocus) focusStatus(rec);
}

// Focus on a control being disabled would fall to the page's top: it moves to the words
// saying what happens to the card instead.
function focusStatus(rec) {
  rec.statusEl.tabIndex = -1;
  rec.statusEl.focus({ preventScroll: true });
}

export function reopen(rec, message) {
  rec.phase = 'open';
  rec.el.classList.remove('is-sending');
  rec.declineBtn.disabled = false;
  setStatus(rec, message);
  updateReadiness(rec);
}

export function setStatus(rec, text) {
  rec.statusEl.replaceChildren(...(text ? [make('span', 'status-text', text)] : []));
}

export function disableCard(rec) {
  disarmDecline(rec);
  rec.questions.forEach((qr) => { qr.fieldset.disabled = true; });
  if (rec.submitBtn) rec.submitBtn.disabled = true;
  rec.declineBtn.disabled = true;
}

/* ---------- final states ---------- */

// How an ending reads on the card while it is still shown whole: [by this page, otherwise].
const OUTCOME_TEXT = {
  answered: ['Sent ✓', 'Answered in another tab'],
  declined: ['Declined', 'Declined in another tab'],
  timed_out: ['Timed out', 'Timed out'],
  withdrawn: ['Withdrawn by the agent', 'Withdrawn by the agent'],
};

// How an ending reads once the card is folded into the finished list, where the words stand
// alone: [by this page, otherwise].
const ENDED_TEXT = {
  answered: ['Answered by you', 'Answered in another tab'],
  declined: ['Declined by you', 'Declined in another tab'],
  timed_out: ['Timed out', 'Timed out'],
  withdrawn: ['Withdrawn by the agent', 'Withdrawn by the agent'],
  closed: ['Ended while this page was disconnected', 'Ended while this page was disconnected'],
};

// How a request ended: `at` in the gateway's clock; `exact` when the gateway said when (a
// snapshot's `finished`), not when this page learnt of it.
function endOf(outcome, by, response, atMs, exact = Number.isFinite(atMs)) {
  const self = by != null && (by === state.tab || state.pastTabs.has(by));
  return { outcome: String(outcome), self, response, at: Number.isFinite(atMs) ? atMs : serverNow(), exact };
}

export function finalize(rec, outcome, by, response, atMs) {
  const end = endOf(outcome, by, response, atMs);
  const texts = OUTCOME_TEXT[outcome] || ['Closed', 'Closed'];
  const text = end.self ? texts[0] : texts[1];
  markFinal(rec, end, text, FOLD_DELAY_MS);
  rec.el.dataset.by = end.self ? 'self' : 'other';
  const summary = outcome === 'answered' && !end.self && rec.supported &&
    rec.dialect.summarize(rec, response);
  if (summary) rec.statusEl.appendChild(summary);
  announce(text + (rec.view.title ? ': ' + rec.view.title : '') + '.');
}

// A card the snapshot no longer lists and whose ending it does not give (a gateway that
// sends no `finished`): it ended while the page was disconnected, how is unknown.
export function closedWhileAway(rec, text) {
  markFinal(rec, endOf('closed', null, null, serverNow(), false), text, FOLD_DELAY_MS);
  announce(text);
}

function markFinal(rec, end, text, foldDelay) {
  const hadFocus = rec.el.contains(document.activeElement);
  rec.end = end;
  rec.phase = 'final';
  rec.el.classList.remove('is-sending');
  rec.el.classList.add('is-final');
  rec.el.dataset.state = end.outcome;
  disableCard(rec);
  setStatus(rec, text);
  if (hadFocus) focusStatus(rec);
  if (rec.notification) rec.notification.close();
  state.unseen.delete(rec.id);
  updateTitle();
  updateEmpty();
  clearTimeout(rec.foldTimer);
  rec.foldTimer = setTimeout(() => fold(rec), foldDelay);
}

// Removes an open card for good (the page can no longer show the session).
export function removeCard(rec) {
  clearTimeout(rec.foldTimer);
  if (state.cards.get(rec.id) === rec) state.cards.delete(rec.id);
  state.unseen.delete(rec.id);
  const hadFocus = rec.el.contains(document.activeElement);
  const next = hadFocus && nearestOpenCard(rec.el);
  rec.el.remove();
  if (rec.notification) rec.notification.close();
  updateTitle();
  updateEmpty();
  // A keyboard or screen-reader user goes on from where the card was, not from the top.
  if (hadFocus) focusCard(next);
}

function nearestOpenCard(el) {
  for (const direction of ['nextElementSibling', 'previousElementSibling']) {
    for (let other = el[direction]; other; other = other[direction]) {
      if (!other.classList.contains('is-final')) return other;
    }
  }
  return null;
}

function focusCard(el) {
  const target = el
    ? el.querySelector('input:not(:disabled), textarea:not(:disabled), button:not(:disabled)') || el
    : ui.empty.hidden ? ui.list : ui.empty;
  if (!target.matches('input, textarea, button')) target.tabIndex = -1;
  target.focus({ preventScroll: !el });
}

export function updateEmpty() {
  const open = [...state.cards.values()].some((r) => r.phase !== 'final');
  ui.empty.hidden = !state.synced || open;
}

/* ---------- finished cards ---------- */

// Finished cards are kept until dismissed, but a tab left open for days must not grow
// without end: past this many, the oldest go.
const MAX_FINISHED = 200;
// Dismissals remembered per session (the oldest forgotten first).
const MAX_DISMISSALS = 500;
// A folded card names its request by at most this many characters of its title or question.
const FOLDED_NAME_CHARS = 160;

// Folds a finished card into the list under the open questions, where it stays, reduced to
// what it asked and how and when it ended, until the person dismisses it.
export function fold(rec) {
  clearTimeout(rec.foldTimer);
  if (rec.phase === 'folded') return;
  const hadFocus = rec.el.contains(document.activeElement);
  const next = hadFocus && nearestOpenCard(rec.el);
  if (state.cards.get(rec.id) === rec) state.cards.delete(rec.id);
  rec.phase = 'folded';
  renderFolded(rec);
  placeFinished(rec);
  updateEmpty();
  // Open questions still need answers: a keyboard user goes on to the next of those.
  if (hadFocus) focusCard(next);
}

function foldedName(rec) {
  const view = rec.view;
  const first = Array.isArray(view.questions) && view.questions[0];
  const named = [view.title, first && first.question, first && first.header]
    .map((text) => String(text ?? '').trim()).find(Boolean);
  if (!named) return 'A question from the agent';
  const chars = Array.from(named.replace(/\s+/g, ' '));
  return chars.length > FOLDED_NAME_CHARS ? chars.slice(0, FOLDED_NAME_CHARS - 1).join('') + '…' : named;
}

// "at 14:05" today, "on 3 Mar, 14:05" another day, in the person's own clock and locale.
// `prefix` is how the moment relates to the ending ("at", or "before" for one only noticed).
function formatWhen(date, prefix) {
  const now = new Date();
  const clock = date.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  if (date.toDateString() === now.toDateString()) return prefix + ' ' + clock;
  const day = date.toLocaleDateString([], {
    day: 'numeric', month: 'short',
    year: date.getFullYear() === now.getFullYear() ? undefined : 'numeric',
  });
  return (prefix === 'at' ? 'on' : prefix) + ' ' + day + ', ' + clock;
}

function renderFolded(rec) {
  const { el, end } = rec;
  el.className = 'card is-final is-folded';
  el.dataset.state = end.outcome;
  el.dataset.by = end.self ? 'self' : 'other';
  const what = make('p', 'folded-what', foldedName(rec), { id: rec.prefix + '-what' });
  const texts = ENDED_TEXT[end.outcome] || ['Closed', 'Closed'];
  // The gateway's clock, shown in this computer's.
  const local = new Date(end.at - state.offset);
  const when = make('time', '', formatWhen(local, end.outcome === 'closed' ? 'before' : 'at'),
    { dateTime: local.toISOString() });
  rec.statusEl = make('p', 'card-status');
  rec.statusEl.append(make('span', 'status-text', texts[end.self ? 0 : 1]), ' ', when);
  const body = make('div', 'folded-body');
  body.append(what, rec.statusEl);
  const summary = end.outcome === 'answered' && rec.supported && rec.dialect.summarize(rec, end.response);
  if (summary) body.appendChild(summary);
  const dismiss = make('button', 'dismiss ghost', 'Dismiss', { type: 'button', id: rec.prefix + '-dismiss' });
  // Read as "Dismiss" and what it dismisses: a list of identical "Dismiss" buttons says nothing.
  dismiss.setAttribute('aria-labelledby', dismiss.id + ' ' + what.id);
  dismiss.addEventListener('click', () => dismissOne(rec));
  el.setAttribute('aria-labelledby', what.id);
  el.replaceChildren(body, dismiss);
}

// Puts `rec` in the finished list, which runs from the latest ending down.
function placeFinished(rec) {
  const list = state.finished.filter((other) => other !== rec);
  let at = list.findIndex((other) => other.end.at < rec.end.at);
  if (at < 0) at = list.length;
  list.splice(at, 0, rec);
  ui.finishedList.insertBefore(rec.el, list[at + 1] ? list[at + 1].el : null);
  for (const old of list.splice(MAX_FINISHED)) old.el.remove();
  state.finished = list;
  updateFinished();
}

function updateFinished() {
  const count = state.finished.length;
  ui.finished.hidden = count === 0;
  ui.finishedHeading.textContent = count ? 'Finished (' + count + ')' : 'Finished';
}

function dismissedKey() {
  return 'askgate.dismissed.' + state.session;
}

// Request id -> the gateway's time when it was last dismissed here. An ending at or before
// that time was dismissed; a later one is the same id asked again, and is shown.
function loadDismissals() {
  try {
    const stored = JSON.parse(sessionStorage.getItem(dismissedKey()) || '[]');
    return new Map(Array.isArray(stored) ? stored.filter((e) => Array.isArray(e) && e.length === 2) : []);
  } catch (_) {
    return new Map(); // storage disabled, or not ours to read: dismissals last until a reload
  }
}

function rememberDismissed(recs) {
  const dismissals = loadDismissals();
  const now = serverNow();
  for (const rec of recs) {
    dismissals.delete(rec.id); // re-inserted last, so the oldest are the first forgotten
    dismissals.set(rec.id, Math.max(now, rec.end.at));
  }
  const kept = [...dismissals].slice(-MAX_DISMISSALS);
  try { sessionStorage.setItem(dismissedKey(), JSON.stringify(kept)); } catch (_) { /* see above */ }
}

function dismissOne(rec) {
  const list = state.finished;
  const index = list.indexOf(rec);
  if (index < 0) return;
  const hadFocus = rec.el.contains(document.activeElement);
  rememberDismissed([rec]);
  rec.el.remove();
  list.splice(index, 1);
  updateFinished();
  if (!hadFocus) return;
  // Focus goes to the card that took its place, so dismissing several is pressing Enter on each.
  const next = list[index] || list[index - 1];
  if (next) next.el.querySelector('.dismiss').focus();
  else focusAfterFinished();
}

export function clearFinished() {
  const recs = state.finished;
  if (!recs.length) return;
  const hadFocus = ui.finished.contains(document.activeElement);
  rememberDismissed(recs);
  for (const rec of recs) rec.el.remove();
  state.finished = [];
  updateFinished();
  if (hadFocus) focusAfterFinished();
  announce(recs.length === 1 ? 'Cleared 1 finished question.' : 'Cleared ' + recs.length + ' finished questions.');
}

// With the finished list gone from under it, focus goes to the open questions, or to the
// words saying there are none.
function focusAfterFinished() {
  const open = [...ui.list.children].find((el) => !el.classList.contains('is-final'));
  focusCard(open || null);
}

// Drops every finished card without remembering a dismissal (the page can no longer show
// the session).
export function dropFinished() {
  for (const rec of state.finished) rec.el.remove();
  state.finished = [];
  updateFinished();
}

// The card already showing this ending of request `id`, if any: one the gateway has dated
// at `atMs`, or else the one this page dated nearest to it (it learnt of the ending a moment
// late), among its cards that ended.
function shownEnding(id, atMs) {
  const ended = [...state.cards.values(), ...state.finished]
    .filter((rec) => rec.id === id && rec.end);
  const exact = ended.find((rec) => rec.end.exact && rec.end.at === atMs);
  if (exact || !Number.isFinite(atMs)) return exact || ended[0];
  let best = null;
  for (const rec of ended.filter((r) => !r.end.exact)) {
    const off = Math.abs(rec.end.at - atMs);
    if (off < 60000 && (!best || off < Math.abs(best.end.at - atMs))) best = rec;
  }
  return best;
}

// An ending the gateway reports for a card this page already shows ended: its time becomes
// the gateway's, and its outcome the gateway's too should this page have guessed another
// (a local timeout the answer from another tab beat).
function settleEnding(rec, entry) {
  const end = endOf(entry.outcome, entry.by, entry.response, entry.at_ms);
  if (rec.phase !== 'folded' && end.outcome !== rec.end.outcome) {
    finalize(rec, entry.outcome, entry.by, entry.response, entry.at_ms);
    return;
  }
  rec.end = end;
  if (rec.phase !== 'folded') return;
  // Its Dismiss button is made anew and the card may move: focus on it must follow.
  const hadFocus = rec.el.contains(document.activeElement);
  renderFolded(rec);
  placeFinished(rec);
  if (hadFocus) rec.el.querySelector('.dismiss').focus();
}

// The card of a request the page was showing open, which the snapshot lists as finished.
export function endedWhileAway(rec, entry) {
  finalize(rec, entry.outcome, entry.by, entry.response, entry.at_ms);
}

// A snapshot's `finished` (oldest first): each shown folded, unless already shown or
// dismissed before.
export function listFinished(entries) {
  const dismissals = loadDismissals();
  for (const entry of entries) {
    const id = String(entry.id);
    const shown = shownEnding(id, entry.at_ms);
    if (shown) {
      settleEnding(shown, entry);
      continue;
    }
    if (dismissals.has(id) && !(entry.at_ms > dismissals.get(id))) continue;
    const rec = buildCard(entry);
    rec.end = endOf(entry.outcome, entry.by, entry.response, entry.at_ms);
    disableCard(rec);
    fold(rec);
  }
}

/* ---------- countdown ---------- */

function formatLeft(ms) {
  const total = Math.max(0, Math.ceil(ms / 1000));
  if (total <= 90) return total + ' s left';
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  // Deadlines may be weeks away: count those in days.
  if (h >= 48) return Math.floor(h / 24) + ' d' + (h % 24 ? ' ' + (h % 24) + ' h' : '') + ' left';
  if (h) return h + ' h ' + m + ' min left';
  return m + ' min' + (s ? ' ' + s + ' s' : '') + ' left';
}

export function tick() {
  const now = serverNow();
  for (const rec of state.cards.values()) {
    const deadline = rec.view.deadline_ms;
    if (typeof deadline !== 'number' || !rec.countdownEl) continue;
    const span = Math.max(1, deadline - (rec.view.asked_at_ms || deadline));
    // The snapshot's clock is a little stale on arrival; never show more than the full span.
    const remaining = Math.min(span, deadline - now);
    const fraction = Math.min(1, Math.max(0, remaining / span));
    rec.barFill.style.width = (fraction * 100).toFixed(2) + '%';
    rec.el.classList.toggle('is-urgent', remaining <= 10000 || fraction < 0.15);
    if (rec.phase === 'final') {
      rec.countdownEl.textContent = '';
      continue;
    }
    rec.countdownEl.textContent = formatLeft(remaining);
    // Disable at the deadline ourselves; the server's `resolved` may trail by a moment.
    if (remaining <= 0) {
      markFinal(rec, endOf('timed_out', null, null, deadline, false), 'Timed out', LOCAL_TIMEOUT_FOLD_MS);
    }
  }
  updateRetryText();
}

/* ---------- keyboard ---------- */

function onCardKeydown(rec, event) {
  if (rec.phase !== 'open' || event.defaultPrevented || event.isComposing) return;
  const target = event.target;
  if (event.key === 'Escape' && rec.declineArmed) {
    event.preventDefault();
    disarmDecline(rec);
    return;
  }
  if (event.key === 'Enter') {
    if (target.tagName === 'BUTTON' || event.altKey || event.shiftKey) return;
    const modifier = event.ctrlKey || event.metaKey;
    if (target.tagName === 'TEXTAREA' && !modifier) return;
    if (!rec.supported) return;
    event.preventDefault();
    submitCard(rec);
    return;
  }
  if (!/^[1-9]$/.test(event.key) || event.ctrlKey || event.metaKey || event.altKey) return;
  if (target.tagName === 'TEXTAREA' || (target.tagName === 'INPUT' && target.type === 'text')) return;
  const qr = rec.questions.find((x) => x.fieldset.contains(target));
  const input = qr && qr.inputs[Number(event.key) - 1];
  if (!input) return;
  event.preventDefault();
  input.checked = input.type === 'checkbox' ? !input.checked : true;
  input.focus();
  input.dispatchEvent(new Event('change')); // the dialect's own pick handler
}
