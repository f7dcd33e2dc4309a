/* Tool-call approvals (the `approval` dialect): the agent asks before it runs one or more
 * tool calls. Each call is shown with its name, the description the agent gave, and its
 * arguments as an inert tree (argtree.js); the person picks one of the decisions the call
 * allows: approve it, edit its arguments first (argedit.js, checked before sending), reject
 * it (with an optional reason) or respond with a message instead of running it. The tab
 * sends one decision per call, in order: {"decisions": [{"type": "approve"}, ...]}.
 *
 * Remembered approvals: a person the gateway knows may have an approval remembered, for the
 * rest of the session or always for the agent key that asked (where the request's `remember`
 * allows), for these exact arguments or any; the gateway then approves matching calls in
 * their name without asking. A call a rule already approved when it was asked (the request's
 * `ruled`) is shown approved, with nothing to decide; a request rules approve whole ends at
 * once (`via: "rule"`). The session's rules are listed by rules.js.
 *
 * A call record (qr, as cards.js calls it) holds what a question record does (fieldset,
 * errorEl, inputs, name, detail, serverErrors, localError) and: call, args, decisions,
 * reason / message (their text boxes), ed (the editor, made when Edit is first picked),
 * rememberInputs / argsInputs (the remember choice, when offered) and ruled (the rule that
 * approved it, if one did).
 */

import { growTextarea, make, send, serverNow, shorten, state, timeElement, ui } from './page.js';
import { updateReadiness } from './readiness.js';
import { announce } from './status.js';
import { buildArgTree } from './argtree.js';
import { buildEditor, diffArgs, readEdit } from './argedit.js';
import { isObject, pathText } from './argcheck.js';

const KINDS = ['approve', 'edit', 'reject', 'respond'];
const DEFAULT_DECISIONS = ['approve', 'reject'];
const DECISION_WORDS = {
  approve: ['Approve', 'Run it with these arguments'],
  edit: ['Edit', 'Change the arguments, then run it'],
  reject: ['Reject', 'Do not run it; you may say why'],
  respond: ['Respond', 'Do not run it; send the agent a message instead'],
};
const MAX_MESSAGE_CHARS = 10000;
// A description longer than this, or with more lines, is folded behind its start.
const DESCRIPTION_FOLD_CHARS = 300;
const DESCRIPTION_FOLD_LINES = 4;

export const APPROVAL_INCOMPLETE = 'Pick a decision for every call, and fix anything marked, to submit.';

// The line at the top of the card: whose the calls are, before anything they say.
export function approvalNote(view) {
  const several = Array.isArray(view.calls) && view.calls.length > 1;
  return (several ? 'Tool calls requested by the agent — check each one before you approve.'
    : 'Tool call requested by the agent — check it before you approve.') +
    ' askgate never asks for passwords or keys.';
}

function allowedDecisions(call) {
  const given = Array.isArray(call.decisions) && call.decisions.length ? call.decisions : DEFAULT_DECISIONS;
  return KINDS.filter((kind) => given.includes(kind));
}

