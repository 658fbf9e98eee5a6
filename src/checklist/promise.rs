//! Promises: `<trigger> => <title of the next item>` (docs/promises.md). The grammar, the
//! facts a trigger is judged by (the last forge listing, git's remote-tracking refs, the
//! clock) and which promises are due. Pure: the callers read the facts and record the
//! firing (`checklist.promise_fired`).

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::checklist::item::{self, ItemState, TITLE_MAX_CHARS};
use crate::checklist::state::Item;

/// The one grammar, as every refusal states it.
pub const GRAMMAR: &str = "a promise reads `<trigger> => <title of the next item>`, the trigger one of: `pr:<number> merged`, `pr:<number> closed`, `at <RFC 3339 time, e.g. 2026-12-03T09:00:00Z>`, `branch:<name> pushed`, `ci:<branch> green`";
/// A pull request number has at most this many digits (as `waits_on`'s `pr:<n>`).
pub const PR_DIGITS_MAX: usize = 12;
/// A branch a trigger names: at most this many bytes (as the branches abcd records).
pub const BRANCH_MAX_BYTES: usize = crate::ref_name::MAX_BRANCH_BYTES;

/// What makes a promise due.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Trigger {
    PrMerged(u64),
    PrClosed(u64),
    At(Timestamp),
    BranchPushed(String),
    CiGreen(String),
}

/// A promise as parsed: its trigger and the title of the item it becomes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Promise {
    pub trigger: Trigger,
    /// The trigger as written (trimmed), for the record and the render.
    pub trigger_text: String,
    pub next_title: String,
}

/// What is wrong with a promise: plain words, never the text refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{what}; {GRAMMAR}")]
pub struct PromiseError {
    pub what: String,
}

fn wrong(what: impl Into<String>) -> PromiseError {
    PromiseError { what: what.into() }
}

/// Parses a promise. The field rules of `checklist::item::validate_promise` (length, one
/// line, one `=>`) are the caller's; this reads what the two sides say.
pub fn parse(text: &str) -> Result<Promise, PromiseError> {
    let Some((trigger, next)) = text.split_once("=>") else { return Err(wrong("it has no `=>`")) };
    let (trigger, next) = (trigger.trim(), next.trim());
    if next.contains("=>") {
        return Err(wrong("it has more than one `=>`"));
    }
    if next.is_empty() {
        return Err(wrong("the title of the next item after `=>` is empty"));
    }
    if next.chars().count() > TITLE_MAX_CHARS {
        return Err(wrong(format!("the title of the next item must be at most {TITLE_MAX_CHARS} characters")));
    }
    item::validate_title(next).map_err(|e| wrong(format!("the title of the next item {}", e.rule)))?;
    Ok(Promise { trigger: parse_trigger(trigger)?, trigger_text: trigger.to_string(), next_title: next.to_string() })
}

fn parse_trigger(text: &str) -> Result<Trigger, PromiseError> {
    let words: Vec<&str> = text.split_whitespace().collect();
    match words.as_slice() {
        [] => Err(wrong("the trigger before `=>` is empty")),
        ["at", time] => time
            .parse::<Timestamp>()
            .map(Trigger::At)
            .map_err(|_| wrong("the time after `at` is not an RFC 3339 time with a zone (2026-12-03T09:00:00Z)")),
        [subject, verb] => {
            let (kind, name) = subject.split_once(':').ok_or_else(|| wrong("the trigger names no `pr:`, `branch:` or `ci:`"))?;
            match (kind, *verb) {
                ("pr", "merged" | "closed") => {
                    let n = pr_number(name)?;
                    Ok(if *verb == "merged" { Trigger::PrMerged(n) } else { Trigger::PrClosed(n) })
                }
                ("branch", "pushed") => branch(name).map(Trigger::BranchPushed),
                ("ci", "green") => branch(name).map(Trigger::CiGreen),
                ("pr", _) => Err(wrong("a `pr:` trigger ends in `merged` or `closed`")),
                ("branch", _) => Err(wrong("a `branch:` trigger ends in `pushed`")),
                ("ci", _) => Err(wrong("a `ci:` trigger ends in `green`")),
                _ => Err(wrong("the trigger names no `pr:`, `branch:` or `ci:`")),
            }
        }
        _ => Err(wrong("the trigger is not one of the five forms")),
    }
}

