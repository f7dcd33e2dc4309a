/* The session's history: its last 50 ended requests, newest first, folded in a <details>
 * under the open questions. Each says what was asked, what was answered (in short), by whom
 * and how the gateway knew them, and when; or how else it ended (declined, timed out,
 * withdrawn).
 *
 * The gateway sends it (`history`, read from its audit trail) when asked, so a late or
 * reloaded tab sees what ended before it came. A tab may send only so many frames a second,
 * so the page asks once per snapshot and then adds each `resolved` frame's request itself,
 * from what it showed of it.
 *
 * Titles, questions, answers and names are untrusted: they are shown as text only (make).
 */

import { make, pickList, send, serverNow, shorten, state, timeElement, ui } from './page.js';
import { endedByYou, viaText } from './people.js';
import { decisionText, ruleEndingText, ruleOf } from './approval.js';
import { formSummaryList } from './form.js';
import { claudeSummaryList } from './claude.js';

// Most ended requests shown (the gateway sends no more either).
const MAX_ENTRIES = 50;
// An entry names its request by at most this many characters of its title or question.
const WHAT_CHARS = 160;
// An answer's value (a custom text, a pick) is cut to this many characters.
const VALUE_CHARS = 160;
// At most this many of a request's answers are listed, and this many picks of one answer.
const MAX_ANSWERS_SHOWN = 10;
const MAX_PICKS_SHOWN = 10;

const OUTCOMES = ['answered', 'declined', 'timed_out', 'withdrawn'];
const OTHER_ENDINGS = { timed_out: 'Timed out', withdrawn: 'Withdrawn by the agent' };

// Asks the gateway for the session's history (once per snapshot: see above).
export function askForHistory() {
  if (send({ type: 'history' }) === 'sent') state.historyAskedAt = Date.now();
}

// The gateway's `history`. Endings this page heard of after asking may be newer than what
// the gateway read: they stay on top.
export function onHistory(frame) {
  const given = (Array.isArray(frame.entries) ? frame.entries : []).map(entryOf).filter(Boolean);
  const newer = state.history.filter((e) => e.noted >= state.historyAskedAt &&
    !given.some((g) => sameRequest(g, e)));
  state.history = newer.concat(given).slice(0, MAX_ENTRIES);
  render();
}

// A `resolved` frame: its request goes on top, as the page showed it (if it still knows it).
export function noteEnding(f) {
  const id = String(f.id);
  const rec = state.cards.get(id) || state.finished.find((r) => r.id === id);
  const view = rec ? rec.view : {};
  const entry = entryOf({
    id, dialect: view.dialect, title: view.title, calls: view.calls,
    questions: view.dialect === 'form' ? formOf(view) : view.questions,
    asked_at_ms: view.asked_at_ms, outcome: f.outcome, answer: f.response, user: f.user,
    via: f.via, tab: f.by, at_ms: Number.isFinite(f.at_ms) ? f.at_ms : serverNow(),
  });
  if (!entry) return;
  entry.noted = Date.now();
  state.history = [entry, ...state.history.filter((e) => !sameRequest(e, entry))]
    .slice(0, MAX_ENTRIES);
  render();
}

// Forgets the history (the page can no longer show the session).
export function dropHistory() {
  state.history = [];
  render();
}

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

// What a form's card showed: its message, mode, server and fields (or address).
function formOf(view) {
  const { message, mode, server, fields, url, host } = view;
  return { message, mode, server, fields, url, host };
}

// A form's fields, as the view lists them, or else named from its schema.
function formFields(form) {
  if (Array.isArray(form.fields)) return form.fields;
  const properties = isObject(form.schema) && isObject(form.schema.properties) ? form.schema.properties : {};
  return Object.keys(properties).map((name) => ({ name, title: properties[name] && properties[name].title }));
}

