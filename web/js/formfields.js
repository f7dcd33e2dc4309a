/* One field of an MCP elicitation form (form.js): the input its kind wants, its default
 * filled in, whether it is required (said in words, and with aria-required), and what is
 * wrong with what was typed, checked with the gateway's rules (which have the final word):
 *   text, email, uri   a text box (never a password box), lengths in characters; an email
 *                      address or a full web address
 *   date, date-time    the browser's date and date-and-time pickers; a date and time is sent
 *                      in RFC 3339, with this computer's offset from UTC
 *   number, integer    a number box with the bounds (and step 1 for a whole number)
 *   boolean            a switch (a checkbox with role=switch)
 *   choice             radios, one of the options
 *   choices            checkboxes, within the fewest and most picks allowed
 * A problem is shown once the person has left the field (or pressed Submit), and then kept
 * up to date as they type. A field record (qr, as cards.js calls it) holds what a question
 * record does and: field (as the gateway sent it), kind, control (the one input, where
 * there is one), touched, and initial (a date and time's default, as sent).
 */

import { make } from './page.js';
import { updateReadiness } from './readiness.js';
import { isEmail, isUri } from './formats.js';

const KINDS = ['text', 'email', 'uri', 'date', 'date-time', 'number', 'integer', 'boolean', 'choice', 'choices'];
// A text that may be this long gets a text area, not a one-line box.
const LONG_TEXT = 200;
// A date's year has four digits (e-mail addresses and URIs: formats.js).
const DATE_RE = /^\d{4}-\d{2}-\d{2}$/;
const LOCAL_DATE_TIME_RE = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?$/;

const hasOwn = (object, key) => Object.prototype.hasOwnProperty.call(object, key);
const num = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const count = (n, one, many) => n + ' ' + (n === 1 ? one : many);

function options(field) {
  return (Array.isArray(field.options) ? field.options : []).filter((o) => o && typeof o === 'object')
    .map((o) => ({ value: String(o.value ?? ''), label: String(o.label ?? o.value ?? '') }));
}

// What the field takes, in a few words.
function hintText(field, kind) {
  const minL = num(field.min_length);
  const maxL = num(field.max_length);
  const length = minL !== null && maxL !== null
    ? (minL === maxL ? 'exactly ' + count(minL, 'character', 'characters') : minL + ' to ' + maxL + ' characters')
    : minL !== null ? 'at least ' + count(minL, 'character', 'characters')
      : maxL !== null ? 'at most ' + count(maxL, 'character', 'characters') : '';
  const min = num(field.minimum);
  const max = num(field.maximum);
  const range = min !== null && max !== null ? 'from ' + min + ' to ' + max
    : min !== null ? 'at least ' + min : max !== null ? 'at most ' + max : '';
  const minI = num(field.min_items);
  const maxI = num(field.max_items);
  switch (kind) {
    case 'email': return 'An email address, like name@example.com' + (length ? '; ' + length : '');
    case 'uri': return 'A full web address, like https://example.com' + (length ? '; ' + length : '');
    case 'date': return 'A date';
    case 'date-time': return 'A date and a time, in your own time zone';
    case 'number': return 'A number' + (range ? ' ' + range : '');
    case 'integer': return 'A whole number' + (range ? ' ' + range : '');
    case 'boolean': return 'On or off';
    case 'choice': return 'Pick one';
    case 'choices':
      if (minI !== null && maxI !== null) return minI === maxI ? 'Pick exactly ' + minI : 'Pick ' + minI + ' to ' + maxI;
      if (minI !== null && minI > 0) return 'Pick at least ' + minI;
      if (maxI !== null) return 'Pick at most ' + maxI;
      return 'Pick any that apply';
    default: return length ? 'Text, ' + length : 'Text';
  }
}

