/* People: who this tab is (the line saying so under the header), who may answer a request
 * (its `answerers`, and whether this tab may answer at all), and how an ending names whoever
 * ended it ("Answered by alice@example.com", "You answered", "Answered by someone with the
 * link").
 *
 * Who a tab is comes from the gateway's `you`, which it takes from the link's key or a trusted
 * proxy, never from anything the page says; the page only words it. The gateway has the final
 * say on every answer: a card this page shows read-only is one the gateway would refuse, and
 * one it refuses anyway (`forbidden`) turns read-only too.
 *
 * Names come from agents and operators: they are shown as text only (make / showText).
 */

import { make, state, ui } from './page.js';

// How the gateway knew who a tab's person is, as the page words it.
const VIA_TEXT = {
  'personal-link': 'via a personal link',
  proxy: 'via the sign-in proxy',
  'session-link': 'via the session link',
  email: 'from a mail\'s link',
  slack: 'in Slack',
};

// A group named in `answerers` reads as its own word: `group:ops` is "group ops".
const GROUP_PREFIX = 'group:';

// The words for watch-only, when the gateway takes answers only from people it knows.
const WATCH_ONLY_WHY = 'This gateway takes answers only from people it knows, and this link ' +
  'does not name you. Ask for a personal link to answer.';

// `you` as the snapshot gives it, or null (a gateway from before people sends none).
export function setYou(you) {
  const valid = you && typeof you === 'object';
  state.you = valid ? {
    user: typeof you.user === 'string' && you.user ? you.user : null,
    via: typeof you.via === 'string' ? you.via : null,
    may_answer: you.may_answer !== false,
    groups: Array.isArray(you.groups) ? you.groups.filter((g) => typeof g === 'string') : [],
    following: you.following === true,
  } : null;
  renderYou();
}

// The line saying who this tab is: signed in as someone, or an anonymous link holder, and
// whether it may only watch.
function renderYou() {
  const you = state.you;
  const line = ui.you;
  line.hidden = !you;
  if (!you) return line.replaceChildren();
  line.dataset.mayAnswer = String(you.may_answer);
  const parts = [];
  if (you.user !== null) {
    parts.push('Signed in as ', make('strong', 'you-name', you.user));
    if (VIA_TEXT[you.via]) parts.push(' ' + VIA_TEXT[you.via]);
    if (you.groups.length) {
      parts.push(' (' + (you.groups.length === 1 ? 'group ' : 'groups ') +
        listOf(you.groups, 'conjunction') + ')');
    }
    parts.push('.');
  } else {
    parts.push(make('strong', 'you-name', 'Anonymous link holder'));
    parts.push(you.may_answer ? ': this link names no one, so your answers are not signed.' : '.');
  }
  if (!you.may_answer) {
    parts.push(' ', make('strong', 'you-watch', 'Watch only.'), ' ' + WATCH_ONLY_WHY);
  }
  line.replaceChildren(...parts);
}

// "a", "a or b", "a, b or c" (or "and"), as this page's language lists them.
function listOf(items, type) {
  try {
    return new Intl.ListFormat('en', { style: 'long', type }).format(items);
  } catch (_) {
    return items.join(type === 'disjunction' ? ' or ' : ', ');
  }
}

function answerers(view) {
  return Array.isArray(view && view.answerers)
    ? view.answerers.filter((name) => typeof name === 'string' && name) : [];
}

// "Escalated to group:leads and carol@example.com" once request `view` has been escalated
// (its `escalated_to`), else ''. Names as the agent gave them, so a reader can match them to
// the notification that told them.
export function escalationText(view) {
  const to = Array.isArray(view && view.escalated_to)
    ? view.escalated_to.filter((name) => typeof name === 'string' && name) : [];
  return to.length ? 'Escalated to ' + listOf(to, 'conjunction') : '';
}

