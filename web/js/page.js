/* The answer page's shared pieces: the one `state` and `ui` every module reads and writes,
 * the server clock, the local-time wording of a moment, and the DOM helpers the cards, the
 * history and both dialects build with, and the one way to send a frame on the socket.
 */

export const state = {
  session: '', key: '', tab: '',
  pastTabs: new Set(), // ids this page was given before the gateway gave it another
  tabGranted: false, // whether `tab` is the gateway's answer, not only the id asked for
  maxFrameBytes: 64 * 1024, // the gateway's limit on a tab's frame, from the snapshot
  ws: null, attempt: 0, retryTimer: 0, retryAt: 0, lostReason: '',
  offset: 0, // server clock minus local clock, from the last snapshot
  helloSentAt: 0, // when this page last said hello (local clock)
  synced: false, // a snapshot has arrived, so "no cards" really means no questions
  seq: 0, // numbers cards, for element ids that never contain request ids
  cards: new Map(), // request id -> card record, while open or just ended
  finished: [], // folded card records, newest ending first
  unseen: new Set(), // request ids that arrived while the page was hidden
  you: null, // who this tab is, from the snapshot's `you` (null: a gateway that does not say)
  title: 'askgate', // the page's title, behind the unseen count
  outgoing: null, // what a page of many sessions (the inbox) makes of a frame before it goes
};

export const ui = {};

// The explicit direction controls, with the short name each is shown as. Inside its own
// isolated span an override still reverses what it covers ("\u202Efdp.exe" reads "exe.pdf"),
// so text from the agent shows them instead of obeying them. Right-to-left letters need none
// of them to read right to left.
const DIRECTION_CONTROLS = {
  '\u202A': ['LRE', 'left-to-right embedding'],
  '\u202B': ['RLE', 'right-to-left embedding'],
  '\u202C': ['PDF', 'pop directional formatting'],
  '\u202D': ['LRO', 'left-to-right override'],
  '\u202E': ['RLO', 'right-to-left override'],
  '\u2066': ['LRI', 'left-to-right isolate'],
  '\u2067': ['RLI', 'right-to-left isolate'],
  '\u2068': ['FSI', 'first strong isolate'],
  '\u2069': ['PDI', 'pop directional isolate'],
  '\u200E': ['LRM', 'left-to-right mark'],
  '\u200F': ['RLM', 'right-to-left mark'],
  '\u061C': ['ALM', 'Arabic letter mark'],
};
const DIRECTION_CONTROL_RE = /[\u202A-\u202E\u2066-\u2069\u200E\u200F\u061C]/g;
const HAS_DIRECTION_CONTROL = new RegExp(DIRECTION_CONTROL_RE.source);

function codePoint(c) {
  return 'U+' + c.codePointAt(0).toString(16).toUpperCase().padStart(4, '0');
}

// A visible token in place of one direction control. An image role gives it one spoken name
// (what the control is), and as an isolated inline block its letters count for nothing in the
// direction of the text around it.
function directionMark(c) {
  const [name, what] = DIRECTION_CONTROLS[c];
  const mark = document.createElement('span');
  mark.className = 'bidi-mark';
  mark.dir = 'ltr';
  mark.textContent = name;
  mark.setAttribute('role', 'img');
  mark.setAttribute('aria-label', `${what} (${codePoint(c)}), not applied`);
  mark.title = `${codePoint(c)} ${what}: shown here, not applied`;
  return mark;
}

// Puts `text` in `node` as its only content: plain text, with a mark for each direction
// control.
export function showText(node, text) {
  const value = String(text);
  if (!HAS_DIRECTION_CONTROL.test(value)) {
    node.textContent = value;
    return;
  }
  const parts = [];
  let from = 0;
  for (const match of value.matchAll(DIRECTION_CONTROL_RE)) {
    if (match.index > from) parts.push(value.slice(from, match.index));
    parts.push(directionMark(match[0]));
    from = match.index + 1;
  }
  if (from < value.length) parts.push(value.slice(from));
  node.replaceChildren(...parts);
}

// `text` for places that take a string only (a desktop notification): each direction control
// named in brackets, so it cannot reorder what the notification shows.
export function plainText(text) {
  return String(text).replace(DIRECTION_CONTROL_RE, (c) => '[' + DIRECTION_CONTROLS[c][0] + ']');
}

// The one way this page makes elements: text is always set as text, never parsed, and any
// direction control in it is shown rather than obeyed (most of it comes from the agent).
export function make(tag, className, text, props) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  // What a person types runs in its own direction: Hebrew or Arabic reads right to left.
  if (tag === 'textarea') node.dir = 'auto';
  if (text !== undefined && text !== null) showText(node, text);
  if (props) Object.assign(node, props);
  return node;
}

// Picked labels, each in its own box: joined with commas, a label that holds a comma would
// read as two picks.
export function pickList(values) {
  const list = make('span', 'summary-value picks');
  for (const value of values) list.appendChild(make('span', 'pick', value));
  return list;
}

// "at 14:05" today, "on 3 Mar, 14:05" another day, in the person's own clock and locale.
// `prefix` is how the moment relates to the ending ("at", or "before" for one only noticed).
function formatWhen(date, prefix) {
  const now = new Date();
  const clock = date.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  if (date.toDateString() === now.toDateString()) return prefix + ' ' + clock;
  const day = date.toLocaleDateString([], {
    day: 'numeric', month: 'short',
    year: date.getFullYear() === now.getFullYear() ? undefined : 'numeric',
  });
  return (prefix === 'at' ? 'on' : prefix) + ' ' + day + ', ' + clock;
}

// A `<time>` saying when `atMs` (the gateway's clock) was, in this computer's clock.
export function timeElement(atMs, prefix) {
  const local = new Date(atMs - state.offset);
  return make('time', '', formatWhen(local, prefix), { dateTime: local.toISOString() });
}

// `text` cut to at most `max` characters (whole code points, runs of space as one), with an
// ellipsis when cut.
export function shorten(text, max) {
  const chars = Array.from(String(text).replace(/\s+/g, ' ').trim());
  return chars.length > max ? chars.slice(0, max - 1).join('') + '…' : chars.join('');
}

export function serverNow() {
  return Date.now() + state.offset;
}

export function growTextarea(area) {
  // Browsers with `field-sizing: content` grow the box from CSS alone.
  if (window.CSS && CSS.supports && CSS.supports('field-sizing', 'content')) return;
  area.style.height = 'auto';
  if (area.value) area.style.height = area.scrollHeight + 2 + 'px';
}

// Sends `frame`: 'sent', 'offline', or 'too-large' (over the gateway's frame limit, which
// would close the socket: not sent, so the person can shorten it).
export function send(frame) {
  if (!state.ws || state.ws.readyState !== WebSocket.OPEN) return 'offline';
  const text = JSON.stringify(state.outgoing ? state.outgoing(frame) : frame);
  if (new TextEncoder().encode(text).length > state.maxFrameBytes) return 'too-large';
  state.ws.send(text);
  return 'sent';
}