export function buildField(rec, field, index) {
  const id = rec.prefix + '-f' + index;
  const kind = KINDS.includes(field.kind) ? field.kind : 'text';
  const name = String(field.name ?? '');
  const title = String(field.title ?? '').trim() ? String(field.title) : name;
  const required = field.required === true;
  const fieldset = make('fieldset', 'question form-field');
  fieldset.dataset.name = name;
  fieldset.dataset.kind = kind;
  const qr = {
    field, kind, fieldset, id, inputs: [], serverErrors: [], localError: '', touched: false,
    required, name: title, detail: title,
  };
  const grouped = kind === 'choice' || kind === 'choices';
  const controlId = id + '-input';
  const legend = fieldset.appendChild(make('legend'));
  legend.appendChild(grouped
    ? make('span', 'field-title', title, { id: id + '-title' })
    : make('label', 'field-title', title, { id: id + '-title', htmlFor: controlId }));
  legend.appendChild(required ? make('span', 'required-mark', 'Required') : make('span', 'optional-mark', '(optional)'));
  legend.appendChild(make('span', 'question-hint', hintText(field, kind), { id: id + '-hint' }));
  const described = [id + '-hint'];
  if (typeof field.description === 'string' && field.description.trim()) {
    fieldset.appendChild(make('p', 'field-desc', field.description, { id: id + '-desc' }));
    described.push(id + '-desc');
  }
  if (field.sensitive === true) {
    fieldset.appendChild(make('p', 'field-sensitive',
      'This looks like a password or key: do not type a real one here.', { id: id + '-sensitive' }));
    described.push(id + '-sensitive');
  }
  qr.errorEl = make('div', 'question-error', null, { id: id + '-err' });
  described.push(qr.errorEl.id);
  if (grouped) fieldset.appendChild(buildChoices(rec, qr, id, required));
  else fieldset.appendChild(buildControl(rec, qr, controlId, described));
  fieldset.appendChild(qr.errorEl);
  fieldset.setAttribute('aria-describedby', qr.errorEl.id);
  fillDefault(qr);
  rec.questions.push(qr);
  return fieldset;
}

function buildControl(rec, qr, id, described) {
  const { field, kind } = qr;
  let control;
  if (kind === 'boolean') {
    control = make('input', 'switch', null, { type: 'checkbox', id });
    control.setAttribute('role', 'switch');
  } else if (kind === 'text' && (num(field.max_length) ?? 0) > LONG_TEXT) {
    control = make('textarea', 'text-input field-input', null, { id, rows: 3 });
  } else {
    const type = { email: 'email', uri: 'url', date: 'date', 'date-time': 'datetime-local',
      number: 'number', integer: 'number' }[kind] || 'text';
    control = make('input', 'field-input', null, { id, type, autocomplete: 'off' });
    if (type === 'text') control.dir = 'auto';
    if (type === 'email' || type === 'url') {
      control.spellcheck = false;
      control.autocapitalize = 'off';
      control.dir = 'ltr';
    }
    if (type === 'number') {
      control.step = kind === 'integer' ? '1' : 'any';
      control.inputMode = kind === 'integer' ? 'numeric' : 'decimal';
      if (num(field.minimum) !== null) control.min = String(field.minimum);
      if (num(field.maximum) !== null) control.max = String(field.maximum);
    }
  }
  control.setAttribute('aria-describedby', described.join(' '));
  if (qr.required) control.setAttribute('aria-required', 'true');
  control.addEventListener('input', () => edited(rec, qr));
  control.addEventListener('change', () => {
    qr.touched = true;
    edited(rec, qr);
  });
  qr.control = control;
  if (kind !== 'boolean') return control;
  const row = make('div', 'switch-row');
  const stateText = make('span', 'switch-state');
  stateText.setAttribute('aria-hidden', 'true');
  qr.stateText = stateText;
  row.append(control, stateText);
  return row;
}

