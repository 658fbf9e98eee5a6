//! The real-host tier's Codex half (issue 38): the real Codex CLI, pinned, runs offline
//! against a scripted Responses API (`tests/real_host/codex_model_server.py`) inside a
//! loopback-only network namespace (`unshare -rn`), each run under `env -i` with its own
//! HOME, CODEX_HOME and TMPDIR. Scenarios assert on what the model server received (every
//! request is logged) and on what the hooks left: abcd's journals, or the test's own hook
//! log.
//!
//! The CLI is installed by `tests/real_host/codex_install.sh` into a cache outside the
//! repository when it is missing. When it is absent and cannot be installed (or the
//! namespace cannot be made), each test prints one skip line and passes; with
//! `ABCD_REAL_HOST=require` (what `.ci/run` sets) it fails instead, as the Claude half
//! does. `docs/real-host.md` ("Codex") says how the tier runs and how to move the pin.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::repo::{self, README};
use serde_json::{Value, json};

/// The CLI version the tier is written against (codex_install.sh pins the same).
const CODEX_VERSION: &str = "0.171.0";
/// `require`: a missing CLI fails the tier; `skip`: never run it; unset: run it when the
/// CLI is there or can be installed, else print one skip line. The Claude half reads the
/// same variable, so one setting governs the whole tier.
const MODE_VAR: &str = "ABCD_REAL_HOST";
/// Set to keep each scenario's folder (CODEX_HOME with its rollouts, repository, logs).
const KEEP_VAR: &str = "ABCD_REAL_HOST_KEEP";
/// One CLI run; a scripted run takes about a second, so this only catches a hang.
const RUN_DEADLINE: Duration = Duration::from_secs(60);
/// A built-in model slug: Codex offers the freeform `apply_patch` tool only to those (the
/// lab's unknown slug gets `exec_command` alone for writing files).
const MODEL: &str = "gpt-5.5";
/// The provider's key variable; the model server takes any key.
const KEY_VAR: &str = "ABCD_CODEX_MOCK_KEY";

// ---------------------------------------------------------------------------- the CLI

/// The CLI's native binary, once per test process; `None` (after one skip line) when the
/// tier cannot run here and is not required.
fn codex() -> Option<&'static Path> {
    static FOUND: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    static SAID: OnceLock<()> = OnceLock::new();
    let mode = std::env::var(MODE_VAR).unwrap_or_default();
    let found = FOUND.get_or_init(|| if mode == "skip" { Err(format!("{MODE_VAR}=skip")) } else { locate_codex() });
    match found {
        Ok(path) => Some(path.as_path()),
        Err(why) if mode == "require" => panic!("the real-host tier is required ({MODE_VAR}=require) but Codex cannot run: {why}"),
        Err(why) => {
            SAID.get_or_init(|| {
                // Straight to the process's stderr: the harness captures print macros, and a
                // skip must never read as a silent pass.
                let _ = writeln!(
                    std::io::stderr(),
                    "real_host: Codex SKIPPED, the Codex CLI {CODEX_VERSION} cannot run here: {why}. \
                     Install it with tests/real_host/codex_install.sh; {MODE_VAR}=require makes this a failure."
                );
            });
            None
        }
    }
}

fn locate_codex() -> Result<PathBuf, String> {
    let works = |cmd: &mut Command| cmd.stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
    if !works(Command::new("unshare").args(["-rn", "true"])) {
        return Err("`unshare -rn` fails here, so no loopback-only network namespace can be made".into());
    }
    if !works(Command::new("python3").arg("--version")) {
        return Err("python3 (the model server) is not on PATH".into());
    }
    let script = manifest().join("tests/real_host/codex_install.sh");
    let out = Command::new(&script).stdin(Stdio::null()).output().map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(err.lines().last().unwrap_or("the install failed").to_string());
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

/// Shares the machine with the Claude half's scenarios and keeps off it while its timing
/// test measures (`real_host::MACHINE`).
fn shared_machine() -> std::sync::RwLockReadGuard<'static, ()> {
    crate::real_host::MACHINE.read().unwrap_or_else(|e| e.into_inner())
}

fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

use crate::real_host::abcd_exe;

/// The PATH of every CLI run, and of `abcd init --host codex`: the Claude tier's
/// ([`crate::real_host::sandbox_path`]).
fn run_path() -> String {
    crate::real_host::sandbox_path()
}

// ---------------------------------------------------------------------------- a scenario's place

/// The CLI's configuration for an offline, quiet, loopback-only run (the lab's findings):
/// analytics, update checks and every feature that reaches a network service are off; the
/// provider is the model server, whose port each run passes with `-c`. `{root}` takes a
/// scenario's root keys (TOML puts a key after a table line into that table).
const CONFIG: &str = r#"model = "{model}"
model_provider = "mock"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false
{root}
[analytics]
enabled = false

[features]
apps = false
plugins = false
remote_plugin = false
in_app_updates = false
browser_use = false
computer_use = false
tool_suggest = false
daemon_auto_start = false

[model_providers.mock]
name = "mock"
base_url = "http://127.0.0.1:9/v1"
wire_api = "responses"
env_key = "{key}"
request_max_retries = 0
stream_max_retries = 0
"#;

/// One scenario's folder: a git repository, the CLI's HOME, CODEX_HOME and TMPDIR, abcd's
/// home store, and the logs of each CLI run.
struct CodexLab {
    dir: Option<tempfile::TempDir>,
    base: PathBuf,
    repo: PathBuf,
    codex_home: PathBuf,
    codex: PathBuf,
    runs: usize,
    /// More environment for the CLI's runs (a test seam abcd's hooks read).
    extra_env: Vec<(String, String)>,
}

impl Drop for CodexLab {
    fn drop(&mut self) {
        if std::env::var_os(KEEP_VAR).is_some()
            && let Some(dir) = self.dir.take()
        {
            let kept = dir.keep();
            let _ = writeln!(std::io::stderr(), "real_host: kept {}", kept.display());
        }
    }
}

impl CodexLab {
    /// A lab whose `config.toml` carries `root_keys` (e.g. the auto-compaction limit).
    fn new(codex: &Path, root_keys: &[&str]) -> CodexLab {
        let dir = tempfile::Builder::new().prefix("abcd-real-codex.").tempdir().unwrap();
        let base = dir.path().to_path_buf();
        for d in ["home", "tmp", "abcd-home", "codex_home", "repo"] {
            std::fs::create_dir_all(base.join(d)).unwrap();
        }
        let repo = base.join("repo");
        repo::create(&repo, &[README]);
        let codex_home = base.join("codex_home");
        let root: String = root_keys.iter().map(|k| format!("{k}\n")).collect();
        let config = CONFIG.replace("{model}", MODEL).replace("{key}", KEY_VAR).replace("{root}", &root);
        std::fs::write(codex_home.join("config.toml"), config).unwrap();
        CodexLab { dir: Some(dir), base, repo, codex_home, codex: codex.to_path_buf(), runs: 0, extra_env: Vec::new() }
    }

