//! Projections left behind on purpose (`Store::project`, `projection_lag_bound`): events
//! that cannot change the checklist leave `state.json` and `checklist.json` behind by at
//! most the bound `state.json`'s size allows, readers still get the head's checklist
//! without folding (to `PROJECTION_LAG_MAX`), a checklist event brings `checklist.json` to
//! the head (and leaves `state.json` trailing, to the bound), and one event past the bound
//! brings both to the head.

use crate::common;

use abcd::store::reader::ViewSource;
use abcd::store::{PROJECTION_LAG_MAX, PROJECTION_LAG_MIN, STATE_BYTES_PER_LAG_SQUARED, Store, projection_lag_bound};
use common::{TempJournal, event};

/// A session start the fold accepts (not skipped), so the skipped list stays empty.
fn session_started(n: u64) -> abcd::journal::NewEvent {
    let data = serde_json::json!({"session": format!("s{n}"), "source": "startup", "working_copy": "/wc"});
    abcd::journal::NewEvent { data, ..event("session.started", n) }
}

fn named_seq(tj: &TempJournal, file: &str) -> u64 {
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(tj.paths.dir().join(file)).unwrap()).unwrap();
    v["journal"]["seq"].as_u64().unwrap()
}

fn named(tj: &TempJournal) -> (u64, u64) {
    (named_seq(tj, abcd::store::projection::STATE_FILE), named_seq(tj, abcd::store::projection::CHECKLIST_FILE))
}

/// The lag an appender allows for this journal's `state.json` as it is now.
fn bound(tj: &TempJournal) -> u64 {
    let bytes = std::fs::metadata(tj.paths.dir().join(abcd::store::projection::STATE_FILE)).unwrap().len();
    projection_lag_bound(bytes)
}

#[test]
fn neutral_events_leave_the_projections_behind_up_to_the_bound_and_no_further() {
    let tj = TempJournal::new();
    let store = Store::new(tj.journal());
    store.append(&[session_started(1000)], Some(&tj.scope())).unwrap();
    assert_eq!(named(&tj), (1, 1), "a new journal's first append writes them");
    let lag = bound(&tj);
    assert_eq!(lag, PROJECTION_LAG_MIN, "a small plan's state.json allows the least lag");
    for n in 1..=lag {
        store.append(&[session_started(n)], Some(&tj.scope())).unwrap();
        assert_eq!(named(&tj), (1, 1), "{n} behind: left as they are");
        let view = store.checklist_view();
        assert_eq!((view.source, view.head_seq), (ViewSource::Projection, Some(1 + n)), "the behind checklist.json still serves the head");
        assert_eq!(store.current_state().unwrap().head.seq, 1 + n, "state readers fold forward");
    }
    store.append(&[session_started(99)], Some(&tj.scope())).unwrap();
    let head = 2 + lag;
    assert_eq!(named(&tj), (head, head), "one past the bound: rewritten");
    // A checklist event (here one the fold skips: it changes the skipped list) is never left
    // behind by checklist.json; state.json trails it like any other event, to the bound.
    store.append(&[event("checklist.item_added", 1)], Some(&tj.scope())).unwrap();
    assert_eq!(named(&tj), (head, head + 1));
    let view = store.checklist_view();
    assert_eq!(view.skipped.len(), 1, "the skipped checklist event shows");
    assert_eq!(store.current_state().unwrap().state.journal.skipped.len(), 1, "state readers fold it forward");
    let lag = bound(&tj);
    for n in 2..=lag {
        store.append(&[event("checklist.item_added", n)], Some(&tj.scope())).unwrap();
        assert_eq!(named(&tj), (head, head + n), "{n} behind: state.json left, checklist.json current");
    }
    store.append(&[event("checklist.item_added", 99)], Some(&tj.scope())).unwrap();
    let last = head + lag + 1;
    assert_eq!(named(&tj), (last, last), "one past the bound: both rewritten");
}

