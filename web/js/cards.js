/* A card per request: building its DOM, reading answers, submit / decline, whether this tab
 * may answer it (else it is shown read-only, saying whom it waits for), the countdown, final
 * states, its keyboard, and its draft (kept across a reload until sent). Once ended, a card
 * folds into the finished list (finished.js).
 * Each dialect (dialects.js) builds its own items (questions, or an approval's tool calls),
 * reads their answers, says how they make the response, and summarises an answer.
 */

import { make, send, serverNow, showText, state, ui } from './page.js';
import { announce, updateRetryText, updateTitle } from './status.js';
import { endedByYou, endedHere, endingText, escalationText, mayAnswer, waitingFor } from './people.js';
import { dialectOf } from './dialects.js';
import { ruleEndingText, ruleOf } from './approval.js';
import { renderErrors, updateReadiness } from './readiness.js';

const FOLD_DELAY_MS = 4000;
const DECLINE_CONFIRM_MS = 5000;
const DECLINE_PROMPT = 'Press again within 5 seconds to decline. The agent is told you will ' +
  'not answer, and this cannot be undone.';
const LOCAL_TIMEOUT_FOLD_MS = 10000; // in case the server's `resolved` never reaches us
const AGENT_NOTE = 'Question from the agent — askgate never asks for passwords or keys; ' +
  "don't share secrets here.";

// A new open card, which the page keeps as request `view.id`'s.
export function createCard(view) {
  const rec = buildCard(view);
  state.cards.set(rec.id, rec);
  // What this tab had picked or typed on it before a reload, and not sent.
  restoreDraft(rec);
  return rec;
}

export function buildCard(view) {
  state.seq += 1;
  const el = make('article', 'card');
  const dialect = dialectOf(view.dialect);
  const items = !dialect ? null
    : typeof dialect.items === 'function' ? dialect.items(view) : view[dialect.items];
  const rec = {
    id: String(view.id), view, el, prefix: 'c' + state.seq, dialect,
    // open -> sending -> (open again if rejected) -> final -> folded (in the finished list)
    phase: 'open',
    end: null, // how it ended, once it has: see endOf()
    questions: [], cardErrors: [], foldTimer: 0, extraButtons: [],
    supported: Boolean(dialect) && Array.isArray(items) && items.length > 0,
  };
  el.dataset.requestId = rec.id;
  const note = rec.supported && dialect.note ? dialect.note(view) : AGENT_NOTE;
  const origin = el.appendChild(make('p', 'card-origin', note, { id: rec.prefix + '-origin' }));
  let labelledBy = origin.id;
  if (view.title) {
    labelledBy = rec.prefix + '-title ' + origin.id;
    el.appendChild(make('h2', 'card-title', view.title, { id: rec.prefix + '-title' }));
  }
  el.setAttribute('aria-labelledby', labelledBy);
  // Whom a card this tab may not answer waits for, said before its questions (applyAccess).
  rec.waitingEl = el.appendChild(make('p', 'card-waiting', null, { hidden: true }));
  rec.escalatedEl = el.appendChild(make('p', 'card-escalated', null, { hidden: true }));
  showEscalation(rec);
  rec.orphanedEl = el.appendChild(make('p', 'card-orphaned', null, { hidden: true }));
  showOrphaned(rec);
  if (typeof view.deadline_ms === 'number') el.appendChild(buildCountdown(rec));
  rec.errorEl = el.appendChild(make('div', 'card-error'));
  if (rec.supported) {
    items.forEach((item, i) => el.appendChild(dialect.build(rec, item || {}, i)));
    // After the questions: the summary names them as they were built.
    if (view.default != null) el.appendChild(buildDefault(rec));
  } else {
    el.appendChild(make('p', 'unsupported',
      'This is an unsupported question type (' + String(view.dialect) +
      '), so it cannot be answered here. You can decline it.'));
  }
  el.appendChild(buildActions(rec));
  el.addEventListener('keydown', (event) => onCardKeydown(rec, event));
  for (const type of ['input', 'change']) el.addEventListener(type, () => saveDraft(rec));
  applyAccess(rec);
  return rec;
}