    /// Exactly the environment the CLI gets (and passes on to hooks and the shell tool).
    fn environment(&self) -> Vec<(String, String)> {
        let base = |d: &str| self.base.join(d).display().to_string();
        [
            ("PATH", run_path()),
            ("HOME", base("home")),
            ("CODEX_HOME", self.codex_home.display().to_string()),
            ("TMPDIR", base("tmp")),
            ("LANG", "C.UTF-8".into()),
            ("TERM", "dumb".into()),
            ("TZ", "UTC".into()),
            (KEY_VAR, "not-a-key-the-scripted-model-server-takes-any".into()),
            ("ABCD_HOME", base("abcd-home")),
            ("ABCD_GH", String::new()),
            ("GIT_CONFIG_NOSYSTEM", "1".into()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .chain(self.extra_env.iter().cloned())
        .collect()
    }

    /// The model server in a loopback-only namespace, serving `script` and logging to
    /// `log`, starting the CLI with `args` in the repository.
    fn sandbox(&self, script: &Path, log: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new("unshare");
        cmd.args(["-rn", "--", "python3"])
            .arg(manifest().join("tests/real_host/codex_model_server.py"))
            .arg("--isolated")
            .arg("--script")
            .arg(script)
            .arg("--log")
            .arg(log)
            .arg("--")
            .arg(&self.codex)
            .args(["-c", "model_providers.mock.base_url=\"{base_url}\""])
            .args(args)
            .current_dir(&self.repo)
            .env_clear()
            .envs(self.environment());
        cmd
    }

    fn next_run(&mut self, script: &Value) -> (String, PathBuf, PathBuf) {
        self.runs += 1;
        let tag = format!("run{}", self.runs);
        let script_path = self.base.join(format!("{tag}.script.json"));
        std::fs::write(&script_path, script.to_string()).unwrap();
        let log = self.base.join(format!("{tag}.requests.jsonl"));
        (tag, script_path, log)
    }

    /// `codex exec --json PROMPT`, stdin closed: one turn.
    fn exec(&mut self, script: Value, prompt: &str) -> CodexRun {
        let (tag, script_path, log) = self.next_run(&script);
        let err_path = self.base.join(format!("{tag}.stderr.txt"));
        let mut child = self
            .sandbox(&script_path, &log, &["exec", "--json", "--skip-git-repo-check", prompt])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&err_path).unwrap())
            .spawn()
            .expect("unshare runs");
        let rx = lines_of(child.stdout.take().unwrap());
        let mut events = Vec::new();
        let started = Instant::now();
        loop {
            match rx.recv_timeout(Duration::from_millis(200)) {
                Ok(line) => events.extend(serde_json::from_str::<Value>(&line).ok()),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
            if started.elapsed() > RUN_DEADLINE {
                let _ = child.kill();
                let _ = child.wait();
                panic!("codex exec ran past {RUN_DEADLINE:?}; its stderr is {}", err_path.display());
            }
        }
        let status = child.wait().unwrap();
        CodexRun { code: status.code(), events, requests: read_jsonl(&log), stderr: std::fs::read_to_string(&err_path).unwrap_or_default() }
    }

    /// `codex app-server`, driven over stdio: a thread in the repository, then `steps` in
    /// order, each waiting for its `turn/completed`. The run's events are every message the
    /// server sent (hook runs arrive as `hook/started` / `hook/completed`).
    fn app(&mut self, script: Value, steps: &[Step]) -> CodexRun {
        let (tag, script_path, log) = self.next_run(&script);
        let err_path = self.base.join(format!("{tag}.stderr.txt"));
        let child = self
            .sandbox(&script_path, &log, &["app-server"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&err_path).unwrap())
            .spawn()
            .expect("unshare runs");
        let mut app = AppServer::new(child, err_path.clone());
        app.call("initialize", json!({"clientInfo": {"name": "abcd-real-host", "title": "abcd real-host tier", "version": "0"}}));
        app.notify("initialized");
        let started = app.call(
            "thread/start",
            json!({"cwd": self.repo.display().to_string(), "approvalPolicy": "never", "sandbox": "danger-full-access"}),
        );
        let thread = started["thread"]["id"].as_str().unwrap_or_else(|| panic!("thread/start: {started}")).to_string();
        for step in steps {
            match step {
                Step::Prompt(text) => {
                    app.call("turn/start", json!({"threadId": thread, "input": [{"type": "text", "text": text}]}));
                }
                Step::Compact => {
                    app.call("thread/compact/start", json!({"threadId": thread}));
                }
                Step::HooksList => {
                    app.call("hooks/list", json!({"cwds": [self.repo.display().to_string()]}));
                    continue;
                }
            }
            app.wait_for("turn/completed");
        }
        let (code, events) = app.finish();
        CodexRun { code, events, requests: read_jsonl(&log), stderr: std::fs::read_to_string(&err_path).unwrap_or_default() }
    }
}

/// What an app-server run does after the thread starts.
enum Step {
    /// `turn/start` with this text.
    Prompt(&'static str),
    /// `thread/compact/start`: a manual compaction, run as its own turn.
    Compact,
    /// `hooks/list` for the repository: every handler Codex found, with its trust status.
    HooksList,
}

/// A running `codex app-server` and the messages it sent so far.
struct AppServer {
    child: Child,
    stdin: Option<ChildStdin>,
    rx: mpsc::Receiver<String>,
    seen: Vec<Value>,
    /// Messages read but not yet waited for.
    pending: Vec<Value>,
    next_id: u64,
    started: Instant,
    err_path: PathBuf,
}

impl AppServer {
    fn new(mut child: Child, err_path: PathBuf) -> AppServer {
        let rx = lines_of(child.stdout.take().unwrap());
        let stdin = child.stdin.take();
        AppServer { child, stdin, rx, seen: Vec::new(), pending: Vec::new(), next_id: 0, started: Instant::now(), err_path }
    }

    fn send(&mut self, msg: Value) {
        if let Some(s) = self.stdin.as_mut() {
            let _ = writeln!(s, "{msg}");
            let _ = s.flush();
        }
    }

    fn notify(&mut self, method: &str) {
        self.send(json!({"method": method}));
    }

