/* The finished list, the page's one list of ended requests: each folded under the open
 * questions to what it asked, what was answered, who ended it and when, until the person
 * dismisses it (one at a time, or all at once; dismissals are kept in sessionStorage, so a
 * reload does not bring them back). A card that ends folds into it; for a late or reloaded
 * tab a snapshot's `finished` and the gateway's `history` (history.js) fill it, each ending
 * listed once.
 */

import { make, serverNow, shorten, state, timeElement, ui } from './page.js';
import {
  buildCard, disableCard, endOf, endingWords, finalize, focusCard, nearestOpenCard, updateEmpty, whenFinalFold,
} from './cards.js';
import { announce } from './status.js';

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
whenFinalFold(fold);

function foldedName(rec) {
  const view = rec.view;
  const first = Array.isArray(view.questions) ? view.questions[0] : null;
  const call = Array.isArray(view.calls) ? view.calls[0] : null;
  const form = view.dialect === 'form';
  const named = [view.title, form && view.message, first && first.question, first && first.header,
    call && 'Tool call ' + call.name]
    .map((text) => String(text || '').trim()).find(Boolean);
  if (named) return shorten(named, FOLDED_NAME_CHARS);
  return form ? 'A form from an MCP server' : 'A question from the agent';
}

function renderFolded(rec) {
  const { el, end } = rec;
  el.className = 'card is-final is-folded';
  el.dataset.state = end.outcome;
  el.dataset.by = end.own ? 'self' : 'other';
  const what = make('p', 'folded-what', foldedName(rec), { id: rec.prefix + '-what' });
  const when = timeElement(end.at, end.outcome === 'closed' ? 'before' : 'at');
  rec.statusEl = make('p', 'card-status');
  rec.statusEl.append(make('span', 'status-text', endingWords(end, true)), ' ', when);
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

// Puts `rec` in the finished list, which runs from the latest ending down. Endings come here
// in the order they ended (a snapshot's `finished` oldest first, then each as it folds), so
// one at the same millisecond as another is the later, and goes above it.
function placeFinished(rec) {
  const list = state.finished.filter((other) => other !== rec);
  let at = list.findIndex((other) => other.end.at <= rec.end.at);
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
  const end = endOf(entry);
  if (rec.phase !== 'folded' && end.outcome !== rec.end.outcome) {
    finalize(rec, entry);
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
    rec.end = endOf(entry);
    disableCard(rec);
    fold(rec);
  }
}