#[test]
fn a_behind_checklist_json_is_not_served_past_a_checklist_event_or_the_bound() {
    // A checklist event appended behind the store's back (a shell write): re-folded.
    let tj = TempJournal::new();
    let store = Store::new(tj.journal());
    store.append(&[session_started(1000)], Some(&tj.scope())).unwrap();
    tj.journal().append_batch(&[session_started(1), event("checklist.item_added", 2)], Some(&tj.scope())).unwrap();
    let view = store.checklist_view();
    assert_eq!((view.source, view.skipped.len()), (ViewSource::Journal, 1));

    // Neutral events only, but one more than the bound: re-folded.
    let tj = TempJournal::new();
    let store = Store::new(tj.journal());
    store.append(&[session_started(1000)], Some(&tj.scope())).unwrap();
    let neutral: Vec<_> = (0..PROJECTION_LAG_MAX).map(session_started).collect();
    tj.journal().append_batch(&neutral, Some(&tj.scope())).unwrap();
    assert_eq!(store.checklist_view().source, ViewSource::Projection, "exactly the bound behind: served");
    tj.journal().append_batch(&[session_started(0)], Some(&tj.scope())).unwrap();
    assert_eq!(store.checklist_view().source, ViewSource::Journal, "one past it: folded");
}

/// `append_unseen` (the session-start hook's append): with the seq the projections name,
/// it leaves them (and reads no state) while they may lag; without it, past the bound, or
/// at a checkpoint boundary, it projects as `append` does.
#[test]
fn append_unseen_leaves_the_projections_only_while_they_may_lag() {
    let tj = TempJournal::new();
    let store = Store::new(tj.journal());
    store.append(&[session_started(1000)], Some(&tj.scope())).unwrap();
    let view = store.checklist_view();
    assert_eq!(view.projection_seq, Some(1));
    let (a, _, err) = store.append_unseen(&[session_started(1)], &tj.scope(), view.projection_seq).unwrap();
    assert!(err.is_none());
    assert_eq!((a[0].seq, named(&tj)), (2, (1, 1)), "appended, projections left");
    assert_eq!(store.current_state().unwrap().state.work.sessions_started, 2);
    // A named seq too far behind: projected.
    let neutral: Vec<_> = (0..PROJECTION_LAG_MAX).map(session_started).collect();
    tj.journal().append_batch(&neutral, Some(&tj.scope())).unwrap();
    store.append_unseen(&[session_started(3)], &tj.scope(), view.projection_seq).unwrap();
    let head = 2 + PROJECTION_LAG_MAX + 1;
    assert_eq!(named(&tj), (head, head));
    // A checkpoint boundary: written even while the projections may lag.
    let to_boundary: Vec<_> = (head + 1..abcd::store::checkpoint::CHECKPOINT_EVERY_EVENTS).map(session_started).collect();
    for chunk in to_boundary.chunks(100) {
        tj.journal().append_batch(chunk, Some(&tj.scope())).unwrap();
    }
    let cps = || abcd::store::checkpoint::list(&abcd::journal::storage::RealDisk, &tj.paths.checkpoints).unwrap_or_default().len();
    let before = cps();
    let at = abcd::store::checkpoint::CHECKPOINT_EVERY_EVENTS - 10;
    store.append_unseen(&[session_started(4)], &tj.scope(), Some(at)).unwrap();
    assert_eq!(cps(), before + 1, "the 1,000th event's checkpoint");
}

