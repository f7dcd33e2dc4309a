// deepagents-code's ask_user, answered as its terminal UI answers it: `text` is typed,
// `multiple_choice` is one value or an "Other" text, `multi_select` is any values plus up to
// 10 custom "Other" texts. The tab sends one entry per question, in order; the gateway checks
// them and encodes `multi_select` exactly as the TUI does.

import { growTextarea, make, pickList } from './page.js';
import { updateReadiness } from './readiness.js';

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

export function buildDeepQuestion(rec, q, qi) {
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
export function readDeepAnswer(qr) {
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
export function summarizeDeep(rec, response) {
  const answers = response && Array.isArray(response.answers) ? response.answers : [];
  if (!answers.length) return null;
  const list = make('ul', 'summary');
  rec.questions.forEach((qr, i) => {
    const answer = String(answers[i] ?? '');
    let shown = qr.values.includes(answer) ? answer : '“' + answer + '”';
    if (!pyStrip(answer)) shown = '(no answer)';
    let picks = null;
    if (qr.kind === 'multi_select') {
      let values = null;
      try { values = JSON.parse(answer); } catch (_) { /* shown as sent */ }
      const ok = Array.isArray(values) && values.every((v) => typeof v === 'string');
      if (!ok) shown = answer;
      else if (values.length) picks = pickList(values);
      else shown = '(nothing selected)';
    }
    list.appendChild(make('li')).append(
      make('span', 'chip', 'Question ' + (i + 1)), picks || make('span', 'summary-value', shown));
  });
  return list;
}