fn pr_number(text: &str) -> Result<u64, PromiseError> {
    let ok = !text.is_empty() && text.len() <= PR_DIGITS_MAX && text.bytes().all(|c| c.is_ascii_digit()) && !text.starts_with('0');
    if !ok {
        return Err(wrong(format!("a pull request number is 1 to {PR_DIGITS_MAX} digits without a leading zero")));
    }
    text.parse().map_err(|_| wrong("the pull request number does not fit"))
}

fn branch(name: &str) -> Result<String, PromiseError> {
    if name.len() > BRANCH_MAX_BYTES {
        return Err(wrong(format!("a branch name is at most {BRANCH_MAX_BYTES} bytes")));
    }
    if !crate::ref_name::branch_name_ok(name) {
        return Err(wrong("the branch is not a name git accepts"));
    }
    Ok(name.to_string())
}

/// A pull request's state as the forge listed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PrState {
    Open,
    Merged,
    Closed,
}

/// A pull request's checks as the listing's `statusCheckRollup` read: green when there is
/// at least one and every one passed (success, neutral or skipped).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Checks {
    None,
    Pending,
    Failing,
    Green,
}

/// One pull request of the last listing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrFact {
    pub number: u64,
    pub head: String,
    pub state: PrState,
    pub checks: Checks,
    /// The forge's merge state when it makes the pull request owed (behind or conflicting),
    /// so a reused listing owes what the fresh one did; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge: Option<Merge>,
}

/// A merge state that makes an open pull request owed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Merge {
    /// `BEHIND`: its base moved on.
    Behind,
    /// `DIRTY`: it conflicts with its base.
    Dirty,
}

/// The last forge listing and when it was made.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForgeFacts {
    pub listed_at: Timestamp,
    pub pull_requests: Vec<PrFact>,
    /// Listed in every state (`--state all`), not the open ones alone: only such a listing
    /// can be reused for a promise that waits on a merged or closed pull request.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub all_states: bool,
}

/// What git's files say: the branches a remote-tracking ref shows (read without network).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GitFacts {
    pub pushed: Vec<String>,
}

/// A promise that is due: the promising item, its promise, and the item it becomes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Due {
    pub id: String,
    pub promise: String,
    pub trigger: String,
    pub next_title: String,
}

/// Whether a trigger holds on these facts. A time holds at it and after; a pull request
/// or CI trigger needs the listing (none: not yet).
pub fn holds(trigger: &Trigger, forge: Option<&ForgeFacts>, git: &GitFacts, now: Timestamp) -> bool {
    let prs = forge.map(|f| f.pull_requests.as_slice()).unwrap_or_default();
    match trigger {
        Trigger::At(t) => now >= *t,
        Trigger::PrMerged(n) => prs.iter().any(|p| p.number == *n && p.state == PrState::Merged),
        Trigger::PrClosed(n) => prs.iter().any(|p| p.number == *n && p.state == PrState::Closed),
        Trigger::BranchPushed(b) => git.pushed.iter().any(|p| p == b),
        Trigger::CiGreen(b) => prs.iter().any(|p| &p.head == b && p.checks == Checks::Green),
    }
}

/// The branches the items' promises name for `branch:NAME pushed`: what the caller asks
/// git about.
pub fn branches_asked(items: &[Item]) -> Vec<String> {
    armed(items).filter_map(|(_, p)| if let Trigger::BranchPushed(b) = p.trigger { Some(b) } else { None }).collect()
}

/// Whether an armed promise waits on a pull request merged or closed: only then does the
/// forge listing ask for every state, since a listing of every state can leave older open
/// pull requests past its cap.
pub fn asks_closed_states(items: &[Item]) -> bool {
    armed(items).any(|(_, p)| matches!(p.trigger, Trigger::PrMerged(_) | Trigger::PrClosed(_)))
}

/// Whether any item holds a promise that could still fire (the callers skip their reads
/// when none does).
pub fn any_armed(items: &[Item]) -> bool {
    armed(items).next().is_some()
}

/// Items whose promise may fire ([`armed_promise`]), each with its promise parsed.
fn armed(items: &[Item]) -> impl Iterator<Item = (&Item, Promise)> {
    items.iter().filter_map(|i| armed_promise(i).map(|p| (i, p)))
}

/// The item's promise when it may fire: the item not dropped, its promise one that parses
/// (a free-text promise written before the grammar never fires), and not fired since it
/// was set. The one rule of what is armed, for the checks here and for the readers that
/// keep only the items a hook reads.
pub fn armed_promise(item: &Item) -> Option<Promise> {
    if item.fields.state == ItemState::Dropped || item.promise_fired.is_some() {
        return None;
    }
    parse(item.fields.promise.as_deref()?).ok()
}