/// The bound follows `state.json`'s size: a large plan's projections, whose refresh costs
/// milliseconds, may trail further than a small one's, to `PROJECTION_LAG_MAX` and no
/// further. The file is made large with trailing whitespace: readers then refuse it (its
/// digest covers every byte), but a hook's append (`append_unseen`, told the line the
/// view names) reads only its size. Past the bound the append refreshes whatever the file
/// holds, so the last check holds for any bound; the loop is what tells them apart.
#[test]
fn a_larger_state_json_lets_the_projections_trail_further_to_the_most() {
    for (lines, expect) in [(PROJECTION_LAG_MIN + 8, PROJECTION_LAG_MIN + 8), (PROJECTION_LAG_MAX + 8, PROJECTION_LAG_MAX)] {
        let tj = TempJournal::new();
        let store = Store::new(tj.journal());
        store.append(&[session_started(1000)], Some(&tj.scope())).unwrap();
        let state = tj.paths.dir().join(abcd::store::projection::STATE_FILE);
        let mut bytes = std::fs::read(&state).unwrap();
        bytes.resize((lines * lines * STATE_BYTES_PER_LAG_SQUARED) as usize, b' ');
        std::fs::write(&state, &bytes).unwrap();
        assert_eq!(bound(&tj), expect, "{} bytes", bytes.len());
        let at = named(&tj).1;
        for n in 1..=expect {
            store.append_unseen(&[session_started(n)], &tj.scope(), Some(at)).unwrap();
            assert_eq!(named(&tj).1, at, "{n} behind of {expect}: left as they are");
        }
        store.append_unseen(&[session_started(0)], &tj.scope(), Some(at)).unwrap();
        assert_eq!(named(&tj).1, at + expect + 1, "one past {expect}: rewritten");
    }
}

/// A checklist write (`Store::project`) leaves `state.json` behind by the bound its size
/// allows, here a real plan large enough for more than the least.
#[test]
fn checklist_writes_leave_a_large_plans_state_json_behind_by_its_size() {
    let tj = TempJournal::new();
    let store = Store::new(tj.journal());
    let title = "t".repeat(abcd::checklist::item::TITLE_MAX_CHARS - 10);
    let plan: Vec<_> = (0..160).map(|i| item_added(&format!("long-{i}"), |f| f.title = format!("{title} {i}"))).collect();
    store.append(&plan, Some(&tj.scope())).unwrap();
    let at = named(&tj).0;
    let lag = bound(&tj);
    assert!(lag > PROJECTION_LAG_MIN && lag < PROJECTION_LAG_MAX, "the plan's state.json allows {lag}");
    for n in 1..=lag {
        store.append(&[item_added(&format!("more-{n}"), |_| {})], Some(&tj.scope())).unwrap();
        assert_eq!(named(&tj), (at, at + n), "{n} of {lag}: state.json left behind, checklist.json current");
        assert_eq!(store.current_state().unwrap().base, abcd::store::StateBase::Projection { seq: at }, "readers fold from it");
    }
    store.append(&[item_added("one-more", |_| {})], Some(&tj.scope())).unwrap();
    assert_eq!(named(&tj), (at + lag + 1, at + lag + 1), "one past {lag}: both rewritten");
}

/// A `state.json` no reader takes by its facts earns no lag past the least: readers fold
/// from a checkpoint or genesis instead, so it is refreshed. Here one writable by others,
/// and one past the projections' read cap; one exactly at the cap is taken, and trails
/// (the files are sparse or padded, so the test writes little of them).
#[test]
fn a_state_json_readers_refuse_by_its_facts_earns_no_lag_past_the_least() {
    use std::os::unix::fs::PermissionsExt;
    let cap = abcd::store::projection::MAX_PROJECTION_BYTES;
    for (case, len, others_write, taken) in
        [("writable by others", 1 << 20, true, false), ("past the cap", cap + 1, false, false), ("at the cap", cap, false, true)]
    {
        let tj = TempJournal::new();
        let store = Store::new(tj.journal());
        store.append(&[session_started(1000)], Some(&tj.scope())).unwrap();
        let state = tj.paths.dir().join(abcd::store::projection::STATE_FILE);
        std::fs::OpenOptions::new().write(true).open(&state).unwrap().set_len(len).unwrap();
        if others_write {
            std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o666)).unwrap();
        }
        let view = || named_seq(&tj, abcd::store::projection::CHECKLIST_FILE);
        let at = view();
        for n in 1..=PROJECTION_LAG_MIN {
            store.append_unseen(&[session_started(n)], &tj.scope(), Some(at)).unwrap();
        }
        assert_eq!(view(), at, "{case}: the least is had without looking");
        store.append_unseen(&[session_started(0)], &tj.scope(), Some(at)).unwrap();
        let expected = if taken { at } else { at + PROJECTION_LAG_MIN + 1 };
        assert_eq!(view(), expected, "{case}: one past the least (taken: {taken})");
    }
}

