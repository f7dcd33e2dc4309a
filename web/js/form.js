/* MCP elicitation (the `form` dialect): an MCP server, through the agent, asks the person to
 * fill in a form made from a flat JSON Schema, or to open a web address (URL mode).
 *
 * The card's first item is its introduction: which MCP server asks (in plain sight), its
 * message, a warning when a field looks like it wants a password or key, and in URL mode the
 * address, shown whole as text with its host picked out, never opened, prefetched or made a
 * link until the person presses "Open and continue". In form mode each field follows, with
 * the input its kind wants (formfields.js), its default filled in, and what is wrong with it
 * said beside it, checked here with the gateway's rules before anything is sent. The tab
 * answers `{"content": {NAME: value, ...}}` (URL mode: `{"content": {}}`), or declines.
 *
 * Decline and "Not now" both end the request, as MCP tells them apart: Decline (pressed
 * twice) is a refusal, `{"action": "decline"}`; "Not now" (one press) is a `decline` frame
 * with `dismiss`, which the server hears as `{"action": "cancel"}`, as it does a deadline or
 * a withdrawal.
 */

import { make, pickList, shorten } from './page.js';
import { buildField, readField, valueText } from './formfields.js';
import { unicodeHost } from './punycode.js';

export const SECRET_WARNING = 'This form asks for something that looks like a password or key — ' +
  'askgate forms must not be used for secrets.';
export const FORM_INCOMPLETE = 'Fill in every required field, and fix anything marked, to submit.';
const NOT_NOW_NOTE = 'Not now closes this without answering or refusing: the MCP server is ' +
  'told you cancelled, and may ask again later.';
const OPEN_NOTE = 'Open and continue opens the address in a new tab and tells the MCP server ' +
  'you agreed to continue there.';

// The first item of every form card, before its fields.
const INTRO = Object.freeze({ intro: true });

const isUrlMode = (view) => view.mode === 'url';

// The items a card is built from: the introduction, then each field (none in URL mode).
export function formItems(view) {
  if (isUrlMode(view)) return typeof view.url === 'string' ? [INTRO] : null;
  return Array.isArray(view.fields) ? [INTRO, ...view.fields] : null;
}

// The card's first line: who asks, before anything they say.
export function formNote(view) {
  return isUrlMode(view)
    ? 'An MCP server, through the agent, asks you to open a web address.'
    : 'Form from an MCP server, through the agent — askgate never asks for passwords or keys; ' +
      "don't share secrets here.";
}

export function buildFormItem(rec, item, index) {
  if (item === INTRO) return buildIntro(rec);
  return buildField(rec, item, index);
}

function buildIntro(rec) {
  const view = rec.view;
  const id = rec.prefix + '-intro';
  const wrap = make('div', 'form-intro');
  const server = typeof view.server === 'string' && view.server.trim() ? view.server : '';
  const serverLine = wrap.appendChild(make('p', 'form-server'));
  if (server) {
    serverLine.append(make('span', 'form-server-label', 'Asked by the MCP server'), ' ',
      make('strong', 'form-server-name', server));
  } else {
    serverLine.appendChild(make('span', 'form-server-label', 'Asked by an MCP server that did not give its name'));
  }
  const fields = Array.isArray(view.fields) ? view.fields : [];
  if (!isUrlMode(view) && fields.some((f) => f && f.sensitive === true)) {
    const warning = wrap.appendChild(make('p', 'form-warning', null, { id: id + '-warning' }));
    warning.append(make('strong', 'form-warning-head', 'Careful:'), ' ', SECRET_WARNING);
  }
  const message = String(view.message ?? '');
  if (message.trim()) wrap.appendChild(make('p', 'form-message', message));
  if (isUrlMode(view)) wrap.appendChild(buildUrl(rec, id));
  const qr = {
    intro: true, fieldset: wrap, id, inputs: [], serverErrors: [], localError: '',
    name: shorten(message || (isUrlMode(view) ? 'open a web address' : 'a form'), 140),
    detail: (server ? server + ': ' : '') + message,
  };
  qr.errorEl = wrap.appendChild(make('div', 'question-error', null, { id: id + '-err' }));
  rec.questions.push(qr);
  return wrap;
}

