/* Notifications on a person's devices (Web Push): "Notify me on this device", and the list of
 * the devices the gateway tells of that person's questions, each with its Remove button. Both
 * the session page and the inbox have it, for a named person only: the gateway keeps devices
 * per person, and an anonymous link holder has no one to keep them for.
 *
 * The section stays hidden unless the browser can take pushes (a service worker and
 * PushManager) and the gateway has Web Push set up (`GET /v1/push/key` is 200); otherwise the
 * page offers nothing it cannot do. Each call carries the page's own key as a bearer token,
 * and on the session page the session, which a personal key is tied to.
 *
 * What happened is said in plain words in the section's status line, which screen readers
 * read out. Device labels come from whichever browser added them: shown as text only.
 */

import { make, shorten, showText, state, timeElement, ui } from './page.js';

const KEY_PATH = '/v1/push/key';
const SUBSCRIPTIONS_PATH = '/v1/push/subscriptions';
// The gateway keeps at most this many characters of a device's label.
const MAX_LABEL_CHARS = 100;
// How long the browser may take to register the worker and subscribe: a push service answers
// in a second or two when it can be reached at all.
const SUBSCRIBE_TIMEOUT_MS = 8000;

// The browser's name, then the system's, read from the user agent string when the browser
// has no `userAgentData` (Firefox, Safari). Earlier entries win: Edge and Opera also say
// "Chrome", Android also says "Linux", iOS also says "Mac OS X".
const UA_BROWSERS = [
  [/Edg\//, 'Edge'], [/OPR\//, 'Opera'], [/Firefox\//, 'Firefox'], [/Chrome\//, 'Chrome'],
  [/Safari\//, 'Safari'],
];
const UA_SYSTEMS = [
  [/Android/, 'Android'], [/iPhone|iPad|iPod/, 'iOS'], [/CrOS/, 'ChromeOS'],
  [/Windows/, 'Windows'], [/Macintosh|Mac OS X/, 'macOS'], [/Linux/, 'Linux'],
];

const push = {
  started: false, // the gateway has been asked for its key (once per page load)
  key: null, // the gateway's public key as bytes, once it has said it has Web Push
  thisDevice: '', // the id the gateway lists this browser's subscription under, '' if none
};

export function setupPush() {
  for (const id of ['push', 'push-subscribe', 'push-status', 'push-devices', 'push-none']) {
    ui[id.replace(/-(\w)/g, (_, c) => c.toUpperCase())] = document.getElementById(id);
  }
  ui.pushSubscribe.addEventListener('click', subscribeHere);
}

// Shows the section for who this tab is (`state.you`), asking the gateway the first time.
export function showPush() {
  const you = state.you;
  const named = Boolean(you && you.user !== null);
  if (!named || !browserCanPush()) {
    ui.push.hidden = true;
    return;
  }
  if (push.started) {
    ui.push.hidden = push.key === null;
    return;
  }
  push.started = true;
  start();
}

function browserCanPush() {
  return 'serviceWorker' in navigator && 'PushManager' in window && 'Notification' in window;
}

async function start() {
  let answer;
  try {
    answer = await call('GET', KEY_PATH);
  } catch (_) {
    // Unreachable for now: the next snapshot (after a reconnect) asks again.
    push.started = false;
    return;
  }
  if (answer.status !== 200 || !answer.data || typeof answer.data.key !== 'string') return;
  try {
    push.key = fromBase64Url(answer.data.key);
  } catch (_) {
    return;
  }
  push.thisDevice = await currentDevice();
  await refreshDevices();
}

/* ---------- the gateway ---------- */

// `path` with this page's session, when it is a session's page (the inbox has none).
function urlOf(path) {
  const url = new URL(path, location.origin);
  if (state.session) url.searchParams.set('session', state.session);
  return url.href;
}

// `{status, data}` of a call to the gateway; `data` is its JSON, or null. Throws when the
// gateway cannot be reached.
async function call(method, path, body) {
  const headers = {};
  // Behind a sign-in proxy the page has no key: the proxy says who the person is.
  if (state.key) headers.Authorization = 'Bearer ' + state.key;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const response = await fetch(urlOf(path), {
    method, headers, cache: 'no-store',
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  let data = null;
  try {
    data = await response.json();
  } catch (_) {
    // No body (204) or not JSON: the status says enough.
  }
  return { status: response.status, data };
}

// The devices in a `{user, devices}` answer, each with the fields the list needs.
function devicesOf(data) {
  const devices = data && Array.isArray(data.devices) ? data.devices : [];
  return devices.filter((d) => d && typeof d.id === 'string' && d.id).map((d) => ({
    id: d.id,
    label: typeof d.label === 'string' && d.label.trim() ? d.label : 'A device',
    createdMs: typeof d.created_ms === 'number' ? d.created_ms : null,
  }));
}

async function refreshDevices() {
  let answer;
  try {
    answer = await call('GET', SUBSCRIPTIONS_PATH);
  } catch (_) {
    ui.push.hidden = false;
    say('The gateway could not be reached to list your devices. Reload the page to try again.');
    return;
  }
  // The gateway will not keep devices for this link (an anonymous key): nothing to offer.
  if (answer.status === 401 || answer.status === 403) {
    push.key = null;
    ui.push.hidden = true;
    return;
  }
  ui.push.hidden = false;
  if (answer.status !== 200) {
    say('Your devices could not be listed (the gateway answered ' + answer.status + ').');
    return;
  }
  renderDevices(devicesOf(answer.data));
}

/* ---------- subscribing this browser ---------- */

async function subscribeHere() {
  ui.pushSubscribe.disabled = true;
  say('Asking this browser…');
  try {
    say(await subscribe());
  } finally {
    ui.pushSubscribe.disabled = false;
  }
}

// What happened, in words for the status line.
async function subscribe() {
  let permission;
  try {
    permission = await Notification.requestPermission();
  } catch (error) {
    return 'This browser would not ask for permission to notify (' + errorName(error) + ').';
  }
  if (permission === 'denied') {
    return 'Notifications are blocked for this site in this browser, so this device cannot be ' +
      "told of questions. Allow them in the site's settings, then try again.";
  }
  if (permission !== 'granted') {
    return 'Notifications were not allowed, so this device will not be told of questions.';
  }
  let subscription;
  try {
    subscription = await withinTime(subscribeBrowser(), SUBSCRIBE_TIMEOUT_MS);
  } catch (error) {
    return 'This browser cannot subscribe to notifications here (' + errorName(error) + '). ' +
      'Questions still show on this page while it is open.';
  }
  const { endpoint, keys } = subscription.toJSON();
  let answer;
  try {
    answer = await call('POST', SUBSCRIPTIONS_PATH, { endpoint, keys, label: deviceLabel() });
  } catch (_) {
    return 'The gateway could not be reached, so this device was not added. Try again.';
  }
  if (answer.status !== 200 && answer.status !== 201) return refusal(answer);
  push.thisDevice = await deviceId(endpoint);
  renderDevices(devicesOf(answer.data));
  return answer.status === 201
    ? 'Subscribed: this device will be told of questions that wait for you.'
    : 'This device was already subscribed; it will go on being told of your questions.';
}

// This browser's push subscription, made (or the one it has) with the gateway's key.
async function subscribeBrowser() {
  await navigator.serviceWorker.register('/sw.js');
  // A push subscription needs a worker that is already active, not one still installing.
  const registration = await navigator.serviceWorker.ready;
  const options = { userVisibleOnly: true, applicationServerKey: push.key };
  try {
    return await registration.pushManager.subscribe(options);
  } catch (error) {
    // A subscription made under the gateway's previous key (the key changed): the browser will
    // not give it a second one, and the gateway can no longer sign for it, so it is replaced.
    const stale = error.name === 'InvalidStateError' &&
      await registration.pushManager.getSubscription();
    if (!stale) throw error;
    await stale.unsubscribe();
    return registration.pushManager.subscribe(options);
  }
}

// `promise`, or a TimeoutError after `ms`. A browser that cannot reach its push service may
// keep trying for minutes without settling; the person should hear of it, not wait on
// "Asking this browser…". A subscription that arrives later is the browser's own: the next
// press gets it at once.
function withinTime(promise, ms) {
  let timer = 0;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new DOMException('no answer in time', 'TimeoutError')), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

// Why the gateway did not keep a device, from its error answer.
function refusal(answer) {
  const error = answer.data && answer.data.error;
  if (answer.status === 403) return 'Only a named person can have devices told of questions.';
  if (error && typeof error.message === 'string' && error.message) {
    return 'The gateway did not add this device: ' + error.message;
  }
  return 'The gateway did not add this device (it answered ' + answer.status + ').';
}

// An error's name ("NotAllowedError", "AbortError"), which tells a person searching for it
// what went wrong; its message is often long and browser-specific.
function errorName(error) {
  return error && typeof error.name === 'string' && error.name ? error.name : 'unknown error';
}

// "Chrome on Linux": enough to tell a person's devices apart, and nothing more of the
// browser's fingerprint.
function deviceLabel() {
  const hints = navigator.userAgentData;
  let browser = '';
  let system = '';
  if (hints && Array.isArray(hints.brands)) {
    // Brand lists hold a made-up "Not A Brand" entry, and "Chromium" beside the browser built
    // on it, whose own name says more.
    const names = hints.brands.map((b) => String(b.brand))
      .filter((name) => !/not.?a.?brand/i.test(name));
    browser = names.find((name) => name !== 'Chromium') || names[0] || '';
    system = typeof hints.platform === 'string' ? hints.platform : '';
  }
  const agent = navigator.userAgent;
  const match = (table) => (table.find(([pattern]) => pattern.test(agent)) || [null, ''])[1];
  browser = browser || match(UA_BROWSERS) || 'A browser';
  system = system || match(UA_SYSTEMS);
  return shorten(system ? browser + ' on ' + system : browser, MAX_LABEL_CHARS);
}

/* ---------- this browser's own device ---------- */

// This browser's push subscription, or null.
async function currentSubscription() {
  const registration = await navigator.serviceWorker.getRegistration('/');
  return registration ? registration.pushManager.getSubscription() : null;
}

// The id the gateway lists this browser's subscription under, or '' when it has none. The
// gateway never shows endpoints back (each is a capability to push to a device); it names a
// device by the first 16 hex digits of its endpoint's SHA-256, which the page can work out.
async function currentDevice() {
  try {
    const subscription = await currentSubscription();
    return subscription ? await deviceId(subscription.endpoint) : '';
  } catch (_) {
    return '';
  }
}

async function deviceId(endpoint) {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(endpoint));
  return Array.from(new Uint8Array(digest).slice(0, 8),
    (byte) => byte.toString(16).padStart(2, '0')).join('');
}

/* ---------- the list ---------- */

function renderDevices(devices) {
  ui.pushNone.hidden = devices.length > 0;
  ui.pushDevices.hidden = devices.length === 0;
  ui.pushDevices.replaceChildren(...devices.map(deviceItem));
}

function deviceItem(device) {
  const item = make('li', 'push-device');
  item.dataset.deviceId = device.id;
  item.appendChild(make('span', 'push-device-label', device.label));
  if (device.createdMs !== null) {
    const when = make('span', 'push-device-when', 'added ');
    when.appendChild(timeElement(device.createdMs, 'at'));
    item.appendChild(when);
  }
  if (device.id === push.thisDevice) item.appendChild(make('span', 'push-device-here', 'this browser'));
  const remove = make('button', 'ghost push-remove', 'Remove', { type: 'button' });
  // Every row's button says "Remove": its name says which device, starting with what it shows.
  remove.setAttribute('aria-label', 'Remove ' + device.label);
  remove.addEventListener('click', () => removeDevice(device, remove));
  item.appendChild(remove);
  return item;
}

async function removeDevice(device, button) {
  button.disabled = true;
  let answer;
  try {
    answer = await call('DELETE', SUBSCRIPTIONS_PATH, { id: device.id });
  } catch (_) {
    answer = null;
  }
  if (!answer || answer.status !== 204) {
    button.disabled = false;
    say(answer
      ? device.label + ' was not removed (the gateway answered ' + answer.status + ').'
      : 'The gateway could not be reached, so ' + device.label + ' was not removed.');
    return;
  }
  if (device.id === push.thisDevice) await unsubscribeHere();
  // The button goes with its row: the focus goes somewhere that stays.
  ui.pushSubscribe.focus();
  say(device.label + ' removed: it will not be told of questions any more.');
  await refreshDevices();
}

// The gateway no longer sends to this browser: its subscription is dropped too, so the browser
// stops holding one nobody uses.
async function unsubscribeHere() {
  push.thisDevice = '';
  try {
    const subscription = await currentSubscription();
    if (subscription) await subscription.unsubscribe();
  } catch (_) {
    // The browser keeps a subscription the gateway has forgotten: harmless, nothing is sent.
  }
}

/* ---------- small pieces ---------- */

function say(text) {
  showText(ui.pushStatus, text);
}

// The bytes of a base64url text (the gateway's key, unpadded).
function fromBase64Url(text) {
  const base64 = text.replace(/-/g, '+').replace(/_/g, '/') + '==='.slice((text.length + 3) % 4);
  return Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
}
