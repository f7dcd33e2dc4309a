/* What the page says outside the cards: header status and presence, the notice and toast,
 * screen-reader announcements, the unseen-count title and desktop notifications.
 */

import { make, plainText, showText, state, ui } from './page.js';

export function setConnection(name, text) {
  ui.connection.dataset.state = name;
  ui.connection.textContent = text;
}

// No agent is not a fault: answers wait in the gateway for the agent to collect them (an
// agent polling over HTTP counts as waiting too), so neither state is worded or coloured as
// an error.
const AGENT_WORDS = {
  true: 'An agent is waiting for answers in this session.',
  false: 'No agent is connected right now. Answers are kept and reach the agent when it returns.',
};

// `tabs` null: not connected, so who is there is unknown. `announceChange`: say a change
// aloud (the agent came or went while the person waits), not what a snapshot first shows.
export function renderPresence(tabs, agentOnline, announceChange = false) {
  const known = typeof tabs === 'number';
  ui.presence.replaceChildren(...(known
    ? [make('span', 'tabs-count', tabs === 1 ? '1 tab watching' : tabs + ' tabs watching')]
    : []));
  const agent = ui.agentStatus;
  const shown = known && typeof agentOnline === 'boolean';
  const before = agent.hidden ? null : agent.dataset.online;
  agent.hidden = !shown;
  if (!shown) return;
  agent.dataset.online = String(agentOnline);
  agent.textContent = AGENT_WORDS[agentOnline];
  if (announceChange && before !== null && before !== agent.dataset.online) announce(agent.textContent);
}

export function showNotice(text) {
  ui.notice.textContent = text;
  ui.notice.hidden = !text;
}

let toastTimer = 0;
export function toast(text) {
  showText(ui.toast, text);
  ui.toast.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { ui.toast.hidden = true; }, 8000);
}

// Messages said within one moment are said together: each write to the live region replaces
// the one before, so a reconnect's "closed while away" would be lost under its "new question".
let pendingAnnouncements = [];
export function announce(text) {
  pendingAnnouncements.push(text);
  if (pendingAnnouncements.length > 1) return;
  // Clearing first makes screen readers repeat a message identical to the last one.
  ui.live.textContent = '';
  setTimeout(() => {
    ui.live.textContent = pendingAnnouncements.join(' ');
    pendingAnnouncements = [];
  }, 50);
}

export function noteNew(recs) {
  if (!recs.length) return;
  const first = recs[0].questions[0];
  const what = first ? first.name : 'a question';
  announce(recs.length === 1
    ? 'New question from the agent: ' + what
    : recs.length + ' open questions from the agent.');
  if (!document.hidden) return;
  recs.forEach((r) => state.unseen.add(r.id));
  updateTitle();
  notify(recs[0]);
}

export function updateTitle() {
  document.title = state.unseen.size ? '(' + state.unseen.size + ') ' + state.title : state.title;
}

function notify(rec) {
  if (!('Notification' in window) || Notification.permission !== 'granted') return;
  const first = rec.questions[0];
  let body = first ? plainText(first.detail) : '';
  if (body.length > 140) body = body.slice(0, 139) + '…';
  try {
    const n = new Notification('askgate: new question', { body, tag: 'askgate-' + rec.id });
    n.onclick = () => { window.focus(); n.close(); };
    rec.notification = n;
  } catch (_) {
    // Some platforms only allow notifications from a service worker; the title still counts.
  }
}

export function setupNotifyButton() {
  if (!('Notification' in window)) return;
  const render = () => {
    const p = Notification.permission;
    ui.notify.textContent = p === 'granted' ? 'Notifications on'
      : p === 'denied' ? 'Notifications blocked' : 'Notify me';
    ui.notify.disabled = p !== 'default';
  };
  ui.notify.hidden = false;
  render();
  ui.notify.addEventListener('click', () => {
    const result = Notification.requestPermission(render);
    if (result && typeof result.then === 'function') result.then(render, render);
  });
}

// The reconnect countdown, in the connection line.
export function updateRetryText() {
  if (!state.retryAt) return;
  const seconds = Math.max(1, Math.ceil((state.retryAt - Date.now()) / 1000));
  const reason = state.lostReason.charAt(0).toUpperCase() + state.lostReason.slice(1);
  setConnection('reconnecting', reason + ' — reconnecting in ' + seconds + ' s');
}
