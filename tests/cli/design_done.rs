//! Design-done (issue 35): a trade-off tied to a checklist item with `abcd decide
//! --tradeoff KIND --item <id>`, answered by the person with `abcd decide --answer <seq>
//! keep|undo`, and `abcd checklist design-done <id>` answering yes only when every trade-off
//! tied to the item has an answer. Through the built binary, in real git repositories.

use crate::common;

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use common::repo::{self, TestRepo};
use serde_json::{Value, json};

const NOW: &str = "2026-12-01T18:00:00Z";

struct Repo {
    _dir: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
}

impl Repo {
    fn new() -> Repo {
        let TestRepo { dir, root, home } = TestRepo::new();
        let repo = Repo { home, root, _dir: dir };
        repo.ok(&["init"]);
        repo
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = repo::abcd(&self.root, &self.home);
        cmd.args(args).env("ABCD_TEST_NOW", NOW).env("TZ", "UTC").env("PATH", "/usr/bin:/bin");
        cmd
    }

    fn abcd(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// Runs `args`, which must succeed; its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.abcd(args);
        assert!(out.status.success(), "abcd {args:?}: {}", repo::text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A checklist item's id, as `abcd checklist add` prints it.
    fn item(&self, title: &str) -> String {
        self.ok(&["checklist", "add", title]).trim().to_string()
    }

    /// `abcd decide … --json`: the seq of the decision recorded.
    fn decide(&self, text: &str, extra: &[&str]) -> u64 {
        let mut args = vec!["decide", text, "--grounds", "a 3x faster build", "--undo", "drop the cache", "--json"];
        args.extend_from_slice(extra);
        let out: Value = serde_json::from_str(self.ok(&args).trim()).unwrap();
        out["seq"].as_u64().unwrap_or_else(|| panic!("a seq: {out}"))
    }

    /// The repository journal, once a verb created it.
    fn repository_journal(&self) -> Option<PathBuf> {
        let entry = std::fs::read_dir(self.home.join("repos")).ok()?.next()?.unwrap();
        Some(entry.path().join("journal.jsonl"))
    }

    fn repository_lines(&self) -> Vec<String> {
        let Some(path) = self.repository_journal() else { return Vec::new() };
        std::fs::read_to_string(path).unwrap_or_default().lines().map(String::from).collect()
    }

    fn prompt(&self) -> String {
        let payload = json!({"session_id": "s1", "cwd": self.root, "hook_event_name": "UserPromptSubmit", "prompt": "go on"});
        let mut child = self.command(&["hook", "user-prompt-submit"]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
        child.stdin.take().unwrap().write_all(payload.to_string().as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The `data` of the journal line at `seq`.
fn data_at(repo: &Repo, seq: u64) -> Value {
    let line = &repo.repository_lines()[usize::try_from(seq).unwrap()];
    serde_json::from_str::<Value>(line).unwrap()["data"].clone()
}

fn answer_command(seq: u64, answer: &str) -> String {
    format!("abcd decide --answer {seq} {answer}")
}

/// `--item` records the item's id in `decision.recorded`; design-done says no, naming the
/// seq and the exact commands that answer it, until the person answers, then yes.
#[test]
fn a_tradeoff_tied_to_an_item_holds_design_done_until_the_person_answers() {
    let repo = Repo::new();
    let id = repo.item("Choose the cache");
    let other = repo.item("Write the parser");
    let seq = repo.decide("Cache in memory", &["--tradeoff", "speed", "--item", &id]);
    assert_eq!(data_at(&repo, seq)["item"], json!(id), "the item is recorded");
    assert_eq!(data_at(&repo, seq)["tradeoff"], json!("speed"));

    let no = repo.abcd(&["checklist", "design-done", &id]);
    assert_eq!(no.status.code(), Some(1), "{}", repo::text(&no));
    let said = stdout(&no);
    assert!(said.starts_with("no:"), "{said}");
    assert!(said.contains(&format!("seq {seq}")) && said.contains("Cache in memory"), "{said}");
    assert!(said.contains(&answer_command(seq, "keep")) && said.contains(&answer_command(seq, "undo")), "{said}");
    // Another item's verdict is its own.
    let yes = repo.abcd(&["checklist", "design-done", &other]);
    assert_eq!(yes.status.code(), Some(0), "{}", repo::text(&yes));
    assert!(stdout(&yes).contains("no trade-off recorded"), "{}", stdout(&yes));

    let answered = repo.ok(&["decide", "--answer", &seq.to_string(), "keep"]);
    assert!(answered.contains(&format!("seq {seq}")) && answered.contains("keep"), "{answered}");
    let last: Value = serde_json::from_str(repo.repository_lines().last().unwrap()).unwrap();
    assert_eq!(last["kind"], "decision.answered");
    assert_eq!(last["data"]["seq"], json!(seq));
    assert_eq!(last["data"]["answer"], "keep");
    assert_eq!(last["data"]["working_copy"], json!(repo.root.canonicalize().unwrap().display().to_string()));

    let yes = repo.abcd(&["checklist", "design-done", &id]);
    assert_eq!(yes.status.code(), Some(0), "{}", repo::text(&yes));
    assert!(stdout(&yes).starts_with("yes:"), "{}", stdout(&yes));
    let json: Value = serde_json::from_str(repo.ok(&["checklist", "design-done", &id, "--json"]).trim()).unwrap();
    assert_eq!(json["design_done"], json!(true), "{json}");
    assert_eq!(json["tradeoffs"][0]["seq"], json!(seq), "{json}");
    assert_eq!(json["tradeoffs"][0]["answer"], "keep", "{json}");
}

/// An undo answer counts as answered; a later answer replaces the earlier one; a second
/// trade-off on the item holds it again until it too is answered.
#[test]
fn an_undo_answer_counts_and_a_later_answer_replaces_the_earlier() {
    let repo = Repo::new();
    let id = repo.item("Choose the cache");
    let first = repo.decide("Cache in memory", &["--tradeoff", "speed", "--item", &id]);
    repo.ok(&["decide", "--answer", &first.to_string(), "undo"]);
    assert_eq!(repo.abcd(&["checklist", "design-done", &id]).status.code(), Some(0), "undo is an answer");

    let again = repo.ok(&["decide", "--answer", &first.to_string(), "keep"]);
    assert!(again.contains("replaces the earlier answer undo"), "{again}");
    let json: Value = serde_json::from_str(repo.ok(&["checklist", "design-done", &id, "--json"]).trim()).unwrap();
    assert_eq!(json["tradeoffs"][0]["answer"], "keep", "the later answer stands: {json}");

    let second = repo.decide("Skip the TLS check on the mirror", &["--tradeoff", "security", "--item", &id]);
    let no = repo.abcd(&["checklist", "design-done", &id]);
    assert_eq!(no.status.code(), Some(1), "{}", repo::text(&no));
    assert!(stdout(&no).contains(&answer_command(second, "keep")) && !stdout(&no).contains(&format!("seq {first}")), "{}", stdout(&no));
}

/// `--item` names an item of this working copy's checklist and goes with `--tradeoff`;
/// design-done of an id the checklist does not hold is refused. Nothing is written.
#[test]
fn an_item_not_in_the_checklist_and_an_item_without_a_tradeoff_are_refused() {
    let repo = Repo::new();
    let id = repo.item("Choose the cache");
    let before = repo.repository_lines();
    let out = repo.abcd(&["decide", "x", "--grounds", "y", "--undo", "z", "--tradeoff", "speed", "--item", "no-such-item"]);
    assert_eq!(out.status.code(), Some(2), "{}", repo::text(&out));
    let why = stderr(&out);
    assert!(why.contains("refused") && why.contains("no-such-item") && why.contains("`abcd checklist`"), "{why}");
    let out = repo.abcd(&["decide", "x", "--grounds", "y", "--undo", "z", "--item", &id]);
    assert_eq!(out.status.code(), Some(2), "{}", repo::text(&out));
    let why = stderr(&out);
    assert!(why.contains("refused") && why.contains("--tradeoff"), "{why}");
    // A secret given as an id is never repeated.
    let token = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
    let out = repo.abcd(&["decide", "x", "--grounds", "y", "--undo", "z", "--tradeoff", "speed", "--item", token]);
    assert_eq!(out.status.code(), Some(2), "{}", repo::text(&out));
    assert!(!stderr(&out).contains("ghp_"), "{}", stderr(&out));
    assert_eq!(repo.repository_lines(), before, "nothing was written");

    let out = repo.abcd(&["checklist", "design-done", "no-such-item"]);
    assert_eq!(out.status.code(), Some(2), "{}", repo::text(&out));
    assert!(stderr(&out).contains("no-such-item") && stderr(&out).contains("`abcd checklist`"), "{}", stderr(&out));
}

/// The answer is the person's: a process a host's tool started is refused, nothing written.
#[test]
fn the_answer_is_refused_in_a_process_a_hosts_tool_started() {
    let repo = Repo::new();
    let id = repo.item("Choose the cache");
    let seq = repo.decide("Cache in memory", &["--tradeoff", "speed", "--item", &id]);
    let before = repo.repository_lines();
    for (name, value) in [("CLAUDECODE", "1"), ("CODEX_TOOL_CALL_ID", "call_1")] {
        let out = repo.command(&["decide", "--answer", &seq.to_string(), "keep"]).env(name, value).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", repo::text(&out));
        let why = stderr(&out);
        assert!(why.contains("refused") && why.contains(name) && why.contains("only the person"), "{why}");
        assert!(why.contains("in a terminal of their own"), "{why}");
    }
    assert_eq!(repo.repository_lines(), before, "nothing was written");
    assert_eq!(repo.abcd(&["checklist", "design-done", &id]).status.code(), Some(1));
}

/// REVIEW: the host's-mark refusal named the seq as typed, so a token pasted as the seq was
/// printed whole (the binary before it: the corpus's GitHub token in stderr). The refusal
/// names a seq only when it is one.
#[test]
fn the_answer_refused_under_a_hosts_mark_never_repeats_a_token_given_as_the_seq() {
    let repo = Repo::new();
    for (token, random) in common::secret_corpus::corpus() {
        let out = repo.command(&["decide", "--answer", &token, "keep"]).env("CLAUDECODE", "1").output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", repo::text(&out));
        let said = repo::text(&out);
        assert_eq!(common::secret_corpus::leaked_run(&said, &random), None, "{said}");
        assert!(said.contains("abcd decide --answer <seq> keep|undo"), "{said}");
    }
}

/// A seq that is not a trade-off decision is refused naming where the seqs are printed.
#[test]
fn an_answer_to_a_seq_that_is_no_tradeoff_is_refused() {
    let repo = Repo::new();
    let plain = repo.decide("Keep the old parser", &[]);
    let tradeoff = repo.decide("Cache in memory", &["--tradeoff", "speed"]);
    let before = repo.repository_lines();
    for seq in [plain.to_string(), "0".into(), (tradeoff + 100).to_string()] {
        let out = repo.abcd(&["decide", "--answer", &seq, "keep"]);
        assert_eq!(out.status.code(), Some(2), "seq {seq}: {}", repo::text(&out));
        let why = stderr(&out);
        assert!(why.contains("refused") && why.contains(&format!("seq {seq}")) && why.contains("abcd mode back"), "{why}");
    }
    let out = repo.abcd(&["decide", "--answer", &tradeoff.to_string(), "maybe"]);
    assert_eq!(out.status.code(), Some(2), "{}", repo::text(&out));
    assert!(stderr(&out).contains("keep") && stderr(&out).contains("undo"), "{}", stderr(&out));
    assert_eq!(repo.repository_lines(), before, "nothing was written");
    // An untied trade-off is answered like any other.
    repo.ok(&["decide", "--answer", &tradeoff.to_string(), "undo"]);
}

/// `abcd mode back` and the return lists print each trade-off's seq and, once the person
/// answered it, the answer (an undo as the session's next work).
#[test]
fn mode_back_and_the_return_lists_show_each_tradeoffs_seq_and_answer() {
    let repo = Repo::new();
    let id = repo.item("Choose the cache");
    repo.ok(&["mode", "autonomous", "--until", "+8h"]);
    let seq = repo.decide("Cache in memory", &["--tradeoff", "speed", "--item", &id]);
    let plain = repo.decide("Keep the old parser", &[]);
    let back = repo.ok(&["mode", "back"]);
    let line = back.lines().find(|l| l.contains("Cache in memory")).unwrap_or_else(|| panic!("{back}"));
    assert!(line.contains(&format!("seq {seq}")) && line.contains(&answer_command(seq, "keep")), "{line}");
    assert!(line.contains(&format!("item {id}")), "{line}");
    let line = back.lines().find(|l| l.contains("Keep the old parser")).unwrap();
    assert!(!line.contains(&format!("seq {plain}")), "a decision that is no trade-off is not answered: {line}");

    repo.ok(&["decide", "--answer", &seq.to_string(), "undo"]);
    let lists = repo.prompt();
    assert!(lists.contains(&format!("seq {seq}, answered undo")), "{lists}");
    assert!(lists.contains("undoing it is the session's next work"), "{lists}");
}

/// A decision without `--item` is written as every earlier build wrote it (no `item` key,
/// the keys in their order, sorted as every line's data is), and a journal of such decisions folds as before: the window
/// shows them, and no item is held by them.
#[test]
fn a_decision_without_an_item_is_written_byte_for_byte_as_before_and_folds() {
    let repo = Repo::new();
    let id = repo.item("Choose the cache");
    repo.ok(&["mode", "autonomous", "--until", "+8h"]);
    let seq = repo.decide("Cache in memory", &["--tradeoff", "speed"]);
    let line = &repo.repository_lines()[usize::try_from(seq).unwrap()];
    let wc = repo.root.canonicalize().unwrap().display().to_string();
    let expected = format!(
        r#""data":{{"grounds":"a 3x faster build","text":"Cache in memory","tradeoff":"speed","undo":"drop the cache","working_copy":{}}}"#,
        serde_json::to_string(&wc).unwrap()
    );
    assert!(line.contains(&expected), "{line}\n{expected}");
    let mode: Value = serde_json::from_str(repo.ok(&["mode", "--json"]).trim()).unwrap();
    assert_eq!(mode["window"]["decisions"][0]["text"], "Cache in memory", "{mode}");
    let yes = repo.abcd(&["checklist", "design-done", &id]);
    assert_eq!(yes.status.code(), Some(0), "an untied trade-off holds no item: {}", repo::text(&yes));
}

/// A PreToolUse call of the Bash tool, as the host sends it; the hook's reply.
fn pre_bash(repo: &Repo, command: &str) -> Value {
    let payload = json!({"session_id": "s1", "cwd": repo.root, "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": command}});
    let mut child = repo.command(&["hook", "pre-tool-use"]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(payload.to_string().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "a hook always exits 0");
    serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim()).unwrap_or(Value::Null)
}

/// ATTACK (adversary, issue 35): the verb's guard reads the environment, which the agent's
/// own shell command can clear (`env -u CLAUDECODE abcd decide --answer 1 keep`), so the
/// PreToolUse shell rule refuses every route it can read to `abcd decide --answer`, as it
/// does for `abcd mode autonomous|back`; an agent's own `abcd decide` passes.
#[test]
fn the_shell_rule_refuses_an_agents_answer_by_any_route_it_can_read() {
    let repo = Repo::new();
    let id = repo.item("Choose the cache");
    let seq = repo.decide("Cache in memory", &["--tradeoff", "speed", "--item", &id]);
    for command in [
        format!("abcd decide --answer {seq} keep"),
        format!("env -u CLAUDECODE -u CLAUDE_CODE_SESSION_ID abcd decide --answer {seq} keep"),
        format!("sh -c 'abcd decide --answer={seq} undo'"),
        format!("cargo run --release -- decide --answer {seq} keep"),
        format!("cd /tmp && /usr/local/bin/abcd --json decide --answer {seq} keep"),
    ] {
        let reply = pre_bash(&repo, &command);
        assert_eq!(reply["hookSpecificOutput"]["permissionDecision"], "deny", "{command}: {reply}");
        let why = reply["hookSpecificOutput"]["permissionDecisionReason"].as_str().unwrap();
        assert!(why.contains("abcd decide --answer") && why.contains("only the person"), "{why}");
    }
    for command in ["abcd decide 'Cache in memory' --grounds g --undo u", "echo 'abcd decide --answer 1 keep'"] {
        assert_eq!(pre_bash(&repo, command), Value::Null, "{command} passes");
    }
    assert_eq!(repo.abcd(&["checklist", "design-done", &id]).status.code(), Some(1), "still unanswered");
}