export function buildCall(rec, call, ci) {
  const id = rec.prefix + '-c' + ci;
  const total = rec.view.calls.length;
  const name = String(call.name ?? '');
  const args = isObject(call.args) ? call.args : {};
  const ruled = ruledOf(rec.view, ci);
  const wrap = make('div', 'call');
  wrap.dataset.index = String(ci);
  wrap.setAttribute('role', 'group');
  wrap.setAttribute('aria-labelledby', id + '-head');
  // Under the card's title an h3, else an h2: headings never skip a level.
  const head = wrap.appendChild(make(rec.view.title ? 'h3' : 'h2', 'call-head', null, { id: id + '-head' }));
  head.append(make('span', 'chip', total > 1 ? 'Tool call ' + (ci + 1) + ' of ' + total : 'Tool call'), ' ',
    make('span', 'call-name', name));
  if (typeof call.description === 'string' && call.description.trim()) {
    wrap.appendChild(buildDescription(call.description));
  }
  const argsBox = wrap.appendChild(make('div', 'call-args'));
  argsBox.appendChild(make('p', 'call-args-label', 'Arguments'));
  argsBox.appendChild(buildArgTree(args));
  if (ruled) return buildRuledCall(rec, wrap, { call, args, ci, id, name, total, ruled });

  const fieldset = wrap.appendChild(make('fieldset', 'question call-decision'));
  fieldset.dataset.index = String(ci);
  const decisions = allowedDecisions(call);
  const legend = fieldset.appendChild(make('legend'));
  legend.append(make('span', 'question-text', 'Your decision on ' + (total > 1 ? 'call ' + (ci + 1) : 'this call')),
    make('span', 'question-hint', decisions.length > 1 ? 'Pick one' : 'The only decision this call allows'));
  const qr = {
    call, args, decisions, fieldset, id, inputs: [], serverErrors: [], localError: '', ed: null,
    toolName: name, name: 'tool call ' + shorten(name, 80) + (total > 1 ? ' and ' + (total - 1) + ' more' : ''),
    detail: 'Tool call ' + name + (typeof call.description === 'string' ? ': ' + call.description : ''),
  };
  const list = fieldset.appendChild(make('div', 'options'));
  decisions.forEach((kind, i) => list.appendChild(decisionRow(rec, qr, kind, i)));
  const scopes = rememberScopes(rec.view);
  if (decisions.includes('approve') && scopes.length) {
    qr.rememberWrap = fieldset.appendChild(buildRemember(rec, qr, scopes));
  }
  if (decisions.includes('reject')) {
    qr.reasonWrap = fieldset.appendChild(textBox(rec, qr, 'reason', 'Why not? (optional; the agent is told)'));
  }
  if (decisions.includes('respond')) {
    qr.messageWrap = fieldset.appendChild(textBox(rec, qr, 'message', 'Your message to the agent (required)'));
    qr.message.setAttribute('aria-required', 'true');
  }
  if (decisions.includes('edit')) qr.editWrap = fieldset.appendChild(make('div', 'call-extra', null, { hidden: true }));
  qr.errorEl = fieldset.appendChild(make('div', 'question-error', null, { id: id + '-err' }));
  fieldset.setAttribute('aria-describedby', qr.errorEl.id);
  if (rec.view.quorum) {
    qr.tallyEl = wrap.insertBefore(make('p', 'call-tally', null, { id: id + '-tally' }), fieldset);
    showCallTally(rec, qr, ci);
  }
  rec.questions.push(qr);
  return wrap;
}

// The rule that approved call `ci` of `view` when it was asked, or null.
function ruledOf(view, ci) {
  const ruled = Array.isArray(view.ruled) ? view.ruled[ci] : null;
  return isObject(ruled) ? ruled : null;
}

// A call a rule approved: shown whole, with no decision to make. Its record still answers,
// always `approve` (the gateway takes it as approved whatever is sent), so the answer holds one
// decision per call.
function buildRuledCall(rec, wrap, { call, args, ci, id, name, total, ruled }) {
  const box = wrap.appendChild(make('div', 'call-ruled', null, { id: id + '-ruled' }));
  box.dataset.index = String(ci);
  box.appendChild(make('p', 'call-ruled-text', ruledText(ruled)));
  const qr = {
    call, args, decisions: ['approve'], fieldset: box, id, inputs: [], serverErrors: [], localError: '',
    ed: null, ruled, toolName: name,
    name: 'tool call ' + shorten(name, 80) + (total > 1 ? ' and ' + (total - 1) + ' more' : ''),
    detail: 'Tool call ' + name + ' (already approved)',
  };
  qr.errorEl = box.appendChild(make('div', 'question-error', null, { id: id + '-err' }));
  rec.questions.push(qr);
  return wrap;
}

// "Approved by a remembered approval of alice@example.com, for this session".
function ruledText(ruled) {
  const user = typeof ruled.user === 'string' && ruled.user ? ruled.user : 'someone';
  return 'Approved by a remembered approval of ' + user + ', ' +
    (ruled.scope === 'key' ? 'always, for this agent key' : 'for this session');
}

// One call's votes under a quorum: "1 of 2 approved — alice@example.com", who rejected it.
function showCallTally(rec, qr, ci) {
  const quorum = rec.view.quorum;
  const tally = (Array.isArray(rec.view.tally) && rec.view.tally[ci]) || {};
  const approved = Array.isArray(tally.approved_by) ? tally.approved_by.map(String) : [];
  const rejected = Array.isArray(tally.rejected_by) ? tally.rejected_by.map(String) : [];
  const needed = Number(quorum.needed) || 2;
  const parts = [approved.length + ' of ' + needed + ' approved'];
  if (approved.length) parts.push(' — ' + approved.join(', '));
  if (rejected.length) {
    parts.push('; rejected by ' + rejected.join(', ') +
      (quorum.veto ? ' (one rejection rejects it)' : ' (' + needed + ' rejections reject it)'));
  }
  qr.tallyEl.replaceChildren(make('span', 'tally-text', parts.join('')));
}