    /// Sends a request and waits for its response; the result.
    fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"method": method, "id": id, "params": params}));
        let answer = self.wait(|m| m.get("method").is_none() && m["id"] == id, method);
        assert!(answer.get("error").is_none(), "{method}: {answer}");
        answer["result"].clone()
    }

    fn wait_for(&mut self, method: &str) -> Value {
        self.wait(|m| m["method"] == method, method)
    }

    /// The first message, past or coming, that `matches`; panics past the run's deadline.
    fn wait(&mut self, matches: impl Fn(&Value) -> bool, what: &str) -> Value {
        if let Some(at) = self.pending.iter().position(&matches) {
            return self.pending.remove(at);
        }
        loop {
            let left = RUN_DEADLINE.saturating_sub(self.started.elapsed());
            let line = match self.rx.recv_timeout(left) {
                Ok(line) => line,
                Err(e) => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    panic!("app-server: waiting for {what}: {e:?}; its stderr is {}; it sent {:#?}", self.err_path.display(), self.seen);
                }
            };
            let Ok(msg) = serde_json::from_str::<Value>(&line) else { continue };
            self.seen.push(msg.clone());
            if msg.get("method").is_some() && msg.get("id").is_some() {
                // A request from the server (an approval): no person here, declined.
                let id = msg["id"].clone();
                self.send(json!({"id": id, "result": {"decision": "decline"}}));
                continue;
            }
            if matches(&msg) {
                return msg;
            }
            self.pending.push(msg);
        }
    }

    /// Closes stdin (the server exits, SessionEnd runs) and waits; the exit code and every
    /// message the server sent.
    fn finish(mut self) -> (Option<i32>, Vec<Value>) {
        self.stdin = None;
        while let Ok(line) = self.rx.recv_timeout(RUN_DEADLINE.saturating_sub(self.started.elapsed())) {
            self.seen.extend(serde_json::from_str::<Value>(&line).ok());
        }
        let status = self.child.wait().unwrap();
        (status.code(), self.seen)
    }
}

/// The lines a child prints, as they come, on a channel a reader thread feeds (so a test
/// waits on them with a deadline).
fn lines_of(stdout: std::process::ChildStdout) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

fn read_jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap_or_default().lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

// ---------------------------------------------------------------------------- what a run left

/// One CLI run: its events (`exec --json` lines, or the app-server's messages) and the
/// model server's log.
struct CodexRun {
    code: Option<i32>,
    events: Vec<Value>,
    requests: Vec<Value>,
    stderr: String,
}

/// One item of a request's `input`, flattened to text.
#[derive(Debug)]
struct Item {
    /// `message`, `function_call`, `function_call_output`, `custom_tool_call`, ...
    kind: String,
    /// A message's role; empty for the other kinds.
    role: String,
    text: String,
}

impl CodexRun {
    fn main_requests(&self) -> Vec<&Value> {
        self.requests.iter().filter(|r| r["kind"] == "main").collect()
    }

    fn of_kind(&self, kind: &str) -> Vec<&Value> {
        self.requests.iter().filter(|r| r["kind"] == kind).collect()
    }

    fn summary(&self) -> String {
        let kinds: Vec<String> = self.requests.iter().map(|r| format!("{}:{}", r["n"], r["kind"].as_str().unwrap_or("?"))).collect();
        format!("exit {:?}; requests [{}]; CLI stderr: {}", self.code, kinds.join(", "), self.stderr)
    }
}

fn items(request: &Value) -> Vec<Item> {
    let text_of = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Array(a) => a.iter().filter_map(|x| x["text"].as_str()).collect::<Vec<_>>().join("\n"),
        other => other.to_string(),
    };
    request["body"]["input"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|i| {
            let kind = i["type"].as_str().unwrap_or_default().to_string();
            let text = match kind.as_str() {
                "message" => text_of(&i["content"]),
                "function_call_output" | "custom_tool_call_output" => text_of(&i["output"]),
                "function_call" => i["arguments"].as_str().unwrap_or_default().to_string(),
                "custom_tool_call" => i["input"].as_str().unwrap_or_default().to_string(),
                _ => i.to_string(),
            };
            Item { kind, role: i["role"].as_str().unwrap_or_default().to_string(), text }
        })
        .collect()
}

/// The developer messages of a request (where Codex puts hook context), in order.
fn developer_texts(request: &Value) -> Vec<String> {
    items(request).into_iter().filter(|i| i.kind == "message" && i.role == "developer").map(|i| i.text).collect()
}

/// Every item's text in a request, joined (instructions and tools left out).
fn all_text(request: &Value) -> String {
    items(request).into_iter().map(|i| i.text).collect::<Vec<_>>().join("\n")
}

// ---------------------------------------------------------------------------- the test's own hook

/// Each handler's timeout in the hooks the test writes.
const HOOK_TIMEOUT_SECS: u64 = 30;

/// The events abcd installs for Codex (the contract of issue 38), in `hooks.json` spelling.
const EVENTS: [&str; 7] = ["SessionStart", "UserPromptSubmit", "PreToolUse", "PreCompact", "PostCompact", "Stop", "SessionEnd"];