/// Checklist writes measure the lag against `state.json`, a hook's `append_unseen` against
/// `checklist.json` (which may be newer), so `state.json` can trail by twice the bound and
/// no more (documented at `PROJECTION_LAG_MAX`). The plan stays small, so its `state.json`
/// stays under the size where the bound grows, and the bound holds still through the rounds.
#[test]
fn state_json_trails_by_at_most_twice_the_bound_when_checklist_writes_and_hooks_alternate() {
    let tj = TempJournal::new();
    let store = Store::new(tj.journal());
    store.append(&[session_started(1000)], Some(&tj.scope())).unwrap();
    let mut worst = 0;
    let lag = bound(&tj);
    for round in 0..3 {
        for n in 1..=lag {
            store.append(&[event("checklist.item_added", round * 1000 + n)], Some(&tj.scope())).unwrap();
        }
        for n in 0..lag {
            let view = store.checklist_view();
            let (appended, _, _) = store.append_unseen(&[session_started(n)], &tj.scope(), view.projection_seq).unwrap();
            let head = appended[0].seq;
            worst = worst.max(head - named(&tj).0);
            assert!(head - named(&tj).0 <= 2 * lag, "state.json {} behind at head {head}", head - named(&tj).0);
        }
        assert_eq!(bound(&tj), lag, "round {round}: the bound held still");
    }
    assert!(worst > lag, "the mixed sequence does reach past one bound ({worst}), so the test can fail");
    assert_eq!(store.current_state().unwrap().head.seq, 1 + 3 * 2 * lag, "readers still fold to the head");
}

#[test]
fn last_good_is_the_view_just_written_and_never_another_heads() {
    let tj = TempJournal::new();
    let store = Store::new(tj.journal());
    let read = |file: &str| std::fs::read(tj.paths.dir().join(file)).unwrap();
    store.append(&[session_started(1000)], Some(&tj.scope())).unwrap();
    let at_one = store.current_state().unwrap();
    store.write_last_good(&at_one).unwrap();
    let (checklist, last_good) = (abcd::store::projection::CHECKLIST_FILE, abcd::store::projection::LAST_GOOD_FILE);
    assert_eq!(read(last_good), read(checklist), "last-good is the checklist.json of the same head, byte for byte");
    // The view moves on (checklist.json now names seq 2); last-good asked for seq 1 is seq 1's.
    store.append(&[event("checklist.item_added", 1)], Some(&tj.scope())).unwrap();
    assert_eq!(named_seq(&tj, checklist), 2);
    store.write_last_good(&at_one).unwrap();
    assert_eq!(named_seq(&tj, last_good), 1, "last-good shows the state it was given");
}

/// The view takes the lines the tail read verified from it (`still_shows`), and verifies
/// only those before its window: a checklist event before the window, or inside it while
/// the projection names a line before it, is found either way; so is a projection that
/// names a line the window holds with another hash.
#[test]
fn a_behind_checklist_json_is_judged_the_same_before_and_inside_the_tail_window() {
    // Where the checklist event sits among 30 neutral events written behind the store's
    // back (30 lines are more than the 4 KiB tail window holds).
    for at in [0usize, 5, 24, 28, 30] {
        let tj = TempJournal::new();
        let store = Store::new(tj.journal());
        store.append(&[session_started(1000)], Some(&tj.scope())).unwrap();
        let mut behind: Vec<_> = (0..30).map(session_started).collect();
        behind.insert(at, event("checklist.item_added", 7));
        tj.journal().append_batch(&behind, Some(&tj.scope())).unwrap();
        let view = store.checklist_view();
        assert_eq!(view.source, ViewSource::Journal, "a checklist event {at} lines after the named one is folded");
        assert_eq!(view.skipped.len(), 1, "at {at}");
    }
    // Neutral lines only, named before the window and inside it: served.
    for lag in [3u64, 30] {
        let tj = TempJournal::new();
        let store = Store::new(tj.journal());
        store.append(&[session_started(1000)], Some(&tj.scope())).unwrap();
        let neutral: Vec<_> = (0..lag).map(session_started).collect();
        tj.journal().append_batch(&neutral, Some(&tj.scope())).unwrap();
        let view = store.checklist_view();
        assert_eq!((view.source, view.head_seq), (ViewSource::Projection, Some(1 + lag)), "{lag} behind");
    }
}