// A vote was counted (a `tally` frame): each call's votes shown anew.
export function showTally(rec, frame) {
  if (!rec.view.quorum || !Array.isArray(frame.calls)) return;
  rec.view = Object.assign({}, rec.view, { tally: frame.calls });
  rec.questions.forEach((qr, ci) => { if (qr.tallyEl) showCallTally(rec, qr, ci); });
}

function buildDescription(text) {
  const box = make('div', 'call-desc');
  box.appendChild(make('p', 'call-desc-label', 'Description from the agent'));
  const long = Array.from(text).length > DESCRIPTION_FOLD_CHARS || text.split('\n').length > DESCRIPTION_FOLD_LINES;
  if (!long) {
    box.appendChild(make('p', 'call-desc-text', text));
    return box;
  }
  const fold = box.appendChild(make('details', 'arg-fold'));
  fold.append(make('summary', 'arg-fold-summary', shorten(text, 100)), make('p', 'call-desc-text', text));
  return box;
}

function decisionRow(rec, qr, kind, index) {
  const [label, hint] = DECISION_WORDS[kind];
  const input = make('input', '', null, { type: 'radio', name: qr.id + '-d', id: qr.id + '-' + kind, value: kind });
  input.addEventListener('change', () => onPick(rec, qr));
  const labelEl = make('label', '', null, { htmlFor: input.id });
  labelEl.append(make('span', 'option-label', label), make('span', 'option-desc', hint));
  const row = make('div', 'option decision-' + kind);
  row.append(input, labelEl);
  if (index < 9) row.appendChild(make('span', 'option-key', index + 1)).setAttribute('aria-hidden', 'true');
  qr.inputs.push(input);
  return row;
}

function textBox(rec, qr, what, labelText) {
  const id = qr.id + '-' + what + '-text';
  const wrap = make('div', 'call-extra', null, { hidden: true });
  wrap.appendChild(make('label', 'edit-label', labelText, { htmlFor: id }));
  const area = wrap.appendChild(make('textarea', 'text-input call-' + what, null, { id, rows: 2 }));
  area.addEventListener('input', () => {
    growTextarea(area);
    qr.serverErrors = [];
    updateReadiness(rec);
  });
  qr[what] = area;
  return wrap;
}

function picked(qr) {
  const input = qr.inputs.find((i) => i.checked);
  return input ? input.value : '';
}

function onPick(rec, qr) {
  const kind = picked(qr);
  if (kind === 'edit' && !qr.ed) {
    const editCheck = qr.call.edit_check === 'schema' ? 'schema' : 'object';
    const note = editCheck === 'schema'
      ? "Your edit is checked against the tool's argument schema before it is sent."
      : typeof qr.call.edit_note === 'string' && qr.call.edit_note.trim()
        ? qr.call.edit_note
        : 'This tool has no argument schema, so your edit is only checked to be a JSON object.';
    qr.ed = buildEditor({
      id: qr.id + '-edit', args: qr.args, schema: qr.call.args_schema, check: editCheck, note,
      onChange: () => { qr.serverErrors = []; updateReadiness(rec); },
    });
    qr.editWrap.appendChild(qr.ed.panel);
  }
  if (qr.rememberWrap) qr.rememberWrap.hidden = kind !== 'approve';
  if (qr.reasonWrap) qr.reasonWrap.hidden = kind !== 'reject';
  if (qr.messageWrap) qr.messageWrap.hidden = kind !== 'respond';
  if (qr.editWrap) qr.editWrap.hidden = kind !== 'edit';
  qr.serverErrors = [];
  updateReadiness(rec);
}

function tooLong(text) {
  const length = Array.from(text).length;
  return length > MAX_MESSAGE_CHARS
    ? `This is ${length.toLocaleString('en')} characters long; the agent takes at most 10,000.`
    : '';
}

