/* The session's remembered approvals (see approval.js for how one is made): the list under
 * the questions, each rule's tool, arguments (or any), where it holds, who made it and when it
 * expires, with Revoke for a named person who may answer here. The gateway sends the whole
 * list (`rules`) when asked, after each snapshot, and to every tab whenever one is made or
 * revoked; a gateway from before remembered approvals sends none, and the list stays hidden.
 */

import { make, send, serverNow, state, timeElement, ui } from './page.js';
import { announce } from './status.js';
import { buildArgTree } from './argtree.js';
import { isObject } from './argcheck.js';

const rules = {
  list: [],
  asked: false, // a `rules` went out and nothing has answered it yet
  unknown: false, // the gateway refused `rules` as a frame it does not know: asked no more
  revoking: '', // the id of the rule this tab asked to revoke, until the gateway says
  revokingAt: 0, // where in the list it was
  refocus: false, // whether focus was on its Revoke button, to be put somewhere that stays
  seq: 0, // numbers items, for element ids that never contain rule ids
};

const SCOPE_WORDS = {
  session: 'for the rest of this session',
  key: 'always, for this agent key (in every session)',
};

// Takes the section's elements (connection.js routes `rules` frames and errors here).
export function setupRules() {
  for (const id of ['rules', 'rules-heading', 'rules-why', 'rules-status', 'rules-list']) {
    ui[id.replace(/-(\w)/g, (_, c) => c.toUpperCase())] = document.getElementById(id);
  }
}

// Asks for the session's rules (once per snapshot), unless the gateway does not know the frame.
export function askForRules() {
  if (!rules.unknown && send({ type: 'rules' }) === 'sent') rules.asked = true;
}

// A `rules` frame: the session's rules as they now are.
export function onRules(frame) {
  rules.asked = false;
  const given = Array.isArray(frame.rules) ? frame.rules : [];
  rules.list = given.filter((r) => isObject(r) && typeof r.id === 'string' && r.id && typeof r.tool === 'string');
  const gone = rules.revoking && !rules.list.some((r) => r.id === rules.revoking) ? rules.revoking : '';
  if (gone) {
    rules.revoking = '';
    say('');
  }
  renderRules();
  if (gone) {
    announce('Remembered approval ' + gone + ' revoked: its calls will be asked again.');
    if (rules.refocus) focusAfterRevoke('');
  }
}

// An `error` frame: true when it is about rules, and said here. A refused revocation is said
// beside the list; a gateway from before remembered approvals refuses `rules` itself as a
// frame it does not know, which is no fault of the person's: nothing is said.
export function onRulesError(frame) {
  const message = String(frame.message || '');
  if (rules.asked && frame.code === 'bad_frame' && /\brules\b/.test(message)) {
    rules.asked = false;
    rules.unknown = true;
    return true;
  }
  if (!rules.revoking) return false;
  const id = rules.revoking;
  rules.revoking = '';
  say('Remembered approval ' + id + ' was not revoked: ' + (message || String(frame.code || 'refused')) +
    (/[.!?]$/.test(message) ? '' : '.'));
  renderRules();
  if (rules.refocus) focusAfterRevoke(id);
  return true;
}

// Forgets the list (the page can no longer show the session).
export function dropRules() {
  rules.list = [];
  rules.revoking = '';
  say('');
  renderRules();
}

function say(text) {
  if (ui.rulesStatus) ui.rulesStatus.textContent = text;
}

// Whether this tab may revoke: the gateway takes it only from a named person who may answer.
function mayRevoke() {
  const you = state.you;
  return Boolean(you && you.user !== null && you.may_answer);
}