function buildChoices(rec, qr, id, required) {
  const multi = qr.kind === 'choices';
  const list = make('div', 'options');
  list.setAttribute('role', multi ? 'group' : 'radiogroup');
  list.setAttribute('aria-labelledby', id + '-title');
  list.setAttribute('aria-describedby', id + '-hint ' + id + '-err');
  if (required && !multi) list.setAttribute('aria-required', 'true');
  options(qr.field).forEach((opt, i) => {
    const input = make('input', '', null,
      { type: multi ? 'checkbox' : 'radio', name: id, id: id + '-o' + i, value: opt.value });
    input.addEventListener('change', () => {
      qr.touched = true;
      if (qr.clearBtn) qr.clearBtn.hidden = !qr.inputs.some((x) => x.checked);
      edited(rec, qr);
    });
    const label = make('label', '', null, { htmlFor: input.id });
    label.appendChild(make('span', 'option-label', opt.label));
    const row = list.appendChild(make('div', 'option'));
    row.append(input, label);
    if (i < 9) row.appendChild(make('span', 'option-key', i + 1)).setAttribute('aria-hidden', 'true');
    qr.inputs.push(input);
  });
  if (!multi && !required) {
    // A radio cannot be unpicked: an optional choice can be left out again.
    qr.clearBtn = list.appendChild(make('button', 'ghost clear-choice', 'Clear the choice', { type: 'button', hidden: true }));
    qr.clearBtn.addEventListener('click', () => {
      qr.inputs.forEach((x) => { x.checked = false; });
      qr.clearBtn.hidden = true;
      if (qr.inputs[0]) qr.inputs[0].focus();
      edited(rec, qr);
    });
  }
  return list;
}

function edited(rec, qr) {
  if (qr.stateText) qr.stateText.textContent = qr.control.checked ? 'On' : 'Off';
  qr.serverErrors = [];
  updateReadiness(rec);
}

/* ---------- defaults ---------- */

const pad = (n) => String(n).padStart(2, '0');

// A date and time as the browser's picker holds it (this computer's time), or ''.
function localDateTime(text) {
  const at = new Date(text);
  if (Number.isNaN(at.getTime())) {
    const m = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2})?/.exec(text);
    return m ? m[0] : '';
  }
  const day = at.getFullYear() + '-' + pad(at.getMonth() + 1) + '-' + pad(at.getDate());
  return day + 'T' + pad(at.getHours()) + ':' + pad(at.getMinutes()) + (at.getSeconds() ? ':' + pad(at.getSeconds()) : '');
}

function fillDefault(qr) {
  const { field, kind, control } = qr;
  const has = hasOwn(field, 'default') && field.default !== null;
  const value = field.default;
  if (kind === 'boolean') {
    control.checked = value === true;
    qr.stateText.textContent = control.checked ? 'On' : 'Off';
  } else if (kind === 'choice') {
    qr.inputs.forEach((input) => { input.checked = has && input.value === String(value); });
    if (qr.clearBtn) qr.clearBtn.hidden = !qr.inputs.some((x) => x.checked);
  } else if (kind === 'choices') {
    const picked = Array.isArray(value) ? value.map(String) : [];
    qr.inputs.forEach((input) => { input.checked = picked.includes(input.value); });
  } else if (kind === 'date-time') {
    if (has && typeof value === 'string') {
      control.value = localDateTime(value);
      if (/T\d{2}:\d{2}:\d{2}/.test(control.value)) control.step = '1';
      // Left as it was, the default goes back exactly as the server sent it.
      qr.initial = { shown: control.value, sent: value };
    }
  } else if (has && (typeof value === 'string' || typeof value === 'number')) {
    control.value = String(value);
  }
  for (const input of qr.inputs) input.parentNode.classList.toggle('is-picked', input.checked);
}

/* ---------- reading and checking ---------- */

