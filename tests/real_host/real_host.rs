//! The real-host tier (issue 9): the real Claude Code client, pinned, runs offline against
//! a scripted model server (`tests/real_host/model_server.py`) inside a loopback-only
//! network namespace (`unshare -rn`), with abcd's hooks installed both ways: by `abcd
//! init` into `.claude/settings.json`, and as the plugin (`--plugin-dir` this checkout,
//! `abcd` on PATH). Every scenario asserts on three things at once: what abcd recorded in
//! its journals, what its hooks printed (the client's hook log, `--debug hooks`, keeps
//! each hook's status and parsed output), and what the model server received.
//!
//! The client is installed by `tests/real_host/install.sh` into a cache outside the
//! repository when it is missing. When it is absent and cannot be installed (or the
//! namespace cannot be made), each test prints one skip line and passes; with
//! `ABCD_REAL_HOST=require` (what `.ci/run` sets) it fails instead. `docs/real-host.md`
//! says what the tier proves and what to do when a new client version behaves otherwise.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::sync::{OnceLock, RwLock};
use std::time::{Duration, Instant};

use common::repo::{self, README};
use serde_json::{Value, json};

/// The client version the tier is written against (install.sh pins the same).
const CLIENT_VERSION: &str = "2.1.332";
/// `require`: a missing client fails the tier; `skip`: never run it; unset: run it when
/// the client is there or can be installed, else print one skip line.
const MODE_VAR: &str = "ABCD_REAL_HOST";
/// Set to keep each scenario's folder (client home, repository, logs) for a look.
const KEEP_VAR: &str = "ABCD_REAL_HOST_KEEP";
/// One client run; a scripted run takes a few seconds, so this only catches a hang.
const RUN_DEADLINE: Duration = Duration::from_secs(120);
/// How long the stream-json driver keeps the session open after the last result: the
/// client kills a StopFailure hook when it exits, so a host that lingers lets it finish.
const STOP_FAILURE_LINGER: Duration = Duration::from_millis(1500);
/// The host's Stop block cap in the away scenarios (the client's default is 8): small, so
/// a run reaches it in a few requests; abcd reads the same variable.
const BLOCK_CAP: &str = "2";
/// The StopFailure measurement: runs, and the budget for process start to durable append
/// (the client kills the hook about 20 ms after starting it in print mode).
const TIMING_RUNS: usize = 20;
const STOP_FAILURE_BUDGET: Duration = Duration::from_millis(10);
/// Set (to anything) to assert the timing budget; unset, the time is only reported.
const TIMING_BUDGETS_VAR: &str = "ABCD_TIMING_BUDGETS";
/// How long a StopFailure hook the client left behind may take to land its record.
const LATE_RECORD_WAIT: Duration = Duration::from_secs(3);

const CHECKLIST_HEADER: &str = "abcd keeps this checklist across compaction";
/// The model server's compaction summary: the client asks again for one without the tags.
const SUMMARY: &str = "<summary>The person asked for a parser; a review step was planned.</summary>";

// ---------------------------------------------------------------------------- the client

/// The client's binary, once per test process; `None` (after one skip line) when the tier
/// cannot run here and is not required.
fn client() -> Option<&'static Path> {
    static FOUND: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    static SAID: OnceLock<()> = OnceLock::new();
    let mode = std::env::var(MODE_VAR).unwrap_or_default();
    let found = FOUND.get_or_init(|| if mode == "skip" { Err(format!("{MODE_VAR}=skip")) } else { locate_client() });
    match found {
        Ok(path) => Some(path.as_path()),
        Err(why) if mode == "require" => panic!("the real-host tier is required ({MODE_VAR}=require) but cannot run: {why}"),
        Err(why) => {
            SAID.get_or_init(|| {
                // Straight to the process's stderr: the test harness captures print macros,
                // and a skip must never read as a silent pass.
                let _ = writeln!(
                    std::io::stderr(),
                    "real_host: SKIPPED, the real Claude Code client {CLIENT_VERSION} cannot run here: {why}. \
                     Install it with tests/real_host/install.sh; {MODE_VAR}=require makes this a failure."
                );
            });
            None
        }
    }
}

fn locate_client() -> Result<PathBuf, String> {
    let works = |cmd: &mut Command| cmd.stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
    if !works(Command::new("unshare").args(["-rn", "true"])) {
        return Err("`unshare -rn` fails here, so no loopback-only network namespace can be made".into());
    }
    if !works(Command::new("python3").arg("--version")) {
        return Err("python3 (the model server) is not on PATH".into());
    }
    let script = manifest().join("tests/real_host/install.sh");
    let out = Command::new(&script).stdin(Stdio::null()).output().map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(err.lines().last().unwrap_or("the install failed").to_string());
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

pub(crate) fn abcd_exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_abcd")).canonicalize().expect("the abcd binary exists")
}

/// The PATH the clients run with in the sandbox, and of every abcd verb a scenario runs:
/// abcd's folder first, so the hooks' bare `abcd` is this build.
pub(crate) fn sandbox_path() -> String {
    format!("{}:/usr/local/bin:/usr/bin:/bin", abcd_exe().parent().unwrap().display())
}

// ---------------------------------------------------------------------------- a scenario's place

/// How abcd's hooks reach the client.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Install {
    /// `abcd init` wrote them into `.claude/settings.json`, running this abcd by path.
    Init,
    /// `--plugin-dir` this checkout: `hooks/hooks.json` runs `hooks/run-abcd`, which runs
    /// `abcd` from PATH.
    Plugin,
}

const INSTALLS: [Install; 2] = [Install::Init, Install::Plugin];

/// One scenario's folder: a git repository managed by abcd, the client's HOME and TMPDIR,
/// abcd's home store, and the logs of each client run.
struct Lab {
    dir: Option<tempfile::TempDir>,
    base: PathBuf,
    repo: PathBuf,
    install: Install,
    /// The client's binary; `None` for a lab that only runs abcd.
    client: Option<PathBuf>,
    runs: usize,
    /// Where the client starts, when not the repository (a lane's worktree).
    client_dir: Option<PathBuf>,
}

impl Drop for Lab {
    fn drop(&mut self) {
        if std::env::var_os(KEEP_VAR).is_some()
            && let Some(dir) = self.dir.take()
        {
            let kept = dir.keep();
            let _ = writeln!(std::io::stderr(), "real_host: kept {}", kept.display());
        }
    }
}

impl Lab {
    fn new(client: Option<&Path>, install: Install) -> Lab {
        let dir = tempfile::Builder::new().prefix("abcd-real-host.").tempdir().unwrap();
        let base = dir.path().to_path_buf();
        let repo = base.join("repo");
        for d in ["home", "tmp", "abcd-home", "repo"] {
            std::fs::create_dir_all(base.join(d)).unwrap();
        }
        repo::create(&repo, &[README]);
        let lab = Lab { dir: Some(dir), base, repo, install, client: client.map(Path::to_path_buf), runs: 0, client_dir: None };
        lab.abcd(&["init"]);
        if install == Install::Plugin {
            // Managed (`.abcd/`, the local tier), but the hooks come from the plugin only.
            std::fs::remove_file(lab.repo.join(".claude/settings.json")).unwrap();
        }
        lab
    }

    fn git(&self, args: &[&str]) -> String {
        repo::git(&self.repo, args)
    }

    fn abcd_command(&self) -> Command {
        let mut cmd = Command::new(abcd_exe());
        cmd.current_dir(&self.repo)
            .env("ABCD_HOME", self.base.join("abcd-home"))
            .env("ABCD_GH", "")
            .env("TZ", "UTC")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env_remove("ABCD_TEST_NOW")
            .env_remove("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP")
            // The lab's verbs are the person's, from a terminal of their own.
            .env_remove("CLAUDECODE")
            .env_remove("CODEX_TOOL_CALL_ID");
        cmd
    }

