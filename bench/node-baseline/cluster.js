// The several-node baseline: server.js's workload on any number of Node.js processes sharing
// one Redis, the way a team builds it when one process is not enough: `ws` for the sockets,
// the official `redis` client, a pub/sub channel per session for what crosses between
// processes, and `SET NX` so that the first answer wins however many processes hear one.
// Nothing beyond that: no validation beyond JSON.parse, no limits, no keepalive, no replay of
// what a process missed while its subscription was down.
//
// Same endpoints and frames as server.js (and askgate, as far as askgate-bench uses them).
// In Redis:
//   open:{session}          hash  request id → the request's view (JSON), while unresolved
//   done:{session}:{id}     string the outcome frame; set once (NX), deleted on the agent's ack
//   tabs:{session}          counter of tabs on every process
//   channel s:{session}     {"kind":"request"|"resolved"|"presence", ...} to every process with
//                           a tab or an agent of the session
//
// Listens on 127.0.0.1:$PORT (0 = any free port), uses $REDIS_URL (redis://127.0.0.1:6379)
// and prints "node-cluster listening on http://ADDR" on stderr once subscribed and ready.

'use strict';

const http = require('node:http');
const { WebSocketServer } = require('ws');
const { createClient } = require('redis');

const redisUrl = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
const commands = createClient({ url: redisUrl });
const subscriber = commands.duplicate();
for (const client of [commands, subscriber]) {
  client.on('error', (error) => process.stderr.write(`redis: ${error.message}\n`));
}

/** This process's part of a session: its own tabs and agents, and the subscription. */
const sessions = new Map();
/** Requests asked through this process, awaiting their outcome: "session\nid" → agent ws. */
const askers = new Map();
let sockets = 0;
let agentsOnline = 0;
let keptOutcomes = 0;
let nextId = 0;
const processTag = `${process.pid.toString(36)}-${Math.random().toString(36).slice(2, 8)}`;

/** Joins the session here, subscribing to its channel the first time. */
async function join(id) {
  let s = sessions.get(id);
  if (!s) {
    s = { tabs: new Map(), agents: new Set(), members: 0, subscribed: null };
    sessions.set(id, s);
    s.subscribed = subscriber.subscribe(`s:${id}`, (message) => heard(id, message));
  }
  s.members++;
  await s.subscribed;
  return s;
}

/** Leaves the session here, unsubscribing when the last member goes. */
function leave(id) {
  const s = sessions.get(id);
  if (!s || --s.members > 0) return;
  sessions.delete(id);
  subscriber.unsubscribe(`s:${id}`).catch(() => {});
}

function send(ws, text) {
  if (ws.readyState === 1) ws.send(text);
}

function toTabs(s, text, except) {
  for (const tab of s.tabs.keys()) if (tab !== except) send(tab, text);
}

function publish(id, envelope) {
  return commands.publish(`s:${id}`, JSON.stringify(envelope));
}

/** What another process (or this one) published on a session's channel. */
function heard(id, message) {
  const s = sessions.get(id);
  if (!s) return;
  const m = JSON.parse(message);
  if (m.kind === 'request') {
    toTabs(s, m.frame);
  } else if (m.kind === 'resolved') {
    toTabs(s, m.frame);
    const key = `${id}\n${m.id}`;
    const asker = askers.get(key);
    if (asker !== undefined) {
      askers.delete(key);
      keptOutcomes++;
      if (asker) send(asker, m.outcome);
    }
  } else if (m.kind === 'presence') {
    const frame = JSON.stringify({ type: 'presence', tabs: m.tabs, agent_online: s.agents.size > 0 || m.agent_online });
    for (const tab of s.tabs.keys()) if (s.tabs.get(tab) !== m.from) send(tab, frame);
  }
}

const server = http.createServer((req, res) => {
  if (req.url === '/metrics') {
    let tabs = 0;
    for (const s of sessions.values()) tabs += s.tabs.size;
    const gauges = {
      askgate_sessions: sessions.size,
      askgate_tabs: tabs,
      askgate_agents: agentsOnline,
      askgate_open_requests: askers.size,
      askgate_kept_outcomes: keptOutcomes,
      askgate_connection_tasks: sockets,
    };
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(Object.entries(gauges).map(([k, v]) => `${k} ${v}\n`).join(''));
  } else if (req.url === '/healthz') {
    res.end('ok');
  } else {
    res.writeHead(404).end();
  }
});

const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false });
let base = '';

server.on('upgrade', (req, socket, head) => {
  const live = /^\/v1\/sessions\/([^/?]+)\/live$/.exec(req.url);
  if (req.url !== '/v1/agent' && !live) return socket.destroy();
  wss.handleUpgrade(req, socket, head, (ws) => {
    sockets++;
    ws.on('close', () => sockets--);
    ws.on('error', () => {});
    if (live) serveTab(ws, decodeURIComponent(live[1]));
    else serveAgent(ws);
  });
});

