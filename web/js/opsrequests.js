/* The console's open requests: one table row each, oldest first, and the way to withdraw one.
 *
 * A row lives as long as its request is listed: each refresh changes its cells' text in place
 * and moves it only when its place changed. So a withdrawal half-way through its confirmation,
 * and the keyboard focus on its buttons, survive the figures being read again underneath.
 *
 * Withdrawing takes two steps in the row itself: "Withdraw" becomes "Withdraw request X? Yes,
 * withdraw / No" (Escape is No); Yes sends `DELETE /v1/sessions/{session}/requests/{id}` and
 * what the gateway answered is said in the status line above the table.
 *
 * Sessions, ids, titles and names come from agents: they are set as text only, their direction
 * controls shown rather than obeyed (page.js).
 */

import { make, showText } from './page.js';
import { count, duration, errorMessage, isObject } from './opsformat.js';

const rows = new Map(); // `{session}/{id}` -> { row, cells, view, phase }
const ui = {};
let gateway = null; // { call(method, path), serverNow(), refresh() } from ops.js

export function setupRequests(calls) {
  gateway = calls;
  for (const id of ['requests', 'requests-box', 'requests-empty', 'requests-more', 'withdraw-result']) {
    ui[id.replace(/-(\w)/g, (_, c) => c.toUpperCase())] = document.getElementById(id);
  }
  ui.withdrawResult.tabIndex = -1;
}

const keyOf = (view) => view.session + '/' + view.id;

// `GET /v1/requests?state=open`'s answer (newest first) as the table, oldest first.
export function renderRequests(body) {
  const listed = (isObject(body) && Array.isArray(body.requests) ? body.requests : [])
    .filter((v) => isObject(v) && typeof v.session === 'string' && typeof v.id === 'string');
  listed.sort((a, b) => count(a.asked_at_ms) - count(b.asked_at_ms)
    || a.session.localeCompare(b.session) || a.id.localeCompare(b.id));
  const tbody = ui.requests.tBodies[0];
  const wanted = new Set(listed.map(keyOf));
  for (const [key, rec] of rows) {
    if (wanted.has(key)) continue;
    rec.row.remove();
    rows.delete(key);
  }
  const now = gateway.serverNow();
  listed.forEach((view, index) => {
    const key = keyOf(view);
    let rec = rows.get(key);
    if (!rec) {
      rec = makeRow(view);
      rows.set(key, rec);
    }
    rec.view = view;
    fill(rec, now);
    // Moved only when out of place: moving a row would take the focus off its buttons.
    if (tbody.children[index] !== rec.row) tbody.insertBefore(rec.row, tbody.children[index] || null);
  });
  ui.requestsBox.hidden = listed.length === 0;
  ui.requestsEmpty.hidden = listed.length > 0;
  ui.requestsMore.hidden = !body.next_cursor;
  ui.requestsMore.textContent = 'More requests are open than one read lists: these are the newest '
    + listed.length + ' (the command askgate requests lists them all).';
}

function makeRow(view) {
  const row = make('tr');
  row.dataset.request = keyOf(view);
  const cells = {
    session: make('th', 'mono', null, { scope: 'row' }),
    request: make('td', 'ops-request'),
    dialect: make('td', 'ops-dialect'),
    age: make('td', 'ops-age'),
    left: make('td', 'ops-left'),
    answerers: make('td', 'ops-answerers'),
    agent: make('td', 'ops-agent'),
    tabs: make('td', 'num ops-tabs'),
    action: make('td', 'ops-action'),
  };
  cells.requestId = make('span', 'mono ops-request-id');
  cells.title = make('span', 'ops-request-title');
  cells.request.append(cells.requestId, cells.title);
  row.append(cells.session, cells.request, cells.dialect, cells.age, cells.left, cells.answerers,
    cells.agent, cells.tabs, cells.action);
  const rec = { row, cells, view, phase: '' };
  showIdle(rec);
  return rec;
}

// Sets `text` in `node` unless it holds it already (a screen reader reading the table is not
// disturbed by cells rewritten with what they held).
function put(node, text) {
  if (node.dataset.text === text) return;
  node.dataset.text = text;
  showText(node, text);
}

