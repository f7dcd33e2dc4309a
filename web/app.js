/* askgate answer page (/s/{session}#k={viewer key}).
 *
 * Layout of this file, top to bottom:
 *   1. state and small DOM helpers
 *   2. connection: WebSocket, hello, close codes, reconnect with backoff
 *   3. frame handlers: snapshot / request / resolved / answer_rejected / presence / error
 *   4. cards: building the DOM for a request, reading answers, submit / decline,
 *      final states and the fold-away; each dialect (DIALECTS) builds its own questions,
 *      reads their answers and summarises an answer given in another tab:
 *      4a. harness (pydantic-ai-harness): options, multi-select, one "Other…" text
 *      4b. deepagents (deepagents-code ask_user): text, multiple_choice, multi_select
 *   5. countdown ticker, header status, notifications, unseen-count title, keyboard
 *
 * Question text comes from a model that may have been prompt-injected, so everything the
 * gateway sends is rendered with createElement + textContent only, never parsed as HTML.
 */
'use strict';

const FOLD_DELAY_MS = 4000;
const LOCAL_TIMEOUT_FOLD_MS = 10000; // in case the server's `resolved` never reaches us
const BACKOFF_MIN_MS = 500;
const BACKOFF_SLOW_MS = 5000; // after "try later" / "too many frames": back off harder
const BACKOFF_MAX_MS = 15000;
const LOST_REASONS = { 1001: 'server restarting', 1013: 'server busy', 4408: 'connection too slow', 4429: 'too many messages' };
const TAB_ID_RE = /^[A-Za-z0-9._:-]{1,64}$/;
// The harness rejects control, format, private-use and unassigned characters and the
// line/paragraph separators; only `\n` is allowed. The server has the final word.
const FORBIDDEN_RE = /(?!\n)[\p{C}\u2028\u2029]/u;
const BASE_TITLE = 'askgate';
const AGENT_NOTE = 'Question from the agent — askgate never asks for passwords or keys; ' +
  "don't share secrets here.";

// Closes that must not be retried: retrying would fail the same way.
const FATAL_CLOSES = {
  4400: ['protocol error', 'The page and the server disagree about the protocol. Reloading the page may help.'],
  4401: ['key not valid', "This link's key is not valid. Ask your agent for a fresh session link."],
  4404: ['unknown session', 'This session link is not valid. Check that you copied the whole link.'],
  4413: ['message too large', 'That answer was too large to send. Reload the page and try a shorter one.'],
};

const state = {
  session: '', key: '', tab: '',
  ws: null, attempt: 0, retryTimer: 0, retryAt: 0, lostReason: '',
  offset: 0, // server clock minus local clock, from the last snapshot
  synced: false, // a snapshot has arrived, so "no cards" really means no questions
  seq: 0, // numbers cards, for element ids that never contain request ids
  cards: new Map(), // request id -> card record
  unseen: new Set(), // request ids that arrived while the page was hidden
};

const ui = {};

// The one way this page makes elements: text is always set as textContent.
function make(tag, className, text, props) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (props) Object.assign(node, props);
  return node;
}

function serverNow() {
  return Date.now() + state.offset;
}

/* ---------- 2. connection ---------- */

function readLocation() {
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

function loadTabId() {
  let id = '';
  try { id = sessionStorage.getItem('askgate.tab') || ''; } catch (_) { /* see above */ }
  if (!TAB_ID_RE.test(id)) {
    id = randomTabId();
    storeTabId(id);
  }
  return id;
}

function connect() {
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
    send({ type: 'hello', key: state.key, tab: state.tab });
    setConnection('connecting', 'Joining the session…');
  });
  ws.addEventListener('message', (event) => onMessage(event.data));
  ws.addEventListener('close', (event) => onClose(ws, event));
}

function send(frame) {
  if (!state.ws || state.ws.readyState !== WebSocket.OPEN) return false;
  state.ws.send(JSON.stringify(frame));
  return true;
}

