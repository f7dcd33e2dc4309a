// web/sw.js run in a stand-in of a service worker's global scope (Node's `vm`, with the few
// members the worker touches: addEventListener, registration.showNotification, clients), so
// that what it does with a push and a click is checked without a push service, which a
// browser here cannot reach.
'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const test = require('node:test');
const vm = require('node:vm');

const SOURCE = fs.readFileSync(path.join(__dirname, '..', '..', 'web', 'sw.js'), 'utf8');
const ORIGIN = 'https://askgate.example';

// A fresh worker: its handlers, the notifications it showed, the windows it opened, and the
// open windows it may find (each records what was done to it).
function worker(openWindows = []) {
  const handlers = {};
  const shown = [];
  const opened = [];
  const self = {
    location: { origin: ORIGIN },
    addEventListener: (type, handler) => { handlers[type] = handler; },
    skipWaiting: () => {},
    registration: {
      showNotification: (title, options) => { shown.push({ title, options }); return Promise.resolve(); },
    },
    clients: {
      claim: () => Promise.resolve(),
      matchAll: () => Promise.resolve(openWindows),
      openWindow: (url) => { opened.push(url); return Promise.resolve({ url }); },
    },
  };
  vm.runInNewContext(SOURCE, { self, URL, console });
  return { handlers, shown, opened };
}

// Dispatches an event to `handler` and waits for what it handed to waitUntil.
async function dispatch(handler, event) {
  let waited = Promise.resolve();
  handler({ ...event, waitUntil: (promise) => { waited = promise; } });
  await waited;
}

function pushOf(text) {
  return { data: { json: () => JSON.parse(text), text: () => text } };
}

test('a push shows its title, body and tag, and keeps its link for the click', async () => {
  const w = worker();
  const message = { title: 'Deploy?', body: 'Which region first?', url: `${ORIGIN}/s/s1#k=abc`, tag: 'askgate:s1:r1' };
  await dispatch(w.handlers.push, pushOf(JSON.stringify(message)));
  assert.equal(w.shown.length, 1);
  assert.equal(w.shown[0].title, 'Deploy?');
  assert.equal(w.shown[0].options.body, 'Which region first?');
  assert.equal(w.shown[0].options.tag, 'askgate:s1:r1');
  assert.equal(w.shown[0].options.data.url, `${ORIGIN}/s/s1#k=abc`);
});

test('a push that is not JSON still shows a notice', async () => {
  const w = worker();
  await dispatch(w.handlers.push, pushOf('not json'));
  assert.equal(w.shown.length, 1);
  assert.equal(w.shown[0].title, 'A question for you');
  assert.equal(w.shown[0].options.data.url, `${ORIGIN}/`);
});

test('a link to another site is replaced by the gateway\'s own root', async () => {
  const w = worker();
  await dispatch(w.handlers.push, pushOf(JSON.stringify({ title: 't', url: 'https://evil.example/x' })));
  assert.equal(w.shown[0].options.data.url, `${ORIGIN}/`);
});

test('a click with no page open opens the question\'s page', async () => {
  const w = worker();
  let closed = false;
  const notification = { close: () => { closed = true; }, data: { url: `${ORIGIN}/s/s1#k=abc` } };
  await dispatch(w.handlers.notificationclick, { notification });
  assert.ok(closed);
  assert.deepEqual(w.opened, [`${ORIGIN}/s/s1#k=abc`]);
});

test('a click with the question\'s page open focuses it and steers it to the link', async () => {
  const done = [];
  const page = {
    url: `${ORIGIN}/s/s1`,
    focus() { done.push('focus'); return Promise.resolve(this); },
    navigate(url) { done.push(`navigate ${url}`); return Promise.resolve({ url }); },
  };
  const w = worker([page]);
  const notification = { close: () => {}, data: { url: `${ORIGIN}/s/s1#k=abc` } };
  await dispatch(w.handlers.notificationclick, { notification });
  assert.deepEqual(done, ['focus', `navigate ${ORIGIN}/s/s1#k=abc`]);
  assert.deepEqual(w.opened, []);
});
