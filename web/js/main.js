/* askgate answer page (/s/{session}#k={viewer key}). This entry module wires the page up;
 * module scripts are deferred, so the document has been parsed by the time it runs.
 *
 * Modules, by what they own:
 *   page.js        shared state, the page's elements (ui), make() and small DOM helpers
 *   connection.js  WebSocket, hello, close codes (and the gateway's reason for refusing a
 *                  key), reconnect with backoff, and the frame handlers: snapshot / request /
 *                  resolved / answer_rejected / history / presence / error
 *   cards.js       building the DOM for a request, reading answers, submit / decline, a
 *                  card this tab may not answer shown read-only, final states, the countdown
 *                  ticker, keyboard, and drafts (what was picked or typed and not sent, kept
 *                  in sessionStorage across a reload)
 *   dialects.js    the table of dialects: each builds its own questions (or tool calls, or
 *                  a form), reads their answers and summarises an answer given in another
 *                  tab:
 *     harness.js     pydantic-ai-harness: options, multi-select, one "Other…" text
 *     deepagents.js  deepagents-code ask_user: text, multiple_choice, multi_select
 *     approval.js    tool-call approvals: each call's name, description and arguments, and
 *                    its decision (approve / edit / reject / respond); "Approve all";
 *                    remembering an approval (for the session, or always for the agent
 *                    key), calls rules already approved
 *       argtree.js     a call's arguments as an inert tree, long values folded
 *       argedit.js     editing them (a form for a flat schema, else JSON), what changed
 *       argcheck.js    the JSON Schema keywords askgate checks an edit against
 *     form.js        MCP elicitation: which server asks, its message, a warning when a field
 *                    looks like a secret; a form, or a web address shown whole and opened
 *                    only on "Open and continue"; "Not now" tells the server `cancel`
 *       formfields.js  one field of the form: its input, default, required mark and checks
 *       formats.js     e-mail addresses and URIs, checked exactly as the gateway does
 *     claude.js      Claude Agent SDK's AskUserQuestion: options, multi-select, an "Other…"
 *                    text per question, and an answer in one's own words instead
 *   finished.js    the one list of ended requests, folded cards (until dismissed, the
 *                  dismissals kept in sessionStorage): what was asked and answered, who
 *                  ended it and how they were known, and when
 *   people.js      who this tab is (the line saying so), who may answer a request, and how
 *                  an ending names whoever ended it
 *   history.js     the session's last 50 ended requests, from the gateway's trail, put
 *                  into the finished list (each ending once)
 *   rules.js       the session's remembered approvals, listed under the questions, each
 *                  revocable by a named person
 *   status.js      header status, notice and toast, announcements, notifications,
 *                  unseen-count title
 *   follow.js      the "Follow this session" switch, for a named person
 *   push.js        "Notify me on this device" (Web Push) and the person's devices, for a
 *                  named person on a gateway that has Web Push
 *
 * Questions and tool calls come from a model that may have been prompt-injected, so
 * everything the gateway sends is rendered as text only (page.js make / showText), never
 * parsed as HTML, and any explicit direction control in it is shown as a mark instead of
 * reordering it.
 */

import { state, ui } from './page.js';
import { connect, loadTabId, readLocation } from './connection.js';
import { tick } from './cards.js';
import { setupRules } from './rules.js';
import { clearFinished } from './finished.js';
import { setupFollow } from './follow.js';
import { setupPush } from './push.js';
import { setConnection, setupNotifyButton, showNotice, updateTitle } from './status.js';

// Whether an open card holds text a person typed and has not sent.
function hasUnsentText() {
  for (const rec of state.cards.values()) {
    if (rec.phase !== 'open') continue;
    for (const area of rec.el.querySelectorAll('textarea')) {
      if (area.value.trim()) return true;
    }
  }
  return false;
}

function init() {
  for (const id of ['follow', 'connection', 'presence', 'you', 'agent-status', 'notify', 'notice', 'toast',
    'requests', 'empty', 'finished', 'finished-heading', 'finished-list', 'clear-finished',
    'live', 'session-label']) {
    ui[id.replace(/-(\w)/g, (_, c) => c.toUpperCase())] = document.getElementById(id);
  }
  ui.list = ui.requests;
  const { session, key } = readLocation();
  state.session = session;
  state.key = key;
  ui.sessionLabel.textContent = session;
  ui.sessionLabel.title = session;
  setupNotifyButton();
  setupFollow();
  setupPush();
  setupRules();
  ui.clearFinished.addEventListener('click', clearFinished);
  // The key lives in the fragment; a changed fragment is a different link, so start over.
  window.addEventListener('hashchange', () => location.reload());
  document.addEventListener('visibilitychange', () => {
    if (!document.hidden) state.unseen.clear();
    updateTitle();
  });
  if (!session || !key) {
    setConnection('closed', 'Not connected');
    showNotice(!session
      ? 'This link has no session id. Open the full link your agent printed.'
      : 'This link is missing its key. Open the full link your agent printed — ' +
        'it ends with #k= followed by the viewer key.');
    return;
  }
  // Typed text lives only in the page: ask before a reload or a closed tab throws it away.
  window.addEventListener('beforeunload', (event) => {
    if (!hasUnsentText()) return;
    event.preventDefault();
    event.returnValue = '';
  });
  state.tab = loadTabId();
  window.addEventListener('online', () => { if (state.retryAt) connect(); });
  setInterval(tick, 250);
  connect();
}

init();