function onClose(ws, event) {
  if (ws !== state.ws) return;
  state.ws = null;
  renderPresence(null);
  // Cards still "Sending…" stay so until the next snapshot says whether the answer landed.
  const fatal = FATAL_CLOSES[event.code];
  if (fatal) {
    setConnection('closed', 'Disconnected: ' + fatal[0]);
    showNotice(fatal[1]);
    for (const rec of [...state.cards.values()]) removeCard(rec);
    state.synced = false;
    updateEmpty();
    announce(fatal[1]);
    return;
  }
  scheduleReconnect(event.code);
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

function updateRetryText() {
  if (!state.retryAt) return;
  const seconds = Math.max(1, Math.ceil((state.retryAt - Date.now()) / 1000));
  const reason = state.lostReason.charAt(0).toUpperCase() + state.lostReason.slice(1);
  setConnection('reconnecting', reason + ' — reconnecting in ' + seconds + ' s');
}

/* ---------- 3. frame handlers ---------- */

const HANDLERS = {
  snapshot: onSnapshot,
  request: (f) => onRequest(f.request),
  resolved: onResolved,
  answer_rejected: onAnswerRejected,
  presence: (f) => renderPresence(f.tabs, f.agent_online),
  error: (f) => toast(f.message || f.code || 'Something went wrong.'),
};

function onMessage(data) {
  let frame = null;
  try { frame = JSON.parse(data); } catch (_) { return; }
  const handler = frame && HANDLERS[frame.type];
  if (handler) handler(frame);
}

function onSnapshot(f) {
  if (typeof f.now_ms === 'number') state.offset = f.now_ms - Date.now();
  if (typeof f.tab === 'string' && TAB_ID_RE.test(f.tab)) {
    // The gateway may have replaced an id it did not like; answers are matched against its.
    state.tab = f.tab;
    storeTabId(f.tab);
  }
  state.attempt = 0;
  state.synced = true;
  showNotice('');
  setConnection('open', 'Connected');
  renderPresence(f.tabs, f.agent_online);
  const views = Array.isArray(f.requests) ? f.requests.filter((v) => v && v.id) : [];
  const ids = new Set(views.map((v) => String(v.id)));
  for (const rec of [...state.cards.values()]) {
    if (!ids.has(rec.id) && rec.phase !== 'final') removeCard(rec);
  }
  const fresh = [];
  let cursor = ui.list.firstElementChild;
  for (const view of views) {
    let rec = state.cards.get(String(view.id));
    if (!rec) {
      rec = createCard(view);
      fresh.push(rec);
    } else if (rec.phase === 'sending') {
      reopen(rec, "Your answer didn't arrive before the connection dropped. Please send it again.");
    }
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
}

function onRequest(view) {
  if (!view || !view.id || state.cards.has(String(view.id))) return;
  const rec = createCard(view);
  ui.list.appendChild(rec.el);
  updateEmpty();
  noteNew([rec]);
  tick();
}

function onResolved(f) {
  const rec = state.cards.get(String(f.id));
  if (rec) finalize(rec, f.outcome, f.by, f.response);
}

function onAnswerRejected(f) {
  const rec = state.cards.get(String(f.id));
  if (!rec) return;
  const errors = Array.isArray(f.errors) ? f.errors : [];
  let resolvedAlready = false;
  for (const err of errors.map((e) => e || {})) {
    const message = String(err.message || 'The answer was not accepted.');
    const path = String(err.path || '');
    const already = err.code === 'already_resolved' || /already resolved/i.test(message);
    resolvedAlready = resolvedAlready || already;
    const match = /^response\.answers\[(\d+)\]/.exec(path);
    const question = match && !already ? rec.questions[Number(match[1])] : null;
    if (question) question.serverErrors.push(message);
    else rec.cardErrors.push(message);
  }
  if (!errors.length) rec.cardErrors.push('The answer was not accepted.');
  renderErrors(rec);
  if (rec.phase === 'final') return;
  if (resolvedAlready) {
    setStatus(rec, 'This question was already resolved.');
    disableCard(rec);
    return;
  }
  reopen(rec, 'Not accepted — please check the highlighted questions.');
  announce('Your answer was not accepted: ' + (errors[0] ? errors[0].message : ''));
}

/* ---------- 4. cards ---------- */

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

function createCard(view) {
  state.seq += 1;
  const el = make('article', 'card');
  const dialect = Object.prototype.hasOwnProperty.call(DIALECTS, view.dialect)
    ? DIALECTS[view.dialect] : null;
  const rec = {
    id: String(view.id), view, el, prefix: 'c' + state.seq, dialect,
    phase: 'open', // open -> sending -> (open again if rejected) -> final
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
  state.cards.set(rec.id, rec);
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
  rec.declineBtn.addEventListener('click', () => declineCard(rec));
  const wrap = make('div', 'card-footer');
  rec.statusEl = make('p', 'card-status');
  wrap.append(actions, rec.statusEl);
  if (rec.supported) {
    wrap.appendChild(make('p', 'key-hint',
      'Enter submits · Ctrl+Enter inside a text box · keys 1–9 pick options'));
  }
  return wrap;
}

function growTextarea(area) {
  // Browsers with `field-sizing: content` grow the box from CSS alone.
  if (window.CSS && CSS.supports && CSS.supports('field-sizing', 'content')) return;
  area.style.height = 'auto';
  if (area.value) area.style.height = area.scrollHeight + 2 + 'px';
}

function updateReadiness(rec) {
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

function renderErrors(rec) {
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

function declineCard(rec) {
  if (rec.phase !== 'open') return;
  clearServerErrors(rec);
  renderErrors(rec);
  sendFor(rec, { type: 'decline', id: rec.id });
}

function sendFor(rec, frame) {
  if (!send(frame)) return setStatus(rec, 'Not connected — wait until the page reconnects, then try again.');
  rec.phase = 'sending';
  rec.el.classList.add('is-sending');
  setStatus(rec, 'Sending…');
  if (rec.submitBtn) rec.submitBtn.disabled = true;
  rec.declineBtn.disabled = true;
}

function reopen(rec, message) {
  rec.phase = 'open';
  rec.el.classList.remove('is-sending');
  rec.declineBtn.disabled = false;
  setStatus(rec, message);
  updateReadiness(rec);
}

function setStatus(rec, text) {
  rec.statusEl.replaceChildren(make('span', 'status-text', text));
}

function disableCard(rec) {
  rec.questions.forEach((qr) => { qr.fieldset.disabled = true; });
  if (rec.submitBtn) rec.submitBtn.disabled = true;
  rec.declineBtn.disabled = true;
}

const OUTCOME_TEXT = {
  answered: ['Sent ✓', 'Answered in another tab'],
  declined: ['Declined', 'Declined in another tab'],
  timed_out: ['Timed out', 'Timed out'],
  withdrawn: ['Withdrawn by the agent', 'Withdrawn by the agent'],
};

function finalize(rec, outcome, by, response) {
  const texts = OUTCOME_TEXT[outcome] || ['Closed', 'Closed'];
  const self = by != null && by === state.tab;
  const text = self ? texts[0] : texts[1];
  markFinal(rec, outcome, text, FOLD_DELAY_MS);
  rec.el.dataset.by = self ? 'self' : 'other';
  const summary = outcome === 'answered' && !self && rec.supported &&
    rec.dialect.summarize(rec, response);
  if (summary) rec.statusEl.appendChild(summary);
  announce(text + (rec.view.title ? ': ' + rec.view.title : '') + '.');
}

function markFinal(rec, outcome, text, foldDelay) {
  rec.phase = 'final';
  rec.el.classList.remove('is-sending');
  rec.el.classList.add('is-final');
  rec.el.dataset.state = outcome;
  disableCard(rec);
  setStatus(rec, text);
  state.unseen.delete(rec.id);
  updateTitle();
  updateEmpty();
  scheduleFold(rec, foldDelay);
}

function scheduleFold(rec, delay) {
  clearTimeout(rec.foldTimer);
  rec.foldTimer = setTimeout(() => fold(rec), delay);
}

function fold(rec) {
  const el = rec.el;
  if (!el.isConnected) return removeCard(rec);
  // Height must be a number for the transition to run, so pin it before collapsing.
  el.style.height = el.offsetHeight + 'px';
  void el.offsetHeight;
  el.classList.add('folding');
  el.style.height = '0px';
  el.addEventListener('transitionend', (e) => {
    if (e.target === el && e.propertyName === 'height') removeCard(rec);
  });
  setTimeout(() => removeCard(rec), 900);
}

function removeCard(rec) {
  clearTimeout(rec.foldTimer);
  if (state.cards.get(rec.id) === rec) state.cards.delete(rec.id);
  state.unseen.delete(rec.id);
  rec.el.remove();
  updateTitle();
  updateEmpty();
}

function updateEmpty() {
  const open = [...state.cards.values()].some((r) => r.phase !== 'final');
  ui.empty.hidden = !state.synced || open;
}

/* ---------- 4a. harness questions ---------- */

function buildQuestion(rec, q, qi) {
  const id = rec.prefix + '-q' + qi;
  const multi = q.multi_select === true;
  const fieldset = make('fieldset', 'question');
  fieldset.dataset.header = String(q.header ?? '');
  const legend = make('legend');
  legend.append(
    make('span', 'chip', q.header),
    make('span', 'question-text', q.question),
    make('span', 'question-hint', multi ? 'Pick one or more' : 'Pick one'));
  fieldset.appendChild(legend);
  const header = String(q.header ?? '');
  const qr = {
    q, fieldset, multi, id, inputs: [], serverErrors: [], localError: '',
    name: header, detail: header + ': ' + String(q.question ?? ''),
  };
  const list = fieldset.appendChild(make('div', 'options'));
  const options = Array.isArray(q.options) ? q.options : [];
  options.forEach((opt, oi) => list.appendChild(buildOption(rec, qr, opt || {}, oi)));
  fieldset.appendChild(buildOther(rec, qr));
  qr.errorEl = fieldset.appendChild(make('div', 'question-error', null, { id: id + '-err' }));
  fieldset.setAttribute('aria-describedby', qr.errorEl.id);
  rec.questions.push(qr);
  return fieldset;
}

function buildOption(rec, qr, opt, index) {
  const id = qr.id + '-o' + index;
  const input = make('input', '', null, {
    type: qr.multi ? 'checkbox' : 'radio', name: qr.id, id, value: String(opt.label ?? ''),
  });
  input.addEventListener('change', () => onPick(rec, qr));
  const label = make('label', '', null, { htmlFor: id });
  label.appendChild(make('span', 'option-label', opt.label));
  if (opt.description) label.appendChild(make('span', 'option-desc', opt.description));
  const row = make('div', 'option');
  row.append(input, label);
  if (index < 9) row.appendChild(make('span', 'option-key', index + 1)).setAttribute('aria-hidden', 'true');
  qr.inputs.push(input);
  return row;
}

function buildOther(rec, qr) {
  const id = qr.id + '-other';
  qr.other = make('textarea', 'other-input', null,
    { id, rows: 1, placeholder: 'Write your own answer instead' });
  qr.other.addEventListener('input', () => onOther(rec, qr));
  const wrap = make('div', 'other');
  wrap.append(make('label', 'other-label', 'Other…', { htmlFor: id }), qr.other);
  return wrap;
}

// An answer is either picks or custom text: picking clears the text, typing clears picks.
function onPick(rec, qr) {
  if (qr.inputs.some((i) => i.checked)) qr.other.value = '';
  growTextarea(qr.other);
  qr.serverErrors = [];
  updateReadiness(rec);
}

function onOther(rec, qr) {
  if (qr.other.value !== '') qr.inputs.forEach((i) => { i.checked = false; });
  growTextarea(qr.other);
  qr.serverErrors = [];
  updateReadiness(rec);
}

function readAnswer(qr) {
  const header = String(qr.q.header ?? '');
  const picks = qr.inputs.filter((i) => i.checked).map((i) => i.value);
  if (picks.length) return { answer: { header, selected: picks } };
  const text = qr.other.value;
  if (!text.trim()) return {};
  if (FORBIDDEN_RE.test(text)) {
    return { problem: 'Your answer contains a tab or another invisible or control character; please remove it.' };
  }
  return { answer: { header, custom_answer: text } };
}

function summarizeResponse(rec, response) {
  const answers = response && Array.isArray(response.answers) ? response.answers : [];
  if (!answers.length) return null;
  const list = make('ul', 'summary');
  for (const a of answers) {
    if (!a) continue;
    const item = make('li');
    item.appendChild(make('span', 'chip', a.header));
    const chosen = Array.isArray(a.selected) && a.selected.length
      ? a.selected.join(', ')
      : '“' + String(a.custom_answer ?? '') + '”';
    item.appendChild(make('span', 'summary-value', chosen));
    list.appendChild(item);
  }
  return list;
}

/* ---------- 4b. deepagents questions ---------- */

// deepagents-code's ask_user, answered as its terminal UI answers it: `text` is typed,
// `multiple_choice` is one value or an "Other" text, `multi_select` is any values plus up to
// 10 custom "Other" texts. The tab sends one entry per question, in order; the gateway checks
// them and encodes `multi_select` exactly as the TUI does.
const DEEP_OTHER = 'Other (type your answer)';
const DEEP_MAX_OTHERS = 10;
const DEEP_MISSING_OTHER = 'Please type a custom answer for Other, or uncheck it.';
const DEEP_HINTS = { text: 'Type your answer', multiple_choice: 'Pick one, or write your own',
  multi_select: 'Pick any that apply, and add your own' };
// Python's whitespace (str.isspace), which deepagents strips and tests blankness with.
const PY_WS = String.raw`[\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]`;
const PY_STRIP_RE = new RegExp('^' + PY_WS + '+|' + PY_WS + '+$', 'gu');
// deepagents' _TRAILING_ANNOTATION_RE (tui/widgets/ask_user.py) drops a trailing " - optional",
// " (required)", " [optional]"... from the displayed question. Python's IGNORECASE also
// matches "i" to U+0130 and U+0131; JavaScript's does not, hence the classes.
const ANNOTATION_WORD = String.raw`(?:opt[i\u0130\u0131]onal|requ[i\u0130\u0131]red)`;
const TRAILING_ANNOTATION_RE = new RegExp(PY_WS + '*(?:' +
  String.raw`[-\u2013\u2014]` + PY_WS + '*' + ANNOTATION_WORD +
  String.raw`|\(` + ANNOTATION_WORD + String.raw`[.!?]?\)` +
  String.raw`|\[` + ANNOTATION_WORD + String.raw`[.!?]?\])[.!?]*` + PY_WS + '*$', 'iu');

function pyStrip(text) {
  return text.replace(PY_STRIP_RE, '');
}

function buildDeepQuestion(rec, q, qi) {
  const id = rec.prefix + '-q' + qi;
  const values = (Array.isArray(q.choices) ? q.choices : []).map((c) => String((c && c.value) ?? ''));
  // As in the TUI, a choice question without choices is asked as text.
  const kind = ['multiple_choice', 'multi_select'].includes(q.type) && values.length ? q.type : 'text';
  const required = q.required !== false;
  const text = String(q.question ?? '').replace(TRAILING_ANNOTATION_RE, '');
  const fieldset = make('fieldset', 'question');
  fieldset.dataset.index = String(qi);
  fieldset.dataset.type = kind;
  const legend = fieldset.appendChild(make('legend'));
  legend.appendChild(make('span', 'chip', 'Question ' + (qi + 1)));
  if (!required) legend.appendChild(make('span', 'optional-mark', '(optional)'));
  legend.append(make('span', 'question-text', text, { id: id + '-text' }),
    make('span', 'question-hint', DEEP_HINTS[kind]));
  const qr = {
    q, kind, required, values, fieldset, id, inputs: [], entries: [],
    serverErrors: [], localError: '', detail: text,
    name: text.length > 140 ? text.slice(0, 139) + '…' : text, // announced on arrival
  };
  if (kind === 'text') {
    qr.text = fieldset.appendChild(make('textarea', 'text-input', null, { id: id + '-input', rows: 2 }));
    qr.text.setAttribute('aria-labelledby', id + '-text');
    if (required) qr.text.setAttribute('aria-required', 'true');
    qr.text.addEventListener('input', () => onDeepEdit(rec, qr, qr.text));
  } else {
    fieldset.appendChild(buildDeepChoices(rec, qr));
  }
  qr.errorEl = fieldset.appendChild(make('div', 'question-error', null, { id: id + '-err' }));
  fieldset.setAttribute('aria-describedby', qr.errorEl.id);
  rec.questions.push(qr);
  return fieldset;
}

// An option row: the input, its label, and (for the first nine choices) the key that picks it.
function deepRow(input, text, keyIndex) {
  const label = make('label', '', null, { htmlFor: input.id, id: input.id + '-label' });
  label.appendChild(make('span', 'option-label', text));
  const row = make('div', 'option');
  row.append(input, label);
  if (keyIndex < 9) row.appendChild(make('span', 'option-key', keyIndex + 1)).setAttribute('aria-hidden', 'true');
  return row;
}

function buildDeepChoices(rec, qr) {
  const multi = qr.kind === 'multi_select';
  const list = make('div', 'options');
  qr.values.forEach((value, i) => {
    const input = make('input', '', null,
      { type: multi ? 'checkbox' : 'radio', name: qr.id, id: qr.id + '-o' + i, value });
    input.addEventListener('change', () => onDeepPick(rec, qr, input));
    qr.inputs.push(input);
    list.appendChild(deepRow(input, value, i));
  });
  if (multi) {
    qr.entryList = list.appendChild(make('div', 'other-entries'));
    addOtherEntry(rec, qr);
    qr.addBtn = list.appendChild(make('button', 'add-other', 'Add another custom answer',
      { type: 'button', hidden: true }));
    qr.addBtn.addEventListener('click', () => {
      addOtherEntry(rec, qr).area.focus();
      onDeepEdit(rec, qr);
    });
    qr.capNote = list.appendChild(make('p', 'other-cap', 'At most 10 custom answers can be ' +
      'added to one question. Combine values into an existing field to add more.', { hidden: true }));
    return list;
  }
  qr.otherChoice = make('input', 'other-choice', null,
    { type: 'radio', name: qr.id, id: qr.id + '-other-pick', value: '' });
  qr.otherChoice.addEventListener('change', () => onDeepPick(rec, qr, qr.otherChoice));
  list.appendChild(deepRow(qr.otherChoice, DEEP_OTHER));
  qr.other = list.appendChild(make('textarea', 'other-input', null,
    { id: qr.id + '-other', rows: 1, placeholder: 'Type your answer', hidden: true }));
  qr.other.setAttribute('aria-labelledby', qr.otherChoice.id + '-label');
  qr.other.addEventListener('input', () => onDeepEdit(rec, qr, qr.other));
  return list;
}

// A multi_select "Other" entry: a checkbox and its text. Typing ticks it; a ticked entry
// left blank blocks the submit, as in the TUI.
function addOtherEntry(rec, qr) {
  const id = qr.id + '-x' + qr.entries.length;
  const check = make('input', 'other-check', null, { type: 'checkbox', id: id + '-pick' });
  const row = deepRow(check, qr.entries.length ? 'Another custom answer' : DEEP_OTHER);
  row.classList.add('other-entry');
  const area = make('textarea', 'other-input', null, { id, rows: 1, placeholder: 'Type your answer' });
  area.setAttribute('aria-labelledby', check.id + '-label');
  const entry = { check, area };
  row.appendChild(area);
  check.addEventListener('change', () => {
    if (check.checked && !pyStrip(area.value)) area.focus();
    onDeepEdit(rec, qr);
  });
  area.addEventListener('input', () => {
    if (pyStrip(area.value)) check.checked = true;
    onDeepEdit(rec, qr, area);
  });
  // "Please type a custom answer" waits until the person leaves the blank field.
  area.addEventListener('focusout', () => updateReadiness(rec));
  qr.entries.push(entry);
  qr.entryList.appendChild(row);
  return entry;
}

function onDeepPick(rec, qr, input) {
  if (qr.other) {
    qr.other.hidden = !qr.otherChoice.checked;
    if (input === qr.otherChoice && input.checked) qr.other.focus();
  }
  onDeepEdit(rec, qr);
}

function onDeepEdit(rec, qr, area) {
  if (area) growTextarea(area);
  if (qr.addBtn) {
    const full = qr.entries.length >= DEEP_MAX_OTHERS;
    qr.addBtn.hidden = full || !pyStrip(qr.entries[qr.entries.length - 1].area.value);
    qr.capNote.hidden = !full;
  }
  qr.serverErrors = [];
  updateReadiness(rec);
}

// The answer as the TUI submits it: a string, or for multi_select the values (choices in
// their order, then custom texts stripped, repeats dropped). A required question left empty
// is not answered yet; an optional one sends "" or [].
function readDeepAnswer(qr) {
  let answer = '';
  if (qr.kind === 'text') {
    answer = qr.text.value;
  } else if (qr.kind === 'multiple_choice') {
    const picked = qr.inputs.find((i) => i.checked);
    if (picked) answer = picked.value;
    else if (qr.otherChoice.checked) answer = qr.other.value;
  } else {
    answer = [];
    for (const input of qr.inputs) {
      if (input.checked && !answer.includes(input.value)) answer.push(input.value);
    }
    for (const { check, area } of qr.entries) {
      const custom = pyStrip(area.value);
      if (check.checked && !custom) {
        return document.activeElement === area ? {} : { problem: DEEP_MISSING_OTHER };
      }
      if (check.checked && !answer.includes(custom)) answer.push(custom);
    }
  }
  const empty = Array.isArray(answer) ? !answer.length : !pyStrip(answer);
  if (empty && qr.required) return {};
  return { answer: empty && !Array.isArray(answer) ? '' : answer };
}

// Another tab's answers as the TUI displays them: multi_select values listed, a blank
// answer as "(no answer)", free text quoted.
function summarizeDeep(rec, response) {
  const answers = response && Array.isArray(response.answers) ? response.answers : [];
  if (!answers.length) return null;
  const list = make('ul', 'summary');
  rec.questions.forEach((qr, i) => {
    const answer = String(answers[i] ?? '');
    let shown = qr.values.includes(answer) ? answer : '“' + answer + '”';
    if (!pyStrip(answer)) shown = '(no answer)';
    if (qr.kind === 'multi_select') {
      let values = null;
      try { values = JSON.parse(answer); } catch (_) { /* shown as sent */ }
      const ok = Array.isArray(values) && values.every((v) => typeof v === 'string');
      shown = !ok ? answer : values.length ? values.join(', ') : '(nothing selected)';
    }
    list.appendChild(make('li')).append(
      make('span', 'chip', 'Question ' + (i + 1)), make('span', 'summary-value', shown));
  });
  return list;
}

/* ---------- 5. ticker, header, notifications, keyboard ---------- */

function formatLeft(ms) {
  const total = Math.max(0, Math.ceil(ms / 1000));
  if (total <= 90) return total + ' s left';
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  if (h) return h + ' h ' + m + ' min left';
  return m + ' min' + (s ? ' ' + s + ' s' : '') + ' left';
}

function tick() {
  const now = serverNow();
  for (const rec of state.cards.values()) {
    const deadline = rec.view.deadline_ms;
    if (typeof deadline !== 'number' || !rec.countdownEl || rec.el.classList.contains('folding')) continue;
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
    if (remaining <= 0) markFinal(rec, 'timed_out', 'Timed out', LOCAL_TIMEOUT_FOLD_MS);
  }
  updateRetryText();
}

function setConnection(name, text) {
  ui.connection.dataset.state = name;
  ui.connection.textContent = text;
}

function renderPresence(tabs, agentOnline) {
  if (typeof tabs !== 'number') return ui.presence.replaceChildren();
  const parts = [make('span', 'tabs-count', tabs === 1 ? '1 tab watching' : tabs + ' tabs watching')];
  if (agentOnline === false) parts.push(make('span', 'agent-offline', 'agent offline'));
  ui.presence.replaceChildren(...parts);
}

function showNotice(text) {
  ui.notice.textContent = text;
  ui.notice.hidden = !text;
}

let toastTimer = 0;
function toast(text) {
  ui.toast.textContent = String(text);
  ui.toast.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { ui.toast.hidden = true; }, 8000);
}

function announce(text) {
  // Clearing first makes screen readers repeat a message identical to the last one.
  ui.live.textContent = '';
  setTimeout(() => { ui.live.textContent = text; }, 50);
}

function noteNew(recs) {
  if (!recs.length) return;
  const first = recs[0].questions[0];
  const what = first ? first.name : 'a question';
  announce(recs.length === 1
    ? 'New question from the agent: ' + what
    : recs.length + ' open questions from the agent.');
  if (!document.hidden) return;
  recs.forEach((r) => state.unseen.add(r.id));
  updateTitle();
  notify(recs[0]);
}

function updateTitle() {
  document.title = state.unseen.size ? '(' + state.unseen.size + ') ' + BASE_TITLE : BASE_TITLE;
}

function notify(rec) {
  if (!('Notification' in window) || Notification.permission !== 'granted') return;
  const first = rec.questions[0];
  let body = first ? first.detail : '';
  if (body.length > 140) body = body.slice(0, 139) + '…';
  try {
    const n = new Notification('askgate: new question', { body, tag: 'askgate-' + rec.id });
    n.onclick = () => { window.focus(); n.close(); };
  } catch (_) {
    // Some platforms only allow notifications from a service worker; the title still counts.
  }
}

function setupNotifyButton() {
  if (!('Notification' in window)) return;
  const render = () => {
    const p = Notification.permission;
    ui.notify.textContent = p === 'granted' ? 'Notifications on'
      : p === 'denied' ? 'Notifications blocked' : 'Notify me';
    ui.notify.disabled = p !== 'default';
  };
  ui.notify.hidden = false;
  render();
  ui.notify.addEventListener('click', () => {
    const result = Notification.requestPermission(render);
    if (result && typeof result.then === 'function') result.then(render, render);
  });
}

function onCardKeydown(rec, event) {
  if (rec.phase !== 'open' || event.defaultPrevented || event.isComposing) return;
  const target = event.target;
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

function init() {
  for (const id of ['connection', 'presence', 'notify', 'notice', 'toast', 'requests', 'empty', 'live', 'session-label']) {
    ui[id.replace(/-(\w)/g, (_, c) => c.toUpperCase())] = document.getElementById(id);
  }
  ui.list = ui.requests;
  const { session, key } = readLocation();
  state.session = session;
  state.key = key;
  ui.sessionLabel.textContent = session;
  ui.sessionLabel.title = session;
  setupNotifyButton();
  // The key lives in the fragment; a changed fragment is a different link, so start over.
  window.addEventListener('hashchange', () => location.reload());
  document.addEventListener('visibilitychange', () => {
    if (!document.hidden) state.unseen.clear();
    updateTitle();
  });
  if (!session || !key) {
    setConnection('closed', 'Not connected');
    showNotice(!session
      ? 'This link has no session id. Open the full link your agent printed.'
      : 'This link is missing its key. Open the full link your agent printed — ' +
        'it ends with #k= followed by the viewer key.');
    return;
  }
  state.tab = loadTabId();
  window.addEventListener('online', () => { if (state.retryAt) connect(); });
  setInterval(tick, 250);
  connect();
}

init();