// An entry as the page keeps it, or null for one it cannot show.
function entryOf(raw) {
  if (!raw || typeof raw !== 'object' || raw.id == null || !OUTCOMES.includes(raw.outcome)) return null;
  const text = (value) => (typeof value === 'string' && value.trim() ? value : null);
  const approval = raw.dialect === 'approval';
  // An approval's tool calls, under `calls`, or under `questions` where a trail keeps them so.
  const calls = !approval ? [] : Array.isArray(raw.calls) ? raw.calls
    : Array.isArray(raw.questions) ? raw.questions : [];
  // A form: its message, fields and so on, under `questions` (an object) in the trail.
  const form = raw.dialect === 'form' ? (isObject(raw.questions) ? raw.questions : {}) : null;
  return {
    id: String(raw.id), dialect: text(raw.dialect), title: text(raw.title), form,
    questions: !approval && Array.isArray(raw.questions) ? raw.questions : [], approval, calls,
    asked_at_ms: Number.isFinite(raw.asked_at_ms) ? raw.asked_at_ms : null,
    outcome: raw.outcome, answer: raw.outcome === 'answered' ? raw.answer : null,
    user: text(raw.user), via: text(raw.via), tab: text(raw.tab),
    rule: raw.via === 'rule' ? ruleOf(raw) : '',
    at_ms: Number.isFinite(raw.at_ms) ? raw.at_ms : null, noted: 0,
  };
}

// Whether two entries are one ending: the same id, asked at the same time where both say
// (an id may be asked again once its outcome is acknowledged).
function sameRequest(a, b) {
  return a.id === b.id &&
    (a.asked_at_ms === null || b.asked_at_ms === null || a.asked_at_ms === b.asked_at_ms);
}

function render() {
  const count = state.history.length;
  ui.history.hidden = count === 0;
  ui.historyCount.textContent = count >= MAX_ENTRIES
    ? '(the latest ' + MAX_ENTRIES + ' ended questions)'
    : '(' + count + (count === 1 ? ' ended question)' : ' ended questions)');
  ui.historyList.replaceChildren(...state.history.map(renderEntry));
}

function renderEntry(e) {
  const item = make('li', 'history-entry');
  item.dataset.requestId = e.id;
  item.dataset.outcome = e.outcome;
  item.appendChild(make('p', 'history-what', whatOf(e)));
  const asked = alsoAsked(e);
  if (asked) item.appendChild(make('p', 'history-asked', asked));
  const answer = e.outcome === 'answered' && answerSummary(e);
  if (answer) item.appendChild(answer);
  const how = item.appendChild(make('p', 'history-how'));
  how.appendChild(make('span', 'history-who', whoText(e)));
  const via = (e.outcome === 'answered' || e.outcome === 'declined') &&
    !(e.user === null && e.via === 'session-link') ? viaText(e.via) : '';
  if (via) how.append(' ', make('span', 'history-via', via));
  if (e.at_ms !== null) how.append(', ', timeElement(e.at_ms, 'at'));
  return item;
}

function questionText(q) {
  return q && typeof q === 'object' ? String(q.question ?? q.header ?? '').trim() : '';
}

function callName(call) {
  return call && typeof call === 'object' ? String(call.name ?? '').trim() : '';
}

// What its first item says: a question's text, "Tool call <name>", or a form's message.
function firstText(e) {
  if (e.form) return String(e.form.message ?? '').trim();
  if (!e.approval) return questionText(e.questions[0]);
  const name = callName(e.calls[0]);
  return name ? 'Tool call ' + name : '';
}

// The request's title, or else its first question (or tool call).
function whatOf(e) {
  const named = e.title || firstText(e);
  if (named) return shorten(named, WHAT_CHARS);
  if (e.form) return 'A form from an MCP server';
  return e.approval ? 'A tool call from the agent' : 'A question from the agent';
}

// Under a title, the first question it asked and how many more; with no title, only how
// many more.
function alsoAsked(e) {
  const first = firstText(e);
  if (e.form) return e.title && first ? shorten(first, WHAT_CHARS) : '';
  const items = e.approval ? e.calls : e.questions;
  const more = items.length - 1;
  const noun = e.approval ? ['1 more call', ' more calls'] : ['1 more question', ' more questions'];
  const others = more > 0 ? (more === 1 ? noun[0] : more + noun[1]) : '';
  if (e.title && first) return shorten(first, WHAT_CHARS) + (others ? ' (and ' + others + ')' : '');
  return others ? 'And ' + others + '.' : '';
}

// Who ended it, or how it ended.
function whoText(e) {
  if (e.outcome === 'withdrawn' && e.via === 'operator') return 'Withdrawn by an operator';
  if (e.outcome === 'withdrawn' && e.via === 'gateway') return 'Withdrawn by the gateway: its agent was gone too long';
  if (OTHER_ENDINGS[e.outcome]) return OTHER_ENDINGS[e.outcome];
  // Nobody answered it: a remembered approval did, in its maker's name.
  if (e.via === 'rule' && e.outcome === 'answered') return ruleEndingText(e.rule, e.user);
  if (e.via === 'default') {
    return e.outcome === 'declined' ? 'Declined by default: nobody answered in time'
      : 'Answered by default: nobody answered in time';
  }
  const verb = e.outcome === 'answered' ? 'Answered' : 'Declined';
  if (endedByYou(e.tab, e.user)) return verb + ' by you';
  if (e.user !== null) return verb + ' by ' + e.user;
  return e.via === 'session-link' ? verb + ' by an anonymous link holder' : verb;
}