/// Codex's trust-key spelling of an event (`PreToolUse` -> `pre_tool_use`).
fn snake(event: &str) -> String {
    let mut out = String::new();
    for (i, c) in event.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

impl CodexLab {
    /// Writes `$CODEX_HOME/hooks.json` with one group per handler (event, matcher,
    /// command, timeout) and trusts each by its hash, written into `config.toml` by the rule
    /// of `../shared/host/codex-hooks.md` §1.5, so Codex runs them with no bypass flag.
    fn install_hooks(&self, handlers: &[(&str, Option<&str>, String)]) {
        let hooks_json = self.codex_home.join("hooks.json");
        let mut hooks = serde_json::Map::new();
        let mut trust = String::new();
        for (event, matcher, command) in handlers {
            let mut group = json!({"hooks": [{"type": "command", "command": command, "timeout": HOOK_TIMEOUT_SECS}]});
            if let Some(m) = matcher {
                group["matcher"] = json!(m);
            }
            let groups = hooks.entry(event.to_string()).or_insert_with(|| json!([]));
            let index = groups.as_array().unwrap().len();
            groups.as_array_mut().unwrap().push(group);
            // The hash covers the handler as Codex reads it: SessionEnd's timeout clamped to 3 s.
            let timeout = if *event == "SessionEnd" { HOOK_TIMEOUT_SECS.min(3) } else { HOOK_TIMEOUT_SECS };
            let mut identity = json!({"event_name": snake(event),
                "hooks": [{"async": false, "command": command, "timeout": timeout, "type": "command"}]});
            if let Some(m) = matcher {
                identity["matcher"] = json!(m);
            }
            // serde_json's map is sorted and `to_string` compact: Codex's canonical form.
            let key = format!("{}:{}:{index}:0", hooks_json.display(), snake(event));
            trust.push_str(&format!("\n[hooks.state.{}]\ntrusted_hash = \"sha256:{}\"\n", json!(key), sha256_hex(&identity.to_string())));
        }
        std::fs::write(&hooks_json, json!({"hooks": hooks}).to_string()).unwrap();
        let mut config = std::fs::OpenOptions::new().append(true).open(self.codex_home.join("config.toml")).unwrap();
        config.write_all(trust.as_bytes()).unwrap();
    }

    /// A logging hook of the test's own on every event abcd installs: each payload is
    /// appended to `hooks.jsonl`; SessionStart also prints a context naming its source.
    fn install_logging_hook(&self) -> PathBuf {
        let log = self.base.join("hooks.jsonl");
        let handlers: Vec<(&str, Option<&str>, String)> = EVENTS
            .iter()
            .map(|event| {
                let mut command = format!("p=$(cat); printf '%s\\n' \"$p\" >> '{}'", log.display());
                if *event == "SessionStart" {
                    command.push_str(
                        "; s=$(printf '%s' \"$p\" | sed -n 's/.*\"source\":\"\\([a-z]*\\)\".*/\\1/p'); \
                         printf '{\"hookSpecificOutput\":{\"hookEventName\":\"SessionStart\",\"additionalContext\":\"HARNESS-CONTEXT-%s\"}}' \"$s\"",
                    );
                }
                (*event, None, command)
            })
            .collect();
        self.install_hooks(&handlers);
        log
    }
}

/// SHA-256 of `text`, hex, by `sha256sum` (the crate has no hash of that kind).
fn sha256_hex(text: &str) -> String {
    let out = common::repo::output_with_stdin(Command::new("sha256sum").arg("-"), text.as_bytes());
    assert!(out.status.success(), "sha256sum: {out:?}");
    String::from_utf8_lossy(&out.stdout).split_whitespace().next().unwrap().to_string()
}

/// The payloads the test's logging hook received, in order.
fn hook_log(log: &Path) -> Vec<Value> {
    read_jsonl(log)
}

fn events_named<'a>(log: &'a [Value], event: &str) -> Vec<&'a Value> {
    log.iter().filter(|p| p["hook_event_name"] == event).collect()
}

/// The scripted apply_patch call that adds `path` with one line.
fn add_file_patch(path: &str, line: &str) -> String {
    format!("*** Begin Patch\n*** Add File: {path}\n+{line}\n*** End Patch\n")
}

// ---------------------------------------------------------------------------- the harness

/// The harness itself, before any abcd piece: the real CLI, the scripted model and the
/// isolation work together. A logging hook of the test's own (trusted by hash, no bypass)
/// sees SessionStart, UserPromptSubmit, PreToolUse for `apply_patch` (the patch as
/// `tool_input.command`) and `Bash` (`{command}`), Stop and SessionEnd, all naming the
/// rollout as `transcript_path`; its SessionStart context is the first request's developer
/// message; the patch wrote its file and the shell made its branch; each tool's output is
/// in the next request.
#[test]
fn codex_harness_runs_the_real_cli_against_the_scripted_model() {
    let Some(codex) = codex() else { return };
    let _machine = shared_machine();
    let mut lab = CodexLab::new(codex, &[]);
    let log = lab.install_logging_hook();
    let script = json!({"turns": [
        {"say": "Writing the note.", "patch": add_file_patch("note.txt", "hello")},
        {"say": "Branching.", "calls": [{"name": "exec_command", "arguments": {"cmd": "git checkout -b feat/x"}}]},
        {"say": "Done."}
    ]});
    let run = lab.exec(script, "write a note on a branch");
    assert_eq!(run.code, Some(0), "{}", run.summary());
    let thread = run.events.iter().find(|e| e["type"] == "thread.started").and_then(|e| e["thread_id"].as_str());
    let thread = thread.unwrap_or_else(|| panic!("no thread.started: {:#?}", run.events)).to_string();

    // The hooks: every payload names this session and its rollout.
    let payloads = hook_log(&log);
    let names: Vec<&str> = payloads.iter().map(|p| p["hook_event_name"].as_str().unwrap()).collect();
    assert_eq!(names, ["SessionStart", "UserPromptSubmit", "PreToolUse", "PreToolUse", "Stop", "SessionEnd"], "{payloads:#?}");
    let rollout = payloads[0]["transcript_path"].as_str().unwrap();
    assert!(rollout.starts_with(&lab.codex_home.join("sessions").display().to_string()) && rollout.ends_with(&format!("{thread}.jsonl")));
    assert!(payloads.iter().all(|p| p["session_id"] == thread.as_str() && p["transcript_path"] == rollout), "{payloads:#?}");
    let tools = events_named(&payloads, "PreToolUse");
    assert_eq!(
        (&tools[0]["tool_name"], &tools[0]["tool_input"]),
        (&json!("apply_patch"), &json!({"command": add_file_patch("note.txt", "hello")}))
    );
    assert_eq!((&tools[1]["tool_name"], &tools[1]["tool_input"]), (&json!("Bash"), &json!({"command": "git checkout -b feat/x"})));

    // The work: the patch and the shell really ran.
    assert_eq!(std::fs::read_to_string(lab.repo.join("note.txt")).unwrap(), "hello\n");
    assert_eq!(lab_git(&lab, &["branch", "--show-current"]).trim(), "feat/x");

    // The model: three requests, the hook's context in the first, each tool's output next.
    let main = run.main_requests();
    assert_eq!(main.len(), 3, "{}", run.summary());
    assert!(developer_texts(main[0]).contains(&"HARNESS-CONTEXT-startup".to_string()), "{:#?}", items(main[0]));
    let last = |r: &Value, kind: &str| items(r).into_iter().rfind(|i| i.kind == kind).map(|i| i.text).unwrap_or_default();
    assert!(last(main[1], "custom_tool_call_output").contains("Success. Updated the following files"), "{:#?}", items(main[1]));
    assert!(last(main[2], "function_call_output").contains("Switched to a new branch 'feat/x'"), "{:#?}", items(main[2]));
    assert!(run.requests.iter().all(|r| r["kind"] == "main"), "{}", run.summary());
}

