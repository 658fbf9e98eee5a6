#!/usr/bin/env python3
"""A scripted stand-in for the model API, and the launcher of one Claude Code client run
against it (abcd's real-host tier, tests/real_host/real_host.rs). Standard library only.

    model_server.py --script SCRIPT.json --log REQUESTS.jsonl [--isolated] -- CLIENT ARGS...

It listens on 127.0.0.1 only, on a free port, starts CLIENT with ANTHROPIC_BASE_URL
pointing there (stdin, stdout and stderr passed through), serves the script's turns,
appends every request it receives to REQUESTS.jsonl, and exits with the client's status
once the client ends. With --isolated it first checks that it runs in a network
namespace whose only interface is the loopback, and brings that loopback up: the tier
runs it under `unshare -rn`, so nothing the client does can reach another address.

The script is a JSON object:
  {"turns": [TURN, ...], "summary": "text of the compaction summary", "after": "text"}
A TURN is what the next main request gets:
  {"say": "text"}                                   an end_turn text answer
  {"say": "text", "tools": [{"name": "Bash", "input": {...}}, ...]}   tool calls
  {"status": 529, "error": "overloaded_error", "repeat": 1}            an HTTP error
  any turn may add "input_tokens": N (the usage reported; drives auto-compaction)
  any turn may add "hold": NAME: the request is logged (with "held": NAME) and the answer
      waits until the file LOG.NAME.release exists (a barrier a test places a kill on)
Once the turns run out, every main request gets {"say": after}.
In a turn's tool inputs, "{cwd}" becomes the client's working directory, read from the
request's system prompt ("Primary working directory: ..."), so a script can name files in
a folder it cannot know beforehand (a lane worktree abcd makes).

A request is classified as
  compaction: its text asks for the summary of the conversation (the client's compaction
              prompt); answered with `summary`, no turn used
  main:       it offers tools (the agent loop); answered with the next turn
  side:       anything else; answered with a short text, no turn used
"""

import argparse
import ctypes
import fcntl
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# The client's compaction prompt asks for this; nothing else it sends does.
COMPACTION_MARK = "create a detailed summary of the conversation"
# A text answer is streamed in this many pieces, so the client's assembler is exercised.
STREAM_PIECES = 3
# Reported usage when a turn does not set it.
DEFAULT_INPUT_TOKENS = 100
OUTPUT_TOKENS = 20
# Bounds a run whose client never exits; the Rust side has its own, shorter deadline.
MAX_CLIENT_SECONDS = 300
# How often a held answer looks for its release file, and how long it waits at most.
HOLD_POLL_SECONDS = 0.02
# The client's system prompt names its working directory on a line starting with this.
CWD_MARK = "Primary working directory: "
ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_error",
               500: "api_error", 529: "overloaded_error"}

SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
PR_SET_PDEATHSIG = 1


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
        self.repeats_left = None
        self.count = 0
        self.lock = threading.Lock()

    def next_main(self):
        with self.lock:
            if self.position >= len(self.turns):
                return None, {"say": self.after}
            index, turn = self.position, self.turns[self.position]
            if "status" in turn:
                if self.repeats_left is None:
                    self.repeats_left = int(turn.get("repeat", 1))
                self.repeats_left -= 1
                if self.repeats_left > 0:
                    return index, turn
                self.repeats_left = None
            self.position += 1
            return index, turn

    def record(self, entry):
        with self.lock:
            self.count += 1
            entry["n"] = self.count
            with open(self.log_path, "a") as f:
                f.write(json.dumps(entry) + "\n")


SCRIPT = None


def working_directory(request):
    system = request.get("system")
    texts = [system] if isinstance(system, str) else [b.get("text", "") for b in system or [] if isinstance(b, dict)]
    for m in request.get("messages", []):
        content = m.get("content")
        texts.extend([content] if isinstance(content, str) else
                     [b.get("text", "") for b in content or [] if isinstance(b, dict)])
    for text in texts:
        at = text.find(CWD_MARK)
        if at >= 0:
            return text[at + len(CWD_MARK):].split("\n", 1)[0].strip()
    return None


class NoWorkingDirectory(Exception):
    """The script names {cwd}, and the request names no working directory to put there."""


def with_cwd(value, cwd):
    if isinstance(value, str):
        if "{cwd}" in value and cwd is None:
            raise NoWorkingDirectory()
        return value.replace("{cwd}", cwd) if cwd is not None else value
    if isinstance(value, list):
        return [with_cwd(v, cwd) for v in value]
    if isinstance(value, dict):
        return {k: with_cwd(v, cwd) for k, v in value.items()}
    return value


def hold(name):
    """Waits for the test's release file; a client killed meanwhile never reads the answer."""
    release = "%s.%s.release" % (SCRIPT.log_path, name)
    waited = 0.0
    while not os.path.exists(release) and waited < MAX_CLIENT_SECONDS:
        threading.Event().wait(HOLD_POLL_SECONDS)
        waited += HOLD_POLL_SECONDS


def content_of(turn):
    blocks = []
    if turn.get("say"):
        blocks.append({"type": "text", "text": turn["say"]})
    for call in turn.get("tools", []):
        blocks.append({"type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:24], "name": call["name"],
                       "input": call.get("input", {})})
    if not blocks:
        blocks.append({"type": "text", "text": ""})
    return blocks, ("tool_use" if turn.get("tools") else "end_turn")