// What the agent gets if the deadline passes first (the ask's `default`), said beforehand.
function buildDefault(rec) {
  const box = make('div', 'card-default');
  const declines = rec.view.default && rec.view.default.action === 'decline';
  box.appendChild(make('p', 'card-default-text', declines
    ? 'If nobody answers in time, the agent is told it was declined.'
    : 'If nobody answers in time, the agent gets this answer:'));
  const summary = !declines && rec.dialect.summarize(rec, rec.view.default);
  if (summary) box.appendChild(summary);
  return box;
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
  const wrap = make('div', 'card-footer');
  const actions = rec.actionsEl = make('div', 'card-actions');
  const notes = [];
  if (rec.supported) {
    const dialect = rec.dialect;
    if (!dialect.submits || dialect.submits(rec.view)) {
      rec.submitBtn = actions.appendChild(make('button', 'submit', 'Submit', { type: 'button' }));
      rec.submitBtn.addEventListener('click', () => submitCard(rec));
    }
    (dialect.actions ? dialect.actions(rec.view) : []).forEach((action, i) => {
      const button = actions.appendChild(make('button', action.className, action.label, { type: 'button' }));
      button.addEventListener('click', () => (action.dismiss
        ? sendDecline(rec, true)
        : sendResponse(rec, () => action.response(rec), action.sent)));
      if (action.note) {
        const note = make('p', 'action-note', action.note, { id: rec.prefix + '-action' + i });
        button.setAttribute('aria-describedby', note.id);
        notes.push(note);
      }
      rec.extraButtons.push(button);
    });
  }
  rec.declineBtn = actions.appendChild(make('button', 'decline', 'Decline', { type: 'button' }));
  rec.declineBtn.addEventListener('click', (event) => onDeclineClick(rec, event));
  rec.statusEl = make('p', 'card-status');
  wrap.append(actions, rec.statusEl);
  if (notes.length) {
    rec.notesEl = wrap.appendChild(make('div', 'action-notes'));
    rec.notesEl.append(...notes);
  }
  const hint = !rec.supported ? null
    : typeof rec.dialect.hint === 'function' ? rec.dialect.hint(rec.view) : rec.dialect.hint;
  if (hint) rec.keyHint = wrap.appendChild(make('p', 'key-hint', hint));
  return wrap;
}

// Says whom the card's request was escalated to, if it was.
function showEscalation(rec) {
  const text = escalationText(rec.view);
  showText(rec.escalatedEl, text);
  rec.escalatedEl.hidden = !text;
}

const ORPHANED_TEXT = 'The agent that asked this is not connected; your answer will be kept for it.';

function showOrphaned(rec) {
  const orphaned = rec.view.orphaned === true;
  showText(rec.orphanedEl, orphaned ? ORPHANED_TEXT : '');
  rec.orphanedEl.hidden = !orphaned;
  rec.el.classList.toggle('is-orphaned', orphaned);
}

// Request `rec`'s agent is gone (an `orphaned` frame), or back (its `request` sent again):
// said on the card, which stays answerable.
export function markOrphaned(rec, orphaned) {
  rec.view = Object.assign({}, rec.view, { orphaned });
  showOrphaned(rec);
}

// A vote on request `rec` was counted (a `tally` frame): the tallies shown anew, and a card
// whose vote was on its way is open again, saying so: the request goes on until enough vote.
export function tallied(rec, frame) {
  if (rec.dialect && rec.dialect.tally) rec.dialect.tally(rec, frame);
  // Only this person's own vote opens their card again: another's may be counted first.
  const mine = state.you && state.you.user !== null && frame.user === state.you.user;
  if (rec.phase === 'sending' && mine) {
    reopen(rec, 'Your vote is counted. It ends when enough people have voted.');
  }
}

