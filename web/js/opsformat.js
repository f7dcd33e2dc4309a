/* The operator console's small shared words: a span of time as people say it, and the
 * checks that let the page read the gateway's JSON without trusting its shape.
 */

export function isObject(value) {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

// `value` when it is a finite number, else 0: a figure the gateway left out counts nothing.
export function count(value) {
  return Number.isFinite(value) ? value : 0;
}

// A span of time in words: "45 s", "3 min 5 s", "2 h 10 min", "3 d 4 h".
export function duration(ms) {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return s + ' s';
  const m = Math.floor(s / 60);
  if (m < 60) return m + ' min' + (s % 60 ? ' ' + (s % 60) + ' s' : '');
  const h = Math.floor(m / 60);
  if (h < 24) return h + ' h' + (m % 60 ? ' ' + (m % 60) + ' min' : '');
  const d = Math.floor(h / 24);
  return d + ' d' + (h % 24 ? ' ' + (h % 24) + ' h' : '');
}

export function ago(ms) {
  return duration(ms) + ' ago';
}

// The first message of a refusal's `errors` (the gateway's error body), or `fallback`.
export function errorMessage(body, fallback) {
  const first = isObject(body) && Array.isArray(body.errors) ? body.errors[0] : null;
  return isObject(first) && typeof first.message === 'string' && first.message ? first.message : fallback;
}

// A moment of the gateway's clock as this computer's wall clock, to the second.
export function clockTime(atMs, offset) {
  return new Date(atMs - offset).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });
}