def pieces(text):
    step = max(1, -(-len(text) // STREAM_PIECES))
    return [text[i:i + step] for i in range(0, len(text), step)] or [""]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *_):
        pass

    def body(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            return self.rfile.read(length)
        if self.headers.get("Transfer-Encoding", "").lower() != "chunked":
            return b""
        out = b""
        while True:
            size = int(self.rfile.readline().split(b";")[0].strip(), 16)
            if size == 0:
                self.rfile.readline()
                return out
            out += self.rfile.read(size)
            self.rfile.readline()

    def reply_json(self, status, value):
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", "req_" + uuid.uuid4().hex[:24])
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        SCRIPT.record({"method": "GET", "path": self.path, "kind": "other"})
        self.reply_json(200, {"data": [], "has_more": False} if self.path.startswith("/v1/models") else {})

    def do_POST(self):
        raw = self.body()
        path = self.path.split("?", 1)[0]
        if path == "/v1/messages/count_tokens":
            SCRIPT.record({"method": "POST", "path": self.path, "kind": "count_tokens"})
            return self.reply_json(200, {"input_tokens": max(1, len(raw) // 4)})
        if path != "/v1/messages":
            SCRIPT.record({"method": "POST", "path": self.path, "kind": "other"})
            return self.reply_json(200, {})
        text = raw.decode("utf-8", "replace")
        try:
            request = json.loads(text)
        except ValueError:
            SCRIPT.record({"method": "POST", "path": self.path, "kind": "unreadable"})
            return self.reply_json(400, {"type": "error", "error": {"type": "invalid_request_error", "message": "not JSON"}})
        if COMPACTION_MARK in text.lower():
            kind, index, turn = "compaction", None, {"say": SCRIPT.summary}
        elif request.get("tools"):
            kind = "main"
            index, turn = SCRIPT.next_main()
        else:
            kind, index, turn = "side", None, {"say": "OK"}
        if "tools" in turn:
            try:
                turn = dict(turn, tools=with_cwd(turn["tools"], working_directory(request)))
            except NoWorkingDirectory:
                # A tool call on a path left unexpanded would fail somewhere else, or not at
                # all: the run fails here, said in the log and in the answer.
                SCRIPT.record({"method": "POST", "path": self.path, "kind": "script_error", "turn": index,
                               "error": "{cwd} in the script, and no working directory in the request"})
                return self.reply_json(500, {"type": "error", "error": {"type": "api_error",
                                                                        "message": "model_server: {cwd} cannot be expanded"}})
        entry = {"method": "POST", "path": self.path, "kind": kind, "turn": index, "answer": turn, "body": request}
        if turn.get("hold"):
            entry["held"] = turn["hold"]
        SCRIPT.record(entry)
        if turn.get("hold"):
            hold(turn["hold"])
        if "status" in turn:
            status = int(turn["status"])
            kind_name = turn.get("error") or ERROR_TYPES.get(status, "api_error")
            return self.reply_json(status, {"type": "error", "error": {"type": kind_name,
                                                                       "message": "scripted %d" % status}})
        blocks, stop = content_of(turn)
        usage = {"input_tokens": int(turn.get("input_tokens", DEFAULT_INPUT_TOKENS)), "output_tokens": OUTPUT_TOKENS,
                 "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        message = {"id": "msg_" + uuid.uuid4().hex[:24], "type": "message", "role": "assistant",
                   "model": request.get("model", "scripted"), "content": blocks, "stop_reason": stop,
                   "stop_sequence": None, "usage": usage}
        if request.get("stream"):
            self.stream(message)
        else:
            self.reply_json(200, message)

    def stream(self, message):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def event(name, data):
            chunk = ("event: %s\ndata: %s\n\n" % (name, json.dumps(data))).encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))

        head = dict(message, content=[], stop_reason=None, usage=dict(message["usage"], output_tokens=1))
        event("message_start", {"type": "message_start", "message": head})
        for i, block in enumerate(message["content"]):
            if block["type"] == "text":
                start, deltas = {"type": "text", "text": ""}, [{"type": "text_delta", "text": p} for p in pieces(block["text"])]
            else:
                start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
                deltas = [{"type": "input_json_delta", "partial_json": p} for p in pieces(json.dumps(block["input"]))]
            event("content_block_start", {"type": "content_block_start", "index": i, "content_block": start})
            for d in deltas:
                event("content_block_delta", {"type": "content_block_delta", "index": i, "delta": d})
            event("content_block_stop", {"type": "content_block_stop", "index": i})
        event("message_delta", {"type": "message_delta",
                                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                                "usage": {"output_tokens": OUTPUT_TOKENS}})
        event("message_stop", {"type": "message_stop"})
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def isolate():
    """Refuses to run outside a loopback-only namespace, then brings the loopback up."""
    # if_nameindex asks the kernel about this namespace (/sys/class/net shows the one
    # sysfs was mounted in).
    interfaces = sorted(name for _, name in socket.if_nameindex())
    if interfaces != ["lo"]:
        sys.exit("model_server: refusing to run the client: this network namespace has %s, not only lo "
                 "(run it under `unshare -rn`)" % ", ".join(interfaces))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        flags = struct.unpack("16sH", fcntl.ioctl(s, SIOCGIFFLAGS, struct.pack("16sH", b"lo", 0)))[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH", b"lo", flags | IFF_UP))


def die_with_parent():
    # The client must not outlive this launcher (a test killed on its deadline).
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


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
    env = dict(os.environ, ANTHROPIC_BASE_URL="http://127.0.0.1:%d" % server.server_address[1])
    child = subprocess.Popen(client, env=env, preexec_fn=die_with_parent)
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