// Request `rec` was escalated (an `escalated` frame): more people may answer it now, which
// may include this tab's person.
export function escalate(rec, frame) {
  rec.view = Object.assign({}, rec.view, {
    answerers: Array.isArray(frame.answerers) ? frame.answerers : null,
    escalated_to: Array.isArray(frame.to) ? frame.to : [],
  });
  showEscalation(rec);
  applyAccess(rec);
}

// Shows an open card answerable, or read-only when this tab may not answer it (the request
// names other answerers, the tab is watch-only, or the gateway refused this tab's answer):
// its questions disabled, no Submit or Decline, and whom it waits for.
export function applyAccess(rec) {
  rec.readOnly = Boolean(rec.denied) || !mayAnswer(rec.view);
  rec.el.classList.toggle('is-read-only', rec.readOnly);
  if (rec.phase === 'final' || rec.phase === 'folded') return;
  if (rec.readOnly) {
    const [headline, why] = waitingFor(rec.view);
    rec.waitingEl.replaceChildren(make('strong', 'waiting-who', headline), ' ',
      make('span', 'waiting-why', why));
    disarmDecline(rec);
  }
  rec.waitingEl.hidden = !rec.readOnly;
  rec.actionsEl.hidden = rec.readOnly;
  if (rec.keyHint) rec.keyHint.hidden = rec.readOnly;
  if (rec.notesEl) rec.notesEl.hidden = rec.readOnly;
  rec.questions.forEach((qr) => { qr.fieldset.disabled = rec.readOnly; });
  updateReadiness(rec);
}

function clearServerErrors(rec) {
  rec.cardErrors = [];
  rec.questions.forEach((qr) => { qr.serverErrors = []; });
}

function submitCard(rec) {
  if (rec.phase !== 'open' || rec.readOnly || !rec.submitBtn) return;
  clearServerErrors(rec);
  if (!updateReadiness(rec)) {
    if (rec.dialect.reveal) revealMissing(rec);
    return setStatus(rec, rec.dialect.incomplete);
  }
  const answers = rec.questions.map((qr) => rec.dialect.read(qr).answer);
  sendFor(rec, { type: 'answer', id: rec.id, response: rec.dialect.respond(answers) });
}

// Every record says what it lacks, and focus goes to the first that lacks something.
function revealMissing(rec) {
  rec.dialect.reveal(rec);
  updateReadiness(rec);
  const first = rec.questions.find((qr) => qr.localError);
  const control = first && first.fieldset.querySelector('input:not(:disabled), textarea:not(:disabled)');
  if (control) control.focus();
}

// Sends the response `makeResponse()` gives as this card's answer, as a dialect's own
// action does ("Approve all"); then `onSent(rec)`, if it was sent. A null response sends
// nothing (the dialect has said why in the card's errors).
function sendResponse(rec, makeResponse, onSent) {
  if (rec.phase !== 'open' || rec.readOnly) return;
  clearServerErrors(rec);
  const response = makeResponse();
  updateReadiness(rec);
  if (response === null) return;
  if (sendFor(rec, { type: 'answer', id: rec.id, response }) && onSent) onSent(rec);
}

// A decline cannot be taken back and its button sits beside Submit, so the first press only
// asks for a second within a few seconds. Keyboard presses are clicks too; Escape backs out.
function onDeclineClick(rec, event) {
  if (rec.phase !== 'open' || rec.readOnly) return;
  if (!rec.declineArmed) return armDecline(rec);
  // The second click of a double-click belongs to the first press: it confirms nothing.
  if (event.detail > 1) return;
  sendDecline(rec, false);
}