/// The promises due on these facts, in the order the items were added.
pub fn due(items: &[Item], forge: Option<&ForgeFacts>, git: &GitFacts, now: Timestamp) -> Vec<Due> {
    armed(items)
        .filter(|(_, p)| holds(&p.trigger, forge, git, now))
        .map(|(i, p)| Due {
            id: i.fields.id.clone(),
            promise: i.fields.promise.clone().unwrap_or_default(),
            trigger: p.trigger_text,
            next_title: p.next_title,
        })
        .collect()
}

/// The owner refs the next item starts with: what its trigger names.
pub fn next_owner_refs(trigger: &str) -> Vec<String> {
    match parse_trigger(trigger) {
        Ok(Trigger::PrMerged(n) | Trigger::PrClosed(n)) => vec![format!("pr:{n}")],
        Ok(Trigger::BranchPushed(b) | Trigger::CiGreen(b)) => vec![b],
        _ => vec![],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checklist::item::ItemFields;

    fn ts(t: &str) -> Timestamp {
        t.parse().unwrap()
    }

    #[test]
    fn the_five_triggers_parse() {
        let p = parse("pr:42 merged => add the wrapper").unwrap();
        assert_eq!((p.trigger, p.trigger_text.as_str(), p.next_title.as_str()), (Trigger::PrMerged(42), "pr:42 merged", "add the wrapper"));
        assert_eq!(parse("pr:7 closed => reopen").unwrap().trigger, Trigger::PrClosed(7));
        assert_eq!(parse("at 2026-12-03T09:00:00Z => look").unwrap().trigger, Trigger::At(ts("2026-12-03T09:00:00Z")));
        assert_eq!(parse("branch:feat/x pushed => open the PR").unwrap().trigger, Trigger::BranchPushed("feat/x".into()));
        assert_eq!(parse("ci:feat/x green => merge").unwrap().trigger, Trigger::CiGreen("feat/x".into()));
    }

    #[test]
    fn a_bad_promise_names_what_was_wrong_and_the_grammar_without_echoing_it() {
        let cases = [
            ("CI green => merge", "names no `pr:`"),
            ("pr:7 approved => merge", "ends in `merged` or `closed`"),
            ("pr:07 merged => x", "leading zero"),
            ("pr:x merged => x", "digits"),
            ("at tomorrow => x", "RFC 3339"),
            ("at 2026-12-03T09:00 => x", "RFC 3339"),
            ("branch:a..b pushed => x", "not a name git accepts"),
            // `git check-ref-format --branch HEAD` refuses it, and every clone has
            // `refs/remotes/origin/HEAD`: accepted, it would fire at the first hook.
            ("branch:HEAD pushed => x", "not a name git accepts"),
            ("ci:HEAD green => x", "not a name git accepts"),
            ("branch:x merged => x", "ends in `pushed`"),
            ("ci:x red => x", "ends in `green`"),
            ("team:x done => x", "names no `pr:`"),
            ("=> x", "trigger before `=>` is empty"),
            ("pr:7 merged =>", "is empty"),
            ("pr:7 merged", "no `=>`"),
            ("pr:7 merged => a => b", "more than one"),
            ("pr:7 merged now => x", "not one of the five forms"),
        ];
        for (text, says) in cases {
            let e = parse(text).unwrap_err().to_string();
            assert!(e.contains(says), "{text}: {e}");
            assert!(e.contains(GRAMMAR), "{text}: {e}");
        }
        let e = parse("ci:secretvalue7 red => x").unwrap_err().to_string();
        assert!(!e.contains("secretvalue7"), "never echoes the text: {e}");
    }

    #[test]
    fn limits_hold_on_both_sides() {
        let digits = "9".repeat(PR_DIGITS_MAX);
        assert!(parse(&format!("pr:{digits} merged => x")).is_ok());
        assert!(parse(&format!("pr:{digits}9 merged => x")).is_err());
        let name = "b".repeat(BRANCH_MAX_BYTES);
        assert!(parse(&format!("branch:{name} pushed => x")).is_ok());
        assert!(parse(&format!("branch:{name}b pushed => x")).unwrap_err().what.contains("at most"));
        let title = "t".repeat(TITLE_MAX_CHARS);
        assert!(parse(&format!("pr:1 merged => {title}")).is_ok());
        assert!(parse(&format!("pr:1 merged => {title}t")).unwrap_err().what.contains("at most 200"));
    }

    fn item(id: &str, promise: &str, state: ItemState) -> Item {
        let at = ts("2026-12-01T00:00:00Z");
        Item {
            fields: ItemFields { state, promise: Some(promise.into()), ..ItemFields::working(id, id) },
            created_at: at,
            updated_at: at,
            added_seq: 1,
            changed_seq: 1,
            promise_fired: None,
            promised_by: None,
        }
    }

    fn pr(number: u64, head: &str, state: PrState, checks: Checks) -> PrFact {
        PrFact { number, head: head.into(), state, checks, merge: None }
    }

    #[test]
    fn only_a_promise_on_a_merged_or_closed_pull_request_asks_for_every_state() {
        for (promise, asks) in [
            ("pr:7 merged => x", true),
            ("pr:7 closed => x", true),
            ("ci:feat green => x", false),
            ("branch:feat pushed => x", false),
            ("at 2026-12-03T09:00:00Z => x", false),
            ("back by noon", false),
        ] {
            assert_eq!(asks_closed_states(&[item("1", promise, ItemState::Working)]), asks, "{promise}");
        }
        assert!(!asks_closed_states(&[item("1", "pr:7 merged => x", ItemState::Dropped)]), "a dropped item's never fires");
        let mut fired = item("1", "pr:7 merged => x", ItemState::Working);
        fired.promise_fired = Some("2".into());
        assert!(!asks_closed_states(&[fired]), "fired");
    }

    #[test]
    fn each_trigger_holds_on_its_fact_only() {
        let now = ts("2026-12-02T10:00:00Z");
        let forge = ForgeFacts {
            listed_at: now,
            pull_requests: vec![
                pr(7, "feat/a", PrState::Merged, Checks::Green),
                pr(8, "feat/b", PrState::Closed, Checks::Failing),
                pr(9, "feat/c", PrState::Open, Checks::Green),
                pr(10, "feat/d", PrState::Open, Checks::Pending),
            ],
            all_states: true,
        };
        let git = GitFacts { pushed: vec!["feat/p".into()] };
        let fires = |t: &str| holds(&parse(&format!("{t} => x")).unwrap().trigger, Some(&forge), &git, now);
        for yes in
            ["pr:7 merged", "pr:8 closed", "at 2026-12-02T10:00:00Z", "at 2026-12-01T10:00:00Z", "branch:feat/p pushed", "ci:feat/c green"]
        {
            assert!(fires(yes), "{yes}");
        }
        for no in [
            "pr:7 closed",
            "pr:8 merged",
            "pr:9 merged",
            "pr:11 merged",
            "at 2026-12-02T10:00:01Z",
            "branch:feat/q pushed",
            "ci:feat/d green",
            "ci:feat/b green",
            "ci:feat/zz green",
        ] {
            assert!(!fires(no), "{no}");
        }
        // No listing yet: no forge trigger holds.
        assert!(!holds(&Trigger::PrMerged(7), None, &git, now));
    }

    #[test]
    fn due_skips_fired_dropped_and_free_text_promises() {
        let now = ts("2026-12-02T10:00:00Z");
        let forge = ForgeFacts { listed_at: now, pull_requests: vec![pr(7, "b", PrState::Merged, Checks::None)], all_states: true };
        let mut fired = item("fired", "pr:7 merged => x", ItemState::Waiting);
        fired.promise_fired = Some("9".into());
        let items = [
            item("a", "pr:7 merged => add the wrapper", ItemState::Waiting),
            item("done", "pr:7 merged => y", ItemState::Done),
            item("dropped", "pr:7 merged => z", ItemState::Dropped),
            fired,
            item("old", "CI green => merge", ItemState::Working),
        ];
        let got = due(&items, Some(&forge), &GitFacts::default(), now);
        let ids: Vec<&str> = got.iter().map(|d| d.id.as_str()).collect();
        assert_eq!(ids, ["a", "done"]);
        assert_eq!(got[0].next_title, "add the wrapper");
        assert_eq!(got[0].trigger, "pr:7 merged");
        assert_eq!(next_owner_refs("pr:7 merged"), ["pr:7"]);
        assert_eq!(next_owner_refs("ci:feat/x green"), ["feat/x"]);
        assert!(next_owner_refs("at 2026-12-02T10:00:00Z").is_empty());
    }
}
