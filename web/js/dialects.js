/* The page's table of dialects: for each one askgate serves, how its card is built, read and
 * summarised. A dialect the gateway registers has its entry here (a gateway test checks it).
 */

import { buildQuestion, readAnswer, summarizeResponse } from './harness.js';
import { buildDeepQuestion, readDeepAnswer, summarizeDeep } from './deepagents.js';
import {
  APPROVAL_INCOMPLETE, approvalNote, approveAll, approvesAll, buildCall, readDecision,
  refusalText, showTally, summarizeApproval,
} from './approval.js';
import {
  FORM_INCOMPLETE, buildFormItem, formActions, formDeclined, formHint, formItems, formNote, formResponse,
  formSubmits, placeFormRefusal, readFormItem, revealForm, summarizeForm,
} from './form.js';
import {
  CLAUDE_INCOMPLETE, buildClaudeItem, claudeItems, claudeResponse, placeClaudeRefusal, readClaude,
  summarizeClaude,
} from './claude.js';


const QUESTION_HINT = 'Enter submits · Ctrl+Enter inside a text box · keys 1–9 pick options';

// A question record (qr) holds: fieldset, errorEl, inputs (the options keys 1–9 pick),
// name and detail (for announcements and notifications), serverErrors and localError.
// `items` names the view's list a dialect builds a record for each of (or is a function of
// the view giving that list); `read(qr)` returns {answer}, {problem: message} or {} (not
// answered yet); `respond` makes the response from the answers, in order. Optional: `note`
// (the card's first line, by default AGENT_NOTE), `hint` (a function of the view, giving
// null for none), `submits(view)` (false: no Submit button), `actions` (more buttons beside
// Submit, each {label, className, note?} and either `response(rec)` (the answer it sends;
// null sends nothing) with `sent(rec)` (run once it is sent, on the same click), or
// `dismiss: true` (it sends a decline that puts the request aside)), `declined(response)`
// (words added to a declined card's ending, from what the agent was given), `reveal(rec)`
// (Submit stays enabled, and pressing it on an incomplete answer makes every record say what
// it lacks), `place(rec, path)` (which
// record a gateway's refusal at `path` is about: {index, rest}, or null for the whole
// answer) and `refusal(rest, message)` (the words of a refusal inside one answer, `rest`
// being the path after the record's part, as `response.decisions[i]`).
export const DIALECTS = {
  harness: {
    items: 'questions', build: buildQuestion, read: readAnswer, summarize: summarizeResponse,
    respond: (answers) => ({ answers }), hint: QUESTION_HINT,
    incomplete: 'Answer every question (pick an option or write your own) to submit.',
  },
  deepagents: {
    items: 'questions', build: buildDeepQuestion, read: readDeepAnswer, summarize: summarizeDeep,
    respond: (answers) => ({ answers }), hint: QUESTION_HINT,
    incomplete: 'Answer every question that is not marked optional to submit.',
  },
  approval: {
    items: 'calls', build: buildCall, read: readDecision, summarize: summarizeApproval,
    respond: (decisions) => ({ decisions }), note: approvalNote, refusal: refusalText,
    hint: 'Enter submits · Ctrl+Enter inside a text box · keys 1–4 pick a decision',
    actions: (view) => (approvesAll(view)
      ? [{ label: 'Approve all ' + view.calls.length + ' calls', className: 'approve-all', response: approveAll }]
      : []),
    incomplete: APPROVAL_INCOMPLETE,
    tally: showTally,
  },
  form: {
    items: formItems, build: buildFormItem, read: readFormItem, summarize: summarizeForm,
    respond: formResponse, note: formNote, hint: formHint, submits: formSubmits,
    actions: formActions, declined: formDeclined, reveal: revealForm, place: placeFormRefusal,
    incomplete: FORM_INCOMPLETE,
  },
  claude: {
    items: claudeItems, build: buildClaudeItem, read: readClaude, summarize: summarizeClaude,
    respond: claudeResponse, place: placeClaudeRefusal, hint: QUESTION_HINT,
    incomplete: CLAUDE_INCOMPLETE,
  },
};

// The dialect named `name`, or null for one this page does not know.
export function dialectOf(name) {
  return Object.prototype.hasOwnProperty.call(DIALECTS, name) ? DIALECTS[name] : null;
}
