"""An SMTP server for askgate's mail tests: aiosmtpd (an implementation independent of the
lettre client askgate sends with), and Python's own `email` package to read what arrives.

Usage: python smtp_sink.py [--refuse-first N] [--starttls CERT KEY]

Listens on 127.0.0.1 on a free port and prints `listening PORT` first. Then, for each message
it takes, one JSON line on stdout: the envelope's `from` and `to`, the message as received
(`data`, the raw text), and what Python's `email` package reads in it (`subject`, `from_header`,
`to_header`, `message_id`, `content_type`, and `parts`: each leaf part's `type` and decoded
`body`). The first N messages are refused with 451 (a server that defers mail for a while;
each refusal is printed as `{"refused": N}`); the rest are taken with 250. With `--starttls`,
the server offers STARTTLS with that certificate and key (PEM) and takes no mail before it.
"""

import email
import email.policy
import json
import socket
import ssl
import sys
import threading

from aiosmtpd.controller import Controller

# How many times a free port is looked for before giving up: another process may take the
# port between finding it free and binding it.
PORT_TRIES = 20


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def read_message(raw: bytes) -> dict:
    message = email.message_from_bytes(raw, policy=email.policy.default)
    parts = []
    for part in message.walk():
        if part.is_multipart():
            continue
        parts.append({"type": part.get_content_type(), "body": part.get_content()})
    return {
        "subject": str(message["subject"]),
        "from_header": str(message["from"]),
        "to_header": str(message["to"]),
        "message_id": str(message["message-id"]),
        "content_type": message.get_content_type(),
        "parts": parts,
    }


class Sink:
    def __init__(self, refuse_first: int) -> None:
        self.refuse_first = refuse_first
        self.seen = 0
        self.lock = threading.Lock()

    async def handle_DATA(self, server, session, envelope) -> str:  # noqa: N802 (aiosmtpd's name)
        with self.lock:
            self.seen += 1
            refusing = self.seen <= self.refuse_first
            seen = self.seen
        if refusing:
            print(json.dumps({"refused": seen}), flush=True)
            return "451 4.3.0 deferred by the test"
        raw = envelope.original_content or envelope.content
        line = {
            "from": envelope.mail_from,
            "to": envelope.rcpt_tos,
            "data": raw.decode("utf-8", errors="replace"),
            "parsed": read_message(raw),
        }
        print(json.dumps(line), flush=True)
        return "250 2.0.0 taken"


def main() -> None:
    args = sys.argv[1:]
    refuse_first = 0
    if "--refuse-first" in args:
        refuse_first = int(args[args.index("--refuse-first") + 1])
    tls = {}
    if "--starttls" in args:
        at = args.index("--starttls")
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(args[at + 1], args[at + 2])
        tls = {"tls_context": context, "require_starttls": True}
    sink = Sink(refuse_first)
    last_error = None
    for _ in range(PORT_TRIES):
        port = free_port()
        # SMTPUTF8 as real servers offer it; STARTTLS only when given a certificate, so that
        # askgate's opportunistic TLS otherwise stays plain here.
        controller = Controller(
            sink, hostname="127.0.0.1", port=port, enable_SMTPUTF8=True, **tls
        )
        try:
            controller.start()
        except OSError as error:  # taken meanwhile: look again
            last_error = error
            continue
        print(f"listening {port}", flush=True)
        threading.Event().wait()
    raise SystemExit(f"no free port after {PORT_TRIES} tries: {last_error}")


if __name__ == "__main__":
    main()
