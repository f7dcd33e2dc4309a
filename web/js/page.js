/* The answer page's shared pieces: the one `state` and `ui` every module reads and writes,
 * the server clock, and the DOM helpers the cards and both dialects build with.
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
  cards: new Map(), // request id -> card record
  unseen: new Set(), // request ids that arrived while the page was hidden
};

export const ui = {};

// The one way this page makes elements: text is always set as textContent.
export function make(tag, className, text, props) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  // What a person types runs in its own direction: Hebrew or Arabic reads right to left.
  if (tag === 'textarea') node.dir = 'auto';
  if (text !== undefined && text !== null) node.textContent = String(text);
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

export function serverNow() {
  return Date.now() + state.offset;
}

export function growTextarea(area) {
  // Browsers with `field-sizing: content` grow the box from CSS alone.
  if (window.CSS && CSS.supports && CSS.supports('field-sizing', 'content')) return;
  area.style.height = 'auto';
  if (area.value) area.style.height = area.scrollHeight + 2 + 'px';
}