/// The harness's compactions: automatic (`model_auto_compact_token_limit`, after a tool call,
/// in `codex exec`) and manual (`thread/compact/start` through the app-server). Each fires
/// PreCompact and PostCompact with its trigger, one compaction request, then SessionStart
/// `compact`, whose context is in the next main request beside the summary.
#[test]
fn codex_harness_compacts_automatically_and_on_request() {
    let Some(codex) = codex() else { return };
    let _machine = shared_machine();
    const SUMMARY: &str = "HARNESS-SUMMARY: a note was asked for; nothing is pending.";
    // Automatic: the reported usage passes the limit after the tool call.
    let mut lab = CodexLab::new(codex, &["model_auto_compact_token_limit = 5000", "model_context_window = 10000"]);
    let log = lab.install_logging_hook();
    let script = json!({"summary": SUMMARY, "turns": [
        {"say": "Step one.", "calls": [{"name": "exec_command", "arguments": {"cmd": "echo step1"}}], "input_tokens": 200_000},
        {"say": "After the compaction."}
    ]});
    let run = lab.exec(script, "first prompt");
    assert_eq!(run.code, Some(0), "{}", run.summary());
    check_harness_compaction(&run, &hook_log(&log), "auto", SUMMARY);

    // Manual: its own turn between two prompts, through the app-server.
    let mut lab = CodexLab::new(codex, &[]);
    let log = lab.install_logging_hook();
    let script = json!({"summary": SUMMARY, "turns": [{"say": "Turn one."}, {"say": "After the compaction."}]});
    let run = lab.app(script, &[Step::Prompt("first prompt"), Step::Compact, Step::Prompt("prompt after the compaction")]);
    assert_eq!(run.code, Some(0), "{}", run.summary());
    check_harness_compaction(&run, &hook_log(&log), "manual", SUMMARY);
    // The app-server reports each hook run; the compact start's context among them.
    let contexts: Vec<&Value> = run
        .events
        .iter()
        .filter(|m| m["method"] == "hook/completed" && m["params"]["run"]["eventName"] == "sessionStart")
        .flat_map(|m| m["params"]["run"]["entries"].as_array().into_iter().flatten())
        .collect();
    assert!(contexts.iter().any(|e| e["kind"] == "context" && e["text"] == "HARNESS-CONTEXT-compact"), "{contexts:#?}");
}

fn check_harness_compaction(run: &CodexRun, payloads: &[Value], trigger: &str, summary: &str) {
    let triggers = |event: &str| events_named(payloads, event).iter().map(|p| p["trigger"].clone()).collect::<Vec<_>>();
    assert_eq!(triggers("PreCompact"), [json!(trigger)], "{payloads:#?}");
    assert_eq!(triggers("PostCompact"), [json!(trigger)], "{payloads:#?}");
    let sources: Vec<&Value> = events_named(payloads, "SessionStart").iter().map(|p| &p["source"]).collect();
    assert_eq!(sources, [&json!("startup"), &json!("compact")], "{payloads:#?}");
    let compactions = run.of_kind("compaction");
    assert_eq!(compactions.len(), 1, "{}", run.summary());
    assert_eq!(compactions[0]["metadata"]["request_kind"], "compaction", "{}", compactions[0]["metadata"]);
    let at = run.requests.iter().position(|r| r["kind"] == "compaction").unwrap();
    let next = run.requests[at + 1..].iter().find(|r| r["kind"] == "main").unwrap_or_else(|| panic!("{}", run.summary()));
    assert!(all_text(next).contains(summary), "the request after is the compacted one: {:#?}", items(next));
    let developer = developer_texts(next);
    assert!(developer.contains(&"HARNESS-CONTEXT-compact".to_string()), "{developer:#?}");
    assert!(!developer.contains(&"HARNESS-CONTEXT-startup".to_string()), "startup context does not survive: {developer:#?}");
}

fn lab_git(lab: &CodexLab, args: &[&str]) -> String {
    repo::git(&lab.repo, args)
}

// ---------------------------------------------------------------------------- abcd under Codex

/// The events abcd installs for Codex, with abcd's event name and the matcher (the contract
/// of issue 38).
const ABCD_EVENTS: [(&str, &str, Option<&str>); 7] = [
    ("SessionStart", "session-start", None),
    ("UserPromptSubmit", "user-prompt-submit", None),
    ("PreToolUse", "pre-tool-use", Some("Bash|apply_patch|request_user_input")),
    ("PreCompact", "pre-compact", None),
    ("PostCompact", "post-compact", None),
    ("Stop", "stop", None),
    ("SessionEnd", "session-end", None),
];

const CHECKLIST_HEADER: &str = "abcd keeps this checklist across compaction";

impl CodexLab {
    /// abcd as the person runs it from a terminal of their own (no host marks), with the
    /// lab's home store, CODEX_HOME and PATH.
    fn abcd_command(&self) -> Command {
        let mut cmd = repo::abcd(&self.repo, &self.base.join("abcd-home"));
        cmd.env("ABCD_GH", "")
            .env("TZ", "UTC")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("CODEX_HOME", &self.codex_home)
            .env("PATH", run_path())
            .env_remove("ABCD_TEST_NOW");
        cmd
    }

    /// Runs an abcd verb that must succeed; its stdout.
    fn abcd(&self, args: &[&str]) -> String {
        let out = self.abcd_command().args(args).output().unwrap();
        assert!(out.status.success(), "abcd {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The repository managed and abcd's hooks installed for Codex, as a person does it:
    /// `abcd init --host codex` (hooks.json and their trust in config.toml), then its
    /// `--check`.
    fn install_abcd(&self) {
        self.abcd(&["init", "--host", "codex"]);
        let check = self.abcd(&["init", "--host", "codex", "--check"]);
        assert!(check.contains("every abcd hook is installed and trusted for Codex"), "{check}");
    }

    /// `abcd replay ARGS`: the audit, checked to verify every line (`verdict: ok`).
    fn replay(&self, args: &[&str]) -> String {
        let audit = self.abcd(&[&["replay"], args].concat());
        assert!(audit.trim_end().ends_with("verdict: ok"), "{audit}");
        audit
    }

    fn working_copy_events(&self) -> Vec<Value> {
        read_jsonl(&self.repo.join(".abcd/.work.local/journal.jsonl"))
    }

    fn repository_events(&self) -> Vec<Value> {
        let repos = self.base.join("abcd-home/repos");
        let Ok(mut entries) = std::fs::read_dir(&repos) else { return Vec::new() };
        let entry = entries.next().expect("one repository journal").unwrap();
        read_jsonl(&entry.path().join("journal.jsonl"))
    }
}

fn of_kind<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["kind"] == kind).collect()
}

fn thread_of(run: &CodexRun) -> String {
    let exec = run.events.iter().find(|e| e["type"] == "thread.started").and_then(|e| e["thread_id"].as_str());
    let app = run.events.iter().find(|m| m["method"] == "thread/started").and_then(|m| m["params"]["thread"]["id"].as_str());
    exec.or(app).unwrap_or_else(|| panic!("no thread id: {}", run.summary())).to_string()
}

