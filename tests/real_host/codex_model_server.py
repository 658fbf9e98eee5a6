#!/usr/bin/env python3
"""A scripted stand-in for the OpenAI Responses API, and the launcher of one Codex CLI run
against it (abcd's real-host tier, tests/real_host/codex.rs). Standard library only.

    codex_model_server.py --script SCRIPT.json --log REQUESTS.jsonl [--isolated] -- CLIENT ARGS...

It listens on 127.0.0.1 only, on a free port, replaces "{base_url}" in CLIENT ARGS with
http://127.0.0.1:PORT/v1 (the test passes it as `-c model_providers.mock.base_url=...`),
starts CLIENT (stdin, stdout and stderr passed through, so a test can drive `codex
app-server` over stdio), serves the script's turns, appends every request it receives to
REQUESTS.jsonl, and exits with the client's status once the client ends. With --isolated it
first checks that it runs in a network namespace whose only interface is the loopback, and
brings that loopback up (model_server.py's check, shared).

The script is a JSON object:
  {"turns": [TURN, ...], "summary": "text of the compaction summary", "after": "text"}
A TURN is what the next main request gets:
  {"say": "text"}                                          an assistant message
  {"say": "text", "calls": [{"name": "exec_command", "arguments": {...}}]}   function calls
  {"patch": "*** Begin Patch ..."}                          a freeform apply_patch call
  {"status": 500}                                          an HTTP error, no stream
  any turn may add "input_tokens": N (the usage reported; drives auto compaction)
Once the turns run out, every main request gets {"say": after}.

A request is classified as
  compaction: its text holds Codex's compaction prompt; answered with `summary`, no turn used
  main:       it offers tools (the agent loop); answered with the next turn
  side:       anything else; answered with a short text, no turn used
Each log line: {"n", "kind", "turn", "answer", "metadata" (the x-codex-turn-metadata header,
parsed), "body"}.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# The loopback check and the parent-death signal are the Claude launcher's; one copy.
from model_server import die_with_parent, isolate

# Codex's compaction request ends with a user message that begins with this; nothing else
# it sends holds it.
COMPACTION_MARK = "CONTEXT CHECKPOINT COMPACTION"
# Reported usage when a turn does not set it.
DEFAULT_INPUT_TOKENS = 100
OUTPUT_TOKENS = 20
# Bounds a run whose client never exits; the Rust side has its own, shorter deadline.
MAX_CLIENT_SECONDS = 300
BASE_URL_MARK = "{base_url}"


class Script:
    """The turns and where the run is in them; one lock, requests may overlap."""

    def __init__(self, path, log_path):
        with open(path) as f:
            data = json.load(f)
        self.turns = list(data.get("turns", []))
        self.summary = data.get("summary", "The person asked for work; it was done. Nothing is pending.")
        self.after = data.get("after", "Done.")
        self.log_path = log_path
        self.position = 0
        self.count = 0
        self.lock = threading.Lock()

    def next_main(self):
        with self.lock:
            if self.position >= len(self.turns):
                return None, {"say": self.after}
            index = self.position
            self.position += 1
            return index, self.turns[index]

    def record(self, entry):
        with self.lock:
            self.count += 1
            entry["n"] = self.count
            with open(self.log_path, "a") as f:
                f.write(json.dumps(entry) + "\n")


SCRIPT = None


def events_of(turn):
    """The SSE events of one answer: the output items, then response.completed with usage."""
    rid = "resp_" + uuid.uuid4().hex[:16]
    events = [{"type": "response.created", "response": {"id": rid}}]
    items = []
    if turn.get("say"):
        mid = "msg_" + uuid.uuid4().hex[:12]
        events.append({"type": "response.output_item.added", "output_index": 0,
                       "item": {"type": "message", "role": "assistant", "id": mid, "content": []}})
        events.append({"type": "response.output_text.delta", "delta": turn["say"], "item_id": mid,
                       "output_index": 0, "content_index": 0})
        items.append({"type": "message", "role": "assistant", "id": mid,
                      "content": [{"type": "output_text", "text": turn["say"]}]})
    for call in turn.get("calls", []):
        items.append({"type": "function_call", "id": "fc_" + uuid.uuid4().hex[:12],
                      "call_id": "call_" + uuid.uuid4().hex[:12], "name": call["name"],
                      "arguments": json.dumps(call.get("arguments", {}))})
    if "patch" in turn:
        items.append({"type": "custom_tool_call", "id": "ctc_" + uuid.uuid4().hex[:12],
                      "call_id": "call_" + uuid.uuid4().hex[:12], "name": "apply_patch", "input": turn["patch"]})
    for i, item in enumerate(items):
        events.append({"type": "response.output_item.done", "output_index": i, "item": item})
    tokens = int(turn.get("input_tokens", DEFAULT_INPUT_TOKENS))
    events.append({"type": "response.completed", "response": {"id": rid, "usage": {
        "input_tokens": tokens, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": OUTPUT_TOKENS,
        "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": tokens + OUTPUT_TOKENS}}})
    return events


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *_):
        pass

    def reply(self, status, data, content_type="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        SCRIPT.record({"method": "GET", "path": self.path, "kind": "other"})
        if self.path.split("?", 1)[0].rstrip("/").endswith("/models"):
            return self.reply(200, b'{"object":"list","data":[],"models":[]}')
        self.reply(404, b'{"error":{"message":"not served"}}')

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if not self.path.split("?", 1)[0].rstrip("/").endswith("/responses"):
            SCRIPT.record({"method": "POST", "path": self.path, "kind": "other"})
            return self.reply(404, b'{"error":{"message":"not served"}}')
        text = raw.decode("utf-8", "replace")
        try:
            request = json.loads(text)
        except ValueError:
            # A compressed or broken body would make every assertion on it vacuous: say so.
            SCRIPT.record({"method": "POST", "path": self.path, "kind": "unreadable",
                           "encoding": self.headers.get("Content-Encoding")})
            return self.reply(400, b'{"error":{"message":"not JSON"}}')
        if COMPACTION_MARK in text:
            kind, index, turn = "compaction", None, {"say": SCRIPT.summary}
        elif request.get("tools"):
            kind = "main"
            index, turn = SCRIPT.next_main()
        else:
            kind, index, turn = "side", None, {"say": "OK"}
        try:
            metadata = json.loads(self.headers.get("x-codex-turn-metadata") or "null")
        except ValueError:
            metadata = self.headers.get("x-codex-turn-metadata")
        SCRIPT.record({"method": "POST", "path": self.path, "kind": kind, "turn": index, "answer": turn,
                       "metadata": metadata, "body": request})
        if "status" in turn:
            body = json.dumps({"error": {"message": "scripted %d" % turn["status"], "type": "server_error"}})
            return self.reply(int(turn["status"]), body.encode())
        stream = "".join("event: %s\ndata: %s\n\n" % (e["type"], json.dumps(e)) for e in events_of(turn))
        self.reply(200, stream.encode(), "text/event-stream")


def main():
    global SCRIPT
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--script", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--isolated", action="store_true", help="require a loopback-only network namespace")
    ap.add_argument("client", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    client = args.client[1:] if args.client[:1] == ["--"] else args.client
    if not client:
        ap.error("no client command after --")
    if args.isolated:
        isolate()
    SCRIPT = Script(args.script, args.log)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base_url = "http://127.0.0.1:%d/v1" % server.server_address[1]
    child = subprocess.Popen([a.replace(BASE_URL_MARK, base_url) for a in client], preexec_fn=die_with_parent)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda s, _f: child.send_signal(s))
    try:
        code = child.wait(timeout=MAX_CLIENT_SECONDS)
    except subprocess.TimeoutExpired:
        child.kill()
        code = child.wait()
    server.shutdown()
    sys.exit(code if code >= 0 else 128 - code)


if __name__ == "__main__":
    main()