// `local` (the picker's value) in RFC 3339, with this computer's offset at that moment.
function withOffset(local) {
  const m = LOCAL_DATE_TIME_RE.exec(local);
  if (!m) return null;
  const at = new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6] || 0));
  const offset = -at.getTimezoneOffset();
  const sign = offset < 0 ? '-' : '+';
  const abs = Math.abs(offset);
  return `${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6] || '00'}${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
}

// The field's value: {value}, {empty: true} or {problem}.
function current(qr) {
  const { field, kind, control } = qr;
  switch (kind) {
    case 'boolean':
      return { value: control.checked };
    case 'choice': {
      const picked = qr.inputs.find((i) => i.checked);
      return picked ? { value: picked.value } : { empty: true, problem: 'Pick one.' };
    }
    case 'choices': {
      const picked = qr.inputs.filter((i) => i.checked).map((i) => i.value);
      const min = num(field.min_items);
      const max = num(field.max_items);
      if (max !== null && picked.length > max) {
        return { problem: 'Pick at most ' + max + ' (' + picked.length + ' picked).' };
      }
      if (!picked.length) {
        return { empty: true, problem: 'Pick at least ' + Math.max(1, min ?? 1) + '.' };
      }
      if (min !== null && picked.length < min) {
        return { problem: 'Pick at least ' + min + ' (' + picked.length + ' picked).' };
      }
      return { value: picked };
    }
    case 'number':
    case 'integer': {
      if (control.validity.badInput) return { problem: kind === 'integer' ? 'Enter a whole number.' : 'Enter a number.' };
      const text = control.value.trim();
      if (!text) return { empty: true, problem: 'This is required.' };
      const value = Number(text);
      if (!Number.isFinite(value)) return { problem: 'This number is too large.' };
      if (kind === 'integer' && !Number.isInteger(value)) return { problem: 'Enter a whole number (no decimals).' };
      const min = num(field.minimum);
      const max = num(field.maximum);
      if (min !== null && value < min) return { problem: 'Must be at least ' + min + ' (this is ' + value + ').' };
      if (max !== null && value > max) return { problem: 'Must be at most ' + max + ' (this is ' + value + ').' };
      return { value };
    }
    case 'date':
      if (control.validity.badInput) return { problem: 'Enter a whole date.' };
      if (!control.value) return { empty: true, problem: 'This is required.' };
      return DATE_RE.test(control.value) ? { value: control.value }
        : { problem: 'This is not a date (its year must have four digits).' };
    case 'date-time': {
      if (control.validity.badInput) return { problem: 'Enter a whole date and time.' };
      if (!control.value) return { empty: true, problem: 'This is required.' };
      if (qr.initial && control.value === qr.initial.shown) return { value: qr.initial.sent };
      const value = withOffset(control.value);
      return value ? { value } : { problem: 'This is not a date and time.' };
    }
    default: {
      const text = control.value;
      if (!text.trim()) return { empty: true, problem: 'This is required.' };
      const length = Array.from(text).length;
      const min = num(field.min_length);
      const max = num(field.max_length);
      if (min !== null && length < min) {
        return { problem: 'At least ' + count(min, 'character', 'characters') + ', please (this has ' + length + ').' };
      }
      if (max !== null && length > max) {
        return { problem: 'At most ' + count(max, 'character', 'characters') + ', please (this has ' + length + ').' };
      }
      if (kind === 'email' && !isEmail(text)) {
        return { problem: 'This is not an email address (one like name@example.com).' };
      }
      if (kind === 'uri' && !isUri(text)) {
        return { problem: 'This is not a full web address (one like https://example.com).' };
      }
      return { value: text };
    }
  }
}

// This field's part of the answer: {answer: [name, value]}, {answer: null} (an optional
// field left empty, left out), {problem} (shown once the field was left), or {} (not ready).
export function readField(qr) {
  const read = current(qr);
  if ('value' in read) return { answer: [String(qr.field.name), read.value] };
  if (read.empty && !qr.required) return { answer: null };
  return qr.touched ? { problem: read.problem } : {};
}

// A value of this field in words, for a summary.
export function valueText(field, value) {
  if (typeof value === 'boolean') return value ? 'On' : 'Off';
  if (field && (field.kind === 'choice' || field.kind === 'choices')) {
    const option = options(field).find((o) => o.value === String(value));
    if (option) return option.label;
  }
  if (typeof value === 'string') return field && ['text', 'email', 'uri'].includes(field.kind) ? '“' + value + '”' : value;
  return JSON.stringify(value) ?? '';
}
