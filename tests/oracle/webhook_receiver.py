"""A webhook receiver for askgate's tests, checking every signature with the standardwebhooks
package (an implementation independent of askgate's).

Usage: python webhook_receiver.py SECRET [SECRET...] [--fail-first N] [--port P]

Listens on 127.0.0.1, port P or a free one, and prints `listening PORT` first. Then, for each POST, one
JSON line on stdout: the `webhook-id`, the status it answered, whether each SECRET verified
the signature (`verified`: a list in the order given), the `webhook-signature` header and the
body. The first N requests are answered 500 whatever they hold (a receiver that is down for a
while); after that a request is answered 204 when every secret verified it, else 401.
"""

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError


def main() -> None:
    args = sys.argv[1:]
    fail_first = 0
    if "--fail-first" in args:
        at = args.index("--fail-first")
        fail_first = int(args[at + 1])
        del args[at : at + 2]
    port = 0
    if "--port" in args:
        at = args.index("--port")
        port = int(args[at + 1])
        del args[at : at + 2]
    hooks = [Webhook(secret) for secret in args]
    lock = threading.Lock()
    seen = {"count": 0}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (the name http.server calls)
            length = int(self.headers.get("content-length", "0"))
            body = self.rfile.read(length)
            headers = {name.lower(): value for name, value in self.headers.items()}
            verified = []
            for hook in hooks:
                try:
                    hook.verify(body, headers)
                    verified.append(True)
                except WebhookVerificationError:
                    verified.append(False)
            with lock:
                seen["count"] += 1
                failing = seen["count"] <= fail_first
            status = 500 if failing else (204 if all(verified) else 401)
            self.send_response(status)
            self.send_header("content-length", "0")
            self.end_headers()
            line = {
                "id": headers.get("webhook-id"),
                "status": status,
                "verified": verified,
                "signature": headers.get("webhook-signature"),
                "body": body.decode("utf-8"),
            }
            with lock:
                print(json.dumps(line), flush=True)

        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(f"listening {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