#[test]
fn a_checklist_json_naming_a_window_line_by_another_hash_is_not_served() {
    let tj = TempJournal::new();
    let store = Store::new(tj.journal());
    store.append(&[session_started(1000)], Some(&tj.scope())).unwrap();
    tj.journal().append_batch(&(0..3).map(session_started).collect::<Vec<_>>(), Some(&tj.scope())).unwrap();
    let current = store.current_state().unwrap();
    assert_eq!(current.head.seq, 4);
    // A well-formed checklist.json (right digest) naming seq 3 at its offsets, by a wrong hash.
    let bytes = std::fs::read(&tj.paths.journal).unwrap();
    let lines: Vec<&[u8]> = bytes.split_inclusive(|&b| b == b'\n').collect();
    let offset = lines[..3].iter().map(|l| l.len() as u64).sum::<u64>();
    let wrong = abcd::journal::format::Hash([9; 32]);
    let named = abcd::journal::scan::Head { seq: 3, hash: wrong, offset, end: offset + lines[3].len() as u64 };
    let forged = abcd::store::projection::ChecklistFile::from_state(&current.state, named).render();
    std::fs::write(tj.paths.dir().join(abcd::store::projection::CHECKLIST_FILE), forged).unwrap();
    let view = store.checklist_view();
    assert_eq!(view.source, ViewSource::Journal, "a named line whose hash is not the journal's is not trusted");
}

/// A checklist item as `checklist add` would write it, `edit`ed.
fn item_added(id: &str, edit: impl FnOnce(&mut abcd::checklist::item::ItemFields)) -> abcd::journal::NewEvent {
    let mut item = abcd::checklist::item::ItemFields::working(id, &format!("Item {id}"));
    edit(&mut item);
    abcd::journal::NewEvent { data: serde_json::to_value(abcd::event::ItemAdded { item }).unwrap(), ..event("checklist.item_added", 0) }
}

/// `state` with only the items the prompt hook reads: what its state must equal.
fn as_the_prompt_reads(mut state: abcd::fold::FoldedState) -> abcd::fold::FoldedState {
    state.checklist.items.retain(abcd::store::projection::prompt_reads);
    state
}