/// The developer message of `request` that holds abcd's checklist.
fn checklist_in(request: &Value) -> Option<String> {
    developer_texts(request).into_iter().find(|t| common::unmarked(t).starts_with(CHECKLIST_HEADER))
}

/// Each injection (by source, in order) and the receipt that settled it.
fn receipts(events: &[Value]) -> Vec<(String, String)> {
    of_kind(events, "context.injected")
        .iter()
        .map(|i| {
            let marker = &i["data"]["marker"];
            let receipt = events
                .iter()
                .find(|e| {
                    e["kind"].as_str().is_some_and(|k| k.starts_with("context.") && k != "context.injected")
                        && &e["data"]["marker"] == marker
                })
                .map_or("none".to_string(), |e| e["kind"].as_str().unwrap().to_string());
            (i["data"]["source"].as_str().unwrap().to_string(), receipt)
        })
        .collect()
}

// ---------------------------------------------------------------------------- the scenarios

/// The handlers Codex listed in an app-server run's `hooks/list` answers.
fn listed_hooks(run: &CodexRun) -> Vec<&Value> {
    run.events
        .iter()
        .filter_map(|m| m["result"]["data"].as_array())
        .flatten()
        .flat_map(|entry| entry["hooks"].as_array().into_iter().flatten())
        .collect()
}