// A decline, or with `dismiss` a request put aside (a form's "Not now", which the MCP server
// hears as `cancel`).
function sendDecline(rec, dismiss) {
  if (rec.phase !== 'open' || rec.readOnly) return;
  disarmDecline(rec);
  clearServerErrors(rec);
  renderErrors(rec);
  sendFor(rec, dismiss ? { type: 'decline', id: rec.id, dismiss: true } : { type: 'decline', id: rec.id });
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
  dropDraft(rec.id);
  rec.phase = 'sending';
  rec.el.classList.add('is-sending');
  setStatus(rec, 'Sending…');
  if (rec.submitBtn) rec.submitBtn.disabled = true;
  rec.extraButtons.forEach((button) => { button.disabled = true; });
  rec.declineBtn.disabled = true;
  if (hadFocus) focusStatus(rec);
  return true;
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
  // Not sent after all: what it holds is a draft again.
  saveDraft(rec);
}

export function setStatus(rec, text) {
  rec.statusEl.replaceChildren(...(text ? [make('span', 'status-text', text)] : []));
}

export function disableCard(rec) {
  disarmDecline(rec);
  rec.questions.forEach((qr) => { qr.fieldset.disabled = true; });
  if (rec.submitBtn) rec.submitBtn.disabled = true;
  rec.extraButtons.forEach((button) => { button.disabled = true; });
  rec.declineBtn.disabled = true;
}

/* ---------- final states ---------- */

// How a request ended, from a `resolved` frame or a snapshot's `finished` entry ({outcome,
// by, user, via, response, at_ms}): `at` in the gateway's clock; `exact` when the gateway
// said when, not when this page learnt of it; `here` when this tab ended it, `own` when this
// tab or this tab's person did; `rule` the remembered approval that approved it, if one did.
export function endOf(ending, exact = Number.isFinite(ending.at_ms)) {
  const by = ending.by ?? null;
  const user = typeof ending.user === 'string' ? ending.user : null;
  const via = ending.via ?? null;
  return {
    outcome: String(ending.outcome), here: endedHere(by), own: endedByYou(by, user), user,
    via, response: ending.response, rule: via === 'rule' ? ruleOf(ending) : '',
    at: Number.isFinite(ending.at_ms) ? ending.at_ms : serverNow(), exact,
  };
}

// How ending `end` reads (people.js words every ending a person or the gateway made); one by
// remembered approvals names the rule and its maker, who did not answer this request.
export function endingWords(end, folded) {
  return end.via === 'rule' && end.outcome === 'answered'
    ? ruleEndingText(end.rule, end.user) : endingText(end, folded);
}

export function finalize(rec, ending) {
  const end = endOf(ending);
  const text = endingWords(end, false);
  markFinal(rec, end, text, FOLD_DELAY_MS);
  rec.el.dataset.by = end.own ? 'self' : 'other';
  // What was answered, unless this tab sent it (its own inputs still show it).
  const summary = end.outcome === 'answered' && !end.here && rec.supported &&
    rec.dialect.summarize(rec, end.response);
  if (summary) rec.statusEl.appendChild(summary);
  const declined = end.outcome === 'declined' && rec.supported && rec.dialect.declined &&
    rec.dialect.declined(end.response);
  if (declined) rec.statusEl.append(' ', make('span', 'status-detail', declined));
  announce(text + (rec.view.title ? ': ' + rec.view.title : '') + '.');
}

// A card the snapshot no longer lists and whose ending it does not give (a gateway that
// sends no `finished`): it ended while the page was disconnected, how is unknown.
export function closedWhileAway(rec, text) {
  markFinal(rec, endOf({ outcome: 'closed', at_ms: serverNow() }, false), text, FOLD_DELAY_MS);
  announce(text);
}

// Folds a final card into the finished list once its moment has passed. finished.js, which
// builds on the cards, hands it over (whenFinalFold), so the cards need not import it back.
let foldFinal = () => {};
export function whenFinalFold(fold) { foldFinal = fold; }