// This call's decision: {answer}, {problem} or {} (not decided yet).
export function readDecision(qr) {
  if (qr.ruled) return { answer: { type: 'approve' } };
  switch (picked(qr)) {
    case 'approve':
      return { answer: approval(qr) };
    case 'reject': {
      const text = qr.reason.value;
      const problem = tooLong(text);
      if (problem) return { problem };
      return { answer: text.trim() ? { type: 'reject', message: text } : { type: 'reject' } };
    }
    case 'respond': {
      const text = qr.message.value;
      if (!text.trim()) return {};
      const problem = tooLong(text);
      return problem ? { problem } : { answer: { type: 'respond', message: text } };
    }
    case 'edit': {
      const read = readEdit(qr.ed);
      if (read.problem) return { problem: read.problem };
      return read.value ? { answer: { type: 'edit', args: read.value } } : {};
    }
    default:
      return {};
  }
}

// Whether "Approve all" is offered: several calls still to decide, each allowing approve.
export function approvesAll(view) {
  const calls = Array.isArray(view.calls) ? view.calls : [];
  const open = calls.filter((call, ci) => !ruledOf(view, ci));
  return open.length > 1 && open.every((call) => allowedDecisions(call || {}).includes('approve'));
}

// "Approve all": every call's Approve picked, and the decisions for them (each remembered as
// its own choice says).
export function approveAll(rec) {
  for (const qr of rec.questions.filter((q) => !q.ruled)) {
    const input = qr.inputs.find((i) => i.value === 'approve');
    if (input) input.checked = true;
    onPick(rec, qr);
  }
  return { decisions: rec.questions.map((qr) => (qr.ruled ? { type: 'approve' } : approval(qr))) };
}

/* ---------- remembering an approval ---------- */

const REMEMBER_CHOICES = [
  ['', 'Just this once'],
  ['session', 'For the rest of this session'],
  ['key', 'Always, for this agent'],
];
const ARGS_CHOICES = [
  ['same', 'Only these exact arguments'],
  ['any', 'Any arguments to this tool'],
];
const REMEMBER_NOTE = 'Later calls it matches are approved in your name without anyone being ' +
  'asked, until it expires or is revoked (under “Remembered approvals” on the session’s page).';

// Where this tab may have an approval of `view` remembered: where the request allows, and only
// for a person the gateway knows (a rule acts as the person who made it: an anonymous link
// holder has no one to make it for).
function rememberScopes(view) {
  const you = state.you;
  if (!you || you.user === null) return [];
  const allowed = Array.isArray(view.remember) ? view.remember : [];
  return ['session', 'key'].filter((scope) => allowed.includes(scope));
}

// Beside Approve: whether to remember the approval, and for which later calls. Shown while
// Approve is picked; "Just this once" unless the person picks otherwise.
function buildRemember(rec, qr, scopes) {
  const wrap = make('div', 'call-extra call-remember', null, { hidden: true });
  const when = wrap.appendChild(make('fieldset', 'remember-group'));
  when.appendChild(make('legend', 'remember-legend', 'Remember this approval?'));
  const whenList = when.appendChild(make('div', 'remember-choices'));
  qr.rememberInputs = REMEMBER_CHOICES.filter(([scope]) => !scope || scopes.includes(scope))
    .map(([scope, label]) => whenList.appendChild(
      choiceRow(qr.id + '-remember', scope || 'once', label, !scope, () => onRemember(rec, qr))).firstChild);
  qr.argsGroup = wrap.appendChild(make('fieldset', 'remember-group', null, { hidden: true }));
  qr.argsGroup.appendChild(make('legend', 'remember-legend', 'Approve later calls with'));
  const argsList = qr.argsGroup.appendChild(make('div', 'remember-choices'));
  qr.argsInputs = ARGS_CHOICES.map(([value, label]) => argsList.appendChild(
    choiceRow(qr.id + '-rargs', value, label, value === 'same', () => onRemember(rec, qr))).firstChild);
  qr.rememberNote = wrap.appendChild(make('p', 'remember-note', REMEMBER_NOTE, { hidden: true }));
  return wrap;
}

// A radio and its words, in one label: the whole row picks it.
function choiceRow(name, value, text, checked, onChange) {
  const input = make('input', '', null, { type: 'radio', name, value, checked, id: name + '-' + value });
  input.addEventListener('change', onChange);
  const row = make('label', 'remember-choice', null, { htmlFor: input.id });
  row.append(input, make('span', 'remember-choice-text', text));
  return row;
}

function onRemember(rec, qr) {
  const remembering = Boolean(rememberScope(qr));
  qr.argsGroup.hidden = !remembering;
  qr.rememberNote.hidden = !remembering;
  qr.serverErrors = [];
  updateReadiness(rec);
}

