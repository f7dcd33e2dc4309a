"""A push service and the browser behind it, for askgate's Web Push tests: every message is
decrypted with the http_ece package and every VAPID token verified with py_vapid (both
independent of askgate's code, over the cryptography package).

Usage: python web_push_decrypt.py UA_PRIVATE AUTH_SECRET [--port P]

UA_PRIVATE is the subscription's P-256 private key (the 32-byte scalar) and AUTH_SECRET its
16-byte auth secret, both base64url without padding: what the browser keeps when it hands the
application server `keys.p256dh` and `keys.auth`.

Listens on 127.0.0.1, port P or a free one, and prints `listening PORT` first. Then, for each POST (a
push to an endpoint under this origin), one JSON line on stdout:
  path               the endpoint's path
  content_encoding   the Content-Encoding header
  rs, idlen          the aes128gcm header's record size and key id length, as sent
  plaintext_b64      the decrypted payload, base64url (null when it did not decrypt)
  decrypt_error      why it did not decrypt (null when it did)
  scheme             the Authorization header's scheme
  k                  its `k` parameter, the VAPID public key
  jose_header        the token's JOSE header, parsed
  claims             the token's claims, as py_vapid returned them once the signature verified
  signature_valid    whether the ES256 signature verified against `k`
  ttl, urgency       the TTL and Urgency headers
  status             what it answered
It answers 201 when the message decrypted and the token verified, else 400; an endpoint whose
path starts with /gone answers 410 whatever it holds (a subscription the browser dropped), as
RFC 8030 section 7.3 has a push service say.
"""

import base64
import json
import struct
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import http_ece
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric import ec
from py_vapid import jwt as vapid_jwt


def b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def b64url_encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def parse_vapid(header: str) -> tuple[str, dict[str, str]]:
    """RFC 8292 section 3: `vapid t=TOKEN, k=KEY`, auth-params split on commas with optional
    whitespace around them (py_vapid's own parser does not allow the space)."""
    scheme, _, rest = header.strip().partition(" ")
    params = {}
    for param in rest.split(","):
        name, _, value = param.strip().partition("=")
        params[name] = value
    return scheme, params


def check_token(params: dict[str, str]) -> dict:
    token, key = params.get("t", ""), params.get("k", "")
    found = {"k": key, "jose_header": None, "claims": None, "signature_valid": False}
    try:
        found["jose_header"] = json.loads(b64url_decode(token.split(".")[0]))
    except (ValueError, IndexError):
        pass
    try:
        # Verifies ES256 (raw r || s) over the signing input with the point in `k`, then
        # returns the claims.
        found["claims"] = vapid_jwt.decode(token, key)
        found["signature_valid"] = True
    except InvalidSignature:
        pass
    return found


def main() -> None:
    ua_private_raw, auth_secret_b64 = sys.argv[1:3]
    port = int(sys.argv[4]) if sys.argv[3:4] == ["--port"] else 0
    ua_private = ec.derive_private_key(
        int.from_bytes(b64url_decode(ua_private_raw), "big"), ec.SECP256R1()
    )
    auth_secret = b64url_decode(auth_secret_b64)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (the name http.server calls)
            length = int(self.headers.get("content-length", "0"))
            body = self.rfile.read(length)
            line = {
                "path": self.path,
                "content_encoding": self.headers.get("content-encoding"),
                "rs": struct.unpack("!L", body[16:20])[0] if len(body) >= 20 else None,
                "idlen": body[20] if len(body) >= 21 else None,
                "plaintext_b64": None,
                "decrypt_error": None,
            }
            try:
                plaintext = http_ece.decrypt(
                    body,
                    private_key=ua_private,
                    auth_secret=auth_secret,
                    version="aes128gcm",
                )
                line["plaintext_b64"] = b64url_encode(plaintext)
            except Exception as error:  # noqa: BLE001 (any failure is reported, not raised)
                line["decrypt_error"] = f"{type(error).__name__}: {error}"
            scheme, params = parse_vapid(self.headers.get("authorization", ""))
            line["scheme"] = scheme
            line.update(check_token(params))
            ok = line["decrypt_error"] is None and line["signature_valid"]
            status = 201 if ok else 400
            if self.path.startswith("/gone"):
                status = 410
            line["ttl"] = self.headers.get("ttl")
            line["urgency"] = self.headers.get("urgency")
            line["status"] = status
            self.send_response(status)
            self.send_header("content-length", "0")
            self.end_headers()
            with lock:
                print(json.dumps(line), flush=True)

        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(f"listening {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
