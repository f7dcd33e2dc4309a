/* The session's history, as the gateway reads it from its audit trail (`history`: its last 50
 * ended requests, newest first), goes into the one list of ended requests: the finished list
 * (finished.js), which a snapshot's `finished` and each card that ends fill too. An ending
 * already listed is not listed again, and one the person dismissed stays dismissed; so a late
 * or reloaded tab sees what ended before it came, each ending once, saying who ended it.
 *
 * A tab may send only so many frames a second, so the page asks once per snapshot; endings
 * after that come as `resolved` frames, and their cards fold into the list themselves.
 *
 * Titles, questions, answers and names are untrusted: the list shows them as text only.
 */

import { send } from './page.js';
import { listFinished } from './finished.js';

const OUTCOMES = ['answered', 'declined', 'timed_out', 'withdrawn'];

// Asks the gateway for the session's history (once per snapshot: see above).
export function askForHistory() {
  send({ type: 'history' });
}

// The gateway's `history`: each ending listed, oldest first, as the finished list takes them.
export function onHistory(frame) {
  const entries = Array.isArray(frame.entries) ? frame.entries : [];
  listFinished(entries.map(endingOf).filter(Boolean).reverse());
}

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

// A form's fields, as the trail lists them, or else named from its schema.
function formFields(form) {
  if (Array.isArray(form.fields)) return form.fields;
  const properties = isObject(form.schema) && isObject(form.schema.properties) ? form.schema.properties : {};
  return Object.keys(properties).map((name) => ({ name, title: properties[name] && properties[name].title }));
}

// A history entry as a snapshot's `finished` entry has it (the request's fields, with its
// `outcome`, `response`, `by`, `user`, `via` and `at_ms`), or null for one it cannot show.
function endingOf(raw) {
  if (!isObject(raw) || raw.id == null || !OUTCOMES.includes(raw.outcome)) return null;
  const ending = {
    id: String(raw.id), dialect: raw.dialect, title: typeof raw.title === 'string' ? raw.title : null,
    asked_at_ms: raw.asked_at_ms, outcome: raw.outcome,
    response: raw.outcome === 'answered' ? raw.answer : null,
    by: typeof raw.tab === 'string' ? raw.tab : null,
    user: typeof raw.user === 'string' ? raw.user : null,
    via: typeof raw.via === 'string' ? raw.via : null,
    rule: raw.rule, at_ms: raw.at_ms,
  };
  if (raw.dialect === 'approval') {
    // An approval's tool calls, under `calls`, or under `questions` where a trail keeps them so.
    ending.calls = Array.isArray(raw.calls) ? raw.calls : Array.isArray(raw.questions) ? raw.questions : [];
  } else if (raw.dialect === 'form') {
    // A form: its message, fields and so on, under `questions` (an object) in the trail.
    const form = isObject(raw.questions) ? raw.questions : {};
    Object.assign(ending, {
      message: form.message, mode: form.mode, server: form.server, fields: formFields(form),
      url: form.url, host: form.host,
    });
  } else {
    ending.questions = Array.isArray(raw.questions) ? raw.questions : [];
  }
  return ending;
}