// The host a browser opens for `url`, in its ASCII (punycode) form, as `window.open` will
// read it: the WHATWG parser's own answer, or null when it cannot read one.
function openedHost(url) {
  try {
    const parsed = new URL(url);
    return /^https?:$/.test(parsed.protocol) && parsed.hostname ? parsed.hostname : null;
  } catch {
    return null;
  }
}

// The host as a person reads it in `url` (after the scheme and any user info, before any
// port), with where it is: {text, start, end}, or null.
function writtenHost(url) {
  const scheme = url.indexOf('://');
  if (scheme < 0) return null;
  const start = scheme + 3;
  const rest = url.slice(start);
  const end = rest.search(/[/?#\\]/);
  const authority = end < 0 ? rest : rest.slice(0, end);
  const at = authority.lastIndexOf('@') + 1;
  const hostPort = authority.slice(at);
  const text = hostPort.startsWith('[')
    ? hostPort.slice(0, hostPort.indexOf(']') + 1)
    : hostPort.split(':')[0];
  if (!text) return null;
  return { text, start: start + at, end: start + at + text.length };
}

// Alphabets whose letters pass for one another's; a label that mixes two of them is the
// usual way to imitate a known name (Cyrillic `а` for Latin `a`).
const ALPHABETS = Object.freeze(['Latin', 'Cyrillic', 'Greek', 'Armenian', 'Georgian', 'Cherokee']
  .map((name) => [name, new RegExp(`\\p{Script=${name}}`, 'u')]));

// The alphabets mixed within one label of `host`, or null when none is.
function mixedAlphabets(host) {
  for (const label of host.split('.')) {
    const found = ALPHABETS.filter(([, letters]) => letters.test(label)).map(([name]) => name);
    if (found.length > 1) return found;
  }
  return null;
}

const isAscii = (text) => /^[\x00-\x7f]*$/.test(text);

function urlWarning(text) {
  const warning = make('p', 'form-warning url-warning');
  warning.append(make('strong', 'form-warning-head', 'Careful:'), ' ', text);
  return warning;
}

// The address, whole, as text: the host picked out (only where it is what the browser
// opens), nothing a link; the site in its ASCII form, and a warning where the address may
// not go where it seems to.
function buildUrl(rec, id) {
  const url = String(rec.view.url);
  const told = typeof rec.view.host === 'string' ? rec.view.host : '';
  const opened = openedHost(url);
  const written = writtenHost(url);
  const box = make('div', 'form-url-box');
  const warnings = [];
  if (!opened) {
    warnings.push('this page cannot work out which site this address opens. Do not open it.');
  } else if (opened !== told) {
    warnings.push(`this page reads the address as going to ${opened}, but the gateway said ` +
      `${told || 'nothing'}. Do not open it unless you are sure where it goes.`);
  }
  // What the name stands for: an `xn--` label written in ASCII can hide any alphabet.
  const readAs = written ? unicodeHost(written.text) : null;
  const mixed = readAs && mixedAlphabets(readAs);
  if (mixed) {
    warnings.push(`the site's name mixes alphabets (${mixed.join(' and ')}), a common way to ` +
      'imitate another site: letters that look alike are not the same.');
  }
  for (const text of warnings) box.appendChild(urlWarning(text));
  box.appendChild(make('p', 'form-url-label', 'It asks you to open this address:', { id: id + '-url-label' }));
  const shown = box.appendChild(make('p', 'form-url', null, { id: id + '-url', dir: 'ltr' }));
  // Picked out only when that text, read alone, is the host the browser opens.
  if (written && opened && openedHost('https://' + written.text + '/') === opened) {
    shown.append(make('span', 'url-part', url.slice(0, written.start)),
      make('strong', 'url-host', written.text), make('span', 'url-part', url.slice(written.end)));
  } else {
    shown.appendChild(make('span', 'url-part', url));
  }
  if (opened) {
    const site = box.appendChild(make('p', 'form-url-site'));
    site.append('Site: ', make('strong', 'url-site', opened, { dir: 'ltr' }));
    if (written && !isAscii(written.text)) {
      site.append(' (written ', make('span', 'url-written', written.text, { dir: 'ltr' }),
        ', with letters outside ASCII: this is the name the browser opens)');
    } else if (readAs && !isAscii(readAs)) {
      site.append(' (which stands for ', make('span', 'url-written', readAs, { dir: 'ltr' }),
        ', with letters outside ASCII)');
    }
  }
  box.appendChild(make('p', 'form-url-note',
    'Nothing is opened until you press “Open and continue”. Check that the site is one you expect.'));
  return box;
}

export function readFormItem(qr) {
  if (qr.intro) return { answer: null };
  return readField(qr);
}

// Every field's problem is shown from now on, as when the person has left each one.
export function revealForm(rec) {
  rec.questions.forEach((qr) => { qr.touched = true; });
}

export function formResponse(answers) {
  return { content: Object.fromEntries(answers.filter(Boolean)) };
}

export const formSubmits = (view) => !isUrlMode(view);

export const formHint = (view) => (isUrlMode(view) ? null
  : 'Enter submits · keys 1–9 pick options in a choice');

// The buttons beside Submit (or, in URL mode, instead of it).
export function formActions(view) {
  const notNow = { label: 'Not now', className: 'not-now', dismiss: true, note: NOT_NOW_NOTE };
  if (!isUrlMode(view)) return [notNow];
  return [
    { label: 'Open and continue', className: 'submit open-url', response: openResponse, sent: openUrl, note: OPEN_NOTE },
    notNow,
  ];
}

function webAddress(text) {
  try {
    const url = new URL(text);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url : null;
  } catch (_) {
    return null;
  }
}

// URL mode's consent, or null (nothing sent) for an address that is not http or https.
function openResponse(rec) {
  if (webAddress(String(rec.view.url))) return { content: {} };
  rec.cardErrors.push('This address is not an http or https address, so askgate will not open it.');
  return null;
}

// On that click only, once the consent is sent: the address, in a new tab that cannot reach
// back to this page, and learns nothing of where it came from.
function openUrl(rec) {
  window.open(String(rec.view.url), '_blank', 'noopener,noreferrer');
}

/* ---------- how it was declined ---------- */

// What a declined card adds to its ending: which of MCP's two the server was told.
export function formDeclined(response) {
  const action = response && response.action;
  if (action === 'cancel') return 'Not now: the MCP server was told you cancelled.';
  if (action === 'decline') return 'The MCP server was told you declined.';
  return null;
}

/* ---------- the gateway's refusals, beside their field ---------- */

// The record a refusal at `path` is about (`response.content.NAME...`), and the rest of the
// path after the field's name; or null for one about the whole answer.
export function placeFormRefusal(rec, path) {
  const prefix = 'response.content';
  if (!path.startsWith(prefix)) return null;
  const rest = path.slice(prefix.length);
  let best = null;
  rec.questions.forEach((qr, index) => {
    if (qr.intro) return;
    const name = String(qr.field.name);
    for (const head of ['.' + name, '[' + JSON.stringify(name) + ']']) {
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

const hasOwn = (object, key) => Object.prototype.hasOwnProperty.call(object, key);
const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

// The content of a form's answer, as the tab sent it or as MCP's result has it.
function contentOf(response) {
  return isObject(response) && isObject(response.content) ? response.content : isObject(response) ? {} : null;
}

// What was answered, one line a field ({name, title, kind, options}), for the card, the
// finished list and the history.
export function formSummaryList(fields, response, urlMode, limit = Infinity) {
  const content = contentOf(response);
  if (!content) return null;
  const list = make('ul', 'summary');
  if (urlMode) {
    list.appendChild(make('li')).appendChild(make('span', 'summary-value', 'Agreed to open the address'));
    return list;
  }
  const given = fields.filter((f) => f && hasOwn(content, String(f.name)));
  for (const field of given.slice(0, limit)) {
    const value = content[String(field.name)];
    const title = String(field.title ?? '').trim() || String(field.name);
    const item = list.appendChild(make('li'));
    item.appendChild(make('span', 'chip', shorten(title, 60)));
    item.appendChild(Array.isArray(value)
      ? pickList(value.map((v) => shorten(valueText(field, v), 160)))
      : make('span', 'summary-value', shorten(valueText(field, value), 160)));
  }
  if (given.length > limit) list.appendChild(make('li', 'history-more', 'and ' + (given.length - limit) + ' more'));
  if (!given.length) list.appendChild(make('li')).appendChild(make('span', 'summary-value', '(nothing filled in)'));
  return list;
}

export function summarizeForm(rec, response) {
  const fields = rec.questions.filter((qr) => !qr.intro).map((qr) => qr.field);
  return formSummaryList(fields, response, isUrlMode(rec.view));
}
