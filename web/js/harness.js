/* pydantic-ai-harness questions: options, multi-select, one "Other…" text. */

import { growTextarea, make, pickList } from './page.js';
import { updateReadiness } from './readiness.js';
import { unassignedInUnicode14 } from './unicode14.js';

// The harness rejects control, format, private-use and unassigned characters and the
// line/paragraph separators; only `\n` is allowed. Unassigned means in Unicode 14, which is
// older than the browser's. The server has the final word.
const FORBIDDEN_RE = /(?!\n)[\p{C}\u2028\u2029]/u;

// What is wrong with typed text, naming the character a person must take out; or null.
function forbiddenCharacter(text) {
  let position = 0;
  for (const c of text) {
    position += 1;
    const cp = c.codePointAt(0);
    const hex = 'U+' + cp.toString(16).toUpperCase().padStart(4, '0');
    if (FORBIDDEN_RE.test(c)) {
      const what = c === '\t' ? 'a tab' : 'an invisible or control character';
      return `Your answer contains ${what} (${hex}) at character ${position}; please remove it.`;
    }
    if (unassignedInUnicode14(cp)) {
      return `Your answer contains ${c} (${hex}) at character ${position}, which is newer than ` +
        "the agent's framework knows (Unicode 14); please remove it.";
    }
  }
  return null;
}

export function buildQuestion(rec, q, qi) {
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

export function readAnswer(qr) {
  const header = String(qr.q.header ?? '');
  const picks = qr.inputs.filter((i) => i.checked).map((i) => i.value);
  if (picks.length) return { answer: { header, selected: picks } };
  const text = qr.other.value;
  if (!text.trim()) return {};
  const problem = forbiddenCharacter(text);
  if (problem) return { problem };
  return { answer: { header, custom_answer: text } };
}

export function summarizeResponse(rec, response) {
  const answers = response && Array.isArray(response.answers) ? response.answers : [];
  if (!answers.length) return null;
  const list = make('ul', 'summary');
  for (const a of answers) {
    if (!a) continue;
    const item = make('li');
    item.appendChild(make('span', 'chip', a.header));
    item.appendChild(Array.isArray(a.selected) && a.selected.length
      ? pickList(a.selected.map(String))
      : make('span', 'summary-value', '“' + String(a.custom_answer ?? '') + '”'));
    list.appendChild(item);
  }
  return list;
}
