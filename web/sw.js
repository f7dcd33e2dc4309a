/* askgate's service worker (/sw.js): it only shows the gateway's Web Push messages, so a
 * person hears of a question on a device whose askgate pages are all closed, and opens the
 * question's page when the notification is clicked. It caches nothing and sees no fetch: the
 * pages stay live views of the gateway.
 *
 * A push message is JSON text: {"title", "body", "url", "tag"}. The gateway writes it, but the
 * worker still opens only pages of its own origin: a notification is where a forged or
 * mistaken link would be clicked without a second look.
 *
 * Plain script, no imports: a classic worker works in every browser that has Web Push.
 */

'use strict';

// Said when a message cannot be read: the person still learns that something waits.
const FALLBACK_TITLE = 'A question for you';

// The worker keeps no state and answers no fetch, so a newer copy may take over at once; open
// pages become controlled, which lets a click steer one of them to the question.
self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));

// The message's fields, each a string; anything missing or unreadable falls back.
function readMessage(data) {
  let message = null;
  try {
    message = data ? data.json() : null;
  } catch (_) {
    // Not JSON: shown as the generic notice rather than dropped.
  }
  const field = (name) => (message && typeof message[name] === 'string' ? message[name] : '');
  return {
    title: field('title') || FALLBACK_TITLE,
    body: field('body'),
    url: field('url'),
    tag: field('tag'),
  };
}

// `url` if it is one of this origin's pages, else the origin's root.
function ownPage(url) {
  const root = new URL('/', self.location.origin);
  try {
    const page = new URL(url, root);
    return page.origin === root.origin ? page.href : root.href;
  } catch (_) {
    return root.href;
  }
}

self.addEventListener('push', (event) => {
  const message = readMessage(event.data);
  const options = { body: message.body, data: { url: ownPage(message.url) } };
  // The same tag replaces the earlier notification of that question instead of piling up.
  if (message.tag) options.tag = message.tag;
  // Browsers require a visible notification for every push (`userVisibleOnly`); waitUntil keeps
  // the worker alive until it is shown.
  event.waitUntil(self.registration.showNotification(message.title, options));
});

self.addEventListener('notificationclick', (event) => {
  event.notification.close();
  const url = ownPage(event.notification.data && event.notification.data.url);
  event.waitUntil(openPage(url));
});

// Brings a window already on the question's page forward (on its link, whose fragment carries
// the key), or opens one: a second tab of the same session would only split the person's
// attention.
async function openPage(url) {
  const wanted = new URL(url);
  const windows = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
  const open = windows.find((client) => new URL(client.url).pathname === wanted.pathname);
  if (!open) return self.clients.openWindow(url);
  const focused = await open.focus();
  if (focused.url === url) return focused;
  // Only a page this worker controls may be steered; one that is not still has the focus.
  try {
    return await focused.navigate(url);
  } catch (_) {
    return focused;
  }
}