// What was answered, one line a question: its header (or its text) and the picks or the
// text given, each cut short.
function answerSummary(e) {
  if (e.approval) return decisionSummary(e);
  if (e.form) return markHistory(formSummaryList(formFields(e.form), e.answer, e.form.mode === 'url', MAX_ANSWERS_SHOWN));
  if (e.dialect === 'claude') return markHistory(claudeSummaryList(e.questions, e.answer, MAX_ANSWERS_SHOWN));
  const answers = e.answer && Array.isArray(e.answer.answers) ? e.answer.answers : [];
  if (!answers.length) return null;
  const list = make('ul', 'summary history-answer');
  answers.slice(0, MAX_ANSWERS_SHOWN).forEach((a, i) => {
    const q = e.questions[i];
    const item = list.appendChild(make('li'));
    if (a && typeof a === 'object') {
      const header = String(a.header ?? (q && q.header) ?? '').trim();
      item.append(make('span', 'chip', header ? shorten(header, 60) : 'Question ' + (i + 1)),
        harnessValue(a));
    } else {
      const label = questionText(q);
      item.append(make('span', 'chip', label ? shorten(label, 60) : 'Question ' + (i + 1)),
        deepValue(q, a));
    }
  });
  if (answers.length > MAX_ANSWERS_SHOWN) {
    list.appendChild(make('li', 'history-more', 'and ' + (answers.length - MAX_ANSWERS_SHOWN) + ' more'));
  }
  return list;
}

function markHistory(list) {
  if (list) list.classList.add('history-answer');
  return list;
}

// An approval's decisions, one line a call: its tool's name and what was decided.
function decisionSummary(e) {
  const decisions = e.answer && Array.isArray(e.answer.decisions) ? e.answer.decisions : [];
  if (!decisions.length) return null;
  const list = make('ul', 'summary history-answer');
  decisions.slice(0, MAX_ANSWERS_SHOWN).forEach((d, i) => {
    const call = e.calls[i];
    const name = callName(call);
    list.appendChild(make('li')).append(make('span', 'chip', name ? shorten(name, 60) : 'Call ' + (i + 1)),
      make('span', 'summary-value', shorten(decisionText(d, call && call.args), VALUE_CHARS)));
  });
  if (decisions.length > MAX_ANSWERS_SHOWN) {
    list.appendChild(make('li', 'history-more', 'and ' + (decisions.length - MAX_ANSWERS_SHOWN) + ' more'));
  }
  return list;
}

function picks(values) {
  const shown = values.slice(0, MAX_PICKS_SHOWN).map((v) => shorten(v, VALUE_CHARS));
  if (values.length > MAX_PICKS_SHOWN) shown.push('and ' + (values.length - MAX_PICKS_SHOWN) + ' more');
  return pickList(shown);
}

function quoted(text) {
  const value = String(text ?? '');
  return make('span', 'summary-value', value.trim() ? '“' + shorten(value, VALUE_CHARS) + '”' : '(no answer)');
}

// A harness answer: the options picked, or the text written.
function harnessValue(a) {
  return Array.isArray(a.selected) && a.selected.length ? picks(a.selected.map(String)) : quoted(a.custom_answer);
}

// A deepagents answer: a choice as it is, typed text quoted, a multi_select's values listed
// (the gateway encodes them as a JSON list).
function deepValue(q, a) {
  const answer = String(a ?? '');
  if (q && q.type === 'multi_select') {
    let values = null;
    try { values = JSON.parse(answer); } catch (_) { /* shown as sent */ }
    if (Array.isArray(values) && values.every((v) => typeof v === 'string')) {
      return values.length ? picks(values) : make('span', 'summary-value', '(nothing selected)');
    }
  }
  const choices = q && Array.isArray(q.choices) ? q.choices.map((c) => String((c && c.value) ?? '')) : [];
  return choices.includes(answer) ? make('span', 'summary-value', shorten(answer, VALUE_CHARS)) : quoted(answer);
}