// Whether this tab may answer or decline request `view`: anyone with the link when it names
// no answerers, else only the people it names and the members of the groups it names.
export function mayAnswer(view) {
  const you = state.you;
  if (you && !you.may_answer) return false;
  // A quorum counts only people the gateway knows.
  if (view.quorum && (!you || you.user === null)) return false;
  const named = answerers(view);
  if (!named.length) return true;
  if (!you || you.user === null) return false;
  return named.some((name) => name === you.user ||
    (name.startsWith(GROUP_PREFIX) && you.groups.includes(name.slice(GROUP_PREFIX.length))));
}

// Why this tab may not answer `view`, as [headline, explanation]: who it waits for, or that
// the tab is watch-only.
export function waitingFor(view) {
  const named = answerers(view).map((name) => name.startsWith(GROUP_PREFIX)
    ? 'group ' + name.slice(GROUP_PREFIX.length) : name);
  if (state.you && !state.you.may_answer) {
    return [named.length ? 'Waiting for ' + listOf(named, 'disjunction') : 'Watch only',
      'This tab can watch but not answer. ' + WATCH_ONLY_WHY];
  }
  if (view.quorum && (!state.you || state.you.user === null)) {
    return ['Waiting for ' + view.quorum.needed + ' people to vote',
      'This needs votes from people the gateway knows: open a personal link, or sign in ' +
      'through the gateway\'s proxy, to vote.'];
  }
  const who = named.length ? listOf(named, 'disjunction') : 'someone else';
  return ['Waiting for ' + who,
    'Only they can answer or decline this question; it is shown here so you can follow it.'];
}

// Whether an ending by tab `by` and person `user` was this page's own: this tab (or one it
// was before the gateway gave it another id), or the same named person in another tab.
export function endedHere(by) {
  return by != null && (by === state.tab || state.pastTabs.has(by));
}

export function endedByYou(by, user) {
  const you = state.you;
  return endedHere(by) || (user != null && you !== null && you.user !== null && user === you.user);
}

// How the gateway knew the person who ended a request: "via a personal link"..., or ''.
export function viaText(via) {
  return VIA_TEXT[via] || '';
}

// How an ending reads. `end` is cards.js's endOf(); `folded` is for the finished list, where
// the words stand alone (not under the card's own questions) and name who ended it.
export function endingText(end, folded) {
  const { outcome, own, here, user } = end;
  if (outcome === 'withdrawn' && WITHDRAWN_BY[end.via]) return WITHDRAWN_BY[end.via];
  if (end.via === 'default') {
    return outcome === 'declined' ? 'Nobody answered in time: declined by default'
      : 'Nobody answered in time: answered by default';
  }
  if (outcome === 'answered' || outcome === 'declined') {
    const verb = outcome === 'answered' ? 'Answered' : 'Declined';
    if (folded) return verb + whoEnded(end);
    if (own && outcome === 'answered' && !here && end.via === 'email') return 'You answered from a mail';
    if (own && outcome === 'answered' && !here && end.via === 'slack') return 'You answered in Slack';
    if (own && outcome === 'answered') return here ? 'You answered · Sent ✓' : 'You answered in another tab';
    if (own) return here ? 'Declined by you' : 'You declined in another tab';
    if (user != null) return verb + ' by ' + user;
    return verb + ' in another tab';
  }
  return OTHER_ENDINGS[outcome] || 'Closed';
}

// Who answered or declined, in the finished list: "you", the person ("alice@example.com"),
// with how the gateway knew them ("via a personal link"), or "someone with the link" (an
// anonymous link holder); a gateway that does not say how leaves "in another tab".
function whoEnded(end) {
  const how = end.via !== 'session-link' && viaText(end.via);
  const known = (name) => ' by ' + name + (how ? ' ' + how : '');
  if (end.own) return known('you');
  if (end.user != null) return known(end.user);
  return end.via === 'session-link' ? ' by someone with the link' : ' in another tab';
}

// Who withdrew a request, by its `via`; without one, the agent (as before withdrawals said).
const WITHDRAWN_BY = {
  operator: 'Withdrawn by an operator',
  gateway: 'Withdrawn by the gateway: its agent was gone too long',
};

const OTHER_ENDINGS = {
  timed_out: 'Timed out',
  withdrawn: 'Withdrawn by the agent',
  closed: 'Ended while this page was disconnected',
};
