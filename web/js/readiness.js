/* Whether a card can be sent: each question read by its dialect, the problems shown beside
 * it (the page's own and the gateway's), and Submit enabled to match. The dialect modules call
 * it as people type; it needs nothing of the cards but the record it is given.
 */

import { make } from './page.js';

export function updateReadiness(rec) {
  let ready = rec.supported;
  for (const qr of rec.questions) {
    const result = rec.dialect.read(qr);
    qr.localError = result.problem || '';
    ready = ready && 'answer' in result;
    for (const input of qr.fieldset.querySelectorAll('.option > input')) {
      input.parentNode.classList.toggle('is-picked', input.checked);
    }
  }
  renderErrors(rec);
  // A dialect that reveals what is missing keeps Submit pressable, to say so.
  if (rec.submitBtn) rec.submitBtn.disabled = !((ready || rec.dialect.reveal) && rec.phase === 'open');
  rec.extraButtons.forEach((button) => { button.disabled = rec.phase !== 'open'; });
  return ready;
}

export function renderErrors(rec) {
  rec.errorEl.replaceChildren(...rec.cardErrors.map((m) => make('p', '', m)));
  for (const qr of rec.questions) {
    const messages = qr.serverErrors.concat(qr.localError ? [qr.localError] : []);
    qr.errorEl.replaceChildren(...messages.map((m) => make('p', '', m)));
    qr.fieldset.classList.toggle('has-error', messages.length > 0);
  }
}