function serveAgent(ws) {
  agentsOnline++;
  /** session id → joined (a promise), for the sessions this agent has used. */
  const mine = new Map();
  const attach = (id) => {
    let joined = mine.get(id);
    if (!joined) {
      joined = join(id).then((s) => {
        s.agents.add(ws);
        return s;
      });
      mine.set(id, joined);
    }
    return joined;
  };
  const accepted = (session, id) =>
    JSON.stringify({ type: 'accepted', session, id, deadline_ms: null, viewer_url: `${base}/s/${session}#k=nokey` });
  // Frames are handled in the order they came, each after the one before has finished.
  let queue = Promise.resolve();
  ws.on('message', (data) => {
    queue = queue.then(() => agentFrame(data)).catch((error) => {
      send(ws, JSON.stringify({ type: 'error', code: 'internal', message: String(error) }));
    });
  });
  async function agentFrame(data) {
    let f;
    try { f = JSON.parse(data); } catch { return send(ws, '{"type":"error","code":"bad_frame","message":"not JSON"}'); }
    if (f.type === 'open') {
      const id = f.session || `s-${processTag}-${nextId++}`;
      await attach(id);
      send(ws, JSON.stringify({ type: 'opened', session: id, viewer_url: `${base}/s/${id}#k=nokey` }));
    } else if (f.type === 'ask') {
      await attach(f.session);
      const id = f.id || `r-${processTag}-${nextId++}`;
      const key = `${f.session}\n${id}`;
      const view = { id, dialect: 'harness', title: f.title ?? null, questions: f.questions, asked_at_ms: Date.now(), deadline_ms: null };
      const fresh = await commands.hSetNX(`open:${f.session}`, id, JSON.stringify(view));
      if (!fresh) {
        // Asked again (a retry): the outcome if there is one, else accepted again.
        const outcome = await commands.get(`done:${f.session}:${id}`);
        if (askers.has(key)) askers.set(key, ws);
        send(ws, outcome ?? accepted(f.session, id));
        return;
      }
      askers.set(key, ws);
      send(ws, accepted(f.session, id));
      await publish(f.session, { kind: 'request', frame: JSON.stringify({ type: 'request', request: view }) });
    } else if (f.type === 'ack') {
      const deleted = await commands.del(`done:${f.session}:${f.id}`);
      if (deleted && keptOutcomes > 0) keptOutcomes--;
    }
  }
  ws.on('close', () => {
    agentsOnline--;
    for (const [key, asker] of askers) if (asker === ws) askers.set(key, null);
    for (const [id, joined] of mine) {
      joined.then((s) => {
        s.agents.delete(ws);
        leave(id);
      });
    }
  });
}

function serveTab(ws, sessionId) {
  let tab = null;
  let s = null;
  let queue = Promise.resolve();
  ws.on('message', (data) => {
    queue = queue.then(() => tabFrame(data)).catch(() => {});
  });
  async function tabFrame(data) {
    let f;
    try { f = JSON.parse(data); } catch { return; }
    if (tab === null) {
      if (f.type !== 'hello') return ws.close(4400);
      tab = f.tab || `t-${processTag}-${nextId++}`;
      s = await join(sessionId);
      const [count, open] = await Promise.all([
        commands.incr(`tabs:${sessionId}`),
        commands.hVals(`open:${sessionId}`),
      ]);
      // Frames to the session reach the tab from here on: the snapshot goes first.
      s.tabs.set(ws, tab);
      send(ws, JSON.stringify({ type: 'snapshot', session: sessionId, tab, now_ms: Date.now(), tabs: count, agent_online: s.agents.size > 0, requests: open.map((v) => JSON.parse(v)) }));
      await publish(sessionId, { kind: 'presence', tabs: count, agent_online: s.agents.size > 0, from: tab });
      return;
    }
    if (f.type !== 'answer' && f.type !== 'decline') return;
    const outcome = f.type === 'answer' ? 'answered' : 'declined';
    const response = f.type === 'answer' ? { answers: f.response.answers, cancelled: false } : { answers: [], cancelled: true };
    const outcomeFrame = JSON.stringify({ type: 'outcome', session: sessionId, id: f.id, outcome, response, result: null, model_text: null, by: tab, at_ms: Date.now() });
    // The first answer wins on every process at once: only one SET NX succeeds.
    const won = await commands.set(`done:${sessionId}:${f.id}`, outcomeFrame, { condition: 'NX' });
    if (won !== 'OK') {
      return send(ws, JSON.stringify({ type: 'answer_rejected', id: f.id, errors: [{ path: 'id', message: 'already resolved', code: 'invalid_value' }] }));
    }
    await commands.hDel(`open:${sessionId}`, f.id);
    await publish(sessionId, {
      kind: 'resolved',
      id: f.id,
      frame: JSON.stringify({ type: 'resolved', id: f.id, outcome, by: tab, response }),
      outcome: outcomeFrame,
    });
  }
  ws.on('close', () => {
    if (!s || !s.tabs.delete(ws)) return;
    commands.decr(`tabs:${sessionId}`).then((count) =>
      publish(sessionId, { kind: 'presence', tabs: count, agent_online: s.agents.size > 0, from: tab }),
    ).catch(() => {}).finally(() => leave(sessionId));
  });
}

async function main() {
  await Promise.all([commands.connect(), subscriber.connect()]);
  server.listen(Number(process.env.PORT || 0), '127.0.0.1', () => {
    const { address, port } = server.address();
    base = `http://${address}:${port}`;
    process.stderr.write(`node-cluster listening on ${base}\n`);
  });
}

main().catch((error) => {
  process.stderr.write(`node-cluster: ${error.stack || error}\n`);
  process.exit(1);
});

for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(0));
