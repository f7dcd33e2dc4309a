/* Claude Agent SDK's AskUserQuestion (the `claude` dialect): up to four questions, each with
 * a short header, two to four options (a label, a description, perhaps a preview) and
 * whether several may be picked, looked like the harness's questions: options as radios or
 * checkboxes, and an "Other…" text of one's own per question. Under them, one optional text
 * box answers in the person's own words instead of picking. The tab sends
 * {"answers": {QUESTION TEXT: "Label" | ["A", "B"] | "own text"}, "response"?: "..."}: every
 * question answered, or the free text given (then unanswered questions are left out).
 *
 * A question record (qr) holds what cards.js expects and: q, multi, other (its text box);
 * the free-text box's record has `response: true` and its text box as `text`.
 */

import { growTextarea, make, pickList, shorten } from './page.js';
import { updateReadiness } from './readiness.js';

export const CLAUDE_INCOMPLETE = 'Answer every question (pick an option or write your own), or ' +
  'answer in your own words below, to submit.';

// The tool's bound on a text, in UTF-16 code units (JavaScript's length), as it counts.
const MAX_TEXT_UNITS = 32768;

function tooLong(text) {
  return text.length > MAX_TEXT_UNITS
    ? 'This is ' + text.length.toLocaleString('en') + ' characters long; Claude takes at most 32,768.'
    : '';
}

// The last item of every card: the free-text response.
const RESPONSE = Object.freeze({ response: true });

export function claudeItems(view) {
  return Array.isArray(view.questions) && view.questions.length ? [...view.questions, RESPONSE] : null;
}

export function buildClaudeItem(rec, item, index) {
  return item === RESPONSE ? buildResponse(rec) : buildClaudeQuestion(rec, item, index);
}

function buildClaudeQuestion(rec, q, qi) {
  const id = rec.prefix + '-q' + qi;
  const multi = q.multiSelect === true;
  const header = String(q.header ?? '');
  const text = String(q.question ?? '');
  const fieldset = make('fieldset', 'question');
  fieldset.dataset.index = String(qi);
  const legend = fieldset.appendChild(make('legend'));
  legend.append(
    make('span', 'chip', header),
    make('span', 'question-text', text),
    make('span', 'question-hint', multi ? 'Pick one or more' : 'Pick one'));
  const qr = {
    q, text, fieldset, multi, id, rec, inputs: [], serverErrors: [], localError: '',
    name: header || shorten(text, 140), detail: (header ? header + ': ' : '') + text,
  };
  const list = fieldset.appendChild(make('div', 'options'));
  (Array.isArray(q.options) ? q.options : []).forEach((opt, oi) => list.appendChild(buildOption(rec, qr, opt || {}, oi)));
  const otherId = id + '-other';
  qr.other = make('textarea', 'other-input', null, {
    id: otherId, rows: 1,
    placeholder: multi ? 'Add an answer of your own' : 'Write your own answer instead',
  });
  qr.other.addEventListener('input', () => {
    // One answer: picks or own text. Several: own text beside the picks.
    if (!multi && qr.other.value !== '') qr.inputs.forEach((i) => { i.checked = false; });
    changed(rec, qr, qr.other);
  });
  const wrap = fieldset.appendChild(make('div', 'other'));
  wrap.append(make('label', 'other-label', 'Other…', { htmlFor: otherId }), qr.other);
  qr.errorEl = fieldset.appendChild(make('div', 'question-error', null, { id: id + '-err' }));
  fieldset.setAttribute('aria-describedby', qr.errorEl.id);
  rec.questions.push(qr);
  return fieldset;
}

function buildOption(rec, qr, opt, index) {
  const id = qr.id + '-o' + index;
  const input = make('input', '', null,
    { type: qr.multi ? 'checkbox' : 'radio', name: qr.id, id, value: String(opt.label ?? '') });
  input.addEventListener('change', () => {
    if (!qr.multi && input.checked) qr.other.value = '';
    changed(rec, qr, qr.other);
  });
  const label = make('label', '', null, { htmlFor: id });
  label.appendChild(make('span', 'option-label', opt.label));
  if (opt.description) label.appendChild(make('span', 'option-desc', opt.description));
  const row = make('div', 'option');
  row.append(input, label);
  if (index < 9) row.appendChild(make('span', 'option-key', index + 1)).setAttribute('aria-hidden', 'true');
  if (typeof opt.preview === 'string' && opt.preview.trim()) {
    const fold = row.appendChild(make('details', 'option-preview'));
    fold.append(make('summary', '', 'Preview'), make('pre', 'option-preview-text', opt.preview));
  }
  qr.inputs.push(input);
  return row;
}

function buildResponse(rec) {
  const id = rec.prefix + '-response';
  const fieldset = make('fieldset', 'question claude-response');
  const legend = fieldset.appendChild(make('legend'));
  legend.append(make('label', 'question-text', 'Or answer in your own words', { htmlFor: id + '-text' }),
    make('span', 'question-hint', 'Optional. Instead of picking, or beside your picks; with it, questions may be left unanswered.', { id: id + '-hint' }));
  const qr = {
    response: true, fieldset, id, inputs: [], serverErrors: [], localError: '',
    name: 'your own words', detail: '',
  };
  qr.text = fieldset.appendChild(make('textarea', 'text-input claude-response-text', null, { id: id + '-text', rows: 2 }));
  qr.text.setAttribute('aria-describedby', id + '-hint');
  qr.text.addEventListener('input', () => changed(rec, qr, qr.text));
  qr.errorEl = fieldset.appendChild(make('div', 'question-error', null, { id: id + '-err' }));
  fieldset.setAttribute('aria-describedby', qr.errorEl.id);
  rec.questions.push(qr);
  rec.claudeResponse = qr;
  return fieldset;
}

