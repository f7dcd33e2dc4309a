/* Editing a tool call's arguments before it runs (the `edit` decision): as formatted JSON in
 * a text box, or, when the schema is flat (an object whose properties are each a string,
 * number, integer, boolean or enum), in a small form with one labelled field each. What is
 * typed is checked before anything is sent: against the schema when the gateway checks it
 * (`edit_check: "schema"`, argcheck.js), else only as being a JSON object, with the
 * gateway's `edit_note` saying why. Under the editor, what changed against the agent's
 * arguments, key by key (added / removed / changed), as text, for the person to confirm.
 *
 * An editor (ed) holds: panel, mode ('form' | 'json'), fields (the form's), json (its text
 * box), toggle, diffEl. `readEdit(ed)` returns {value, changes}, {problem} or {} (unchanged).
 */

import { growTextarea, make } from './page.js';
import { checkArgs, infiniteAt, isObject, pathText, sameJson } from './argcheck.js';

// A changed value is shown as its JSON, cut to this many characters.
const DIFF_VALUE_CHARS = 500;
// At most this many schema problems are listed at once.
const MAX_PROBLEMS = 4;
const JSON_NUMBER_RE = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;
const FLAT_TYPES = ['string', 'number', 'integer', 'boolean'];
// Keywords that make a property more than one flat field.
const NESTING = ['properties', 'items', 'anyOf', 'oneOf', 'const', 'additionalProperties', 'required'];

const hasOwn = (object, key) => Object.prototype.hasOwnProperty.call(object, key);

// The form's fields for `schema`, or null when it is not flat or `args` would not fit it
// (a key the schema does not name, a value of another kind).
function flatFields(schema, args) {
  if (!isObject(schema) || schema.type !== 'object' || !isObject(schema.properties)) return null;
  const keys = Object.keys(schema.properties);
  if (!keys.length) return null;
  const required = Array.isArray(schema.required) ? schema.required : [];
  const fields = [];
  for (const key of keys) {
    const kind = flatKind(schema.properties[key]);
    if (!kind) return null;
    fields.push({ key, kind, schema: schema.properties[key], required: required.includes(key) });
  }
  if (!Object.keys(args).every((key) => keys.includes(key))) return null;
  if (!fields.every((f) => !hasOwn(args, f.key) || fits(f, args[f.key]))) return null;
  return fields;
}

function flatKind(s) {
  if (!isObject(s) || NESTING.some((k) => hasOwn(s, k))) return null;
  if (hasOwn(s, 'enum')) {
    const scalar = (v) => ['string', 'number', 'boolean'].includes(typeof v);
    return Array.isArray(s.enum) && s.enum.length && s.enum.every(scalar) ? 'enum' : null;
  }
  return typeof s.type === 'string' && FLAT_TYPES.includes(s.type) ? s.type : null;
}

function fits(field, value) {
  if (field.kind === 'enum') return field.schema.enum.some((e) => e === value);
  if (field.kind === 'integer' || field.kind === 'number') return typeof value === 'number';
  return typeof value === field.kind;
}

// An editor for a call's `args`, checked as `check` says ('schema' or 'object').
export function buildEditor(opts) {
  const { id, args, schema, check, note, onChange } = opts;
  const ed = { id, args, schema: check === 'schema' ? schema : undefined, check, onChange };
  ed.panel = make('div', 'call-edit');
  ed.panel.appendChild(make('p', 'edit-note', note, { id: id + '-note' }));
  const fields = check === 'schema' ? flatFields(schema, args) : null;
  if (fields) {
    ed.fields = fields;
    ed.formEl = ed.panel.appendChild(make('div', 'edit-form'));
    fields.forEach((field, i) => ed.formEl.appendChild(buildField(ed, field, i)));
    fillForm(ed, args);
  }
  const jsonId = id + '-json';
  ed.jsonWrap = ed.panel.appendChild(make('div', 'edit-json-wrap'));
  ed.jsonWrap.appendChild(make('label', 'edit-label', 'Arguments as JSON', { htmlFor: jsonId }));
  ed.json = ed.jsonWrap.appendChild(make('textarea', 'text-input edit-json', null, {
    id: jsonId, rows: Math.min(16, JSON.stringify(args, null, 2).split('\n').length + 1),
    spellcheck: false, autocapitalize: 'off', autocomplete: 'off',
  }));
  ed.json.dir = 'ltr';
  ed.json.setAttribute('aria-describedby', id + '-note');
  ed.json.value = JSON.stringify(args, null, 2);
  ed.json.addEventListener('input', () => changed(ed, ed.json));
  if (fields) {
    ed.toggle = ed.panel.appendChild(make('button', 'ghost edit-toggle', '', { type: 'button' }));
    ed.toggle.addEventListener('click', () => switchMode(ed));
    ed.toggleNote = ed.panel.appendChild(make('p', 'edit-toggle-note', null, { hidden: true }));
  }
  ed.diffEl = ed.panel.appendChild(make('div', 'edit-diff'));
  setMode(ed, fields ? 'form' : 'json');
  renderDiff(ed);
  return ed;
}