#[test]
fn the_prompt_state_is_the_state_with_the_items_the_prompt_reads_and_never_read_past_a_checklist_event() {
    use abcd::checklist::item::ItemState;
    let tj = TempJournal::new();
    let store = Store::new(tj.journal());
    let scope = tj.scope();
    let plan = [
        item_added("plain", |_| {}),
        item_added("names-a-branch", |i| i.owner_refs = vec!["branch:fix".into()]),
        item_added("promises", |i| i.promise = Some("pr:7 merged => add the wrapper".into())),
        item_added("dropped-promise", |i| {
            i.promise = Some("pr:8 merged => tidy".into());
            i.state = ItemState::Dropped;
        }),
        // Free text, written before the grammar: it never fires, so no hook reads it.
        item_added("free-text-promise", |i| i.promise = Some("the tests pass => open the pull request".into())),
    ];
    store.append(&plan, Some(&scope)).unwrap();
    let whole = store.current_state().unwrap();
    assert_eq!(whole.state.checklist.items.len(), 5, "{:?}", whole.state.journal.skipped);
    let prompt = store.prompt_state().expect("written with checklist.json");
    assert_eq!(prompt.head, whole.head);
    let ids: Vec<&str> = prompt.state.checklist.items.iter().map(|i| i.fields.id.as_str()).collect();
    assert_eq!(ids, ["names-a-branch", "promises"]);
    // The checklist's owed part is summed up from every item, not the few kept.
    assert_eq!(prompt.owed, abcd::fold::owed::ChecklistOwed::of(&whole.state.checklist.items, prompt.owed.as_of));
    assert_eq!(prompt.owed.part.count, 4, "every working item is owed: {:?}", prompt.owed);
    assert_eq!(prompt.state, as_the_prompt_reads(whole.state));

    // Events that cannot change the checklist leave the file behind; the read folds them.
    store.append(&[session_started(1), session_started(2)], Some(&scope)).unwrap();
    let prompt = store.prompt_state().expect("folded forward");
    let whole = store.current_state().unwrap();
    assert_eq!((prompt.head, prompt.state), (whole.head, as_the_prompt_reads(whole.state)));

    // A checklist event appended behind the store's back: the items left out could be the
    // ones it changes, so there is no prompt state until the next write.
    tj.journal().append_batch(&[item_added("later", |i| i.owner_refs = vec!["branch:later".into()])], Some(&scope)).unwrap();
    assert!(store.prompt_state().is_none(), "never read past a checklist event");
    store.append(&[session_started(3)], Some(&scope)).unwrap();
    assert!(store.prompt_state().is_none(), "an event that leaves checklist.json behind leaves it too");
    store.append(&[item_added("next", |_| {})], Some(&scope)).unwrap();
    let prompt = store.prompt_state().expect("rewritten with checklist.json");
    assert_eq!(prompt.state, as_the_prompt_reads(store.current_state().unwrap().state));

    // A file holding an item the prompt does not read is not one abcd wrote.
    let path = tj.paths.dir().join(abcd::store::projection::PROMPT_STATE_FILE);
    let mut forged: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let whole: serde_json::Value = serde_json::to_value(store.current_state().unwrap().state).unwrap();
    forged["state"]["checklist"]["items"] = whole["checklist"]["items"].clone();
    std::fs::write(&path, abcd::store::projection::seal_prompt_state_json(&forged)).unwrap();
    assert!(store.prompt_state().is_none(), "a forged file with the plain item");
}

/// `append_with_prompt_state` decides from the prompt's state (the items the hooks read,
/// not the plan), the unlocked read while the head is its line, else one read again under
/// the lock; it leaves the projections behind to the bound, as any hook's append does, and
/// one past the bound brings them to the head; with no prompt state it decides from the
/// whole state.
#[test]
fn an_append_decided_from_the_prompt_state_reads_no_plan_and_leaves_the_projections_to_the_bound() {
    let tj = TempJournal::new();
    let store = Store::new(tj.journal());
    let scope = tj.scope();
    let plan: Vec<_> = (0..10).map(|i| item_added(&format!("plain-{i}"), |_| {})).collect();
    store.append(&plan, Some(&scope)).unwrap();
    store.append(&[item_added("names-a-branch", |i| i.owner_refs = vec!["branch:fix".into()])], Some(&scope)).unwrap();
    let written_at = named(&tj);
    let read = store.prompt_state().expect("written with checklist.json");
    let starts = |state: &abcd::fold::FoldedState| state.journal.by_kind.get("session.started").copied().unwrap_or(0);
    let seen = |state: &abcd::fold::FoldedState| (state.checklist.items.len(), starts(state), state.journal.events);
    let (_, saw, err) = store.append_with_prompt_state(Some(&scope), Some(&read), |s| (vec![session_started(1)], seen(s))).unwrap();
    assert_eq!((saw, err.is_none()), ((1, 0, 12), true), "decided from the read: one item of eleven");
    assert_eq!(named(&tj), written_at, "the projections are left behind");

    // The head moved past the read: the prompt's state is read again under the lock.
    store.append(&[session_started(2)], Some(&scope)).unwrap();
    let (_, saw, _) = store.append_with_prompt_state(Some(&scope), Some(&read), |s| (vec![session_started(3)], seen(s))).unwrap();
    assert_eq!(saw, (1, 2, 14), "the two session starts since the read are seen, the plan is not");

    // Up to the bound past the view, the projections stay behind; one more brings them up.
    let view_at = written_at.1;
    let mut n = 4;
    let lag = bound(&tj);
    while store.current_state().unwrap().head.seq < view_at + lag {
        store.append_with_prompt_state(Some(&scope), None, |_| (vec![session_started(n)], ())).unwrap();
        n += 1;
    }
    assert_eq!(named(&tj).1, view_at, "at the bound the view is still behind");
    store.append_with_prompt_state(Some(&scope), None, |_| (vec![session_started(n)], ())).unwrap();
    let head = store.current_state().unwrap().head.seq;
    assert_eq!(named(&tj), (head, head), "one past the bound rewrites both");

    // No prompt state to be had: the whole state decides.
    std::fs::remove_file(tj.paths.dir().join(abcd::store::projection::PROMPT_STATE_FILE)).unwrap();
    let (_, saw, _) = store.append_with_prompt_state(Some(&scope), None, |s| (vec![], seen(s).0)).unwrap();
    assert_eq!(saw, 11, "the whole plan");
}

