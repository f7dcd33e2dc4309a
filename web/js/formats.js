/* The formats a form's text fields may ask for, checked on the page exactly as the gateway
 * checks them (crates/protocol/src/form/formats.rs, which follows the MCP SDK's pydantic
 * EmailStr and AnyUrl), so that what the page lets through the gateway takes, and what the
 * gateway refuses is said beside the field before anything is sent. A browser test feeds both
 * the same thousands of strings and wants the same verdict on each.
 */

// Rust's `char::is_whitespace` and `char::is_control`.
const SPACE_OR_CONTROL_RE = /[\p{White_Space}\p{Cc}]/u;
// Rust's `char::is_alphanumeric`, for the characters past ASCII.
const WIDE_ALPHANUMERIC_RE = /^[\p{Alphabetic}\p{N}]$/u;
const ASCII_ALPHANUMERIC_RE = /^[A-Za-z0-9]$/;
const ATOM_PUNCTUATION = "!#$%&'*+-/=?^_`{|}~";
const SPECIAL_USE = ['arpa', 'invalid', 'local', 'localhost', 'onion', 'test'];
const SCHEME_RE = /^[A-Za-z][A-Za-z0-9+.-]*$/;
const WEB_SCHEMES = ['http', 'https', 'ws', 'wss', 'ftp'];
const FORBIDDEN_IN_HOST = '#/:<>?@[\\]^|%';

const codePoints = (text) => [...text];
const isWide = (c) => c.codePointAt(0) > 0x7f && WIDE_ALPHANUMERIC_RE.test(c);
const isDigits = (text) => /^[0-9]+$/.test(text);

/* ---------- e-mail addresses ---------- */

// `local@domain.tld`: a dot-atom local part, and a domain of at least two labels of letters,
// digits and inner hyphens, its last not all digits, and not a special-use name.
export function isEmail(text) {
  const at = text.lastIndexOf('@');
  if (at < 0) return false;
  const local = text.slice(0, at);
  const domain = text.slice(at + 1);
  const atom = (c) => ASCII_ALPHANUMERIC_RE.test(c) || ATOM_PUNCTUATION.includes(c) || isWide(c);
  const localFits = local !== '' &&
    local.split('.').every((part) => part !== '' && codePoints(part).every(atom));
  const labelFits = (label) => label !== '' && codePoints(label).length <= 63 &&
    !label.startsWith('-') && !label.endsWith('-') &&
    codePoints(label).every((c) => ASCII_ALPHANUMERIC_RE.test(c) || c === '-' || isWide(c));
  const labels = domain.split('.');
  const lower = domain.toLowerCase();
  return localFits && labels.length >= 2 && codePoints(domain).length <= 253 &&
    labels.every(labelFits) && !isDigits(labels[labels.length - 1]) &&
    !SPECIAL_USE.some((name) => lower === name || lower.endsWith('.' + name));
}

/* ---------- URIs ---------- */

// `scheme:rest`, and where an authority follows, one a WHATWG URL parser takes: a host (for
// the web's schemes), an IPv6 address whole, a dotted-number host a real IPv4 address, a port
// of at most 65535, and none of the characters a host may not hold.
export function isUri(text) {
  const colon = text.indexOf(':');
  if (colon < 0) return false;
  const scheme = text.slice(0, colon);
  const rest = text.slice(colon + 1);
  return SCHEME_RE.test(scheme) && rest !== '' && !SPACE_OR_CONTROL_RE.test(text) &&
    authorityFits(scheme.toLowerCase(), rest);
}

function authorityFits(scheme, rest) {
  const web = WEB_SCHEMES.includes(scheme);
  if (!rest.startsWith('//')) {
    // `https:x.y` reads as `https://x.y/`; other schemes have no authority here.
    return !web || authorityFits(scheme, '//' + rest);
  }
  const after = rest.slice(2);
  const end = after.search(/[/?#\\]/);
  const authority = end < 0 ? after : after.slice(0, end);
  const hostPort = authority.slice(authority.lastIndexOf('@') + 1);
  let host;
  let port = null;
  if (hostPort.startsWith('[')) {
    const close = hostPort.indexOf(']');
    if (close < 0 || !isIpv6(hostPort.slice(1, close))) return false;
    const tail = hostPort.slice(close + 1);
    if (tail !== '' && !tail.startsWith(':')) return false;
    if (tail !== '') port = tail.slice(1);
    host = null; // a whole IPv6 address
  } else {
    const last = hostPort.lastIndexOf(':');
    host = last < 0 ? hostPort : hostPort.slice(0, last);
    if (last >= 0) port = hostPort.slice(last + 1);
  }
  if (port !== null && port !== '' && !(isDigits(port) && Number(port) <= 65535)) return false;
  if (host === null) return true;
  if (host === '') return !web;
  if (codePoints(host).some((c) => FORBIDDEN_IN_HOST.includes(c))) return false;
  const trimmed = host.replace(/\.+$/, '');
  const lastLabel = trimmed.slice(trimmed.lastIndexOf('.') + 1);
  const numeric = lastLabel !== '' && (isDigits(lastLabel) || lastLabel.startsWith('0x'));
  return !(web && numeric) || isIpv4(trimmed);
}

/* ---------- IP addresses, as Rust's std parses them ---------- */

// Four decimal octets, each 0–255, without leading zeros.
function isIpv4(text) {
  const octets = text.split('.');
  return octets.length === 4 &&
    octets.every((o) => /^(0|[1-9][0-9]{0,2})$/.test(o) && Number(o) <= 255);
}

// Eight groups of 1–4 hex digits, a `::` standing for one or more of them, the last two
// possibly written as an IPv4 address.
function isIpv6(text) {
  const halves = text.split('::');
  if (halves.length > 2) return false;
  const groupsOf = (half) => (half === '' ? [] : half.split(':'));
  const compressed = halves.length === 2;
  const head = groupsOf(halves[0]);
  const tail = compressed ? groupsOf(halves[1]) : [];
  const groups = head.concat(tail);
  // The IPv4 form may end the address, never come before a `::`.
  const ends = compressed ? tail.length > 0 : head.length > 0;
  let count = 0;
  for (let i = 0; i < groups.length; i += 1) {
    if (/^[0-9A-Fa-f]{1,4}$/.test(groups[i])) {
      count += 1;
    } else if (ends && i === groups.length - 1 && isIpv4(groups[i])) {
      count += 2;
    } else {
      return false;
    }
  }
  return compressed ? count <= 7 : count === 8;
}
