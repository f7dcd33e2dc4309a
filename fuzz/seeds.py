#!/usr/bin/env python3
"""Writes each fuzz target's seed corpus into fuzz/corpus/<target>/ (or the directory given).

Sources: the conformance vectors (tests/data/conformance/*.jsonl), examples/questions.jsonl,
and the hand-written seeds below for what the vectors lack (approvals, forms, the claude
dialect, tab frames, personal-link keys, log records). The corpora are generated, not
committed; they grow as the targets run.
"""

import hashlib
import json
import pathlib
import struct
import sys
import zlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
DIALECT_BYTE = {"harness": b"\x00", "deepagents": b"\x01", "claude": b"\x02"}


def dump(value):
    return json.dumps(value, ensure_ascii=False).encode()


def pair(request, answer=None):
    """A dialect target's input: the request, then NUL and the answer if there is one."""
    return dump(request) + (b"\x00" + dump(answer) if answer is not None else b"")


def vectors():
    for path in sorted((ROOT / "tests/data/conformance").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8", errors="surrogatepass").splitlines():
            if line.strip():
                yield json.loads(line)
    for line in (ROOT / "examples/questions.jsonl").read_text().splitlines():
        if line.strip():
            yield json.loads(line)


def questions_of(vector):
    """The `questions` a vector's request holds, if it has a request."""
    given = vector.get("input", {})
    for holder in (given.get("args"), given.get("request"), given):
        if isinstance(holder, dict) and "questions" in holder:
            return holder["questions"]
    return None


def answer_of(vector):
    given = vector.get("input", {})
    return given.get("response", given.get("resume"))


CLAUDE = [{"question": "Which one?", "header": "Pick", "multiSelect": False,
           "options": [{"label": "A", "description": "a"}, {"label": "B", "description": "b"}]},
          {"question": "Which ones?", "header": "Many", "multiSelect": True,
           "options": [{"label": "A", "description": "a"}, {"label": "B", "description": "b"}]}]
CALLS = [{"name": "write_file", "args": {"path": "/tmp/x", "mode": "w", "lines": [1, 2]},
          "args_schema": {"type": "object", "required": ["path"], "properties": {
              "path": {"type": "string", "maxLength": 100},
              "mode": {"type": "string", "enum": ["w", "a"]},
              "lines": {"type": "array", "items": {"type": "integer", "minimum": 0}},
              "force": {"type": "boolean"}}},
          "decisions": ["approve", "edit", "reject", "respond"]},
         {"name": "rm", "args": {"path": "/tmp/y"}, "description": "remove a file"}]
FORM = {"message": "Your details", "schema": {"type": "object", "required": ["email"], "properties": {
    "email": {"type": "string", "format": "email", "title": "E-mail"},
    "site": {"type": "string", "format": "uri"},
    "born": {"type": "string", "format": "date"},
    "at": {"type": "string", "format": "date-time"},
    "age": {"type": "integer", "minimum": 0, "maximum": 150},
    "ratio": {"type": "number"},
    "ok": {"type": "boolean", "default": True},
    "size": {"type": "string", "enum": ["S", "M"], "enumNames": ["Small", "Medium"]},
    "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
    "name": {"type": "string", "minLength": 1, "maxLength": 20}}}}
FORM_URLS = ["https://accounts.example.com/sign-in?x=1#f", "https://evil.example\\@accounts.google.com/",
             "https://user@host.example/", "https://xn--pple-43d.com/", "https://аpple.com/",
             "http://[::1]:8080/p", "https://a.b/%2e%2e/", "javascript:alert(1)"]


def seeds():
    out = {name: [] for name in ("agent_frame", "tab_frame", "questions", "approval", "form",
                                 "personal_link_key", "durable_log")}
    for vector in vectors():
        dialect = vector.get("dialect")
        questions = questions_of(vector)
        if dialect not in DIALECT_BYTE or questions is None:
            continue
        answer = answer_of(vector)
        out["questions"].append(DIALECT_BYTE[dialect] + pair(questions, answer))
        out["agent_frame"].append(dump({"type": "ask", "session": "s", "id": "r1",
                                        "dialect": dialect, "questions": questions}))
        if answer is not None:
            out["tab_frame"].append(dump({"type": "answer", "id": "r1", "response": answer}))
    out["questions"].append(DIALECT_BYTE["claude"] + pair(CLAUDE, {"answers": {"Which one?": "A", "Which ones?": ["A", "B"]}}))
    out["questions"].append(DIALECT_BYTE["claude"] + pair(CLAUDE, {"response": "Neither"}))
    decisions = {"decisions": [{"type": "edit", "args": {"path": "/tmp/z", "mode": "a", "lines": [3]}},
                               {"type": "reject", "message": "no"}]}
    out["approval"] += [pair(CALLS, decisions), pair(CALLS, {"decisions": ["approve", "approve"]}),
                        pair(CALLS[1:], {"decisions": [{"type": "respond", "message": "use mv"}]})]
    content = {"action": "accept", "content": {"email": "a@b.c", "site": "https://x.y/", "born": "2000-02-29",
                                               "at": "2026-12-06T05:00:00Z", "age": 3, "ratio": 0.5,
                                               "ok": False, "size": "S", "tags": ["a"], "name": "n"}}
    out["form"] += [pair(FORM, content), pair(FORM, {"action": "decline"})]
    out["form"] += [pair({"message": "Open this", "mode": "url", "url": url}, {"action": "accept"})
                    for url in FORM_URLS]
    for frame in ({"type": "ask", "session": "s", "dialect": "approval", "calls": CALLS, "timeout_s": 30,
                   "title": "Approve", "answerers": ["ann", "group:ops"]},
                  {"type": "ask", "session": "s", "dialect": "form", **FORM},
                  {"type": "ask", "session": "s", "dialect": "claude", "questions": CLAUDE},
                  {"type": "open", "session": "s"}, {"type": "cancel", "session": "s", "id": "r1"},
                  {"type": "link", "session": "s", "user": "ann", "ttl_s": 60},
                  {"type": "ack", "session": "s", "id": "r1"}):
        out["agent_frame"].append(dump(frame))
    for frame in ({"type": "hello", "key": "k", "tab": "t1"}, {"type": "history"},
                  {"type": "decline", "id": "r1", "dismiss": True},
                  {"type": "answer", "id": "r1", "response": decisions}):
        out["tab_frame"].append(dump(frame))
    for key, user in (("p1.cw.YW5u.1000.AAAA", "ann"), ("plainviewerkey", "group:ops"),
                      ("p1...", "Ann Lee <ann@example.com>"), ("p1.cw.YW5u.+5.AAAA", "")):
        out["personal_link_key"].append(key.encode() + b"\x00" + user.encode())
    request = {"session": "s", "id": "r1", "dialect": "harness", "questions": [], "title": None,
               "asked_at_ms": 1, "deadline_ms": None, "resolution": None}
    changes = [{"Put": request}, {"Delete": {"session": "s", "id": "r1"}},
               {"Audit": {"session": "s", "at_ms": 5, "tail": "{}"}}, {"DropStaleTrails": {"before_ms": 9}}]
    out["durable_log"] += [dump(changes), dump(request)]
    log = b""
    for seq, payload in enumerate([dump(changes[:1]), dump(changes[1:])], start=1):
        crc = zlib.crc32(struct.pack("<Q", seq) + payload)
        log += struct.pack("<IIQ", len(payload), crc, seq) + payload
    out["durable_log"] += [log, log + bytes(32), log[:-3]]
    return out


def main():
    target_dir = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "fuzz/corpus"
    for target, inputs in seeds().items():
        directory = target_dir / target
        directory.mkdir(parents=True, exist_ok=True)
        extra = ROOT / "fuzz/seeds" / target
        if extra.is_dir():
            inputs += [path.read_bytes() for path in sorted(extra.iterdir())]
        for data in inputs:
            (directory / hashlib.sha1(data).hexdigest()).write_bytes(data)
        print(f"{target}: {len(inputs)} seeds in {directory}")


if __name__ == "__main__":
    main()