function markFinal(rec, end, text, foldDelay) {
  const hadFocus = rec.el.contains(document.activeElement);
  dropDraft(rec.id);
  rec.end = end;
  rec.phase = 'final';
  rec.el.classList.remove('is-sending');
  rec.el.classList.add('is-final');
  rec.el.dataset.state = end.outcome;
  disableCard(rec);
  rec.waitingEl.hidden = true; // whoever it waited for, it waits no more
  setStatus(rec, text);
  if (hadFocus) focusStatus(rec);
  if (rec.notification) rec.notification.close();
  state.unseen.delete(rec.id);
  updateTitle();
  updateEmpty();
  clearTimeout(rec.foldTimer);
  rec.foldTimer = setTimeout(() => foldFinal(rec), foldDelay);
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

export function nearestOpenCard(el) {
  for (const direction of ['nextElementSibling', 'previousElementSibling']) {
    for (let other = el[direction]; other; other = other[direction]) {
      if (!other.classList.contains('is-final')) return other;
    }
  }
  return null;
}

export function focusCard(el) {
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
      // With a default the gateway is giving it now; its `resolved` says so in full.
      const ending = rec.view.default != null
        ? { outcome: rec.view.default.action === 'decline' ? 'declined' : 'answered', via: 'default', at_ms: deadline }
        : { outcome: 'timed_out', at_ms: deadline };
      const end = endOf(ending, false);
      markFinal(rec, end, endingWords(end, false), LOCAL_TIMEOUT_FOLD_MS);
    }
  }
  updateRetryText();
}

/* ---------- drafts ---------- */

/* Drafts: what a person picked or typed on an open card and has not sent, kept in the tab's
 * sessionStorage (keyed by session and request id), so a reload shows the card as they left
 * it. A draft is each of the card's controls as it stands (checked, or its value), named by
 * its element id without the card's own prefix (ids are numbered per page load); it is put
 * back when the card is built again, control by control, each with the event a person's
 * change would have fired, so the dialect updates what depends on it. A draft goes once the
 * answer is sent or the request ends, and a snapshot drops those of requests no longer open.
 *
 * Storage can be disabled or full: then nothing is kept, and nothing else changes.
 */

const PREFIX = 'askgate.draft.';
// A draft over this many characters is not kept (sessionStorage holds a few MB per origin).
const MAX_DRAFT_CHARS = 256 * 1024;

const keyOf = (id) => PREFIX + JSON.stringify([String(state.session || ''), String(id)]);

// The card's controls, each with the name its draft knows it by.
function controls(rec) {
  const found = [];
  rec.el.querySelectorAll('input, textarea, select').forEach((el, index) => {
    if (el.type === 'button' || el.type === 'submit' || el.type === 'file') return;
    const id = el.id || '';
    const name = id.startsWith(rec.prefix + '-') ? id.slice(rec.prefix.length) : '@' + index;
    found.push([name, el]);
  });
  return found;
}

const isToggle = (el) => el.type === 'checkbox' || el.type === 'radio';

// Keeps card `rec`'s controls as they stand, while it is open and this tab may answer it.
export function saveDraft(rec) {
  if (rec.phase !== 'open' || rec.readOnly || !rec.supported || rec.restoring) return;
  const values = {};
  for (const [name, el] of controls(rec)) values[name] = isToggle(el) ? el.checked : el.value;
  const text = JSON.stringify({ asked_at_ms: rec.view.asked_at_ms ?? null, values });
  try {
    if (text.length > MAX_DRAFT_CHARS) sessionStorage.removeItem(keyOf(rec.id));
    else sessionStorage.setItem(keyOf(rec.id), text);
  } catch (_) { /* see above */ }
}

function loadDraft(rec) {
  try {
    const draft = JSON.parse(sessionStorage.getItem(keyOf(rec.id)) || 'null');
    if (!draft || typeof draft !== 'object' || !draft.values || typeof draft.values !== 'object') return null;
    // The same id asked again (once its outcome was acknowledged) is another request.
    if ((draft.asked_at_ms ?? null) !== (rec.view.asked_at_ms ?? null)) return null;
    return draft.values;
  } catch (_) {
    return null;
  }
}