    /// Runs an abcd verb that must succeed; its stdout.
    fn abcd(&self, args: &[&str]) -> String {
        let out = self.abcd_command().args(args).output().unwrap();
        assert!(out.status.success(), "abcd {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
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

    /// The command lines the client's hook log may name for an abcd hook of this install
    /// (a plugin's path is shown expanded, except on StopFailure's line).
    fn hook_commands(&self, cli_name: &str) -> Vec<String> {
        match self.install {
            Install::Init => vec![format!("{} hook {cli_name}", abcd_exe().display())],
            Install::Plugin => vec![
                format!("{}/hooks/run-abcd {cli_name}", manifest().display()),
                format!("${{CLAUDE_PLUGIN_ROOT}}/hooks/run-abcd {cli_name}"),
            ],
        }
    }

    /// The model server in a loopback-only namespace (`unshare -rn`), serving `script` and
    /// logging to `log`, with exactly the environment the client sees (and passes on to the
    /// hooks and the Bash tool); the caller appends the command it starts after `--`.
    fn in_sandbox(&self, script_path: &Path, log_path: &Path) -> Command {
        let mut cmd = Command::new("unshare");
        cmd.args(["-rn", "--", "python3"])
            .arg(manifest().join("tests/real_host/model_server.py"))
            .arg("--isolated")
            .arg("--script")
            .arg(script_path)
            .arg("--log")
            .arg(log_path)
            .arg("--")
            .env_clear()
            .env("PATH", sandbox_path())
            .env("HOME", self.base.join("home"))
            .env("TMPDIR", self.base.join("tmp"))
            .env("LANG", "C.UTF-8")
            .env("TERM", "dumb")
            .env("TZ", "UTC")
            .env("ANTHROPIC_API_KEY", "not-a-key-the-scripted-model-server-takes-any")
            .env("DISABLE_TELEMETRY", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .env("DISABLE_ERROR_REPORTING", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            // bypassPermissions refuses to run as root without it (the CI machine is root).
            .env("IS_SANDBOX", "1")
            .env("ABCD_HOME", self.base.join("abcd-home"))
            .env("ABCD_GH", "")
            .env("GIT_CONFIG_NOSYSTEM", "1");
        cmd
    }

    /// Print mode: `claude -p PROMPT`, stdin closed.
    fn print(&mut self, script: Value, prompt: &str, env: &[(&str, &str)]) -> Run {
        let args = vec!["-p".to_string(), prompt.to_string()];
        self.run(script, args, env, None, Duration::ZERO)
    }

    /// SDK mode: stream-json input, one prompt per result, the session kept open `linger`
    /// after the last one. `permission_tool` adds `--permission-prompt-tool stdio` (the
    /// only mode that offers AskUserQuestion).
    fn stream(&mut self, script: Value, prompts: &[&str], env: &[(&str, &str)], permission_tool: bool, linger: Duration) -> Run {
        let mut args = vec!["-p".to_string(), "--input-format".to_string(), "stream-json".to_string()];
        if permission_tool {
            args.extend(["--permission-prompt-tool".to_string(), "stdio".to_string()]);
        }
        self.run(script, args, env, Some(prompts), linger)
    }

    fn run(&mut self, script: Value, mut args: Vec<String>, env: &[(&str, &str)], prompts: Option<&[&str]>, linger: Duration) -> Run {
        self.runs += 1;
        let tag = format!("run{}", self.runs);
        let script_path = self.base.join(format!("{tag}.script.json"));
        let log_path = self.base.join(format!("{tag}.requests.jsonl"));
        let err_path = self.base.join(format!("{tag}.stderr.txt"));
        let debug_path = self.base.join(format!("{tag}.debug.txt"));
        std::fs::write(&script_path, script.to_string()).unwrap();
        args.extend(["--output-format", "stream-json", "--verbose", "--permission-mode", "bypassPermissions"].map(String::from));
        // The client's hook log: every command hook's line, status and parsed output.
        args.extend(["--debug".to_string(), "hooks".to_string(), "--debug-file".to_string(), debug_path.display().to_string()]);
        if self.install == Install::Plugin {
            args.extend(["--plugin-dir".to_string(), manifest().display().to_string()]);
        }
        let mut cmd = self.in_sandbox(&script_path, &log_path);
        cmd.arg(self.client.as_ref().expect("a lab made with the client"))
            .args(&args)
            .current_dir(self.client_dir.as_ref().unwrap_or(&self.repo))
            .stdin(if prompts.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&err_path).unwrap());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("unshare runs");
        let rx = lines_of(child.stdout.take().unwrap());
        let mut stdin = child.stdin.take();
        let mut pending: Vec<&str> = prompts.unwrap_or_default().to_vec();
        pending.reverse();
        let send = |stdin: &mut Option<std::process::ChildStdin>, v: Value| {
            if let Some(s) = stdin.as_mut() {
                let _ = writeln!(s, "{v}");
                let _ = s.flush();
            }
        };
        if let Some(p) = pending.pop() {
            send(&mut stdin, user_message(p));
        }
        let started = Instant::now();
        let mut close_at: Option<Instant> = None;
        let mut events = Vec::new();
        let mut control_requests = Vec::new();
        loop {
            let now = Instant::now();
            if now > started + RUN_DEADLINE {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{:?}: the client ran past {RUN_DEADLINE:?}; kept its stderr at {}", self.install, err_path.display());
            }
            if close_at.is_some_and(|t| now >= t) {
                stdin = None;
                close_at = None;
            }
            let wait = close_at.map_or(Duration::from_millis(200), |t| t.saturating_duration_since(now).min(Duration::from_millis(200)));
            let line = match rx.recv_timeout(wait) {
                Ok(line) => line,
                Err(mpsc::RecvTimeoutError::Timeout) => continue,
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            };
            let Ok(event) = serde_json::from_str::<Value>(&line) else { continue };
            match event["type"].as_str() {
                Some("control_request") => {
                    control_requests.push(event.clone());
                    // No person at this keyboard: whatever the client asks the host is denied.
                    let answer = json!({"type": "control_response", "response": {"subtype": "success",
                        "request_id": event["request_id"], "response": {"behavior": "deny", "message": "the test driver denies"}}});
                    send(&mut stdin, answer);
                }
                Some("result") if prompts.is_some() => match pending.pop() {
                    Some(p) => send(&mut stdin, user_message(p)),
                    None if linger.is_zero() => stdin = None,
                    None => close_at = Some(Instant::now() + linger),
                },
                _ => {}
            }
            events.push(event);
        }
        drop(stdin);
        let status = child.wait().unwrap();
        Run {
            install: self.install,
            code: status.code(),
            events,
            control_requests,
            requests: read_jsonl(&log_path),
            hooks: hook_log(&std::fs::read_to_string(&debug_path).unwrap_or_default()),
            stderr: std::fs::read_to_string(&err_path).unwrap_or_default(),
        }
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

fn user_message(text: &str) -> Value {
    json!({"type": "user", "message": {"role": "user", "content": text}})
}

fn read_jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap_or_default().lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

// ---------------------------------------------------------------------------- what a run left

/// One client run: its stream-json output, the model server's log, the client's hook log.
struct Run {
    install: Install,
    code: Option<i32>,
    events: Vec<Value>,
    control_requests: Vec<Value>,
    requests: Vec<Value>,
    hooks: Vec<HookOutput>,
    stderr: String,
}

/// One command hook's run, as the client's hook log (`--debug hooks`) tells it.
#[derive(Debug)]
struct HookOutput {
    /// The event, and after a colon what the matcher matched (`PreToolUse:Write`).
    name: String,
    command: String,
    status: Option<i64>,
    /// The JSON it printed, as the client parsed it; `None` when it printed none.
    printed: Option<Value>,
}

/// Reads the client's hook log: a hook's parsed output comes on a line before the line
/// saying it finished (or, for StopFailure, completed) with its status.
fn hook_log(log: &str) -> Vec<HookOutput> {
    const PARSED: &str = "Hooks: Parsed initial response: ";
    let mut out = Vec::new();
    let mut pending: Option<Value> = None;
    for line in log.lines() {
        let Some((_, rest)) = line.split_once("[DEBUG] ") else { continue };
        if let Some(json) = rest.strip_prefix(PARSED) {
            pending = serde_json::from_str(json).ok();
            continue;
        }
        let rest = rest.strip_prefix("Hooks: ").unwrap_or(rest);
        // `Name [command] finished with status N (Xms)`; a plugin's hook adds `(plugin …)`
        // after the command, and StopFailure's says `completed`.
        let Some((head, status)) = rest.split_once(" finished with status ").or_else(|| rest.split_once(" completed with status ")) else {
            continue;
        };
        let Some((name, rest)) = head.split_once(" [") else { continue };
        let Some((command, _)) = rest.rsplit_once(']') else { continue };
        out.push(HookOutput {
            name: name.to_string(),
            command: command.to_string(),
            status: status.split_whitespace().next().and_then(|s| s.parse().ok()),
            printed: pending.take(),
        });
    }
    out
}

/// One piece of a message in a request body, flattened to text.
#[derive(Debug)]
struct Part {
    role: String,
    kind: String,
    text: String,
    is_error: bool,
}

impl Run {
    fn session_id(&self) -> String {
        let init = self.events.iter().find(|e| e["type"] == "system" && e["subtype"] == "init");
        init.and_then(|e| e["session_id"].as_str())
            .unwrap_or_else(|| panic!("{:?}: no init event; {}", self.install, self.summary()))
            .into()
    }

    fn main_requests(&self) -> Vec<&Value> {
        self.requests.iter().filter(|r| r["kind"] == "main").collect()
    }

    /// abcd's runs of the hook for `event`, in order: checked to be abcd's (the command
    /// of this install) and to exit 0.
    fn abcd_ran(&self, lab: &Lab, event: &str, cli_name: &str) -> Vec<&HookOutput> {
        let runs: Vec<&HookOutput> = self.hooks.iter().filter(|h| h.name.split(':').next() == Some(event)).collect();
        for h in &runs {
            assert!(lab.hook_commands(cli_name).contains(&h.command), "{:?}: the {event} hook that ran is abcd's: {h:?}", self.install);
            assert_eq!(h.status, Some(0), "{:?}: {event}: {h:?}", self.install);
        }
        runs
    }

    /// What abcd's hook for `event` printed, each time it printed something.
    fn abcd_printed(&self, lab: &Lab, event: &str, cli_name: &str) -> Vec<Value> {
        self.abcd_ran(lab, event, cli_name).into_iter().filter_map(|h| h.printed.clone()).collect()
    }

    fn summary(&self) -> String {
        let kinds: Vec<String> = self.requests.iter().map(|r| format!("{}:{}", r["n"], r["kind"].as_str().unwrap_or("?"))).collect();
        let systems: Vec<String> = self
            .events
            .iter()
            .filter(|e| e["type"] == "system" && e["subtype"] != "init")
            .map(|e| format!("{}", e).chars().take(300).collect())
            .collect();
        format!("exit {:?}; requests [{}]; system events {systems:#?}; client stderr: {}", self.code, kinds.join(", "), self.stderr)
    }
}

fn parts(request: &Value) -> Vec<Part> {
    let mut out = Vec::new();
    for m in request["body"]["messages"].as_array().into_iter().flatten() {
        let role = m["role"].as_str().unwrap_or_default().to_string();
        let blocks = match &m["content"] {
            Value::String(s) => vec![json!({"type": "text", "text": s})],
            Value::Array(a) => a.clone(),
            _ => vec![],
        };
        for b in blocks {
            let kind = b["type"].as_str().unwrap_or_default().to_string();
            let text = match kind.as_str() {
                "text" => b["text"].as_str().unwrap_or_default().to_string(),
                "tool_result" => match &b["content"] {
                    Value::String(s) => s.clone(),
                    Value::Array(a) => a.iter().filter_map(|x| x["text"].as_str()).collect::<Vec<_>>().join("\n"),
                    _ => String::new(),
                },
                _ => b.to_string(),
            };
            out.push(Part { role: role.clone(), kind, text, is_error: b["is_error"].as_bool().unwrap_or(false) });
        }
    }
    out
}

/// Every message's text in a request, joined (the system prompt and tools left out).
fn all_text(request: &Value) -> String {
    parts(request).into_iter().map(|p| p.text).collect::<Vec<_>>().join("\n")
}

/// The message text the client built from a SessionStart hook's additionalContext.
fn session_start_context(request: &Value) -> Option<String> {
    const MARK: &str = "SessionStart hook additional context: ";
    parts(request).into_iter().find_map(|p| p.text.find(MARK).map(|at| p.text[at + MARK.len()..].to_string()))
}

fn of_kind<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["kind"] == kind).collect()
}

fn additional_context(printed: &Value) -> String {
    printed["hookSpecificOutput"]["additionalContext"].as_str().unwrap_or_else(|| panic!("no additionalContext in {printed}")).to_string()
}

/// The scenarios run side by side (read); the timing runs alone (write), so the tier's own
/// clients do not crowd the processor it measures.
pub(crate) static MACHINE: RwLock<()> = RwLock::new(());

/// Runs `scenario` once per install, each in a fresh lab; nothing when the tier cannot run.
fn each_install(scenario: impl Fn(&mut Lab)) {
    let Some(client) = client() else { return };
    let _shared = MACHINE.read().unwrap_or_else(|e| e.into_inner());
    for install in INSTALLS {
        let mut lab = Lab::new(Some(client), install);
        scenario(&mut lab);
    }
}

// ---------------------------------------------------------------------------- the scenarios

/// Scenario 1: A session starts in a repository with checklist items: the first model
/// request carries the rendered checklist, exactly as the hook printed it.
#[test]
fn a_session_start_puts_the_checklist_in_the_first_request() {
    each_install(|lab| {
        lab.abcd(&["checklist", "add", "Write the parser", "--owner-ref", "feat/parser"]);
        lab.abcd(&["checklist", "add", "Document the format"]);
        let run = lab.print(json!({"turns": [{"say": "Hello."}]}), "hello", &[]);
        let who = run.install;
        assert_eq!(run.code, Some(0), "{who:?}: {}", run.summary());
        let session = run.session_id();

        // The journal: the start, with the client's session id and source.
        let events = lab.working_copy_events();
        let started = of_kind(&events, "session.started");
        assert_eq!(started.len(), 1, "{who:?}: {events:#?}");
        assert_eq!(started[0]["data"], json!({"session": session, "source": "startup", "working_copy": lab.repo.display().to_string()}));

        // What the hook printed: the header and both items.
        let printed = run.abcd_printed(lab, "SessionStart", "session-start");
        assert_eq!(printed.len(), 1, "{who:?}: {}", run.summary());
        let context = additional_context(&printed[0]);
        assert!(common::unmarked(&context).starts_with(CHECKLIST_HEADER), "{who:?}: {context}");
        assert!(
            context.contains("\n1: Write the parser · refs: feat/parser\n") && context.contains("\n2: Document the format\n"),
            "{who:?}: {context}"
        );

        // What the model received: that very text, in the first request.
        let main = run.main_requests();
        assert_eq!(main.len(), 1, "{who:?}: {}", run.summary());
        let carried = session_start_context(main[0]).unwrap_or_else(|| panic!("{who:?}: no SessionStart context in the first request"));
        assert!(carried.starts_with(&context), "{who:?}: the model got {carried:?}, the hook printed {context:?}");

        // The receipt: the injection is recorded, and the Stop hook read in the client's
        // transcript that the request carried it whole.
        let events = lab.working_copy_events();
        assert_receipts(&events, &[("session_start:startup", "context.delivered")], who);
    });
}

/// Each injection (by source, in order) and the receipt that settled it.
fn assert_receipts(events: &[Value], expected: &[(&str, &str)], who: Install) {
    let injected = of_kind(events, "context.injected");
    let found: Vec<(String, String)> = injected
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
        .collect();
    let expected: Vec<(String, String)> = expected.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
    assert_eq!(found, expected, "{who:?}: injections and receipts: {events:#?}");
}

/// Scenario 1b: a SessionStart context over the host's cap (padded through the test seam
/// `ABCD_TEST_CONTEXT_PAD`): the client swaps it for a file path and a preview. The client
/// writes its transcript behind the hooks, so the first prompt's hook may not see the cut
/// yet; the turn's Stop hook does, and records `context.not_delivered`; the next prompt's
/// hook sends the checklist again through its additionalContext, which that prompt's
/// request carries whole; the Stop hook records it delivered, and nothing goes a third time.
#[test]
fn a_context_over_the_hosts_cap_is_not_delivered_and_sent_again_once() {
    each_install(|lab| {
        lab.abcd(&["checklist", "add", "Write the parser"]);
        let script = json!({"turns": [{"say": "Hello."}, {"say": "Going on."}, {"say": "Still going."}]});
        let prompts = ["hello", "go on", "and on"];
        let run = lab.stream(script, &prompts, &[("ABCD_TEST_CONTEXT_PAD", "11000")], false, Duration::ZERO);
        let who = run.install;
        assert_eq!(run.code, Some(0), "{who:?}: {}", run.summary());
        let events = lab.working_copy_events();
        assert_receipts(&events, &[("session_start:startup", "context.not_delivered"), ("reinject", "context.delivered")], who);
        let injected = of_kind(&events, "context.injected");
        let (lost, again) = (&injected[0]["data"], &injected[1]["data"]);
        assert!(lost["chars"].as_u64().unwrap() > 10_000, "{who:?}: {lost}");
        assert_eq!(again["reinjects"], lost["marker"], "{who:?}");
        let not_delivered = of_kind(&events, "context.not_delivered");
        assert_eq!(not_delivered[0]["data"]["reason"], "cut", "{who:?}");

        // The model: the preview of the first from the first request on, and the whole
        // of the second (its token at both ends) from the prompt hook, once.
        let main = run.main_requests();
        assert!(all_text(main[0]).contains("<persisted-output>"), "{who:?}: the first was cut");
        let text = all_text(main.last().unwrap());
        let token = format!("[abcd:{}]", again["marker"].as_str().unwrap());
        assert_eq!(text.matches(&token).count(), 2, "{who:?}: the re-injection arrives whole: {text}");
        assert!(text.contains(&format!("UserPromptSubmit hook additional context: {token}")), "{who:?}: {text}");
        assert!(text.contains("<persisted-output>"), "{who:?}: the first was cut: {text}");
    });
}

/// Scenario 2a: `/compact`: PreCompact records `compaction.recorded`, SessionStart
/// `compact` fires, and the request after the compaction carries the checklist again,
/// including an item the session added after it started (so it is the re-injection, not a
/// leftover).
#[test]
fn a_manual_compaction_is_recorded_and_the_checklist_comes_back() {
    each_install(|lab| {
        lab.abcd(&["checklist", "add", "Write the parser"]);
        let script = json!({"turns": [
            {"say": "Adding the next step to the plan.", "tools": [{"name": "Bash", "input": {
                "command": "abcd checklist add 'Review the grammar'", "description": "Add a checklist item"}}]},
            {"say": "Added."},
            {"say": "Continuing after the compaction."}
        ], "summary": SUMMARY});
        let run = lab.stream(script, &["plan the parser", "/compact", "go on"], &[], false, Duration::ZERO);
        let who = run.install;
        assert_eq!(run.code, Some(0), "{who:?}: {}", run.summary());
        let session = run.session_id();
        check_compaction(lab, &run, &session, "manual");
    });
}

/// Scenario 2b: An automatic compaction (the usage the model server reports passes the
/// window): recorded with trigger `auto`, and the checklist comes back the same way.
#[test]
fn an_automatic_compaction_is_recorded_and_the_checklist_comes_back() {
    each_install(|lab| {
        lab.abcd(&["checklist", "add", "Write the parser"]);
        // A compaction needs enough message groups, or the client gives up ("too few
        // groups") after PreCompact: a few tool rounds first.
        let mut turns: Vec<Value> = (1..=5)
            .map(|i| {
                json!({"tools": [{"name": "Bash", "input": {"command": format!("echo step {i}"), "description": "step"}}],
                "input_tokens": 1000 * i})
            })
            .collect();
        turns.insert(
            0,
            json!({"tools": [{"name": "Bash", "input": {"command": "abcd checklist add 'Review the grammar'", "description": "plan"}}]}),
        );
        turns.push(json!({"say": "Turn one done.", "input_tokens": 190_000}));
        turns.push(json!({"say": "Continuing after the compaction."}));
        let script = json!({"turns": turns, "summary": SUMMARY});
        let run =
            lab.stream(script, &["plan the parser", "go on"], &[("CLAUDE_CODE_AUTO_COMPACT_WINDOW", "100000")], false, Duration::ZERO);
        let who = run.install;
        assert_eq!(run.code, Some(0), "{who:?}: {}", run.summary());
        let session = run.session_id();
        check_compaction(lab, &run, &session, "auto");
    });
}

fn check_compaction(lab: &Lab, run: &Run, session: &str, trigger: &str) {
    let who = run.install;
    // The journal: the compaction, then the start it caused, in that order.
    let events = lab.working_copy_events();
    let compaction = events.iter().position(|e| e["kind"] == "compaction.recorded").unwrap_or_else(|| panic!("{who:?}: {events:#?}"));
    assert_eq!(events[compaction]["data"], json!({"session": session, "trigger": trigger}), "{who:?}");
    let restart = events
        .iter()
        .position(|e| e["kind"] == "session.started" && e["data"]["source"] == "compact")
        .unwrap_or_else(|| panic!("{who:?}: no session.started compact: {events:#?}"));
    assert!(compaction < restart, "{who:?}: compaction.recorded comes first");

    // What the hooks printed: the compact start's context names the item added mid-session.
    let printed = run.abcd_printed(lab, "SessionStart", "session-start");
    assert_eq!(printed.len(), 2, "{who:?}: startup and compact: {}", run.summary());
    let after = additional_context(&printed[1]);
    assert!(common::unmarked(&after).starts_with(CHECKLIST_HEADER) && after.contains("\n2: Review the grammar\n"), "{who:?}: {after}");
    assert!(!additional_context(&printed[0]).contains("Review the grammar"), "{who:?}: the item came later");

    // What the model received: one compaction request; the next main request is the
    // compacted conversation (the summary) and carries the checklist, as printed.
    let at = run.requests.iter().position(|r| r["kind"] == "compaction").unwrap_or_else(|| panic!("{who:?}: {}", run.summary()));
    assert_eq!(run.requests.iter().filter(|r| r["kind"] == "compaction").count(), 1, "{who:?}");
    let next = run.requests[at + 1..].iter().find(|r| r["kind"] == "main").unwrap_or_else(|| panic!("{who:?}: {}", run.summary()));
    assert!(all_text(next).contains("a review step was planned"), "{who:?}: the request after is the compacted one");
    let carried = session_start_context(next).unwrap_or_else(|| panic!("{who:?}: no SessionStart context after the compaction"));
    assert!(carried.starts_with(&after), "{who:?}: the model got {carried:?}, the hook printed {after:?}");
    let first = run.main_requests()[0];
    assert!(!all_text(first).contains("2: Review the grammar"), "{who:?}: not in the first request");

    // Both injections reached the model, as the client's transcript shows.
    assert_receipts(&events, &[("session_start:startup", "context.delivered"), ("session_start:compact", "context.delivered")], who);
}

/// The text the client puts before a Stop hook's additionalContext in the next request.
const STOP_CONTEXT_MARK: &str = "Stop hook additional context: ";

/// The Stop reasons abcd printed, in order (its blocks; allows print no reason).
fn stop_reasons(run: &Run, lab: &Lab) -> Vec<String> {
    let printed = run.abcd_printed(lab, "Stop", "stop");
    printed
        .iter()
        .filter_map(|p| {
            assert!(p.get("decision").is_none(), "{:?}: a block is written as Stop feedback, not a hook error: {p}", run.install);
            p["hookSpecificOutput"]["additionalContext"].as_str().map(|r| {
                assert_eq!(p["hookSpecificOutput"]["hookEventName"], "Stop");
                r.to_string()
            })
        })
        .collect()
}

/// Each block's reason reaches the model once, in the request after the blocked turn, as
/// hook feedback: never as a "blocking error" quoting the hook's command.
fn check_reasons_reach_the_model(run: &Run, reasons: &[String]) {
    let who = run.install;
    let main = run.main_requests();
    assert_eq!(main.len(), reasons.len() + 1, "{who:?}: one request per block, after the first: {}", run.summary());
    for (i, reason) in reasons.iter().enumerate() {
        let next = main[i + 1];
        let fed: Vec<Part> = parts(next).into_iter().filter(|p| p.text.contains(reason.as_str())).collect();
        let expected = format!("{STOP_CONTEXT_MARK}{reason}");
        assert!(fed.iter().any(|p| p.text.contains(&expected) && !p.is_error), "{who:?}: block {} reached the model as {fed:#?}", i + 1);
        // Once per block so far: the history keeps the earlier blocks' feedback.
        let once_each: usize = reasons[..=i].iter().map(|r| r.matches(reason.as_str()).count()).sum();
        assert_eq!(all_text(next).matches(reason.as_str()).count(), once_each, "{who:?}: block {}: {fed:#?}", i + 1);
        assert!(!all_text(next).contains("Stop hook blocking error"), "{who:?}: shown as an error: {fed:#?}");
    }
    let notices: Vec<&Value> = run.events.iter().filter(|e| e["subtype"] == "notification" && e["key"] == "stop-hook-error").collect();
    assert!(notices.is_empty(), "{who:?}: the person is told of a stop hook problem: {notices:#?}");
}

/// Scenario 3: Away, with a `working` item: the model ends its turn; abcd blocks; the next
/// request carries the reason; the next Stop arrives with `stop_hook_active` true (abcd's
/// count goes 1, 2, 3: +1 only when it is true); the block past the host's cap is recorded
/// in the away record, and the client ends the turn there.
#[test]
fn away_a_stop_with_work_owed_is_blocked_until_the_hosts_cap() {
    each_install(|lab| {
        lab.abcd(&["checklist", "add", "Write the parser"]);
        lab.abcd(&["mode", "autonomous"]);
        let run = lab.print(
            json!({"turns": [], "after": "Done for now."}),
            "write the parser",
            &[("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP", BLOCK_CAP)],
        );
        let who = run.install;
        assert_eq!(run.code, Some(0), "{who:?}: {}", run.summary());
        let session = run.session_id();

        // The journal: three judgements, blocks 1, 2, 3; the third passed the cap.
        let judged: Vec<Value> = of_kind(&lab.working_copy_events(), "session.judged").into_iter().map(|e| e["data"].clone()).collect();
        let counts: Vec<u64> = judged.iter().map(|d| d["block_count"].as_u64().unwrap()).collect();
        assert_eq!(counts, [1, 2, 3], "{who:?}: stop_hook_active was true on the 2nd and 3rd Stop: {judged:#?}");
        assert!(judged.iter().all(|d| d["session"] == session.as_str()), "{who:?}");
        let stops = recorded_stops(lab);
        assert_eq!(stops.len(), 1, "{who:?}: {stops:#?}");
        assert_eq!(stops[0]["possibly_forced_by_cap"], true, "{who:?}: {stops:#?}");
        assert_eq!(stops[0]["label"], "work_owed", "{who:?}: {stops:#?}");
        let back = lab.abcd(&["mode", "back"]);
        assert!(back.contains("stop: stopped with work owed, possibly forced by the cap"), "{who:?}: {back}");

        // What the hooks printed, and what the model received.
        let reasons = stop_reasons(&run, lab);
        assert_eq!(reasons.len(), 3, "{who:?}: {}", run.summary());
        assert!(
            reasons.iter().all(|r| r.contains("work is owed (1 item). Next: checklist item 1 (Write the parser) is working")),
            "{reasons:#?}"
        );
        // The first two blocks reach the model; the client overrides the third (its cap).
        check_reasons_reach_the_model(&run, &reasons[..2]);
        let capped = run.events.iter().any(|e| e["subtype"] == "notification" && e["key"] == "stop-hook-block-cap");
        assert!(capped, "{who:?}: the client ended the turn at its cap: {}", run.summary());
    });
}

/// Scenario (issue 37): away, the loop of Stops the client runs until its cap starts no
/// git child once git's answers are kept: the client's PATH puts a logging `git` first,
/// which writes its parent's pid and command line, then runs the real git. The first prompt
/// hook and the first Stop ask git (their answers are not kept yet; the Stop's owed reading
/// is a reading of its own); every Stop after the first finds nothing changed and asks none.
#[test]
fn away_the_stops_after_the_first_start_no_git_child() {
    each_install(|lab| {
        lab.git(&["switch", "-q", "-c", "feature"]);
        lab.git(&["commit", "-q", "--allow-empty", "-m", "parser"]);
        lab.abcd(&["checklist", "add", "Write the parser"]);
        lab.abcd(&["mode", "autonomous"]);
        let shim = lab.base.join("git-shim");
        std::fs::create_dir_all(&shim).unwrap();
        let log = lab.base.join("git-children.log");
        let real_git = abcd::owed::find_on_path("git", std::env::var_os("PATH").as_deref()).expect("git on PATH");
        let script = format!(
            "#!/bin/sh\nprintf '%s\\t%s\\n' \"$PPID\" \"$(tr '\\000' ' ' < /proc/$PPID/cmdline)\" >> '{}'\nexec '{}' \"$@\"\n",
            log.display(),
            real_git.display()
        );
        std::fs::write(shim.join("git"), script).unwrap();
        std::fs::set_permissions(shim.join("git"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let path = format!("{}:{}", shim.display(), sandbox_path());
        let run = lab.print(
            json!({"turns": [], "after": "Done for now."}),
            "write the parser",
            &[("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP", BLOCK_CAP), ("PATH", &path)],
        );
        let who = run.install;
        assert_eq!(run.code, Some(0), "{who:?}: {}", run.summary());

        // Who started git: a hook's process, by its pid, or the client.
        let lines = std::fs::read_to_string(&log).unwrap_or_default();
        let hook_parents: Vec<(i64, String)> = lines
            .lines()
            .filter_map(|l| l.split_once('\t'))
            .filter(|(_, cmd)| cmd.contains(" hook ") || cmd.contains("run-abcd "))
            .map(|(pid, cmd)| (pid.trim().parse().unwrap(), cmd.to_string()))
            .collect();
        assert!(!hook_parents.is_empty(), "{who:?}: no hook asked git, so the logging git was not on the hooks' PATH: {lines}");
        let judged = of_kind(&lab.working_copy_events(), "session.judged")
            .into_iter()
            .map(|e| e["actor"]["pid"].as_i64().unwrap())
            .collect::<Vec<_>>();
        assert_eq!(judged.len(), 3, "{who:?}: three Stops judged, the third past the cap: {}", run.summary());
        // The first Stop's pid is among git's parents: the pids match, so the check below can fail.
        assert!(hook_parents.iter().any(|(p, _)| *p == judged[0]), "{who:?}: the first Stop asked no git: {lines}");
        for pid in &judged[1..] {
            let asked: Vec<&String> = hook_parents.iter().filter(|(p, _)| p == pid).map(|(_, c)| c).collect();
            assert!(asked.is_empty(), "{who:?}: the Stop of pid {pid} started git with nothing changed: {asked:?}\n{lines}");
        }
    });
}

/// The stops in the away record (the repository journal), as recorded.
fn recorded_stops(lab: &Lab) -> Vec<Value> {
    of_kind(&lab.repository_events(), "away.stop_recorded").into_iter().map(|e| e["data"]["stop"].clone()).collect()
}

/// Scenario 4: The model runs `git switch -c feat/x` through the Bash tool:
/// `branch.created` is recorded; it commits there; and while away, the unpushed branch is
/// owed: the Stop blocks naming it, and the model receives that.
#[test]
fn a_branch_the_model_creates_is_recorded_and_owed_while_away() {
    each_install(|lab| {
        lab.abcd(&["mode", "autonomous"]);
        let script = json!({"turns": [
            {"say": "Starting a branch.", "tools": [{"name": "Bash", "input": {
                "command": "git switch -c feat/x", "description": "Create branch feat/x"}}]},
            {"tools": [{"name": "Bash", "input": {
                "command": "echo 'fn parse() {}' > parser.rs && git add parser.rs && git commit -q -m parser",
                "description": "Commit the parser"}}]},
            {"say": "Committed."}
        ], "after": "Done for now."});
        let run = lab.print(script, "start the parser on a branch", &[("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP", BLOCK_CAP)]);
        let who = run.install;
        assert_eq!(run.code, Some(0), "{who:?}: {}", run.summary());
        assert_eq!(lab.git(&["branch", "--show-current"]).trim(), "feat/x", "{who:?}: the command really ran");

        // The journal: the branch, from the command the model ran.
        let created: Vec<Value> = of_kind(&lab.working_copy_events(), "branch.created").into_iter().map(|e| e["data"].clone()).collect();
        assert_eq!(created, [json!({"branch": "feat/x", "command": "git switch -c"})], "{who:?}");

        // The model received the tool's output, then the block naming the branch.
        let main = run.main_requests();
        let switched = parts(main[1]).into_iter().any(|p| p.kind == "tool_result" && p.text.contains("Switched to a new branch 'feat/x'"));
        assert!(switched, "{who:?}: {:#?}", parts(main[1]));
        let reasons = stop_reasons(&run, lab);
        assert!(!reasons.is_empty(), "{who:?}: {}", run.summary());
        assert!(reasons[0].contains("Next: branch feat/x has commits not pushed"), "{who:?}: {reasons:#?}");
        let after_block = main[3];
        assert!(all_text(after_block).contains(&format!("{STOP_CONTEXT_MARK}{}", reasons[0])), "{who:?}: {:#?}", parts(after_block));
        let stops = recorded_stops(lab);
        assert_eq!(stops.len(), 1, "{who:?}: {stops:#?}");
        assert!(stops[0]["next"].as_str().is_some_and(|n| n.starts_with("branch feat/x has commits not pushed")), "{who:?}: {stops:#?}");
    });
}

/// Scenario 5: The model tries the Write tool on the checklist's projection: denied, the
/// file is untouched, nothing is journaled for it, and the model receives the reason naming
/// the abcd verb to use instead.
#[test]
fn a_write_to_the_local_tier_is_denied_with_the_verb_to_use() {
    each_install(|lab| {
        lab.abcd(&["checklist", "add", "Write the parser"]);
        let target = lab.repo.join(".abcd/.work.local/checklist.json");
        let journal_before = lab.working_copy_events().len();
        let script = json!({"turns": [
            {"say": "Editing the plan directly.", "tools": [{"name": "Write", "input": {
                "file_path": target.display().to_string(), "content": "{\"items\": []}\n"}}]},
            {"say": "Understood; I will use the verb."}
        ]});
        let run = lab.print(script, "clear the plan", &[]);
        let who = run.install;
        assert_eq!(run.code, Some(0), "{who:?}: {}", run.summary());
        let after = std::fs::read_to_string(&target).unwrap();
        assert!(after.contains("Write the parser") && !after.contains("\"items\": []"), "{who:?}: the Write did not happen: {after}");
        let kinds: Vec<Value> = lab.working_copy_events()[journal_before..].iter().map(|e| e["kind"].clone()).collect();
        assert_eq!(
            kinds,
            [json!("session.started"), json!("context.injected"), json!("context.delivered")],
            "{who:?}: only the start, its injection and its receipt are journaled"
        );

        // What the hook printed, and what the model received: the same reason, as an error
        // result of the Write call.
        let printed = run.abcd_printed(lab, "PreToolUse", "pre-tool-use");
        let denial = printed.iter().find(|p| p["hookSpecificOutput"]["permissionDecision"] == "deny");
        let reason =
            denial.unwrap_or_else(|| panic!("{who:?}: no deny printed: {printed:#?}"))["hookSpecificOutput"]["permissionDecisionReason"]
                .as_str()
                .unwrap()
                .to_string();
        assert!(reason.starts_with("abcd refuses Write on ") && reason.contains("`abcd checklist add|set`"), "{who:?}: {reason}");
        let main = run.main_requests();
        assert_eq!(main.len(), 2, "{who:?}: {}", run.summary());
        let result = parts(main[1]).into_iter().find(|p| p.kind == "tool_result").unwrap_or_else(|| panic!("{who:?}: no tool result"));
        assert!(result.role == "user" && result.is_error && result.text.contains(&reason), "{who:?}: {result:#?}");
    });
}

/// Issue 35: the model's Bash call of `abcd mode autonomous` (and a route through `sh -c`)
/// is refused by abcd's PreToolUse, the refusal reaches the model as the tool's error
/// result, and the mode stays as the person left it. Even run (by a hook-less route), the
/// verb refuses in the client's process (`CLAUDECODE=1`): the Bash tool's environment is
/// checked through `env`.
#[test]
fn the_models_bash_call_of_abcd_mode_autonomous_is_refused() {
    each_install(|lab| {
        let script = json!({"turns": [
            {"say": "Setting the away mode.", "tools": [{"name": "Bash", "input": {
                "command": "abcd mode autonomous --until +8h", "description": "Away"}}]},
            {"say": "Through a shell, then.", "tools": [{"name": "Bash", "input": {
                "command": "sh -c 'abcd mode autonomous'", "description": "Away"}}]},
            {"say": "What marks my shell?", "tools": [{"name": "Bash", "input": {
                "command": "env | grep -c '^CLAUDECODE=1$'", "description": "Env"}}]},
            {"say": "Understood; only the person sets it."}
        ]});
        let run = lab.print(script, "go away for the night", &[]);
        let who = run.install;
        assert_eq!(run.code, Some(0), "{who:?}: {}", run.summary());
        let printed = run.abcd_printed(lab, "PreToolUse", "pre-tool-use");
        let denials: Vec<String> = printed
            .iter()
            .filter(|p| p["hookSpecificOutput"]["permissionDecision"] == "deny")
            .map(|p| p["hookSpecificOutput"]["permissionDecisionReason"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(denials.len(), 2, "{who:?}: {printed:#?}");
        assert!(denials.iter().all(|d| d.contains("only the person may run") && d.contains("abcd mode queue")), "{who:?}: {denials:#?}");
        let main = run.main_requests();
        assert_eq!(main.len(), 4, "{who:?}: {}", run.summary());
        for (at, denial) in [(1, &denials[0]), (2, &denials[1])] {
            let result = parts(main[at]).into_iter().rfind(|p| p.kind == "tool_result").unwrap();
            assert!(result.is_error && result.text.contains(denial.as_str()), "{who:?}: {result:#?}");
        }
        let marked = parts(main[3]).into_iter().rfind(|p| p.kind == "tool_result").unwrap();
        assert_eq!(marked.text.trim(), "1", "{who:?}: the Bash tool's commands carry CLAUDECODE=1: {marked:#?}");
        let events = lab.repository_events();
        assert!(of_kind(&events, "away.set").is_empty(), "{who:?}: the mode was never set");
        // Each refused call is recorded for the person: the route, the action, the
        // client's session, never the command.
        let refused = of_kind(&events, "away.mode_refused");
        assert_eq!(refused.len(), 2, "{who:?}: {events:#?}");
        for r in &refused {
            assert_eq!((&r["data"]["route"], &r["data"]["action"]), (&json!("shell_rule"), &json!("autonomous")), "{who:?}: {r}");
            assert_eq!(r["data"]["session"], json!(run.session_id()), "{who:?}: {r}");
            assert!(r["data"].get("command").is_none() && !r.to_string().contains("--until"), "{who:?}: no command: {r}");
        }
        let shown = lab.abcd(&["mode"]);
        assert!(shown.contains("2 refused attempts by an agent"), "{who:?}: {shown}");
    });
}

/// A run's live driver (a `sleep`), killed and reaped when the scenario ends.
struct Driver(std::process::Child);

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The lane's assignment as `abcd launch` puts it in the lane's plan.
const LANE_ASSIGNMENT: &str = "implementer of lane r1/impl: do the lane's work here, then write the receipt RECEIPT.md";

impl Lab {
    /// Run `r1` with lane `impl`: `abcd launch` makes the lane's worktree (its own agent,
    /// `true`, exits at once), and the client's runs start there. With `commit_hooks` the
    /// settings `abcd init` wrote are committed first, so the lane's base holds them.
    fn lane(&mut self, commit_hooks: bool) -> (PathBuf, Driver) {
        if commit_hooks && self.install == Install::Init {
            self.git(&["add", ".claude"]);
            self.git(&["commit", "-q", "-m", "abcd hooks"]);
        }
        let driver = Driver(Command::new("sleep").arg("300").spawn().unwrap());
        self.abcd(&["run", "start", "r1", "--lane", "impl", "--driver-pid", &driver.0.id().to_string()]);
        self.abcd(&["launch", "--run", "r1", "--lane", "impl", "--role", "implementer", "--receipt", "RECEIPT.md", "--", "true"]);
        let deadline = Instant::now() + RUN_DEADLINE;
        let lane = loop {
            let listing: Value = serde_json::from_str(&self.abcd(&["resume", "--json"])).unwrap();
            let lane = &listing["runs"][0]["lanes"][0];
            if lane["stage"].as_str().is_some_and(|s| s.contains("exited")) {
                break PathBuf::from(lane["worktree"].as_str().unwrap());
            }
            assert!(Instant::now() < deadline, "the launch's agent never exited: {listing}");
            std::thread::sleep(Duration::from_millis(50));
        };
        assert!(lane.starts_with(self.base.join("abcd-home/lanes")), "{}", lane.display());
        self.client_dir = Some(lane.clone());
        (lane, driver)
    }
}

/// Issue 33, acceptance 1: the client runs in the worktree `abcd launch` made for a lane
/// (under the home store). The model writes a new file, reads it, edits it and commits it
/// through Bash: no refusal reaches the model, the file holds the edit, the lane's branch
/// holds the commit, the session is journaled in the lane, and the lane's plan (its
/// assignment) is in the first request the model received.
#[test]
fn an_agent_in_abcds_lane_worktree_writes_and_edits_its_own_files() {
    each_install(|lab| {
        let (lane, _driver) = lab.lane(true);
        let note = lane.join("src/lane_note.rs").display().to_string();
        let script = json!({"turns": [
            {"say": "Writing the note.", "tools": [{"name": "Write", "input": {"file_path": note, "content": "// first\n"}}]},
            {"say": "Reading it back.", "tools": [{"name": "Read", "input": {"file_path": note}}]},
            {"say": "Editing it.", "tools": [{"name": "Edit", "input": {"file_path": note, "old_string": "// first", "new_string": "// edited"}}]},
            {"say": "Committing.", "tools": [{"name": "Bash", "input": {
                "command": "git add src/lane_note.rs && git commit -q -m 'lane note'", "description": "Commit the note"}}]},
            {"say": "Done."}
        ]});
        let run = lab.print(script, "write the lane note", &[]);
        let who = run.install;
        assert_eq!(run.code, Some(0), "{who:?}: {}", run.summary());
        assert_eq!(std::fs::read_to_string(&note).unwrap(), "// edited\n", "{who:?}: written, then edited");
        assert_eq!(repo::git(&lane, &["log", "-1", "--format=%s"]).trim(), "lane note", "{who:?}");
        assert_eq!(repo::git(&lane, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(), "abcd/r1/impl", "{who:?}");

        // What the hooks printed: abcd's PreToolUse ran on the Write and the Edit and denied nothing.
        let ran: Vec<&str> = run.abcd_ran(lab, "PreToolUse", "pre-tool-use").into_iter().map(|h| h.name.as_str()).collect();
        assert!(ran.contains(&"PreToolUse:Write") && ran.contains(&"PreToolUse:Edit"), "{who:?}: {ran:?}");
        let printed = run.abcd_printed(lab, "PreToolUse", "pre-tool-use");
        assert!(printed.iter().all(|p| p["hookSpecificOutput"].get("permissionDecision").is_none()), "{who:?}: {printed:#?}");

        // What the model received: every tool result a success, none with abcd's refusal.
        let main = run.main_requests();
        assert_eq!(main.len(), 5, "{who:?}: {}", run.summary());
        let results: Vec<Part> = parts(main[4]).into_iter().filter(|p| p.kind == "tool_result").collect();
        assert_eq!(results.len(), 4, "{who:?}: {results:#?}");
        assert!(results.iter().all(|r| !r.is_error && !r.text.contains("abcd refuses")), "{who:?}: {results:#?}");
        // The lane's plan reached the first request.
        let first = session_start_context(main[0]).unwrap_or_else(|| panic!("{who:?}: no SessionStart context in the first request"));
        assert!(first.contains(LANE_ASSIGNMENT), "{who:?}: {first}");

        // The journal: the session, in the lane's own journal.
        let events = read_jsonl(&lane.join(".abcd/.work.local/journal.jsonl"));
        let started = of_kind(&events, "session.started");
        assert_eq!(started.len(), 1, "{who:?}: {events:#?}");
        assert_eq!(started[0]["data"]["session"], json!(run.session_id()), "{who:?}");
        assert_eq!(started[0]["data"]["working_copy"], json!(lane.display().to_string()), "{who:?}");
    });
}

/// Issue 33, acceptance 2: a lane cut from a base with no committed settings. With the
/// hooks installed by `abcd init` (uncommitted), `abcd launch` wrote them into the lane's
/// local settings; as the plugin, nothing is written and the plugin reaches the lane's
/// agent. Either way abcd's SessionStart hook ran for the client in the lane, the session is
/// journaled in the lane, and the lane's plan reached the first request.
#[test]
fn a_lane_cut_from_a_base_with_no_committed_settings_still_journals_its_agents_session() {
    each_install(|lab| {
        let (lane, _driver) = lab.lane(false);
        let who = lab.install;
        assert!(!lane.join(".claude/settings.json").exists(), "{who:?}: the base holds no settings");
        let run = lab.print(json!({"turns": [{"say": "Hello from the lane."}]}), "hello", &[]);
        assert_eq!(run.code, Some(0), "{who:?}: {}", run.summary());
        assert_eq!(run.abcd_ran(lab, "SessionStart", "session-start").len(), 1, "{who:?}: {}", run.summary());
        let events = read_jsonl(&lane.join(".abcd/.work.local/journal.jsonl"));
        let started = of_kind(&events, "session.started");
        assert_eq!(started.len(), 1, "{who:?}: {events:#?}");
        assert_eq!(started[0]["data"]["session"], json!(run.session_id()), "{who:?}");
        let main = run.main_requests();
        let first = session_start_context(main[0]).unwrap_or_else(|| panic!("{who:?}: no SessionStart context in the first request"));
        assert!(first.contains(LANE_ASSIGNMENT), "{who:?}: {first}");
        assert_eq!(lane.join(".claude/settings.local.json").exists(), who == Install::Init, "{who:?}");
    });
}

/// Scenario 6: AskUserQuestion while away (offered only in stream-json input mode with a
/// permission prompt tool): abcd's PreToolUse denies it with the reroute reason, so the
/// client never asks the host, and the model receives the reason.
#[test]
fn away_a_question_is_denied_with_the_reroute_reason() {
    each_install(|lab| {
        lab.abcd(&["mode", "autonomous"]);
        let question = json!({"questions": [{"question": "Which parser library should I use?", "header": "Parser",
            "options": [{"label": "nom", "description": "combinators"}, {"label": "by hand", "description": "no dependency"}],
            "multiSelect": false}]});
        let script = json!({"turns": [
            {"say": "One question first.", "tools": [{"name": "AskUserQuestion", "input": question}]},
            {"say": "Deciding myself."}
        ], "after": "Done for now."});
        let run = lab.stream(script, &["pick a parser"], &[("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP", BLOCK_CAP)], true, Duration::ZERO);
        let who = run.install;
        assert_eq!(run.code, Some(0), "{who:?}: {}", run.summary());
        let tools: Vec<&Value> = run.main_requests()[0]["body"]["tools"].as_array().unwrap().iter().collect();
        assert!(tools.iter().any(|t| t["name"] == "AskUserQuestion"), "{who:?}: the client offered the tool");
        let asked: Vec<&Value> = run.control_requests.iter().filter(|c| c["request"]["tool_name"] == "AskUserQuestion").collect();
        assert!(asked.is_empty(), "{who:?}: the hook decided, so the client did not ask the host: {asked:#?}");

        let printed = run.abcd_printed(lab, "PreToolUse", "pre-tool-use");
        let reason = printed
            .iter()
            .find_map(|p| p["hookSpecificOutput"]["permissionDecisionReason"].as_str())
            .unwrap_or_else(|| panic!("{who:?}: no deny printed: {printed:#?}"))
            .to_string();
        assert!(reason.starts_with("abcd: the person is away, so no question reaches them"), "{who:?}: {reason}");
        assert!(reason.contains("abcd mode queue") && reason.contains("abcd decide"), "{who:?}: {reason}");
        let main = run.main_requests();
        let result = parts(main[1]).into_iter().find(|p| p.kind == "tool_result").unwrap_or_else(|| panic!("{who:?}: no tool result"));
        assert!(result.role == "user" && result.is_error && result.text.contains(&reason), "{who:?}: {result:#?}");
        let started = of_kind(&lab.working_copy_events(), "session.started").len();
        assert_eq!(started, 1, "{who:?}");
    });
}

/// Scenario 7: The model server answers 429, then 529: each ends a turn with StopFailure,
/// and abcd records the error type the client reports in the away record. First in SDK
/// mode, the session kept open; then in print mode, where the client exits at once and
/// kills the hook about 20 ms after starting it: the record must be durable before that.
#[test]
fn away_api_errors_are_recorded_with_the_clients_error_types() {
    each_install(|lab| {
        lab.abcd(&["mode", "autonomous"]);
        let script = json!({"turns": [{"status": 429, "error": "rate_limit_error"}, {"status": 529, "error": "overloaded_error"}]});
        let no_retries = [("CLAUDE_CODE_MAX_RETRIES", "0")];
        let run = lab.stream(script, &["first", "second"], &no_retries, false, STOP_FAILURE_LINGER);
        let who = run.install;
        let statuses: Vec<Value> = run.requests.iter().map(|r| r["answer"]["status"].clone()).collect();
        assert_eq!(statuses, [json!(429), json!(529)], "{who:?}: each prompt reached the server once: {}", run.summary());
        let reported: Vec<Value> = run.events.iter().filter(|e| e["type"] == "result").map(|e| e["api_error_status"].clone()).collect();
        assert_eq!(reported, [json!(429), json!(529)], "{who:?}: {}", run.summary());
        let errors: Vec<Value> = recorded_stops(lab).iter().map(|s| json!([s["label"], s["error_type"]])).collect();
        assert_eq!(errors, [json!(["api_error", "rate_limit"]), json!(["api_error", "server_error"])], "{who:?}: {}", run.summary());
        // The hook ran for each, matched on the error type the client reports, printing nothing.
        let ran: Vec<(&str, Option<&Value>)> =
            run.abcd_ran(lab, "StopFailure", "stop-failure").into_iter().map(|h| (h.name.as_str(), h.printed.as_ref())).collect();
        assert_eq!(ran, [("StopFailure:rate_limit", None), ("StopFailure:server_error", None)], "{who:?}");

        // Print mode: no lingering host.
        let script = json!({"turns": [{"status": 429, "error": "rate_limit_error"}]});
        let run = lab.print(script, "third", &no_retries);
        assert_eq!(run.code, Some(1), "{who:?}: the client reports the API error: {}", run.summary());
        assert_eq!(run.requests.len(), 1, "{who:?}: {}", run.summary());
        // The client does not wait for the hook (it ends it as it exits): the record may
        // land just after the client is gone.
        let waited = Instant::now();
        while recorded_stops(lab).len() < 3 && waited.elapsed() < LATE_RECORD_WAIT {
            std::thread::sleep(Duration::from_millis(10));
        }
        let stops = recorded_stops(lab);
        assert_eq!(stops.len(), 3, "{who:?}: the print-mode StopFailure was recorded: {stops:#?}; hooks {:#?}", run.hooks);
        assert_eq!(stops[2]["error_type"], "rate_limit", "{who:?}");
        let back = lab.abcd(&["mode", "back"]);
        assert!(back.contains("stop: stopped on an API error (rate_limit)") && back.contains("(server_error)"), "{who:?}: {back}");
    });
}

/// The StopFailure hook's time from process start to the durable append in the away
/// record, over TIMING_RUNS runs (docs/benchmarks.md reports it). With strace on PATH the
/// start is the execve and the append is durable when the fdatasync after its write
/// returns (only those syscalls are traced, through seccomp, so the tracing costs little);
/// without strace the hook's whole run, spawn to exit, bounds it from above.
#[test]
fn stop_failure_records_within_its_budget() {
    if client().is_none() {
        return;
    }
    let _alone = MACHINE.write().unwrap_or_else(|e| e.into_inner());
    let lab = Lab::new(client(), Install::Init);
    lab.abcd(&["mode", "autonomous"]);
    let payload = json!({"session_id": "timing", "cwd": lab.repo, "hook_event_name": "StopFailure", "error": "rate_limit"}).to_string();
    let strace = Command::new("strace").arg("-V").output().is_ok_and(|o| o.status.success());
    let trace = lab.base.join("strace.txt");
    let mut times = Vec::new();
    for _ in 0..TIMING_RUNS {
        let mut cmd = if strace {
            let mut c = Command::new("strace");
            c.args(["--seccomp-bpf", "-f", "-ttt", "-T", "-e", "trace=execve,fdatasync", "-o"]).arg(&trace).arg(abcd_exe());
            c
        } else {
            lab.abcd_command()
        };
        let envs: Vec<(String, String)> =
            lab.abcd_command().get_envs().filter_map(|(k, v)| Some((k.to_str()?.into(), v?.to_str()?.into()))).collect();
        cmd.args(["hook", "stop-failure"])
            .current_dir(&lab.repo)
            .envs(envs)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let spawned = Instant::now();
        let mut child = cmd.spawn().unwrap();
        child.stdin.take().unwrap().write_all(payload.as_bytes()).unwrap();
        let out: Output = child.wait_with_output().unwrap();
        let whole = spawned.elapsed();
        assert!(out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(), "{out:?}");
        times.push(if strace { durable_after_exec(&std::fs::read_to_string(&trace).unwrap()) } else { whole });
    }
    let count: u64 = lab.repository_events().iter().filter(|e| e["kind"] == "away.stop_recorded").count() as u64;
    assert_eq!(count, TIMING_RUNS as u64, "every run appended");
    times.sort();
    let median = (times[TIMING_RUNS / 2 - 1] + times[TIMING_RUNS / 2]) / 2;
    let worst = *times.last().unwrap();
    let what = if strace { "process start (execve) to durable append (fdatasync returned)" } else { "spawn to exit (an upper bound)" };
    let _ = writeln!(
        std::io::stderr(),
        "real_host: StopFailure hook, {what}, {TIMING_RUNS} runs: median {:.2} ms, worst {:.2} ms, best {:.2} ms",
        median.as_secs_f64() * 1e3,
        worst.as_secs_f64() * 1e3,
        times[0].as_secs_f64() * 1e3
    );
    // A time follows the load of a shared machine, so the default run reports it and
    // asserts only what holds at any load (every run appended, above); the budget on the
    // median is judged when asked for (TIMING_BUDGETS_VAR), on a machine at rest. The worst
    // is never asserted: a hook still running at the host's kill keeps going anyway
    // (a_stop_failure_hook_survives_the_hosts_sigterm).
    if std::env::var_os(TIMING_BUDGETS_VAR).is_some() {
        assert!(median < STOP_FAILURE_BUDGET, "median {median:?} is over the {STOP_FAILURE_BUDGET:?} budget: {times:?}");
    }
}

/// From one strace log (-ttt -T, execve and fdatasync): the time from the execve to the
/// return of the last fdatasync, the one that made the appended line durable.
fn durable_after_exec(log: &str) -> Duration {
    let stamp = |line: &str| -> f64 { line.split_whitespace().nth(1).and_then(|t| t.parse().ok()).unwrap_or_else(|| panic!("{line}")) };
    let took = |line: &str| -> f64 {
        let inside = line.rsplit_once('<').and_then(|(_, r)| r.strip_suffix('>')).unwrap_or_else(|| panic!("{line}"));
        inside.parse().unwrap()
    };
    let exec = log.lines().find(|l| l.contains("execve(")).unwrap_or_else(|| panic!("no execve in {log}"));
    let sync =
        log.lines().rev().find(|l| l.contains("fdatasync(") && l.contains(" = 0 ")).unwrap_or_else(|| panic!("no fdatasync in {log}"));
    Duration::from_secs_f64(stamp(sync) + took(sync) - stamp(exec))
}

/// The client ends a StopFailure hook with SIGTERM as it exits, about 20 ms after starting
/// it (print mode), and does not wait for it. A SIGTERM while the hook runs must not cost
/// the record: here it arrives while the hook waits for its payload, so the timing is
/// certain. Needs no client.
#[test]
fn a_stop_failure_hook_survives_the_hosts_sigterm() {
    let lab = Lab::new(None, Install::Init);
    lab.abcd(&["mode", "autonomous"]);
    let mut child = lab
        .abcd_command()
        .args(["hook", "stop-failure"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The signal is sent once the hook ignores SIGTERM (its SigIgn mask in /proc says so),
    // while it still waits for its payload: certain, however loaded the machine.
    let sigterm_ignored = || {
        let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap_or_default();
        let mask = status.lines().find_map(|l| l.strip_prefix("SigIgn:")).and_then(|m| u64::from_str_radix(m.trim(), 16).ok());
        mask.is_some_and(|m| m & (1 << (libc::SIGTERM - 1)) != 0)
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while !sigterm_ignored() {
        assert!(Instant::now() < deadline, "the hook never ignored SIGTERM");
        std::thread::sleep(Duration::from_millis(10));
    }
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    // SAFETY: a plain kill(2) of our own child, which has not been waited for.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let payload = json!({"session_id": "s1", "cwd": lab.repo, "hook_event_name": "StopFailure", "error": "rate_limit"});
    // The write fails if the signal ended the process: that is the failure reported below.
    let _ = child.stdin.take().unwrap().write_all(payload.to_string().as_bytes());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "the hook outlived the SIGTERM: {out:?}");
    let errors: Vec<Value> = recorded_stops(&lab).iter().map(|s| s["error_type"].clone()).collect();
    assert_eq!(errors, [json!("rate_limit")]);
}

/// Acceptance 4: nothing in the tier reaches any address but 127.0.0.1. The launcher
/// refuses to start anything outside a namespace with more than the loopback, and inside
/// one an outside address is unreachable while the model server answers on 127.0.0.1.
#[test]
fn the_sandbox_reaches_nothing_but_the_loopback() {
    if client().is_none() {
        return;
    }
    let base = tempfile::tempdir().unwrap();
    let script = base.path().join("script.json");
    std::fs::write(&script, json!({"turns": []}).to_string()).unwrap();
    let probe = "import os, socket, sys, urllib.request\n\
        s = socket.socket(); s.settimeout(2)\n\
        try:\n    s.connect(('192.0.2.1', 443)); sys.exit('reached an outside address')\n\
        except OSError as e:\n    print('outside:', e.errno)\n\
        print('server:', urllib.request.urlopen(os.environ['ANTHROPIC_BASE_URL'] + '/v1/models').status)\n";
    let launch = |wrap: &[&str]| {
        let log = base.path().join("requests.jsonl");
        Command::new(wrap[0])
            .args(&wrap[1..])
            .arg("python3")
            .arg(manifest().join("tests/real_host/model_server.py"))
            .args(["--isolated", "--script"])
            .arg(&script)
            .arg("--log")
            .arg(&log)
            .args(["--", "python3", "-c", probe])
            .output()
            .unwrap()
    };
    let outside = launch(&["env"]);
    assert!(!outside.status.success(), "{outside:?}");
    assert!(String::from_utf8_lossy(&outside.stderr).contains("not only lo"), "{outside:?}");
    let inside = launch(&["unshare", "-rn", "--"]);
    let said = String::from_utf8_lossy(&inside.stdout);
    assert!(inside.status.success(), "{inside:?}");
    assert_eq!(said, format!("outside: {}\nserver: 200\n", libc::ENETUNREACH), "{inside:?}");
}

/// The plugin's `hooks/run-abcd` is a shell script the SIGTERM can hit before it execs
/// abcd: for StopFailure it ignores SIGTERM itself, and abcd inherits that. Shown with a
/// stand-in `abcd` on PATH that reports its ignored signals. Needs no client.
#[test]
fn the_plugin_wrapper_hands_stop_failure_an_ignored_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let stand_in = dir.path().join("abcd");
    std::fs::write(&stand_in, "#!/bin/sh\ngrep '^SigIgn:' /proc/$$/status\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&stand_in, std::fs::Permissions::from_mode(0o755)).unwrap();
    let ignored = |event: &str| -> bool {
        let out = Command::new(manifest().join("hooks/run-abcd"))
            .arg(event)
            .env("PATH", format!("{}:/usr/bin:/bin", dir.path().display()))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let line = String::from_utf8_lossy(&out.stdout);
        let mask = u64::from_str_radix(line.trim().trim_start_matches("SigIgn:").trim(), 16).unwrap_or_else(|_| panic!("{out:?}"));
        mask & (1 << (libc::SIGTERM - 1)) != 0
    };
    assert!(ignored("stop-failure"), "StopFailure runs with SIGTERM ignored");
    assert!(!ignored("stop"), "other hooks stay killable (the host's timeout)");
}

// ---------------------------------------------------------------------------- the night

/// The night's loop name.
const NIGHT_RUN: &str = "night";
/// The checklist the night's loop drives: one phase, then the completion signal.
const NIGHT_PLAN: &str = "# Plan\n\n- [ ] Phase 1: add src/greet.rs with a greet function\n";
/// The item the implementer adds to its lane's plan, which must survive the compaction.
const NIGHT_ITEM: &str = "Phase 1: greet in src/greet.rs";
/// The compaction summary of the night (the client asks again for one without the tags).
const NIGHT_SUMMARY: &str = "<summary>The implementer wrote src/greet.rs; a reviewer asked for a doc comment.</summary>";
/// The auto-compaction window the night's clients run with; a turn reporting more input
/// tokens than it holds compacts the session before its next request.
const NIGHT_COMPACT_WINDOW: &str = "100000";
/// The barriers the scripted model holds a reply on while the test kills.
const HOLD_DRIVER_KILL: &str = "driver-kill";
const HOLD_CRASH: &str = "crash";
/// How long the night waits for any one thing the loop does (a turn takes seconds).
const NIGHT_STEP_DEADLINE: Duration = Duration::from_secs(90);

/// The night scenario's place: the lab, and a shell (`sh -s`) the model server started in
/// its namespace, so every command typed into it (the loop's start, its drive after a kill)
/// runs where the model is reachable and nothing else is. Kills come from outside, by pid.
struct Night {
    lab: Lab,
    shell: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    lines: mpsc::Receiver<String>,
    log: PathBuf,
}

impl Drop for Night {
    fn drop(&mut self) {
        // Ends the shell; the model server then exits, and the clients die with it.
        self.stdin = None;
        let _ = self.shell.kill();
        let _ = self.shell.wait();
        // The detached driver and its agents outlive the shell; end them too.
        if let Ok(status) = self.lab.abcd_command().args(["loop", "status", NIGHT_RUN, "--json"]).output()
            && let Ok(v) = serde_json::from_slice::<Value>(&status.stdout)
            && let Some(pid) = v["driver"]["process"]["pid"].as_i64()
            && v["driver"]["alive"] == true
        {
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
    }
}

impl Night {
    fn new(client: &Path, script: Value) -> Night {
        let lab = Lab::new(Some(client), Install::Init);
        std::fs::write(lab.repo.join("PLAN.md"), NIGHT_PLAN).unwrap();
        lab.git(&["add", ".claude", "PLAN.md"]);
        lab.git(&["commit", "-q", "-m", "the plan, and abcd's hooks"]);
        let script_path = lab.base.join("night.script.json");
        let log = lab.base.join("night.requests.jsonl");
        std::fs::write(&script_path, script.to_string()).unwrap();
        let mut cmd = lab.in_sandbox(&script_path, &log);
        cmd.args(["sh", "-s"])
            .current_dir(&lab.repo)
            .env("CLAUDE_CODE_AUTO_COMPACT_WINDOW", NIGHT_COMPACT_WINDOW)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(lab.base.join("night.stderr.txt")).unwrap());
        let mut shell = cmd.spawn().expect("unshare runs");
        let lines = lines_of(shell.stdout.take().unwrap());
        let stdin = shell.stdin.take();
        Night { lab, shell, stdin, lines, log }
    }

    /// Runs `command` in the namespace's shell: its exit code and what it printed (stdout
    /// and stderr together).
    fn sh(&mut self, command: &str) -> (i32, String) {
        const DONE: &str = "@@night-done ";
        let stdin = self.stdin.as_mut().expect("the shell is open");
        writeln!(stdin, "( {command} ) 2>&1; echo \"{DONE}$?\"").unwrap();
        stdin.flush().unwrap();
        let deadline = Instant::now() + NIGHT_STEP_DEADLINE;
        let mut out = String::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => match line.strip_prefix(DONE) {
                    Some(code) => return (code.trim().parse().unwrap(), out),
                    None => {
                        out.push_str(&line);
                        out.push('\n');
                    }
                },
                Err(_) => panic!("`{command}` did not end within {NIGHT_STEP_DEADLINE:?}; so far: {out}"),
            }
        }
    }

    fn requests(&self) -> Vec<Value> {
        read_jsonl(&self.log)
    }

    fn main_requests(&self) -> Vec<Value> {
        self.requests().into_iter().filter(|r| r["kind"] == "main").collect()
    }

    /// Waits (bounded) until `done` holds; `what` names it in the failure.
    fn wait_until(&self, what: &str, done: impl Fn(&Night) -> bool) {
        let deadline = Instant::now() + NIGHT_STEP_DEADLINE;
        while !done(self) {
            assert!(Instant::now() < deadline, "{what}: not within {NIGHT_STEP_DEADLINE:?}; requests: {}", self.request_summary());
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// The model holds the turn's reply on barrier `name`: waits until a request reached it.
    fn wait_held(&self, name: &str) {
        self.wait_until(&format!("the model's barrier {name}"), |n| n.requests().iter().any(|r| r["held"] == name));
    }

    fn release(&self, name: &str) {
        std::fs::write(format!("{}.{name}.release", self.log.display()), b"").unwrap();
    }

    fn status(&self) -> Value {
        serde_json::from_str(&self.lab.abcd(&["loop", "status", NIGHT_RUN, "--json"])).unwrap()
    }

    fn loop_events(&self) -> Vec<Value> {
        self.lab.working_copy_events()
    }

    fn lane(&self) -> PathBuf {
        PathBuf::from(self.status()["record"]["config"]["implementer"]["worktree"].as_str().unwrap())
    }

    fn lane_events(&self) -> Vec<Value> {
        read_jsonl(&self.lane().join(".abcd/.work.local/journal.jsonl"))
    }

    fn request_summary(&self) -> String {
        let rows: Vec<String> =
            self.requests().iter().map(|r| format!("{}:{}:{}", r["n"], r["kind"].as_str().unwrap_or("?"), r["turn"])).collect();
        rows.join(", ")
    }
}

/// SIGKILLs `pid` and waits until it is dead.
fn kill_dead(pid: i64) {
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0, "pid {pid} is there to kill");
    wait_dead(pid);
}

/// The latest SessionStart context in a request (a resumed session's history holds the
/// earlier starts' too).
fn latest_session_start_context(request: &Value) -> Option<String> {
    const MARK: &str = "SessionStart hook additional context: ";
    parts(request).into_iter().rev().find_map(|p| p.text.find(MARK).map(|at| p.text[at + MARK.len()..].to_string()))
}

/// `pid`'s parent, from `/proc/<pid>/stat` (its fourth field).
fn parent_pid(pid: i64) -> Option<i64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(") ")?.1.split_whitespace().nth(1)?.parse().ok()
}

/// Waits until `pid`, sent SIGKILL, is dead: gone, or a zombie nobody reaped yet.
fn wait_dead(pid: i64) {
    let deadline = Instant::now() + NIGHT_STEP_DEADLINE;
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat.rsplit_once(") ").map(|(_, rest)| rest.chars().next().unwrap_or('X')).unwrap_or('X');
        if matches!(state, 'Z' | 'X') {
            return;
        }
        assert!(Instant::now() < deadline, "pid {pid} still runs after SIGKILL");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Where the prompt of a request is: its last user message's text.
fn last_user_text(request: &Value) -> String {
    let parts = parts(request);
    let last_user = parts.iter().rposition(|p| p.role == "user" && p.kind == "text").map(|i| parts[i].text.clone());
    last_user.unwrap_or_default()
}

/// Issue 33's night: the phased loop with the real client as implementer and reviewer, both
/// in abcd's lane worktree, driven by the scripted model, while the person is away. The
/// implementer plans, writes and commits with the file tools and Bash; the reviewer reads
/// and asks for a change once, then says the stop signal. The implementer's session is
/// compacted mid-phase and its lane's plan comes back; it asks a question, which the loop
/// reroutes to the reviewer (never to the person), and the reviewer decides and queues. The driver is SIGKILLed while the reviewer's
/// reply is held on a barrier; the reply arrives with no driver; `abcd resume` names the
/// loop and what to run; `abcd loop drive` collects the reply and never runs that turn
/// again. Then the machine "crashes" in the last advance (driver, watcher, turn runner and
/// client SIGKILLed while the model holds the answer): `abcd resume` names the turn in
/// flight, and the next drive runs that turn, and only that one, again. The loop completes, the lane's branch holds the commits, and `abcd mode back`
/// prints the night's queue and decisions. Every step is asserted from the journals and
/// the model's request log.
#[test]
fn the_night_of_the_phased_loop() {
    let Some(client) = client() else { return };
    let _shared = MACHINE.read().unwrap_or_else(|e| e.into_inner());
    let greet = "{cwd}/src/greet.rs";
    let turns = vec![
        // Turn 1, the implementer's advance: plan, write, commit, reply.
        json!({"say": "Planning.", "tools": [{"name": "Bash", "input": {"command": format!("abcd checklist add '{NIGHT_ITEM}'"), "description": "Plan"}}]}),
        json!({"say": "Writing.", "tools": [{"name": "Write", "input": {"file_path": greet, "content": "pub fn greet() -> &'static str {\n    \"hi\"\n}\n"}}]}),
        json!({"say": "Committing.", "tools": [{"name": "Bash", "input": {"command": "git add src/greet.rs && git commit -q -m greet", "description": "Commit"}}]}),
        json!({"say": "Phase 1 implemented: src/greet.rs holds greet()."}),
        // Turn 2, the reviewer: reads, asks for a change.
        json!({"say": "Reading.", "tools": [{"name": "Read", "input": {"file_path": greet}}]}),
        json!({"say": "Please add a doc comment to greet."}),
        // Turn 3, the implementer's feedback: an edit whose usage passes the window, so the
        // session is compacted before its next request; then a commit, and a question.
        json!({"say": "Editing.", "tools": [{"name": "Edit", "input": {"file_path": greet, "old_string": "pub fn", "new_string": "/// Says hi.\npub fn"}}], "input_tokens": 190_000}),
        json!({"say": "Committing.", "tools": [{"name": "Bash", "input": {"command": "git commit -qam 'doc greet'", "description": "Commit"}}]}),
        json!({"say": "Added the doc comment. Shall I also add a test for greet?"}),
        // Turn 4, the reviewer's second round: the implementer's question reached it, not
        // the person. It decides, queues what only the person may do, and approves; its
        // answer is held while the driver is killed.
        json!({"say": "Deciding.", "tools": [{"name": "Bash", "input": {"command":
            "abcd decide 'No test for greet in phase 1' --grounds 'the phase asks for greet only' --undo 'add the test in a later phase' --tradeoff speed --item 1 && abcd mode queue 'merge abcd/night/implementer into main'",
            "description": "Decide and queue"}}]}),
        json!({"say": "LGTM", "hold": HOLD_DRIVER_KILL}),
        // Turn 5, the implementer's advance, held while the whole tree is killed (driver,
        // watcher, turn runner, client): this answer is never read.
        json!({"say": "(never read)", "hold": HOLD_CRASH}),
        // Turn 5 again, after the crash: nothing left.
        json!({"say": "COMPLETED"}),
    ];
    let used = turns.len();
    let script = json!({"turns": turns, "summary": NIGHT_SUMMARY, "after": "(a request past the script)"});
    let mut night = Night::new(client, script);

    // The person leaves, then starts the loop in the background.
    night.lab.abcd(&["mode", "autonomous", "--until", "+8h"]);
    let template =
        format!("{} -p {{prompt}} --resume {{session}} --output-format json --permission-mode bypassPermissions", client.display());
    let (code, out) = night.sh(&format!(
        "abcd loop start --checklist PLAN.md --run {NIGHT_RUN} --implementer '{template}' --implementer-reader claude-json --reviewer '{template}' --reviewer-reader claude-json --detach"
    ));
    assert_eq!(code, 0, "{out}");

    // Turn 4's reply is held: the driver dies; then the reply arrives with no driver.
    night.wait_held(HOLD_DRIVER_KILL);
    let first_driver = night.status()["driver"]["process"]["pid"].as_i64().unwrap();
    kill_dead(first_driver);
    let intended = |n: &Night, turn: u64| {
        n.loop_events().into_iter().find(|e| e["kind"] == "loop.turn_intended" && e["data"]["turn"] == turn).map(|e| e["data"].clone())
    };
    let turn4 = intended(&night, 4).expect("turn 4 was intended before its request");
    assert_eq!(turn4["kind"], "review");
    night.release(HOLD_DRIVER_KILL);
    let reply_file = PathBuf::from(turn4["reply_file"].as_str().unwrap());
    let launch4 = turn4["launch"].clone();
    night.wait_until("turn 4's agent ends and its exit is recorded", |n| {
        n.loop_events().iter().any(|e| e["kind"] == "launch.exited" && e["data"]["lane"] == "reviewer" && e["data"]["launch"] == launch4)
    });
    assert!(reply_file.is_file(), "the reply arrived with no driver: {}", reply_file.display());
    assert!(!night.loop_events().iter().any(|e| e["kind"] == "loop.turn_replied" && e["data"]["turn"] == 4), "no driver collected it yet");

    // What a successor reads: the loop, its driver gone, and the verb that carries on.
    let listing = night.lab.abcd(&["resume"]);
    assert!(listing.contains(NIGHT_RUN) && listing.contains(&format!("abcd loop drive {NIGHT_RUN}")), "{listing}");
    let listing: Value = serde_json::from_str(&night.lab.abcd(&["resume", "--json"])).unwrap();
    let run = listing["runs"].as_array().unwrap().iter().find(|r| r["run"] == NIGHT_RUN).expect("the night's run is listed").clone();
    assert_eq!(run["driver_alive"], false, "{run:#}");
    let reviewer = run["lanes"].as_array().unwrap().iter().find(|l| l["lane"] == "reviewer").unwrap().clone();
    assert_eq!((reviewer["launch"].clone(), reviewer["receipt_waiting"].clone()), (launch4.clone(), json!(true)), "{reviewer:#}");

    // The successor drives in the background: it collects turn 4's reply, then starts turn
    // 5, whose answer the model holds while the machine "crashes": the driver, the watcher,
    // the turn runner and the client, all SIGKILLed.
    let (code, out) = night.sh(&format!("abcd loop drive {NIGHT_RUN} > {}/drive-1.log 2>&1 &", night.lab.base.display()));
    assert_eq!(code, 0, "{out}");
    night.wait_held(HOLD_CRASH);
    let second_driver = night.status()["driver"]["process"]["pid"].as_i64().unwrap();
    assert_ne!(second_driver, first_driver);
    let turn5 = intended(&night, 5).expect("turn 5 was intended before its request");
    let launch5 = turn5["launch"].clone();
    let runner = night
        .loop_events()
        .into_iter()
        .find(|e| e["kind"] == "launch.started" && e["data"]["lane"] == "implementer" && e["data"]["launch"] == launch5)
        .and_then(|e| e["data"]["process"]["pid"].as_i64())
        .expect("turn 5's launch started");
    let watcher = parent_pid(runner).expect("the watcher waits on the turn runner");
    let group = unsafe { libc::getpgid(runner as i32) };
    kill_dead(second_driver);
    kill_dead(watcher);
    assert_eq!(unsafe { libc::killpg(group, libc::SIGKILL) }, 0, "the turn runner's group, the client in it");
    wait_dead(runner);
    let listing = night.lab.abcd(&["resume"]);
    assert!(
        listing.contains("turn 5 (advance of the implementer) in flight") && listing.contains(&format!("`abcd loop drive {NIGHT_RUN}`")),
        "{listing}"
    );

    // The person's successor (or the person) drives again: turn 5 runs again, once.
    let (code, out) = night.sh(&format!("abcd loop drive {NIGHT_RUN}"));
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("lost") && out.contains("turn 5"), "{out}");
    let status = night.status();
    assert_eq!(status["listing"]["stop_reason"], "completed", "{status:#}");
    assert_ne!(status["driver"]["process"]["pid"].as_i64(), Some(second_driver), "a third driver finished it");
    assert_eq!(status["record"]["lost"], 1, "{status:#}");

    // The journal: every turn replied exactly once, in order, each by its own launch.
    let events = night.loop_events();
    let replied: Vec<u64> = of_kind(&events, "loop.turn_replied").iter().map(|e| e["data"]["turn"].as_u64().unwrap()).collect();
    assert_eq!(replied, [1, 2, 3, 4, 5], "{events:#?}");
    let intended_turns: Vec<u64> = of_kind(&events, "loop.turn_intended").iter().map(|e| e["data"]["turn"].as_u64().unwrap()).collect();
    assert_eq!(intended_turns, [1, 2, 3, 4, 5, 5], "only the lost turn launched twice");
    let lost = of_kind(&events, "loop.turn_lost");
    assert_eq!(lost.len(), 1, "{lost:#?}");
    assert_eq!((lost[0]["data"]["turn"].clone(), lost[0]["data"]["launch"].clone()), (json!(5), launch5.clone()));
    let collected = of_kind(&events, "receipt.collected");
    assert_eq!(collected.iter().filter(|e| e["data"]["lane"] == "reviewer" && e["data"]["launch"] == launch4).count(), 1);

    // The model: every scripted turn served once, in order, and not one request past the
    // script; so no turn ran twice, the held one included. No turn's `{cwd}` went unexpanded.
    assert!(night.requests().iter().all(|r| r["kind"] != "script_error"), "{}", night.request_summary());
    let main = night.main_requests();
    let served: Vec<Value> = main.iter().map(|r| r["turn"].clone()).collect();
    assert_eq!(served, (0..used).map(|i| json!(i)).collect::<Vec<_>>(), "requests: {}", night.request_summary());
    assert_eq!(night.requests().iter().filter(|r| r["kind"] == "compaction").count(), 1, "{}", night.request_summary());
    // Each turn's prompt opened its agent's request: the advance, the review (twice), the
    // feedback quoting the reviewer, and the advance again.
    let prompt_of = |turn: usize| last_user_text(&main[turn]);
    assert!(prompt_of(0).contains("Implement the next phase from the checklist in PLAN.md"), "{}", prompt_of(0));
    assert!(prompt_of(4).contains("Review the implementer's work"), "{}", prompt_of(4));
    assert!(prompt_of(6).contains("Please add a doc comment to greet."), "the feedback quotes the reviewer: {}", prompt_of(6));
    assert!(prompt_of(9).contains("Review the implementer's work"), "{}", prompt_of(9));
    assert!(prompt_of(9).contains("Shall I also add a test for greet?"), "the question went to the reviewer: {}", prompt_of(9));
    assert!(prompt_of(11).contains("Implement the next phase"), "{}", prompt_of(11));
    assert!(prompt_of(12).contains("Implement the next phase"), "the lost turn's prompt again: {}", prompt_of(12));
    // Every agent's first request carries the away block and its loop turn's line.
    for (at, turn, step) in
        [(0, 1, "advance"), (4, 2, "review"), (6, 3, "feedback"), (9, 4, "review"), (11, 5, "advance"), (12, 5, "advance")]
    {
        let context = latest_session_start_context(&main[at]).unwrap_or_else(|| panic!("turn {turn}: no SessionStart context"));
        assert!(context.contains("the person is away until"), "turn {turn}: {context}");
        assert!(
            context.contains(&format!("this session is turn {turn} of loop {NIGHT_RUN}")) && context.contains(&format!("the {step} step")),
            "turn {turn}: {context}"
        );
    }
    // No tool call was refused.
    for r in &main {
        for p in parts(r).into_iter().filter(|p| p.kind == "tool_result") {
            assert!(!p.is_error && !p.text.contains("abcd refuses"), "request {}: {p:#?}", r["n"]);
        }
    }
    // The compaction: the request after it is the compacted one and carries the lane's plan.
    let requests = night.requests();
    let at = requests.iter().position(|r| r["kind"] == "compaction").unwrap();
    let after = requests[at + 1..].iter().find(|r| r["kind"] == "main").unwrap();
    assert_eq!(after["turn"], 7, "the compaction came right after the edit: {}", night.request_summary());
    assert!(all_text(after).contains("a reviewer asked for a doc comment"), "the compacted conversation");
    let carried = latest_session_start_context(after).expect("the plan comes back after the compaction");
    // The compacted conversation holds the compact start's context alone, not an earlier one.
    assert_eq!(all_text(after).matches("SessionStart hook additional context: ").count(), 1, "{}", all_text(after));
    assert!(carried.contains(NIGHT_ITEM), "{carried}");
    // The question was the turn's reply: no Stop hook held the implementer on it.
    assert!(!all_text(&main[9]).contains(STOP_CONTEXT_MARK), "{}", all_text(&main[9]));

    // The lane's journal: the implementer's session, its compaction and the start it caused.
    let lane_events = night.lane_events();
    let compaction = lane_events.iter().position(|e| e["kind"] == "compaction.recorded").expect("the lane's journal has the compaction");
    assert_eq!(lane_events[compaction]["data"]["trigger"], "auto");
    assert_eq!(lane_events[compaction]["data"]["session"], status["listing"]["sessions"]["implementer"]);
    assert!(lane_events[compaction..].iter().any(|e| e["kind"] == "session.started" && e["data"]["source"] == "compact"));
    let rows: Vec<&str> = of_kind(&lane_events, "session.judged").iter().map(|e| e["data"]["row"].as_str().unwrap()).collect();
    // Each turn's end is a `loop_turn` stop (the killed turn 5 never ended), and no other.
    assert_eq!(rows, ["loop_turn"; 5], "{rows:?}");

    // The work: the lane's branch holds both commits, the file its edit.
    let lane = night.lane();
    let log = repo::git(&lane, &["log", "--format=%s", "-3"]);
    assert!(log.starts_with("doc greet\ngreet\n"), "{log}");
    assert!(std::fs::read_to_string(lane.join("src/greet.rs")).unwrap().starts_with("/// Says hi.\npub fn greet()"));

    // The person returns: the night's queue and decisions.
    let back = night.lab.abcd(&["mode", "back"]);
    assert!(back.contains("merge abcd/night/implementer into main") && back.contains("No test for greet in phase 1"), "{back}");
    let repository = night.lab.repository_events();
    assert_eq!(of_kind(&repository, "away.queued").len(), 1, "{repository:#?}");
    assert_eq!(of_kind(&repository, "decision.recorded").len(), 1, "{repository:#?}");

    // Design-done: the reviewer tied its trade-off to the lane's plan item, so the item's
    // design waits on the person's answer; the person answers from their own terminal.
    let decided = &of_kind(&repository, "decision.recorded")[0];
    assert_eq!((decided["data"]["tradeoff"].as_str(), decided["data"]["item"].as_str()), (Some("speed"), Some("1")), "{decided}");
    let plan = night.lab.abcd_command().current_dir(&lane).args(["checklist", "--json"]).output().unwrap();
    assert!(String::from_utf8_lossy(&plan.stdout).contains(NIGHT_ITEM), "item 1 is the night's plan item: {plan:?}");
    let design_done = || night.lab.abcd_command().current_dir(&lane).args(["checklist", "design-done", "1"]).output().unwrap();
    let waiting = design_done();
    assert_eq!(waiting.status.code(), Some(1), "{waiting:?}");
    let seq = decided["seq"].as_u64().unwrap().to_string();
    assert!(String::from_utf8_lossy(&waiting.stdout).contains(&format!("abcd decide --answer {seq} keep")), "{waiting:?}");
    let answered = night.lab.abcd_command().current_dir(&lane).args(["decide", "--answer", &seq, "keep"]).output().unwrap();
    assert!(answered.status.success(), "{answered:?}");
    assert_eq!(design_done().status.code(), Some(0), "answered: the design is done");
}

// ---------------------------------------------------------------------------- the interactive client

/// How long the interactive client may take to draw what a step waits for (the trust
/// dialog, then the status line); the pane is polled, so a quick client passes quickly.
const TUI_DEADLINE: Duration = Duration::from_secs(60);
/// How long a key's effect is waited for before the key is sent again.
const TUI_KEY_SEEN: Duration = Duration::from_secs(2);
/// How often the pane is read while waiting.
const TUI_POLL: Duration = Duration::from_millis(200);

/// A tmux server of one test's own (its own socket), killed when the test ends.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn cmd(&self) -> Command {
        let mut cmd = Command::new("tmux");
        cmd.args(["-L", &self.socket, "-f", "/dev/null"]);
        cmd
    }

    fn pane(&self) -> String {
        let out = self.cmd().args(["capture-pane", "-p", "-t", "abcd"]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Polls the pane until `seen` holds for it; the last pane either way.
    fn wait_for(&self, seen: impl Fn(&str) -> bool) -> Result<String, String> {
        let start = Instant::now();
        loop {
            let pane = self.pane();
            if seen(&pane) {
                return Ok(pane);
            }
            if start.elapsed() > TUI_DEADLINE {
                return Err(pane);
            }
            std::thread::sleep(TUI_POLL);
        }
    }

    fn keys(&self, keys: &[&str]) {
        for k in keys {
            assert!(self.cmd().args(["send-keys", "-t", "abcd", k]).status().unwrap().success(), "tmux send-keys {k}");
            std::thread::sleep(Duration::from_millis(300));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").stderr(Stdio::null()).status();
    }
}

/// A word the shell takes as it is.
fn sh_word(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// Issue 35, acceptance 3: the status line `abcd init` installed is drawn by the real
/// interactive client (print mode draws none), driven under tmux with the workspace trust
/// dialog accepted; the person's `!` shell carries the same host variables as the model's
/// Bash tool (docs/decisions.md, issue 35, the status line).
#[test]
fn the_interactive_client_draws_abcds_status_line() {
    let Some(client) = client() else { return };
    if !Command::new("tmux").arg("-V").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success()) {
        assert_ne!(std::env::var(MODE_VAR).as_deref(), Ok("require"), "the status-line scenario needs tmux on PATH");
        let _ = writeln!(std::io::stderr(), "real_host: the status-line scenario SKIPPED: tmux is not on PATH");
        return;
    }
    let lab = Lab::new(Some(client), Install::Init);
    let home = lab.base.join("home");
    // `init` with the client's own HOME, so the user layer it reads is the lab's (empty).
    let out = lab.abcd_command().env("HOME", &home).arg("init").output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let local: Value = serde_json::from_slice(&std::fs::read(lab.repo.join(".claude/settings.local.json")).unwrap()).unwrap();
    assert_eq!(local["statusLine"]["command"], format!("{} status-line", abcd_exe().display()), "{local}");
    lab.git(&["config", "user.name", "Ana Lima"]);
    lab.abcd(&["checklist", "add", "Write the parser"]);
    lab.abcd(&["mode", "autonomous", "--until", "+8h"]);
    // The onboarding done and the key approved, as a person's client has them: a fresh
    // client's onboarding checks the network, which the sandbox has none of.
    let key = "not-a-key-the-scripted-model-server-takes-any";
    let state = json!({"hasCompletedOnboarding": true, "lastOnboardingVersion": CLIENT_VERSION, "theme": "dark",
        "customApiKeyResponses": {"approved": [&key[key.len() - 20..]], "rejected": []}});
    std::fs::write(home.join(".claude.json"), state.to_string()).unwrap();
    let script = lab.base.join("tui.script.json");
    std::fs::write(&script, json!({"turns": [], "after": "Noted."}).to_string()).unwrap();
    let sandbox = lab.in_sandbox(&script, &lab.base.join("tui.requests.jsonl"));
    let mut line = String::from("cd ") + &sh_word(&lab.repo.display().to_string()) + " && exec env -i";
    for (k, v) in sandbox.get_envs() {
        let v = if k == "TERM" { "xterm-256color".into() } else { v.unwrap().to_string_lossy() };
        line += &format!(" {}={}", k.to_string_lossy(), sh_word(&v));
    }
    line += &format!(" {}", sh_word(&sandbox.get_program().to_string_lossy()));
    for a in sandbox.get_args() {
        line += &format!(" {}", sh_word(&a.to_string_lossy()));
    }
    line += &format!(" {}", sh_word(&client.display().to_string()));
    let tmux = Tmux { socket: format!("abcd-real-host-{}", std::process::id()) };
    let started = tmux.cmd().args(["new-session", "-d", "-s", "abcd", "-x", "160", "-y", "40", &line]).status().unwrap();
    assert!(started.success(), "tmux new-session");
    let trust = tmux.wait_for(|p| p.contains("Yes, I trust this folder"));
    assert!(trust.is_ok(), "the trust dialog never showed: {}", trust.unwrap_err());
    // The dialog may take keys before it draws their effect: Enter goes only once the
    // pane shows the cursor on "Yes" (an Enter on the default "No, exit" ends the client).
    // A Down sent before the dialog takes keys is lost, so Down is sent again until the
    // cursor shows on "Yes" (two options: from either one, Down reaches it).
    let on_yes = |p: &str| p.contains("❯ Yes, I trust this folder");
    let start = Instant::now();
    while !on_yes(&tmux.pane()) {
        assert!(start.elapsed() < TUI_DEADLINE, "the trust dialog's cursor never reached Yes: {}", tmux.pane());
        tmux.keys(&["Down"]);
        let moved = Instant::now();
        while !on_yes(&tmux.pane()) && moved.elapsed() < TUI_KEY_SEEN {
            std::thread::sleep(TUI_POLL);
        }
    }
    tmux.keys(&["Enter"]);
    let expected = "abcd: away until ";
    let drawn = tmux.wait_for(|p| p.contains(expected));
    let pane = drawn.unwrap_or_else(|pane| panic!("no status line within {TUI_DEADLINE:?}:\n{pane}"));
    let shown = pane.lines().find(|l| l.contains(expected)).unwrap().trim().to_string();
    assert!(shown.starts_with(expected) && shown.ends_with(", set by Ana Lima · 1 owed"), "{shown}");
    // The person's `!` shell: the host's variables are there as in the model's Bash tool.
    let dump = lab.base.join("bang-env.txt");
    tmux.keys(&["!", &format!("env | grep -E '^(CLAUDECODE|CLAUDE_CODE_SESSION_ID)=' | cut -d= -f1 | sort > {}", dump.display()), "Enter"]);
    let start = Instant::now();
    while std::fs::read_to_string(&dump).map_or(true, |t| t.is_empty()) && start.elapsed() < TUI_DEADLINE {
        std::thread::sleep(TUI_POLL);
    }
    assert_eq!(std::fs::read_to_string(&dump).unwrap_or_default(), "CLAUDECODE\nCLAUDE_CODE_SESSION_ID\n", "{}", tmux.pane());
}
