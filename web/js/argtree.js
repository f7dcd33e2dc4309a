/* A tool call's arguments as an inert tree: each key and its value, objects and arrays
 * nested, strings shown whole with their line breaks. The arguments come from the agent
 * (which may have been prompt-injected), so every piece is set as text (page.js make):
 * nothing in them is ever read as HTML, a link or a direction change. Long strings and big
 * nested values are folded in a <details>, so one huge value does not bury the others.
 */

import { make } from './page.js';

// A string longer than this, or with more lines, is folded behind its first lines.
const FOLD_CHARS = 400;
const FOLD_LINES = 8;
const PREVIEW_CHARS = 160;
const PREVIEW_LINES = 3;
// A nested object or array with more entries than this, or whose JSON is longer, is folded.
const FOLD_ENTRIES = 12;
const FOLD_JSON_CHARS = 1200;
// Deeper than this, a value is shown as its JSON text.
const MAX_DEPTH = 24;

const number = (n) => n.toLocaleString('en');

function plural(n, one, many) {
  return number(n) + ' ' + (n === 1 ? one : many);
}

// The tree for a call's `args` (an object).
export function buildArgTree(args) {
  const keys = Object.keys(args);
  if (!keys.length) return make('p', 'arg-none', 'No arguments.');
  return objectNode(args, 0);
}

function objectNode(object, depth) {
  const list = make('dl', 'argtree');
  for (const key of Object.keys(object)) {
    const row = list.appendChild(make('div', 'arg'));
    row.appendChild(key === '' ? make('dt', 'arg-key arg-empty', '(empty key)') : make('dt', 'arg-key', key));
    row.appendChild(make('dd', 'arg-value')).appendChild(valueNode(object[key], depth + 1));
  }
  return list;
}

function arrayNode(array, depth) {
  const list = make('ol', 'arg-array', null, { start: 0 });
  for (const item of array) list.appendChild(make('li', 'arg-item')).appendChild(valueNode(item, depth + 1));
  return list;
}

function valueNode(value, depth) {
  if (typeof value === 'string') return stringNode(value);
  if (value === null || typeof value !== 'object') return make('span', 'arg-lit', String(value));
  const isArray = Array.isArray(value);
  const size = isArray ? value.length : Object.keys(value).length;
  if (!size) return make('span', 'arg-lit', isArray ? '[] (empty array)' : '{} (empty object)');
  if (depth > MAX_DEPTH) return make('span', 'arg-str arg-json', JSON.stringify(value));
  const inner = isArray ? arrayNode(value, depth) : objectNode(value, depth);
  if (size <= FOLD_ENTRIES && JSON.stringify(value).length <= FOLD_JSON_CHARS) return inner;
  const fold = make('details', 'arg-fold');
  fold.append(make('summary', 'arg-fold-summary',
    isArray ? 'Array of ' + plural(size, 'item', 'items') : 'Object with ' + plural(size, 'key', 'keys')), inner);
  return fold;
}

function stringNode(text) {
  if (text === '') return make('span', 'arg-lit arg-empty', '(empty string)');
  const lines = text.split('\n');
  const chars = Array.from(text);
  if (chars.length <= FOLD_CHARS && lines.length <= FOLD_LINES) return make('span', 'arg-str', text);
  let preview = lines.slice(0, PREVIEW_LINES).join('\n');
  if (Array.from(preview).length > PREVIEW_CHARS) preview = Array.from(preview).slice(0, PREVIEW_CHARS).join('');
  const wrap = make('div', 'arg-long');
  const fold = make('details', 'arg-fold');
  const size = plural(chars.length, 'character', 'characters') +
    (lines.length > 1 ? ', ' + plural(lines.length, 'line', 'lines') : '');
  fold.append(make('summary', 'arg-fold-summary', 'Show the whole text (' + size + ')'),
    make('span', 'arg-str', text));
  // The preview is not the value, so it is hidden from screen readers, which get the summary.
  const shown = make('span', 'arg-str arg-preview', preview + '…');
  shown.setAttribute('aria-hidden', 'true');
  wrap.append(shown, fold);
  return wrap;
}