// Puts back card `rec`'s draft, if this tab keeps one: picks first (a pick may show a text
// box, as "Other…" or an edit of a call's arguments), then what was typed.
export function restoreDraft(rec) {
  if (rec.readOnly || !rec.supported) return;
  const values = loadDraft(rec);
  if (!values) return;
  const has = (name) => Object.prototype.hasOwnProperty.call(values, name);
  rec.restoring = true;
  try {
    for (const [name, el] of controls(rec)) {
      if (!isToggle(el) || !has(name) || el.checked === Boolean(values[name])) continue;
      if (el.type === 'radio' && !values[name]) continue; // unpicked by picking another
      el.checked = Boolean(values[name]);
      el.dispatchEvent(new Event('change', { bubbles: true }));
    }
    // A radio group left with none picked ("Clear the choice").
    for (const [name, el] of controls(rec)) {
      if (el.type !== 'radio' || !has(name) || values[name] || !el.checked) continue;
      el.checked = false;
      el.dispatchEvent(new Event('change', { bubbles: true }));
    }
    for (const [name, el] of controls(rec)) {
      if (isToggle(el) || !has(name) || typeof values[name] !== 'string' || el.value === values[name]) continue;
      el.value = values[name];
      el.dispatchEvent(new Event('input', { bubbles: true }));
      if (el.tagName === 'SELECT' || el.type === 'date' || el.type === 'datetime-local') {
        el.dispatchEvent(new Event('change', { bubbles: true }));
      }
    }
  } finally {
    rec.restoring = false;
  }
  saveDraft(rec);
}

// Forgets request `id`'s draft (its answer went, or it ended).
export function dropDraft(id) {
  try { sessionStorage.removeItem(keyOf(id)); } catch (_) { /* see above */ }
}

// Forgets this session's drafts of requests not in `openIds` (a snapshot's open requests).
export function pruneDrafts(openIds) {
  try {
    const session = String(state.session || '');
    for (let i = sessionStorage.length - 1; i >= 0; i -= 1) {
      const key = sessionStorage.key(i);
      if (!key || !key.startsWith(PREFIX)) continue;
      let parts = null;
      try { parts = JSON.parse(key.slice(PREFIX.length)); } catch (_) { /* not ours */ }
      if (!Array.isArray(parts) || parts[0] !== session) continue;
      if (!openIds.has(parts[1])) sessionStorage.removeItem(key);
    }
  } catch (_) { /* see above */ }
}

/* ---------- keyboard ---------- */

function onCardKeydown(rec, event) {
  if (rec.phase !== 'open' || rec.readOnly || event.defaultPrevented || event.isComposing) return;
  const target = event.target;
  if (event.key === 'Escape' && rec.declineArmed) {
    event.preventDefault();
    disarmDecline(rec);
    return;
  }
  if (event.key === 'Enter') {
    // Enter on a button, a <summary> (unfolding a long value) or a list keeps its own meaning.
    if (['BUTTON', 'SUMMARY', 'SELECT', 'A'].includes(target.tagName) || event.altKey || event.shiftKey) return;
    const modifier = event.ctrlKey || event.metaKey;
    if (target.tagName === 'TEXTAREA' && !modifier) return;
    if (!rec.supported) return;
    event.preventDefault();
    submitCard(rec);
    return;
  }
  if (!/^[1-9]$/.test(event.key) || event.ctrlKey || event.metaKey || event.altKey) return;
  if (['TEXTAREA', 'SELECT'].includes(target.tagName) || (target.tagName === 'INPUT' && target.type === 'text')) return;
  const qr = rec.questions.find((x) => x.fieldset.contains(target));
  const input = qr && qr.inputs[Number(event.key) - 1];
  if (!input) return;
  event.preventDefault();
  input.checked = input.type === 'checkbox' ? !input.checked : true;
  input.focus();
  input.dispatchEvent(new Event('change')); // the dialect's own pick handler
}