function buildField(ed, field, index) {
  const id = ed.id + '-f' + index;
  const row = make('div', 'edit-field');
  row.dataset.key = field.key;
  const label = row.appendChild(make('label', 'edit-label', null, { htmlFor: id }));
  label.appendChild(make('span', 'edit-key', field.key));
  label.appendChild(make('span', 'edit-kind', ' (' + kindText(field) + ')'));
  let control;
  if (field.kind === 'string') {
    control = make('textarea', 'text-input edit-input', null, { id, rows: 1 });
  } else if (field.kind === 'number' || field.kind === 'integer') {
    control = make('input', 'edit-input', null,
      { id, type: 'text', inputMode: field.kind === 'integer' ? 'numeric' : 'decimal', autocomplete: 'off' });
  } else {
    control = make('select', 'edit-input', null, { id });
    if (!field.required) control.appendChild(make('option', '', '(not set)', { value: '' }));
    const choices = field.kind === 'boolean' ? [true, false] : field.schema.enum;
    const allStrings = choices.every((c) => typeof c === 'string');
    choices.forEach((choice, i) => control.appendChild(
      make('option', '', allStrings ? choice : JSON.stringify(choice), { value: String(i) })));
    field.choices = choices;
  }
  if (field.required) control.setAttribute('aria-required', 'true');
  const about = typeof field.schema.description === 'string' && field.schema.description.trim();
  if (about) {
    row.appendChild(make('p', 'edit-about', about, { id: id + '-about' }));
    control.setAttribute('aria-describedby', id + '-about');
  }
  control.addEventListener(control.tagName === 'SELECT' ? 'change' : 'input', () => changed(ed, control));
  row.appendChild(control);
  field.control = control;
  return row;
}

function kindText(field) {
  const kind = { string: 'text', number: 'number', integer: 'whole number', boolean: 'true or false',
    enum: 'pick one' }[field.kind];
  if (field.required) return kind + ', required';
  return kind + (field.kind === 'string' || field.kind === 'number' || field.kind === 'integer'
    ? ', optional: leave empty to leave it out' : ', optional');
}

function fillForm(ed, args) {
  for (const field of ed.fields) {
    const has = hasOwn(args, field.key);
    const value = args[field.key];
    if (field.kind === 'string') field.control.value = has ? value : '';
    else if (field.kind === 'number' || field.kind === 'integer') field.control.value = has ? String(value) : '';
    else field.control.value = has ? String(field.choices.findIndex((c) => c === value)) : '';
    if (field.control.tagName === 'SELECT' && field.control.selectedIndex < 0) field.control.selectedIndex = 0;
    if (field.control.tagName === 'TEXTAREA') growTextarea(field.control);
  }
}

// The form's arguments: {value} or {problem}.
function readForm(ed) {
  const entries = [];
  for (const field of ed.fields) {
    const raw = field.control.value;
    const had = hasOwn(ed.args, field.key);
    if (field.kind === 'string') {
      // Empty leaves an optional text out, unless the agent sent it empty.
      if (raw !== '' || field.required || (had && ed.args[field.key] === '')) entries.push([field.key, raw]);
    } else if (field.kind === 'number' || field.kind === 'integer') {
      const text = raw.trim();
      if (text === '' && !field.required) continue;
      if (!JSON_NUMBER_RE.test(text)) {
        return { problem: pathText([field.key]) + ': expected ' + (field.kind === 'integer' ? 'an integer' : 'a number') +
          (text ? ', like 42' + (field.kind === 'number' ? ' or 0.5' : '') : ', and it is empty') };
      }
      entries.push([field.key, Number(text)]);
    } else if (raw !== '') {
      entries.push([field.key, field.choices[Number(raw)]]);
    }
  }
  // fromEntries makes own members, even of a key named "__proto__".
  return { value: Object.fromEntries(entries) };
}

// The JSON text box's arguments: {value} or {problem}.
function readJson(ed) {
  let value;
  try {
    value = JSON.parse(ed.json.value);
  } catch (e) {
    return { problem: 'Not valid JSON: ' + e.message };
  }
  if (!isObject(value)) return { problem: 'arguments: expected a JSON object ({ … }), got ' + kindOf(value) };
  const infinite = infiniteAt(value);
  if (infinite) return { problem: pathText(infinite) + ': this number is too large to send' };
  return { value };
}

function kindOf(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return { string: 'a string', number: 'a number', boolean: 'a boolean' }[typeof value] || typeof value;
}

