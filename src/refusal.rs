//! The one refusal: what was refused, why, what to run instead, and whether nothing was
//! written, under a kind a test can match. Every command builds its refusals from it and
//! the CLI prints its one `Display`, so a refusal reads the same whichever verb says it.
//! A leaf with no imports, so any module that refuses may use it.
//!
//! What a refusal holds is printed, never recorded: the refusals a journal keeps
//! (`checklist.write_refused`, `away.mode_refused`) are their own wire types and keep
//! their words.

use std::fmt;

/// Why a request was refused, as a test or a script matches it: each kind prints a stable
/// kebab-case code in the message (`refused [lane-busy]: …`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RefusalKind {
    /// A name (run, lane, field, remote, journal id) breaks the rule for names.
    BadName,
    /// A flag's value or an argument is outside what it takes.
    BadValue,
    /// What was typed holds a secret, which is never kept or echoed.
    Secret,
    /// The request asks for no change.
    NothingToChange,
    /// No run, lane, loop, item, decision, page or file goes by the name given.
    NotFound,
    /// A program named to run is not an executable on `PATH`.
    NotAProgram,
    /// A path names a folder where a file belongs, or the other way round, or is not there.
    WrongPath,
    /// The folder is not inside a git repository, a worktree or a managed working copy.
    NotInRepository,
    /// The repository has no commit to start from.
    NoCommit,
    /// The run is finished.
    RunFinished,
    /// The run is halted.
    RunHalted,
    /// The run (or loop) has a driver, or one that is gone and must be claimed first.
    RunDriven,
    /// The name is taken by another run or loop.
    NameTaken,
    /// An agent, a launch or another abcd verb holds the lane or its folder.
    LaneBusy,
    /// A lane's receipt waits to be collected, has not arrived, or was collected.
    ReceiptState,
    /// What stands at a lane's receipt or worktree is not what abcd made or recorded.
    NotAbcds,
    /// A folder holds work abcd leaves to the person.
    UncommittedWork,
    /// git could not make or read what the request needs (a worktree, HEAD).
    GitState,
    /// A loop is stopped, or its state does not take the control asked.
    LoopState,
    /// The person is not away, so there is no window for the request.
    NotAway,
    /// A record is full (the queue, the unanswered trade-offs).
    Full,
    /// Only the person runs this verb; a host's tool started the process.
    PersonOnly,
    /// A trade-off's answer or a design-done does not fit the record.
    DecisionState,
    /// Another push or fetch of the mirror is running.
    MirrorBusy,
    /// The journal and its mirror do not agree, or either cannot be read whole.
    MirrorMismatch,
    /// There is no mirror of the journal to act on.
    NoMirror,
    /// The mirror needs nothing: the request would change nothing.
    MirrorCurrent,
    /// The remote did not take what was asked.
    RemoteRefused,
    /// The journal is damaged and is repaired, not restored over or mirrored.
    JournalDamaged,
    /// More than one journal fits, or too many to search.
    Ambiguous,
    /// A file abcd writes into is not in a shape it can change safely.
    FileShape,
    /// The loop's driver cannot go on with what it found.
    DriveStopped,
}

impl RefusalKind {
    /// Every kind, for the tests that hold the codes distinct.
    pub const ALL: &'static [RefusalKind] = &[
        RefusalKind::BadName,
        RefusalKind::BadValue,
        RefusalKind::Secret,
        RefusalKind::NothingToChange,
        RefusalKind::NotFound,
        RefusalKind::NotAProgram,
        RefusalKind::WrongPath,
        RefusalKind::NotInRepository,
        RefusalKind::NoCommit,
        RefusalKind::RunFinished,
        RefusalKind::RunHalted,
        RefusalKind::RunDriven,
        RefusalKind::NameTaken,
        RefusalKind::LaneBusy,
        RefusalKind::ReceiptState,
        RefusalKind::NotAbcds,
        RefusalKind::UncommittedWork,
        RefusalKind::GitState,
        RefusalKind::LoopState,
        RefusalKind::NotAway,
        RefusalKind::Full,
        RefusalKind::PersonOnly,
        RefusalKind::DecisionState,
        RefusalKind::MirrorBusy,
        RefusalKind::MirrorMismatch,
        RefusalKind::NoMirror,
        RefusalKind::MirrorCurrent,
        RefusalKind::RemoteRefused,
        RefusalKind::JournalDamaged,
        RefusalKind::Ambiguous,
        RefusalKind::FileShape,
        RefusalKind::DriveStopped,
    ];

    /// The stable code printed in the message.
    pub fn code(self) -> &'static str {
        match self {
            RefusalKind::BadName => "bad-name",
            RefusalKind::BadValue => "bad-value",
            RefusalKind::Secret => "secret",
            RefusalKind::NothingToChange => "nothing-to-change",
            RefusalKind::NotFound => "not-found",
            RefusalKind::NotAProgram => "not-a-program",
            RefusalKind::WrongPath => "wrong-path",
            RefusalKind::NotInRepository => "not-in-repository",
            RefusalKind::NoCommit => "no-commit",
            RefusalKind::RunFinished => "run-finished",
            RefusalKind::RunHalted => "run-halted",
            RefusalKind::RunDriven => "run-driven",
            RefusalKind::NameTaken => "name-taken",
            RefusalKind::LaneBusy => "lane-busy",
            RefusalKind::ReceiptState => "receipt-state",
            RefusalKind::NotAbcds => "not-abcds",
            RefusalKind::UncommittedWork => "uncommitted-work",
            RefusalKind::GitState => "git-state",
            RefusalKind::LoopState => "loop-state",
            RefusalKind::NotAway => "not-away",
            RefusalKind::Full => "full",
            RefusalKind::PersonOnly => "person-only",
            RefusalKind::DecisionState => "decision-state",
            RefusalKind::MirrorBusy => "mirror-busy",
            RefusalKind::MirrorMismatch => "mirror-mismatch",
            RefusalKind::NoMirror => "no-mirror",
            RefusalKind::MirrorCurrent => "mirror-current",
            RefusalKind::RemoteRefused => "remote-refused",
            RefusalKind::JournalDamaged => "journal-damaged",
            RefusalKind::Ambiguous => "ambiguous",
            RefusalKind::FileShape => "file-shape",
            RefusalKind::DriveStopped => "drive-stopped",
        }
    }
}