/// A working copy journal whose plan is one item, with its projections written.
fn one_item_plan() -> (TempJournal, Store) {
    let tj = TempJournal::new();
    let store = Store::new(tj.journal());
    store.append(&[item_added("one", |_| {})], Some(&tj.scope())).unwrap();
    (tj, store)
}

/// The Stop that finds the owed summary no longer holding (a look fell due) rewrites the
/// view from a whole read (`Store::refresh_view`); the prompt's state then never names a
/// line ahead of `checklist.json`, so appends that measure the view's lag from it keep
/// `checklist.json` within the bound however often looks fall due. Each round stays under the
/// bound (`lag - 2` appends), so only the refresh moves `checklist.json` forward.
#[test]
fn a_view_refreshed_by_a_stop_keeps_checklist_json_within_the_bound() {
    let (tj, store) = one_item_plan();
    let scope = tj.scope();
    let lag = bound(&tj);
    let mut n = 0;
    for _round in 0..8 {
        for _ in 0..lag - 2 {
            let read = store.prompt_state();
            store.append_with_prompt_state(Some(&scope), read.as_ref(), |_| (vec![session_started(n)], ())).unwrap();
            n += 1;
            let head = store.current_state().unwrap().head.seq;
            let (state_at, view_at) = named(&tj);
            assert!(head - view_at <= lag, "checklist.json {} behind at {head}", head - view_at);
            assert!(head - state_at <= 2 * lag, "state.json {} behind at {head}", head - state_at);
        }
        store.refresh_view(&mut store.current_state().unwrap()).unwrap();
    }
}

/// A refresh that rewrote `state.json` (it trailed past the bound) leaves the read it was
/// given naming it as current, so the Stop's append from that read does not write it again.
#[test]
fn a_refresh_that_wrote_state_json_is_not_written_again_by_the_append_from_its_read() {
    use std::os::unix::fs::MetadataExt;
    let (tj, store) = one_item_plan();
    let scope = tj.scope();
    let neutral: Vec<_> = (0..bound(&tj) + 1).map(session_started).collect();
    tj.journal().append_batch(&neutral, Some(&scope)).unwrap();
    let mut read = store.current_state().unwrap();
    store.refresh_view(&mut read).unwrap();
    assert_eq!(named(&tj), (read.head.seq, read.head.seq), "the refresh wrote both at the head");
    let state = tj.paths.dir().join(abcd::store::projection::STATE_FILE);
    let written = std::fs::metadata(&state).unwrap().ino();
    store.append_with_read(Some(&scope), Some(&read), |_| (vec![session_started(0)], ())).unwrap();
    assert_eq!(std::fs::metadata(&state).unwrap().ino(), written, "state.json is left as the refresh wrote it");
}

/// A decision from the prompt's state that would append a checklist event is a bug: the
/// items it lacks could be the ones that event changes.
#[test]
#[should_panic(expected = "appends no event the checklist view shows")]
fn an_append_decided_from_the_prompt_state_never_appends_a_checklist_event() {
    let tj = TempJournal::new();
    let store = Store::new(tj.journal());
    store.append(&[item_added("one", |_| {})], Some(&tj.scope())).unwrap();
    let _ = store.append_with_prompt_state(Some(&tj.scope()), None, |_| (vec![item_added("two", |_| {})], ()));
}