function fill(rec, now) {
  const { cells, view } = rec;
  put(cells.session, view.session);
  put(cells.requestId, view.id);
  put(cells.title, typeof view.title === 'string' ? view.title : '');
  cells.title.hidden = typeof view.title !== 'string' || view.title === '';
  put(cells.dialect, String(view.dialect ?? ''));
  put(cells.age, duration(now - count(view.asked_at_ms)));
  if (Number.isFinite(view.deadline_ms)) {
    const left = view.deadline_ms - now;
    put(cells.left, left > 0 ? duration(left) : 'due now');
  } else {
    put(cells.left, 'no deadline');
  }
  put(cells.answerers, Array.isArray(view.answerers) && view.answerers.length
    ? view.answerers.map(String).join(', ') : 'anyone with the link');
  const agent = view.orphaned ? 'gone (orphaned)' : view.agent_online ? 'connected' : 'not connected';
  put(cells.agent, agent);
  cells.agent.dataset.agent = view.orphaned ? 'orphaned' : view.agent_online ? 'connected' : 'away';
  put(cells.tabs, String(count(view.tabs_watching)));
}

// "request r1 of session s", for the buttons' names and what is said after.
function named(view) {
  return 'request ' + view.id + ' of session ' + view.session;
}

function showIdle(rec) {
  rec.phase = '';
  const button = make('button', 'ghost ops-withdraw', 'Withdraw', { type: 'button' });
  button.append(make('span', 'visually-hidden', ' ' + named(rec.view)));
  button.addEventListener('click', () => showConfirm(rec));
  rec.cells.action.replaceChildren(button);
  return button;
}

function showConfirm(rec) {
  rec.phase = 'confirming';
  const box = make('span', 'ops-confirm');
  box.setAttribute('role', 'group');
  const question = make('span', 'ops-confirm-question', 'Withdraw ' + rec.view.id + '?');
  question.id = 'confirm-' + Math.random().toString(36).slice(2);
  box.setAttribute('aria-labelledby', question.id);
  const yes = make('button', 'ghost ops-confirm-yes', 'Yes, withdraw', { type: 'button' });
  const no = make('button', 'ghost ops-confirm-no', 'No', { type: 'button' });
  yes.addEventListener('click', () => withdraw(rec, box));
  no.addEventListener('click', () => showIdle(rec).focus());
  box.addEventListener('keydown', (event) => {
    if (event.key === 'Escape' && rec.phase === 'confirming') showIdle(rec).focus();
  });
  box.append(question, yes, no);
  rec.cells.action.replaceChildren(box);
  // The harmless answer takes the focus, so a reflexive Enter does not withdraw.
  no.focus();
}

async function withdraw(rec, box) {
  rec.phase = 'withdrawing';
  for (const button of box.querySelectorAll('button')) button.disabled = true;
  const view = rec.view;
  const path = '/v1/sessions/' + encodeURIComponent(view.session) + '/requests/' + encodeURIComponent(view.id);
  let said;
  try {
    const answer = await gateway.call('DELETE', path);
    said = outcomeWords(view, answer);
  } catch (_) {
    said = 'The gateway could not be reached: ' + named(view) + ' was not withdrawn. Try again once it is back.';
  }
  showResult(said);
  if (rows.get(keyOf(view)) === rec) showIdle(rec);
  gateway.refresh();
}

function outcomeWords(view, answer) {
  const body = answer.body;
  if (answer.status === 200 && isObject(body)) {
    if (body.outcome === 'withdrawn') return 'Withdrew ' + named(view) + '.';
    return 'The ' + named(view) + ' had already ended (' + String(body.outcome) + ').';
  }
  if (answer.status === 404) return 'The ' + named(view) + ' is no longer there: it ended meanwhile.';
  return 'Could not withdraw ' + named(view) + ': ' + errorMessage(body, 'status ' + answer.status) + '.';
}

function showResult(text) {
  showText(ui.withdrawResult, text);
  // Its row may be gone at the next refresh: the focus waits on what happened instead.
  if (ui.requests.contains(document.activeElement) || document.activeElement === document.body) {
    ui.withdrawResult.focus();
  }
}