/// What a refusal left as it was, said after its reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Untouched {
    /// No journal line, no file.
    Written,
    /// No event of the request (a launch, a loop) in the journal.
    Recorded,
    /// No agent or process started.
    Started,
    /// A lane's work neither saved aside nor reset.
    SavedOrReset,
}

impl Untouched {
    fn words(self) -> &'static str {
        match self {
            Untouched::Written => "nothing was written",
            Untouched::Recorded => "nothing was recorded",
            Untouched::Started => "nothing was started",
            Untouched::SavedOrReset => "nothing was saved or reset",
        }
    }
}

/// A request abcd will not carry out, and what the person runs instead. Never holds a
/// secret: a value the person typed is put in `what` or `why` only once it is shown to be
/// none (`secrets::shown_name`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub kind: RefusalKind,
    /// What was refused: the verb or the thing asked for.
    pub what: String,
    /// Why, in words.
    pub why: String,
    /// What to run, or do, instead.
    pub instead: Option<String>,
    /// What is sure to be left as it was.
    pub untouched: Option<Untouched>,
    /// Warnings told before the refusal, each on its own line (a derived file that was
    /// not rewritten after a refusal the journal records).
    pub warnings: Vec<String>,
}

impl Refusal {
    pub fn new(kind: RefusalKind, what: impl Into<String>, why: impl Into<String>) -> Refusal {
        Refusal { kind, what: what.into(), why: why.into(), instead: None, untouched: None, warnings: vec![] }
    }

    /// What to run, or do, instead.
    pub fn instead(mut self, instead: impl Into<String>) -> Refusal {
        self.instead = Some(instead.into());
        self
    }

    /// Says, after the reason, what the refusal left as it was.
    pub fn untouched(mut self, untouched: Untouched) -> Refusal {
        self.untouched = Some(untouched);
        self
    }

    /// Says that nothing was written.
    pub fn nothing_written(self) -> Refusal {
        self.untouched(Untouched::Written)
    }

    /// Says that nothing was recorded.
    pub fn nothing_recorded(self) -> Refusal {
        self.untouched(Untouched::Recorded)
    }

    /// Warnings told before the refusal, each on its own `abcd:` line as the CLI prints.
    pub fn after_warnings(mut self, warnings: Vec<String>) -> Refusal {
        self.warnings = warnings;
        self
    }

    /// A sentence added after the whole message (what became of the attempt itself).
    pub fn then(mut self, sentence: &str) -> Refusal {
        match &mut self.instead {
            Some(instead) => instead.push_str(sentence),
            None => self.why.push_str(sentence),
        }
        self
    }
}