function changed(rec, qr, area) {
  if (area) growTextarea(area);
  qr.serverErrors = [];
  updateReadiness(rec);
}

function responseText(rec) {
  const qr = rec.claudeResponse;
  return qr && qr.text.value.trim() ? qr.text.value : '';
}

// {answer: {question, value}} for an answered question, {answer: {response}} for the free
// text, {answer: null} for what is left out, {} for a question not answered yet.
export function readClaude(qr) {
  if (qr.response) {
    const text = qr.text.value;
    if (tooLong(text)) return { problem: tooLong(text) };
    return { answer: text.trim() ? { response: text } : null };
  }
  const picks = qr.inputs.filter((i) => i.checked).map((i) => i.value);
  const own = qr.other.value.trim() ? qr.other.value : '';
  if (tooLong(own)) return { problem: tooLong(own) };
  if (qr.multi && (picks.length || own)) {
    return { answer: { question: qr.text, value: own && !picks.includes(own) ? [...picks, own] : picks } };
  }
  if (picks.length) return { answer: { question: qr.text, value: picks[0] } };
  if (own) return { answer: { question: qr.text, value: own } };
  return responseText(qr.rec) ? { answer: null } : {};
}

export function claudeResponse(answers) {
  const given = answers.filter(Boolean);
  const out = { answers: Object.fromEntries(given.filter((a) => 'question' in a).map((a) => [a.question, a.value])) };
  const free = given.find((a) => 'response' in a);
  if (free) out.response = free.response;
  return out;
}

/* ---------- the gateway's refusals, beside their question ---------- */

// The record a refusal at `path` is about (`response.answers.QUESTION...`,
// `response.answers[i]`, `response.response`); or null for one about the whole answer.
export function placeClaudeRefusal(rec, path) {
  if (path === 'response.response' && rec.claudeResponse) {
    return { index: rec.questions.indexOf(rec.claudeResponse), rest: '' };
  }
  const prefix = 'response.answers';
  if (!path.startsWith(prefix)) return null;
  const rest = path.slice(prefix.length);
  const indexed = /^\[(\d+)\](.*)$/.exec(rest);
  const questions = rec.questions.filter((qr) => !qr.response);
  if (indexed && questions[Number(indexed[1])]) {
    return { index: Number(indexed[1]), rest: indexed[2] };
  }
  let best = null;
  questions.forEach((qr, index) => {
    for (const head of ['.' + qr.text, '[' + JSON.stringify(qr.text) + ']']) {
      const after = rest.slice(head.length);
      if (rest.startsWith(head) && (after === '' || after[0] === '.' || after[0] === '[') &&
          (!best || head.length > best.length)) {
        best = { index, rest: after, length: head.length };
      }
    }
  });
  return best;
}

/* ---------- an answer, in words ---------- */

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

// The answers and free text of a response, as the tab sent it or as the SDK gets it.
function partsOf(response) {
  const source = isObject(response) && isObject(response.updated_input) ? response.updated_input : response;
  if (!isObject(source)) return null;
  return {
    answers: isObject(source.answers) ? source.answers : {},
    response: typeof source.response === 'string' && source.response.trim() ? source.response : '',
  };
}

// One line a question answered ({question, header, options}), then the free text.
export function claudeSummaryList(questions, response, limit = Infinity) {
  const parts = partsOf(response);
  if (!parts) return null;
  const list = make('ul', 'summary');
  const answered = questions.filter((q) => q && Object.prototype.hasOwnProperty.call(parts.answers, String(q.question)));
  for (const q of answered.slice(0, limit)) {
    const value = parts.answers[String(q.question)];
    const labels = (Array.isArray(q.options) ? q.options : []).map((o) => String((o && o.label) ?? ''));
    const item = list.appendChild(make('li'));
    item.appendChild(make('span', 'chip', shorten(String(q.header ?? '').trim() || String(q.question), 60)));
    if (Array.isArray(value)) item.appendChild(pickList(value.map((v) => shorten(String(v), 160))));
    else if (labels.includes(String(value))) item.appendChild(pickList([shorten(String(value), 160)]));
    else item.appendChild(make('span', 'summary-value', '“' + shorten(String(value ?? ''), 160) + '”'));
  }
  if (answered.length > limit) list.appendChild(make('li', 'history-more', 'and ' + (answered.length - limit) + ' more'));
  if (parts.response) {
    list.appendChild(make('li')).append(make('span', 'chip', 'In their own words'),
      make('span', 'summary-value', '“' + shorten(parts.response, 160) + '”'));
  }
  return list.children.length ? list : null;
}

export function summarizeClaude(rec, response) {
  return claudeSummaryList(rec.questions.filter((qr) => !qr.response).map((qr) => qr.q), response);
}
