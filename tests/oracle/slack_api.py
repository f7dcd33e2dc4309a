"""A stand-in for Slack's Web API, for askgate's tests (Slack itself cannot be reached here).

Built to Slack's published contract (api.slack.com/methods): each method is a POST to
/api/METHOD with a JSON body and `Authorization: Bearer TOKEN`; the answer is HTTP 200 with
`{"ok": true, ...}`, or `{"ok": false, "error": CODE}` (a wrong token is `invalid_auth`); a
rate limit is HTTP 429 with `Retry-After` in seconds.

Usage: python slack_api.py TOKEN [--rate-limit-first N] [--retry-after S] [--port P]

Prints `listening PORT` first, then one JSON line per call: the method, whether the bearer
token was TOKEN (`authorized`), the status answered and the body as sent. The methods:
- chat.postMessage: a message to a user id (`U…`, posted in a direct-message channel `D…`)
  or a channel; answers its `channel` and a new `ts`. A reply names `thread_ts`.
- chat.update: answers `ok` for a message it posted, else `message_not_found`.
- chat.postEphemeral: answers a `message_ts`.
- views.open: answers a view id.
The first N calls to chat.postMessage are answered 429 with `Retry-After: S` (default 1).
"""

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main() -> None:
    args = sys.argv[1:]

    def option(name: str, default: int) -> int:
        if name in args:
            at = args.index(name)
            value = int(args[at + 1])
            del args[at : at + 2]
            return value
        return default

    rate_limit_first = option("--rate-limit-first", 0)
    retry_after = option("--retry-after", 1)
    port = option("--port", 0)
    token = args[0]
    lock = threading.Lock()
    state = {"ts": 1_700_000_000_000_100, "posted": set(), "limited": 0}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (the name http.server calls)
            length = int(self.headers.get("content-length", "0"))
            raw = self.rfile.read(length)
            method = self.path.rsplit("/", 1)[-1]
            authorized = self.headers.get("authorization") == f"Bearer {token}"
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            status, headers, answer = 200, {}, None
            with lock:
                if not authorized:
                    answer = {"ok": False, "error": "invalid_auth"}
                elif body is None:
                    answer = {"ok": False, "error": "invalid_json"}
                elif method == "chat.postMessage" and state["limited"] < rate_limit_first:
                    state["limited"] += 1
                    status, headers = 429, {"Retry-After": str(retry_after)}
                    answer = {"ok": False, "error": "ratelimited"}
                elif method == "chat.postMessage":
                    state["ts"] += 1
                    ts = f"{state['ts'] // 1_000_000}.{state['ts'] % 1_000_000:06d}"
                    channel = body.get("channel", "")
                    if channel.startswith(("U", "W")):
                        channel = "D" + channel[1:]
                    state["posted"].add((channel, ts))
                    answer = {"ok": True, "channel": channel, "ts": ts}
                elif method == "chat.update":
                    key = (body.get("channel"), body.get("ts"))
                    if key in state["posted"]:
                        answer = {"ok": True, "channel": key[0], "ts": key[1]}
                    else:
                        answer = {"ok": False, "error": "message_not_found"}
                elif method == "chat.postEphemeral":
                    answer = {"ok": True, "message_ts": "1700000000.999999"}
                elif method == "views.open":
                    answer = {"ok": True, "view": {"id": "V0001"}}
                else:
                    answer = {"ok": False, "error": "unknown_method"}
            data = json.dumps(answer).encode()
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("content-type", "application/json; charset=utf-8")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            line = {"method": method, "authorized": authorized, "status": status,
                    "body": body, "answer": answer}
            print(json.dumps(line), flush=True)

        def log_message(self, *_args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(f"listening {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