impl fmt::Display for Refusal {
    /// `refused [<code>]: <what>: <why>; <untouched>; <instead>`, after any warnings: the
    /// one shape of every refusal abcd prints.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for warning in &self.warnings {
            write!(f, "{warning}\nabcd: ")?;
        }
        write!(f, "refused [{}]: {}: {}", self.kind.code(), self.what, self.why)?;
        if let Some(u) = self.untouched {
            write!(f, "; {}", u.words())?;
        }
        if let Some(instead) = &self.instead {
            write!(f, "; {instead}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Refusal {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;
    use std::path::{Path, PathBuf};

    #[test]
    fn the_message_has_one_shape() {
        let r = Refusal::new(RefusalKind::LaneBusy, "launch", "launch 3 of r/a is alive (pid 42)");
        assert_eq!(r.to_string(), "refused [lane-busy]: launch: launch 3 of r/a is alive (pid 42)");
        let r = r.instead("wait for it to end");
        assert_eq!(r.to_string(), "refused [lane-busy]: launch: launch 3 of r/a is alive (pid 42); wait for it to end");
        let r = r.nothing_recorded();
        assert_eq!(
            r.to_string(),
            "refused [lane-busy]: launch: launch 3 of r/a is alive (pid 42); nothing was recorded; wait for it to end"
        );
        let r = Refusal::new(RefusalKind::Full, "mode queue", "the queue is full").nothing_written();
        assert_eq!(r.to_string(), "refused [full]: mode queue: the queue is full; nothing was written");
        let r = r.after_warnings(vec!["the files were not refreshed".into()]);
        assert_eq!(r.to_string(), "the files were not refreshed\nabcd: refused [full]: mode queue: the queue is full; nothing was written");
    }

    #[test]
    fn a_sentence_after_goes_last() {
        let r = Refusal::new(RefusalKind::PersonOnly, "mode back", "only the person ends it").then(" It is recorded.");
        assert_eq!(r.to_string(), "refused [person-only]: mode back: only the person ends it It is recorded.");
        let r = Refusal::new(RefusalKind::PersonOnly, "mode back", "why").instead("run it yourself.").then(" It is recorded.");
        assert_eq!(r.to_string(), "refused [person-only]: mode back: why; run it yourself. It is recorded.");
    }

    #[test]
    fn every_kind_has_its_own_kebab_case_code() {
        let codes: BTreeSet<&str> = RefusalKind::ALL.iter().map(|k| k.code()).collect();
        assert_eq!(codes.len(), RefusalKind::ALL.len(), "two kinds share a code");
        for code in &codes {
            assert!(!code.is_empty() && code.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'), "{code}");
            assert!(!code.starts_with('-') && !code.ends_with('-') && !code.contains("--"), "{code}");
        }
    }

    /// The most string literals in shipped code under `src/` that open with a refusal's
    /// prefix: every other refusal is built by [`Refusal`]'s `Display`.
    const REFUSAL_PREFIX_LITERALS_MAX: usize = 3;

    /// The string literals that open with a refusal's prefix (`"refused: `, `"refused [`),
    /// test code left out, as `file:line` with the line.
    fn refusal_prefix_literals(root: &Path) -> Vec<String> {
        let mut files = vec![];
        collect_rs(root, &mut files);
        let mut found = vec![];
        for file in files {
            if file.file_name().is_some_and(|n| n == "tests.rs") || file.components().any(|c| c.as_os_str() == "tests") {
                continue;
            }
            let text = without_test_items(&std::fs::read_to_string(&file).unwrap());
            for (i, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                if code.contains("\"refused: ") || code.contains("\"refused [") {
                    found.push(format!("{}:{}: {}", file.strip_prefix(root).unwrap_or(&file).display(), i + 1, line.trim()));
                }
            }
        }
        found
    }

    fn collect_rs(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                collect_rs(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    /// The text with each `#[cfg(test)]` item blanked to its closing brace or semicolon,
    /// its lines kept so numbers still point at the file.
    fn without_test_items(text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(at) = rest.find("#[cfg(test)]") {
            out.push_str(&rest[..at]);
            let item = &rest[at..];
            let mut depth = 0usize;
            let mut end = item.len();
            for (i, c) in item.char_indices().skip("#[cfg(test)]".len()) {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            end = i + 1;
                            break;
                        }
                    }
                    ';' if depth == 0 => {
                        end = i + 1;
                        break;
                    }
                    _ => {}
                }
            }
            out.extend(item[..end].chars().filter(|&c| c == '\n'));
            rest = &item[end..];
        }
        out.push_str(rest);
        out
    }

    #[test]
    fn refusals_are_built_by_the_one_type() {
        let found = refusal_prefix_literals(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
        assert!(
            found.len() <= REFUSAL_PREFIX_LITERALS_MAX,
            "{} hand-written refusal prefixes (at most {REFUSAL_PREFIX_LITERALS_MAX}): build them with refusal::Refusal\n{}",
            found.len(),
            found.join("\n")
        );
    }

    #[test]
    fn the_count_sees_a_literal_on_either_side_of_its_edge() {
        let root = std::env::temp_dir().join(format!("abcd-refusal-count-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("command")).unwrap();
        let one = "fn r() -> String { \"refused: x\".into() }\n";
        let body = one.repeat(REFUSAL_PREFIX_LITERALS_MAX);
        let test_item = "#[cfg(test)]\nmod tests {\n    fn t() { let _ = \"refused: in a test\"; }\n}\n";
        std::fs::write(root.join("command/a.rs"), format!("{body}{test_item}// \"refused: in a comment\"\n")).unwrap();
        assert_eq!(refusal_prefix_literals(&root).len(), REFUSAL_PREFIX_LITERALS_MAX);
        std::fs::write(root.join("command/b.rs"), "fn s() -> String { \"refused [x]: y\".into() }\n").unwrap();
        let found = refusal_prefix_literals(&root);
        assert_eq!(found.len(), REFUSAL_PREFIX_LITERALS_MAX + 1, "{found:?}");
        assert!(found.iter().any(|f| f.starts_with("command/b.rs:1:")), "{found:?}");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