// Where the approval of call `qr` is to be remembered: 'session', 'key' or '' (just this once).
function rememberScope(qr) {
  const input = (qr.rememberInputs || []).find((i) => i.checked);
  return input && input.value !== 'once' ? input.value : '';
}

// The approve decision of call `qr`, with what it asks to have remembered.
function approval(qr) {
  const remember = rememberScope(qr);
  if (!remember) return { type: 'approve' };
  const args = (qr.argsInputs.find((i) => i.checked) || { value: 'same' }).value;
  return { type: 'approve', remember, args };
}

/* ---------- an answer, in words ---------- */

function quote(text) {
  return '“' + shorten(text, 160) + '”';
}

// One decision as a person reads it: "Approved", "Edited: changed query", "Rejected: “why”".
export function decisionText(decision, args) {
  const d = isObject(decision) ? decision : {};
  const message = typeof d.message === 'string' && d.message.trim() ? d.message : '';
  switch (d.type) {
    case 'approve':
      return d.remember === 'session' || d.remember === 'key'
        ? 'Approved, and remembered ' + (d.remember === 'key' ? 'always, for this agent key' : 'for this session')
        : 'Approved';
    case 'edit': {
      const changes = isObject(d.args) && isObject(args) ? diffArgs(args, d.args) : [];
      const named = changes.slice(0, 5).map((c) => c.kind + ' ' + shorten(c.key, 40));
      if (changes.length > 5) named.push('and ' + (changes.length - 5) + ' more');
      return 'Edited' + (named.length ? ': ' + named.join(', ') : '');
    }
    case 'reject':
      return 'Rejected' + (message ? ': ' + quote(message) : '');
    case 'respond':
      return 'Responded: ' + quote(message);
    default:
      return 'Answered';
  }
}

// Another tab's decisions, one line a call.
export function summarizeApproval(rec, response) {
  const decisions = response && Array.isArray(response.decisions) ? response.decisions : [];
  if (!decisions.length) return null;
  const list = make('ul', 'summary');
  rec.questions.forEach((qr, i) => {
    list.appendChild(make('li')).append(make('span', 'chip', shorten(qr.toolName, 60) || 'Call ' + (i + 1)),
      make('span', 'summary-value', qr.ruled ? 'Approved by a remembered approval' : decisionText(decisions[i], qr.args)));
  });
  return list;
}

/* ---------- the gateway's refusals, beside their call ---------- */

// What a refusal at `rest` (the path after `response.decisions[i]`) says, naming the field:
// connection.js puts it beside call i.
export function refusalText(rest, message) {
  if (rest === '.args') return 'arguments: ' + message;
  if (rest.startsWith('.args.') || rest.startsWith('.args[')) {
    return fieldOf(rest.slice(rest.startsWith('.args.') ? 6 : 5)) + ': ' + message;
  }
  if (rest === '.message') return 'Your message: ' + message;
  if (rest === '.remember') return 'Remembering this approval: ' + message;
  return message;
}

// The gateway's path inside the arguments (`items[0].name`), in the page's own wording.
function fieldOf(path) {
  const parts = [];
  for (const match of path.matchAll(/\[(\d+)\]|\.?([^.[\]]+)|\["((?:[^"\\]|\\.)*)"\]/g)) {
    if (match[1] !== undefined) parts.push(Number(match[1]));
    else if (match[2] !== undefined) parts.push(match[2]);
    else parts.push(match[3]);
  }
  return parts.length ? pathText(parts) : path;
}

/* ---------- an approval by remembered rules, in words ---------- */

// The rule an ending by rules names (`rule`, or `by` / a history item's `tab` as `rule:<id>`),
// or ''.
export function ruleOf(ending) {
  if (typeof ending.rule === 'string' && ending.rule) return ending.rule;
  const by = [ending.by, ending.tab].find((v) => typeof v === 'string' && v.startsWith('rule:'));
  return by ? by.slice('rule:'.length) : '';
}

// "Approved by remembered approval 3f2a9c01d4 — alice@example.com", for a request rules
// approved whole (`via: "rule"`): no tab answered it, so it is not "answered by" anyone.
export function ruleEndingText(rule, user) {
  return 'Approved by remembered approval' + (rule ? ' ' + rule : '') + (user ? ' — ' + user : '');
}
