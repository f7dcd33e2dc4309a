/* Following the session: the "Follow this session" switch, shown only to a named person
 * (an anonymous link holder cannot follow: the gateway would not know whom to tell). A
 * follower is told of the session's questions that name no one, by mail and in their inbox.
 *
 * The switch is a toggle button: its name stays the same and `aria-pressed` says whether it
 * is on. It shows what the gateway last said (the snapshot's `you.following`, then each
 * `following` frame, which every tab of the person gets), never what was only asked for.
 */

import { send, state, ui } from './page.js';
import { announce, toast } from './status.js';

export function setupFollow() {
  ui.follow.addEventListener('click', () => {
    const on = ui.follow.getAttribute('aria-pressed') !== 'true';
    if (send({ type: 'follow', on }) !== 'sent') {
      toast('Not connected — wait until the page reconnects, then try again.');
      return;
    }
    ui.follow.disabled = true;
  });
}

// Shows the switch for who this tab is (`state.you`), in the state the gateway gave.
export function showFollow() {
  const you = state.you;
  ui.follow.hidden = !you || you.user === null;
  ui.follow.disabled = false;
  ui.follow.setAttribute('aria-pressed', String(Boolean(you && you.following)));
}

// A `following` frame: the gateway kept a change (from this tab, another of the person's, or
// an agent's).
export function onFollowing(frame) {
  const on = frame.on === true;
  const before = ui.follow.getAttribute('aria-pressed') === 'true';
  if (state.you) state.you.following = on;
  showFollow();
  if (on !== before) {
    announce(on
      ? 'You follow this session: questions that name no one reach you by mail and in your inbox.'
      : 'You no longer follow this session.');
  }
}