function renderRules() {
  if (!ui.rules) return;
  const now = serverNow();
  // A tab left open keeps a list the gateway would no longer send an expired rule in.
  const shown = rules.list.filter((r) => !(Number.isFinite(r.expires_ms) && r.expires_ms <= now));
  // A message about a revocation stays on show with the list it is about.
  ui.rules.hidden = shown.length === 0 && !ui.rulesStatus.textContent;
  ui.rulesHeading.textContent = shown.length ? 'Remembered approvals (' + shown.length + ')' : 'Remembered approvals';
  ui.rulesWhy.textContent = 'Tool calls these match are approved without anyone being asked. ' +
    (mayRevoke() ? 'Revoke one to be asked again.' : 'Only a person the gateway knows can revoke one.');
  // The list is made anew: a Revoke button that had focus keeps it in its new row.
  const active = document.activeElement;
  const focused = active && active.matches('.rule-revoke') && ui.rulesList.contains(active)
    ? active.closest('.rule').dataset.ruleId : '';
  ui.rulesList.replaceChildren(...shown.map(ruleItem));
  const again = focused && [...ui.rulesList.children].find((item) => item.dataset.ruleId === focused);
  const button = again && again.querySelector('.rule-revoke');
  if (button) button.focus({ preventScroll: true });
}

function ruleItem(rule) {
  rules.seq += 1;
  const id = 'rule' + rules.seq;
  const item = make('li', 'rule');
  item.dataset.ruleId = rule.id;
  const body = item.appendChild(make('div', 'rule-body'));
  const what = body.appendChild(make('p', 'rule-what', null, { id: id + '-what' }));
  what.append(make('span', 'call-name', rule.tool), ' ',
    make('span', 'rule-scope', SCOPE_WORDS[rule.scope] || 'for this session'));
  if (isObject(rule.args)) {
    const args = body.appendChild(make('div', 'rule-args'));
    args.append(make('p', 'call-args-label', 'Only with these arguments'), buildArgTree(rule.args));
  } else {
    body.appendChild(make('p', 'rule-args rule-args-any', 'Any arguments'));
  }
  const how = body.appendChild(make('p', 'rule-how'));
  how.append('Remembered approval ' + rule.id + ' by ', make('span', 'rule-user', String(rule.user ?? 'someone')));
  if (Number.isFinite(rule.created_ms)) how.append(' ', timeElement(rule.created_ms, 'at'));
  if (Number.isFinite(rule.expires_ms)) how.append('; expires ', timeElement(rule.expires_ms, 'at'));
  if (mayRevoke()) {
    const revoking = rules.revoking === rule.id;
    const button = item.appendChild(make('button', 'ghost rule-revoke', revoking ? 'Revoking…' : 'Revoke',
      { type: 'button', id: id + '-revoke', disabled: revoking }));
    // Read as "Revoke" and which rule: a list of identical "Revoke" buttons says nothing.
    button.setAttribute('aria-labelledby', button.id + ' ' + what.id);
    button.addEventListener('click', () => revoke(rule, button));
  }
  return item;
}

function revoke(rule, button) {
  if (rules.revoking) return;
  const sent = send({ type: 'revoke_rule', id: rule.id });
  if (sent !== 'sent') {
    say('Not connected — wait until the page reconnects, then try again.');
    return;
  }
  say('');
  rules.revoking = rule.id;
  rules.revokingAt = [...ui.rulesList.children].findIndex((item) => item.dataset.ruleId === rule.id);
  rules.refocus = document.activeElement === button;
  button.disabled = true;
  button.textContent = 'Revoking…';
  // A disabled button lets go of focus: it waits on the status line, which says what happens.
  if (rules.refocus) {
    ui.rulesStatus.tabIndex = -1;
    ui.rulesStatus.focus({ preventScroll: true });
  }
}

// Focus after a revocation: the Revoke button it was refused on, or of the rule that took the
// revoked one's place; else the list's heading, or the questions once the list is gone.
function focusAfterRevoke(refusedId) {
  rules.refocus = false;
  const buttons = [...ui.rulesList.querySelectorAll('.rule-revoke')];
  const refused = refusedId && buttons.find((b) => b.closest('.rule').dataset.ruleId === refusedId);
  const next = buttons[Math.min(Math.max(rules.revokingAt, 0), buttons.length - 1)];
  const target = refused || next || (!ui.rules.hidden && ui.rulesHeading) ||
    (ui.empty && !ui.empty.hidden ? ui.empty : ui.list);
  if (!target) return;
  if (!target.matches('button')) target.tabIndex = -1;
  target.focus({ preventScroll: true });
}