// The edited arguments: {value, changes} when they pass the check and differ from the
// agent's; {problem} when they do not pass; {} when nothing has changed yet.
export function readEdit(ed) {
  const read = ed.mode === 'form' ? readForm(ed) : readJson(ed);
  if (read.problem) return read;
  if (ed.check === 'schema') {
    const problems = checkArgs(read.value, ed.schema);
    if (problems.length) {
      const more = problems.length - MAX_PROBLEMS;
      return { problem: problems.slice(0, MAX_PROBLEMS).join('\n') + (more > 0 ? '\n…and ' + more + ' more' : '') };
    }
  }
  const changes = diffArgs(ed.args, read.value);
  return changes.length ? { value: read.value, changes } : {};
}

function changed(ed, control) {
  if (control && control.tagName === 'TEXTAREA') growTextarea(control);
  if (ed.toggleNote) ed.toggleNote.hidden = true;
  renderDiff(ed);
  ed.onChange();
}

function setMode(ed, mode) {
  ed.mode = mode;
  if (ed.formEl) ed.formEl.hidden = mode !== 'form';
  ed.jsonWrap.hidden = mode !== 'json';
  if (ed.toggle) ed.toggle.textContent = mode === 'form' ? 'Edit as JSON instead' : 'Edit in the form instead';
}

// Between the form and the JSON, carrying over what was typed.
function switchMode(ed) {
  if (ed.mode === 'form') {
    const read = readForm(ed);
    if (read.value) ed.json.value = JSON.stringify(read.value, null, 2);
    setMode(ed, 'json');
    growTextarea(ed.json);
    ed.json.focus();
  } else {
    const read = readJson(ed);
    if (!read.value || !ed.fields.every((f) => !hasOwn(read.value, f.key) || fits(f, read.value[f.key])) ||
        !Object.keys(read.value).every((k) => ed.fields.some((f) => f.key === k))) {
      ed.toggleNote.textContent = 'The form cannot show these arguments' +
        (read.problem ? ' (' + read.problem + ')' : '') + '; go on editing them as JSON.';
      ed.toggleNote.hidden = false;
      return;
    }
    fillForm(ed, read.value);
    setMode(ed, 'form');
    ed.fields[0].control.focus();
  }
  changed(ed, null);
}

// Per key, what the edit changes: [{key, kind: 'added'|'removed'|'changed', before, after}].
export function diffArgs(before, after) {
  const changes = [];
  for (const key of Object.keys(before)) {
    if (!hasOwn(after, key)) changes.push({ key, kind: 'removed', before: before[key] });
    else if (!sameJson(before[key], after[key])) {
      changes.push({ key, kind: 'changed', before: before[key], after: after[key] });
    }
  }
  for (const key of Object.keys(after)) {
    if (!hasOwn(before, key)) changes.push({ key, kind: 'added', after: after[key] });
  }
  return changes;
}

function valueText(value) {
  const text = JSON.stringify(value);
  const chars = Array.from(text);
  if (chars.length <= DIFF_VALUE_CHARS) return text;
  return chars.slice(0, DIFF_VALUE_CHARS).join('') + '… (' + (chars.length - DIFF_VALUE_CHARS).toLocaleString('en') +
    ' more characters)';
}

const CHANGE_WORDS = { added: 'Added', removed: 'Removed', changed: 'Changed' };

// The changes under the editor, as the person confirms them; nothing while the edit does
// not pass its check (the problem is said beside the call instead).
function renderDiff(ed) {
  const read = readEdit(ed);
  if (read.problem) {
    ed.diffEl.replaceChildren();
    ed.diffEl.hidden = true;
    return;
  }
  ed.diffEl.hidden = false;
  if (!read.changes) {
    ed.diffEl.replaceChildren(make('p', 'edit-diff-none',
      'No changes yet. Change an argument, or pick Approve to run the call as it is.'));
    return;
  }
  const list = make('ul', 'edit-diff-list');
  for (const change of read.changes) {
    const item = list.appendChild(make('li', 'edit-change'));
    item.dataset.change = change.kind;
    item.append(make('span', 'edit-change-kind', CHANGE_WORDS[change.kind]), ' ',
      make('span', 'edit-change-key', change.key === '' ? '(empty key)' : change.key));
    if ('before' in change) item.appendChild(make('span', 'edit-change-value', 'was: ' + valueText(change.before)));
    if ('after' in change) item.appendChild(make('span', 'edit-change-value', 'now: ' + valueText(change.after)));
  }
  ed.diffEl.replaceChildren(make('p', 'edit-diff-title',
    'What your edit changes (' + read.changes.length + (read.changes.length === 1 ? ' argument' : ' arguments') +
    '); Submit sends it:'), list);
}
