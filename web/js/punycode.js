// Punycode (RFC 3492) decoding, for showing what an `xn--` host name reads as: a name
// written in ASCII can stand for letters of any alphabet, and the page checks those.

const BASE = 36;
const T_MIN = 1;
const T_MAX = 26;
const SKEW = 38;
const DAMP = 700;
const INITIAL_BIAS = 72;
const INITIAL_N = 128;
const MAX_CODE_POINT = 0x10ffff;

// The bias for the next code point, from how far the last one moved (RFC 3492, 6.1).
function adapt(delta, points, first) {
  let scaled = first ? Math.floor(delta / DAMP) : Math.floor(delta / 2);
  scaled += Math.floor(scaled / points);
  let k = 0;
  while (scaled > ((BASE - T_MIN) * T_MAX) / 2) {
    scaled = Math.floor(scaled / (BASE - T_MIN));
    k += BASE;
  }
  return k + Math.floor(((BASE - T_MIN + 1) * scaled) / (scaled + SKEW));
}

// The value of one punycode digit (`a`-`z` 0-25, `0`-`9` 26-35), or BASE if it is none.
function digitOf(code) {
  if (code >= 0x30 && code <= 0x39) return code - 0x30 + 26;
  if (code >= 0x41 && code <= 0x5a) return code - 0x41;
  if (code >= 0x61 && code <= 0x7a) return code - 0x61;
  return BASE;
}

// The Unicode text `encoded` (a label without its `xn--`) stands for, or null when it is not
// valid punycode.
export function decodePunycode(encoded) {
  const delimiter = encoded.lastIndexOf('-');
  const points = [];
  for (let at = 0; at < Math.max(delimiter, 0); at += 1) {
    const code = encoded.charCodeAt(at);
    if (code >= 0x80) return null;
    points.push(code);
  }
  let n = INITIAL_N;
  let bias = INITIAL_BIAS;
  let i = 0;
  let at = delimiter >= 0 ? delimiter + 1 : 0;
  while (at < encoded.length) {
    const before = i;
    let weight = 1;
    for (let k = BASE; ; k += BASE) {
      if (at >= encoded.length) return null;
      const digit = digitOf(encoded.charCodeAt(at));
      at += 1;
      if (digit >= BASE) return null;
      i += digit * weight;
      const threshold = k <= bias ? T_MIN : k >= bias + T_MAX ? T_MAX : k - bias;
      if (digit < threshold) break;
      weight *= BASE - threshold;
      if (!Number.isSafeInteger(i) || !Number.isSafeInteger(weight)) return null;
    }
    const length = points.length + 1;
    bias = adapt(i - before, length, before === 0);
    n += Math.floor(i / length);
    i %= length;
    if (n > MAX_CODE_POINT || (n >= 0xd800 && n <= 0xdfff)) return null;
    points.splice(i, 0, n);
    i += 1;
  }
  return String.fromCodePoint(...points);
}

// `host` with each `xn--` label as the Unicode it stands for (a label that does not decode
// is left as it is).
export function unicodeHost(host) {
  return host.split('.').map((label) => {
    const lower = label.toLowerCase();
    if (!lower.startsWith('xn--')) return label;
    return decodePunycode(lower.slice(4)) ?? label;
  }).join('.');
}
