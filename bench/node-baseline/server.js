// The baseline: askgate's fan-out workload hand-rolled on Node.js and the `ws` package, the way
// people build it instead of using a gateway. In memory, no validation beyond JSON.parse, no
// limits, no keepalive, no durable store.
//
// Same endpoints and frames as askgate, as far as askgate-bench uses them:
//   agent  ws://HOST/v1/agent                   open → opened, ask → accepted (+ request to
//                                                every tab), ack; the winning answer → outcome
//   tab    ws://HOST/v1/sessions/{session}/live  hello → snapshot; answer → resolved to every
//                                                tab, outcome to the agent; a late answer →
//                                                answer_rejected
//   GET /metrics  the askgate_* gauges of live things, so the leak check runs the same way.
//
// Listens on 127.0.0.1:$PORT (0 = any free port) and prints
// "node-baseline listening on http://ADDR" on stderr, as askgate does.

'use strict';

const http = require('node:http');
const { WebSocketServer } = require('ws');

/** sessionId → { tabs: Map<ws, tabId>, agents: Set<ws>, requests: Map<id, Req> } */
const sessions = new Map();
let sockets = 0;
let openRequests = 0;
let keptOutcomes = 0;
let agentsOnline = 0;
let nextId = 0;

function session(id) {
  let s = sessions.get(id);
  if (!s) {
    s = { tabs: new Map(), agents: new Set(), requests: new Map() };
    sessions.set(id, s);
  }
  return s;
}

function dropIfIdle(id) {
  const s = sessions.get(id);
  if (s && s.tabs.size === 0 && s.agents.size === 0 && s.requests.size === 0) sessions.delete(id);
}

function send(ws, text) {
  if (ws.readyState === 1) ws.send(text);
}

function broadcast(s, text, except) {
  for (const tab of s.tabs.keys()) if (tab !== except) send(tab, text);
}

function presence(s, except) {
  broadcast(s, JSON.stringify({ type: 'presence', tabs: s.tabs.size, agent_online: s.agents.size > 0 }), except);
}

const server = http.createServer((req, res) => {
  if (req.url === '/metrics') {
    let tabs = 0;
    for (const s of sessions.values()) tabs += s.tabs.size;
    const gauges = {
      askgate_sessions: sessions.size,
      askgate_tabs: tabs,
      askgate_agents: agentsOnline,
      askgate_open_requests: openRequests,
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
  const mine = new Set();
  const attach = (id) => {
    const s = session(id);
    mine.add(id);
    if (!s.agents.has(ws)) {
      s.agents.add(ws);
      if (s.agents.size === 1) presence(s);
    }
    return s;
  };
  ws.on('message', (data) => {
    let f;
    try { f = JSON.parse(data); } catch { return send(ws, '{"type":"error","code":"bad_frame","message":"not JSON"}'); }
    if (f.type === 'open') {
      const id = f.session || `s-${nextId++}`;
      attach(id);
      send(ws, JSON.stringify({ type: 'opened', session: id, viewer_url: `${base}/s/${id}#k=nokey` }));
    } else if (f.type === 'ask') {
      const s = attach(f.session);
      const id = f.id || `r-${nextId++}`;
      const known = s.requests.get(id);
      if (known) {
        known.asker = ws;
        if (known.outcome) send(ws, known.outcome);
        else send(ws, JSON.stringify({ type: 'accepted', session: f.session, id, deadline_ms: null, viewer_url: `${base}/s/${f.session}#k=nokey` }));
        return;
      }
      const view = { id, dialect: 'harness', title: f.title ?? null, questions: f.questions, asked_at_ms: Date.now(), deadline_ms: null };
      s.requests.set(id, { view, asker: ws, outcome: null });
      openRequests++;
      send(ws, JSON.stringify({ type: 'accepted', session: f.session, id, deadline_ms: null, viewer_url: `${base}/s/${f.session}#k=nokey` }));
      broadcast(s, JSON.stringify({ type: 'request', request: view }));
    } else if (f.type === 'ack') {
      const s = sessions.get(f.session);
      const r = s && s.requests.get(f.id);
      if (r && r.outcome) {
        s.requests.delete(f.id);
        keptOutcomes--;
        dropIfIdle(f.session);
      }
    }
  });
  ws.on('close', () => {
    agentsOnline--;
    for (const id of mine) {
      const s = sessions.get(id);
      if (!s) continue;
      s.agents.delete(ws);
      for (const r of s.requests.values()) if (r.asker === ws) r.asker = null;
      if (s.agents.size === 0) presence(s);
      dropIfIdle(id);
    }
  });
}

function serveTab(ws, sessionId) {
  let tab = null;
  ws.on('message', (data) => {
    let f;
    try { f = JSON.parse(data); } catch { return; }
    const s = session(sessionId);
    if (tab === null) {
      if (f.type !== 'hello') return ws.close(4400);
      tab = f.tab || `t-${nextId++}`;
      s.tabs.set(ws, tab);
      const open = [];
      for (const r of s.requests.values()) if (!r.outcome) open.push(r.view);
      send(ws, JSON.stringify({ type: 'snapshot', session: sessionId, tab, now_ms: Date.now(), tabs: s.tabs.size, agent_online: s.agents.size > 0, requests: open }));
      presence(s, ws);
      return;
    }
    if (f.type !== 'answer' && f.type !== 'decline') return;
    const r = s.requests.get(f.id);
    if (!r || r.outcome) {
      return send(ws, JSON.stringify({ type: 'answer_rejected', id: f.id, errors: [{ path: 'id', message: 'already resolved', code: 'invalid_value' }] }));
    }
    const outcome = f.type === 'answer' ? 'answered' : 'declined';
    const response = f.type === 'answer' ? { answers: f.response.answers, cancelled: false } : { answers: [], cancelled: true };
    r.outcome = JSON.stringify({ type: 'outcome', session: sessionId, id: f.id, outcome, response, result: null, model_text: null, by: tab, at_ms: Date.now() });
    openRequests--;
    keptOutcomes++;
    broadcast(s, JSON.stringify({ type: 'resolved', id: f.id, outcome, by: tab, response }));
    if (r.asker) send(r.asker, r.outcome);
  });
  ws.on('close', () => {
    const s = sessions.get(sessionId);
    if (!s || !s.tabs.delete(ws)) return;
    presence(s);
    dropIfIdle(sessionId);
  });
}

server.listen(Number(process.env.PORT || 0), '127.0.0.1', () => {
  const { address, port } = server.address();
  base = `http://${address}:${port}`;
  process.stderr.write(`node-baseline listening on ${base}\n`);
});

for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(0));