/// `abcd init --host codex` as Codex itself reads it: `hooks/list` finds abcd's seven
/// handlers in `$CODEX_HOME/hooks.json`, each `trusted`; a handler changed by hand reads
/// `modified` to Codex, and `--check` names it so too.
#[test]
fn codex_trusts_the_hooks_abcd_init_installed() {
    let Some(codex) = codex() else { return };
    let _machine = shared_machine();
    let mut lab = CodexLab::new(codex, &[]);
    lab.install_abcd();
    let run = lab.app(json!({"turns": []}), &[Step::HooksList]);
    assert_eq!(run.code, Some(0), "{}", run.summary());
    let hooks_json = lab.codex_home.join("hooks.json").display().to_string();
    let listed = listed_hooks(&run);
    let mut keys: Vec<String> = listed.iter().map(|h| h["key"].as_str().unwrap_or_default().to_string()).collect();
    keys.sort();
    let mut expected: Vec<String> = ABCD_EVENTS.iter().map(|(event, ..)| format!("{hooks_json}:{}:0:0", snake(event))).collect();
    expected.sort();
    assert_eq!(keys, expected, "{listed:#?}");
    assert!(listed.iter().all(|h| h["trustStatus"] == "trusted"), "{listed:#?}");

    // Stop's handler changed by hand (a longer timeout): Codex and `--check` both see it.
    let path = lab.codex_home.join("hooks.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let stop = "\"command\":\"abcd hook stop --host codex\",\"timeout\":30";
    assert!(text.contains(stop), "{text}");
    std::fs::write(&path, text.replace(stop, "\"command\":\"abcd hook stop --host codex\",\"timeout\":31")).unwrap();
    let run = lab.app(json!({"turns": []}), &[Step::HooksList]);
    let statuses: Vec<(String, String)> = listed_hooks(&run)
        .iter()
        .map(|h| (h["key"].as_str().unwrap().to_string(), h["trustStatus"].as_str().unwrap().to_string()))
        .collect();
    let modified: Vec<&(String, String)> = statuses.iter().filter(|(_, s)| s != "trusted").collect();
    assert_eq!(modified, [&(format!("{hooks_json}:stop:0:0"), "modified".to_string())], "{statuses:#?}");
    let check = lab.abcd_command().args(["init", "--host", "codex", "--check"]).output().unwrap();
    assert_eq!(check.status.code(), Some(1), "{check:?}");
    let said = String::from_utf8_lossy(&check.stdout);
    assert!(said.lines().any(|l| l.starts_with("MODIFIED") && l.contains("Stop `abcd hook stop --host codex`")), "{said}");
}

/// The compaction summary the model server answers with.
const SUMMARY: &str = "The person asked for a parser; a review step was planned.";

/// The model adds a checklist item through the shell, so the plan after the compaction
/// differs from the first: the checklist there is the re-injection, not a leftover.
/// The model's shell is a login shell (`bash -lc`), whose profile sets its own PATH, so
/// the command names abcd by path.
fn add_item_call() -> Value {
    json!({"name": "exec_command", "arguments": {"cmd": format!("'{}' checklist add 'Review the grammar'", abcd_exe().display())}})
}

/// Acceptance 1, the checklist: in the first request (session start), and again after an
/// automatic compaction (`codex exec`, the usage over `model_auto_compact_token_limit`) and
/// a manual one (`thread/compact/start`): the journal holds the start, the compaction with
/// its trigger and the `compact` start after it, and both injections `context.delivered`,
/// read from the rollout.
#[test]
fn codex_the_checklist_is_in_the_first_request_and_after_each_compaction() {
    let Some(codex) = codex() else { return };
    let _machine = shared_machine();
    // Automatic: a tool call, then usage over the limit; the compaction runs mid-turn.
    let mut lab = CodexLab::new(codex, &["model_auto_compact_token_limit = 5000", "model_context_window = 10000"]);
    lab.install_abcd();
    lab.abcd(&["checklist", "add", "Write the parser"]);
    let script = json!({"summary": SUMMARY, "turns": [
        {"say": "Planning the review.", "calls": [add_item_call()], "input_tokens": 200_000},
        {"say": "Going on after the compaction."}
    ]});
    let run = lab.exec(script, "plan the parser");
    assert_eq!(run.code, Some(0), "{}", run.summary());
    check_compaction(&lab, &run, "auto");

    // Manual: a turn, the compaction as its own turn, a turn after it.
    let mut lab = CodexLab::new(codex, &[]);
    lab.install_abcd();
    lab.abcd(&["checklist", "add", "Write the parser"]);
    let script = json!({"summary": SUMMARY, "turns": [
        {"say": "Planning the review.", "calls": [add_item_call()]},
        {"say": "Planned."},
        {"say": "Going on after the compaction."}
    ]});
    let run = lab.app(script, &[Step::Prompt("plan the parser"), Step::Compact, Step::Prompt("go on")]);
    assert_eq!(run.code, Some(0), "{}", run.summary());
    check_compaction(&lab, &run, "manual");
}

fn check_compaction(lab: &CodexLab, run: &CodexRun, trigger: &str) {
    let session = thread_of(run);
    // The journal: the start, the compaction, the start it caused, in that order.
    let events = lab.working_copy_events();
    let started = of_kind(&events, "session.started");
    assert_eq!(started.len(), 2, "{trigger}: {events:#?}");
    assert_eq!(started[0]["data"], json!({"session": session, "source": "startup", "working_copy": lab.repo.display().to_string()}));
    let compaction = events.iter().position(|e| e["kind"] == "compaction.recorded").unwrap_or_else(|| panic!("{trigger}: {events:#?}"));
    assert_eq!(events[compaction]["data"], json!({"session": session, "trigger": trigger}), "{trigger}");
    let restart = events.iter().position(|e| e["kind"] == "session.started" && e["data"]["source"] == "compact");
    assert!(restart.is_some_and(|r| r > compaction), "{trigger}: the compact start comes after: {events:#?}");

    // The model: the checklist in the first request, without the item added later; one
    // compaction request; the next main request is the compacted one and carries the
    // checklist with that item.
    let main = run.main_requests();
    let first =
        checklist_in(main[0]).unwrap_or_else(|| panic!("{trigger}: no checklist in the first request: {:#?}", developer_texts(main[0])));
    assert!(first.contains("1: Write the parser") && !first.contains("Review the grammar"), "{trigger}: {first}");
    assert_eq!(run.of_kind("compaction").len(), 1, "{trigger}: {}", run.summary());
    let at = run.requests.iter().position(|r| r["kind"] == "compaction").unwrap();
    let next = run.requests[at + 1..].iter().find(|r| r["kind"] == "main").unwrap_or_else(|| panic!("{trigger}: {}", run.summary()));
    assert!(all_text(next).contains(SUMMARY), "{trigger}: the request after is the compacted one");
    let after = checklist_in(next).unwrap_or_else(|| panic!("{trigger}: no checklist after the compaction: {:#?}", developer_texts(next)));
    assert!(after.contains("1: Write the parser") && after.contains("2: Review the grammar"), "{trigger}: {after}");

    // The receipts, from the rollout: both injections reached the model; the journal
    // holding them verifies from its first event.
    lab.replay(&[]);
    let found = receipts(&events);
    let expected = [("session_start:startup", "context.delivered"), ("session_start:compact", "context.delivered")];
    assert_eq!(found, expected.map(|(a, b)| (a.to_string(), b.to_string())), "{trigger}: {events:#?}");
}

/// The Stop reasons the model received, in order: Codex puts a block's reason in a user
/// message `<hook_prompt hook_run_id="stop:…">reason</hook_prompt>` of the next request.
fn hook_prompts(request: &Value) -> Vec<String> {
    items(request)
        .into_iter()
        .filter(|i| i.kind == "message" && i.role == "user")
        .filter_map(|i| {
            let start = i.text.find("<hook_prompt")?;
            let body = &i.text[start..];
            let open = body.find('>')? + 1;
            let close = body.find("</hook_prompt>")?;
            Some(body[open..close].to_string())
        })
        .collect()
}

/// Acceptance 1, the away Stop: with work owed, abcd blocks each Stop naming the next item;
/// Codex has no cap of its own, so abcd stops blocking at its own bound, and the away record
/// says the stop came at abcd's bound.
#[test]
fn codex_away_the_stop_keeps_the_turn_going_until_abcds_bound() {
    let Some(codex) = codex() else { return };
    let _machine = shared_machine();
    let mut lab = CodexLab::new(codex, &[]);
    lab.install_abcd();
    lab.abcd(&["checklist", "add", "Write the parser"]);
    lab.abcd(&["mode", "autonomous"]);
    let run = lab.exec(json!({"turns": [], "after": "Done for now."}), "write the parser");
    assert_eq!(run.code, Some(0), "{}", run.summary());
    let session = thread_of(&run);

    // The journal: a block per Stop up to abcd's bound (the count 1, 2, …: Codex sets
    // `stop_hook_active` on each repeat), then the Stop past it allowed, and the away
    // record's stop saying it was abcd's bound, not a host's cap.
    let bound = abcd::host::codex::STOP_BLOCK_BOUND;
    let events = lab.working_copy_events();
    let judged: Vec<Value> = of_kind(&events, "session.judged").into_iter().map(|e| e["data"].clone()).collect();
    assert!(judged.iter().all(|d| d["session"] == session.as_str()), "{judged:#?}");
    let counts: Vec<u64> = judged.iter().map(|d| d["block_count"].as_u64().unwrap()).collect();
    assert_eq!(counts, (1..=u64::from(bound) + 1).collect::<Vec<_>>(), "{judged:#?}");
    let states: Vec<&str> = judged.iter().map(|d| d["state"].as_str().unwrap()).collect();
    assert!(states[..bound as usize].iter().all(|s| *s == "working") && states[bound as usize] == "stopped", "{states:?}");
    let stops: Vec<Value> =
        of_kind(&lab.repository_events(), "away.stop_recorded").into_iter().map(|e| e["data"]["stop"].clone()).collect();
    assert_eq!(stops.len(), 1, "{stops:#?}");
    assert_eq!((&stops[0]["label"], &stops[0]["abcd_bound"]), (&json!("work_owed"), &json!(bound)), "{stops:#?}");
    assert_ne!(stops[0]["possibly_forced_by_cap"], true, "no host cap forced it: {stops:#?}");

    // The model: one request per block after the first, each carrying every block so far,
    // the latest naming the next item; none past the bound.
    let main = run.main_requests();
    assert_eq!(main.len(), bound as usize + 1, "{}", run.summary());
    for (i, request) in main.iter().enumerate().skip(1) {
        let reasons = hook_prompts(request);
        assert_eq!(reasons.len(), i, "request {i} holds every block so far: {reasons:#?}");
        assert!(reasons[i - 1].contains("Next: checklist item 1 (Write the parser)"), "{reasons:#?}");
    }
    // The audit says the same: the working copy's last judgement stopped past the bound,
    // the repository journal's stop names abcd's bound; both chains verify.
    let audit = lab.replay(&[]);
    let last_judged = audit.lines().rfind(|l| l.contains("stop judged for session")).unwrap_or_default();
    assert!(last_judged.ends_with(&format!("(stopped), {} block(s) in a row, 0 wake(s) spent", bound + 1)), "{audit}");
    let audit = lab.replay(&["--repo"]);
    let words =
        format!("stop recorded: stopped with work owed, ended by abcd's own bound of {bound} consecutive blocks (the host has no cap)");
    assert!(audit.lines().any(|l| l.ends_with(&words)), "{audit}");
    let back = lab.abcd(&["mode", "back"]);
    assert!(back.contains(&format!("ended by abcd's own bound of {bound} consecutive blocks (the host has no cap)")), "{back}");
}

/// Acceptance 1, the question tool: while away, Codex's `request_user_input` is refused by
/// abcd's PreToolUse with the reroute (queue it, or decide and record it), which the model
/// receives as the call's output.
#[test]
fn codex_away_the_question_tool_is_refused_with_the_reroute() {
    let Some(codex) = codex() else { return };
    let _machine = shared_machine();
    let mut lab = CodexLab::new(codex, &[]);
    lab.install_abcd();
    lab.abcd(&["mode", "autonomous"]);
    let question = json!({"questions": [{"id": "branch", "header": "Branch", "question": "Which branch should I use?",
        "options": [{"label": "main", "description": "the default branch"}, {"label": "feat/x", "description": "a new branch"}]}]});
    let script = json!({"turns": [
        {"say": "Asking.", "calls": [{"name": "request_user_input", "arguments": question}]},
        {"say": "Deciding myself."}
    ], "after": "Done for now."});
    let run = lab.exec(script, "pick a branch");
    assert_eq!(run.code, Some(0), "{}", run.summary());
    let main = run.main_requests();
    let output = items(main[1]).into_iter().find(|i| i.kind == "function_call_output").expect("the call's output").text;
    assert!(output.starts_with("Tool call blocked by PreToolUse hook: "), "{output}");
    assert!(output.contains("abcd mode queue") && output.contains("abcd decide"), "{output}");
    assert!(output.ends_with("Tool: request_user_input"), "{output}");
}

/// Acceptance 1, the file guard on `apply_patch`: patches deleting abcd's own checklist file
/// and its journal are refused (the files stay, the journal still verifies, the model gets
/// the reasons, the checklist's naming the verb), and a patch adding a source file is
/// allowed (the file is written).
#[test]
fn codex_apply_patch_on_abcds_file_is_refused_and_on_a_source_file_allowed() {
    let Some(codex) = codex() else { return };
    let _machine = shared_machine();
    let mut lab = CodexLab::new(codex, &[]);
    lab.install_abcd();
    lab.abcd(&["checklist", "add", "Write the parser"]);
    let target = lab.repo.join(".abcd/.work.local/checklist.json");
    let before = std::fs::read_to_string(&target).unwrap();
    let journal = lab.repo.join(".abcd/.work.local/journal.jsonl");
    let delete = |path: &Path| format!("*** Begin Patch\n*** Delete File: {}\n*** End Patch\n", path.display());
    let script = json!({"turns": [
        {"say": "Clearing the plan by hand.", "patch": delete(&target)},
        {"say": "Dropping the journal.", "patch": delete(&journal)},
        {"say": "Writing the parser.", "patch": add_file_patch("src/parser.rs", "pub fn parse() {}")},
        {"say": "Done."}
    ]});
    let run = lab.exec(script, "write the parser");
    assert_eq!(run.code, Some(0), "{}", run.summary());
    assert_eq!(std::fs::read_to_string(&target).ok(), Some(before), "the patch on abcd's file did not apply");
    assert_eq!(std::fs::read_to_string(lab.repo.join("src/parser.rs")).unwrap(), "pub fn parse() {}\n");
    let main = run.main_requests();
    let output = |r: &Value| items(r).into_iter().rfind(|i| i.kind == "custom_tool_call_output").map(|i| i.text).unwrap_or_default();
    let refused = output(main[1]);
    assert!(refused.contains("blocked by PreToolUse hook") && refused.contains("abcd checklist"), "{refused}");
    let refused = output(main[2]);
    assert!(refused.contains("blocked by PreToolUse hook") && refused.contains("journal.jsonl"), "{refused}");
    assert!(journal.is_file(), "the patch on the journal did not apply");
    lab.replay(&[]);
    let allowed = output(main[3]);
    assert!(allowed.contains("Success. Updated the following files") && !allowed.contains("blocked"), "{allowed}");
}

/// Acceptance 1, the branch recorder: `git checkout -b` through Codex's shell tool is
/// recorded as `branch.created` with the command that made it.
#[test]
fn codex_a_branch_created_through_the_shell_is_recorded() {
    let Some(codex) = codex() else { return };
    let _machine = shared_machine();
    let mut lab = CodexLab::new(codex, &[]);
    lab.install_abcd();
    let script = json!({"turns": [
        {"say": "Branching.", "calls": [{"name": "exec_command", "arguments": {"cmd": "git checkout -b feat/x"}}]},
        {"say": "On the branch."}
    ]});
    let run = lab.exec(script, "start a branch");
    assert_eq!(run.code, Some(0), "{}", run.summary());
    assert_eq!(lab_git(&lab, &["branch", "--show-current"]).trim(), "feat/x");
    let created: Vec<Value> = of_kind(&lab.working_copy_events(), "branch.created").into_iter().map(|e| e["data"].clone()).collect();
    assert_eq!(created, [json!({"branch": "feat/x", "command": "git checkout -b"})]);
}

/// Acceptance 1, the receipt: a SessionStart context padded past Codex's cut (the test seam
/// `ABCD_TEST_CONTEXT_PAD`) reaches the model as Codex's head-and-tail cut; the Stop hook
/// reads the rollout and records `context.not_delivered` (`cut`), where an uncut one is
/// `context.delivered` (the compaction scenario).
#[test]
fn codex_a_context_cut_by_codex_is_recorded_not_delivered() {
    let Some(codex) = codex() else { return };
    let _machine = shared_machine();
    let mut lab = CodexLab::new(codex, &[]);
    lab.install_abcd();
    lab.abcd(&["checklist", "add", "Write the parser"]);
    lab.extra_env.push(("ABCD_TEST_CONTEXT_PAD".into(), PAD_PAST_CODEX_CUT.to_string()));
    let run = lab.exec(json!({"turns": [{"say": "Hello."}]}), "hello");
    assert_eq!(run.code, Some(0), "{}", run.summary());
    let main = run.main_requests();
    let cut = developer_texts(main[0]).into_iter().find(|t| t.contains(CHECKLIST_HEADER));
    let cut = cut.unwrap_or_else(|| panic!("no checklist in the first request: {:#?}", developer_texts(main[0])));
    assert!(cut.starts_with("Warning: truncated output"), "Codex cut it: {}", &cut[..cut.len().min(300)]);
    let events = lab.working_copy_events();
    assert_eq!(
        receipts(&events).first().map(|(s, r)| (s.as_str(), r.as_str())),
        Some(("session_start:startup", "context.not_delivered")),
        "{events:#?}"
    );
    assert_eq!(of_kind(&events, "context.not_delivered")[0]["data"]["reason"], "cut", "{events:#?}");
}

/// Past Codex's cut of an `additionalContext` (about 2,500 tokens, some 10,000 characters;
/// `../shared/host/codex-hooks.md` §2.5), with room to spare.
const PAD_PAST_CODEX_CUT: usize = 12_000;
