//! The checklist as text for a hook's context and a person's terminal. Pure: items,
//! notes, a budget and `now` in; a string that fits the budget out. Over budget, whole
//! items are cut (never part of one) and the last line says how many were left out.
//!
//! The render depends on `now` only through whether a next look is due: times are shown
//! as absolute UTC, so a render written at write time stays right until a look falls due.

use jiff::Timestamp;

use crate::checklist::item::ItemState;
use crate::checklist::state::Item;

/// The host's cap on one hook's output (SPEC §3, §5).
pub const HOOK_OUTPUT_CAP_CHARS: usize = 10_000;
/// Kept free for whatever else the same hook prints.
pub const RENDER_MARGIN_CHARS: usize = 500;
pub const DEFAULT_BUDGET_CHARS: usize = HOOK_OUTPUT_CAP_CHARS - RENDER_MARGIN_CHARS;
/// The smallest budget `render --budget` accepts: room for the header and the footer.
pub const MIN_BUDGET_CHARS: usize = 200;
/// Done items `render_order` yields, newest first (the render itself only counts them).
pub const RECENT_DONE_MAX: usize = 5;
/// The header's words before the counts: what abcd keeps and how to change it.
pub const HEADER: &str = "abcd keeps this checklist across compaction; edit: `abcd checklist add|set <id>`.";
/// Between an item's title and each of its details.
const DETAIL_SEP: &str = " · ";

/// Items in render order: working, then waiting, each with the items fired promises
/// became first, then newest first; then the most recently finished done items. Dropped
/// items are not shown.
pub fn render_order(items: &[Item]) -> Vec<&Item> {
    let mut open: Vec<&Item> = items.iter().filter(|i| i.fields.state.is_open()).collect();
    open.sort_by_key(|i| (i.fields.state != ItemState::Working, i.promised_by.is_none(), std::cmp::Reverse(i.added_seq)));
    let mut done: Vec<&Item> = items.iter().filter(|i| i.fields.state == ItemState::Done).collect();
    done.sort_by_key(|i| std::cmp::Reverse(i.changed_seq));
    done.truncate(RECENT_DONE_MAX);
    open.extend(done);
    open
}

/// One item for `abcd checklist` and `show`: a first line with state, id and title, then
/// its details indented, a next look with how far off it is.
pub fn render_item(item: &Item, now: Timestamp) -> String {
    let f = &item.fields;
    let mut out = format!("- [{}] {} — {}\n", f.state.name(), f.id, f.title);
    let details = details(item, |t| {
        let when = if t <= now { "due".to_string() } else { format!("in {}", short_duration((t - now).as_secs())) };
        format!("next look {} ({when})", utc(t))
    });
    if !details.is_empty() {
        out.push_str(&format!("    {}\n", details.join(DETAIL_SEP)));
    }
    out
}

/// One item for the render, on one line: id, title, then its details. A next look reads
/// the same until it falls due.
pub fn render_line(item: &Item, now: Timestamp) -> String {
    let f = &item.fields;
    let details = details(item, |t| if t <= now { format!("look due since {}", utc_short(t)) } else { format!("look {}", utc_short(t)) });
    let mut out = format!("{}: {}", f.id, f.title);
    for d in details {
        out.push_str(DETAIL_SEP);
        out.push_str(&d);
    }
    out.push('\n');
    out
}

/// An item's details in the order both renders show them; `look` words the next look.
fn details(item: &Item, look: impl Fn(Timestamp) -> String) -> Vec<String> {
    let f = &item.fields;
    let mut details = Vec::new();
    if let Some(w) = &f.waits_on {
        details.push(format!("waits on {w}"));
    }
    if let Some(t) = f.next_look {
        details.push(look(t));
    }
    if let Some(by) = &item.promised_by {
        details.push(format!("promised by {} ({} held)", by.id, by.trigger));
    }
    if let Some(p) = &f.promise {
        match &item.promise_fired {
            Some(next) => details.push(format!("promise: {p} (fired: {next})")),
            None => details.push(format!("promise: {p}")),
        }
    }
    if !f.owner_refs.is_empty() {
        details.push(format!("refs: {}", f.owner_refs.join(", ")));
    }
    if let Some(c) = &f.credential {
        let expiry = c.expiry.map(|e| format!(", expires {}", e.strftime("%Y-%m-%d"))).unwrap_or_default();
        details.push(format!("needs credential: {} ({}{expiry})", c.kind, c.scope));
    }
    if let Some(b) = f.blocker {
        details.push(format!("blocked: {} ({})", b.name(), b.words()));
    }
    details
}

fn utc(t: Timestamp) -> String {
    t.strftime("%Y-%m-%d %H:%M UTC").to_string()
}

/// UTC to the minute in RFC 3339's shape, seconds left out.
fn utc_short(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%MZ").to_string()
}

fn short_duration(secs: i64) -> String {
    match secs {
        s if s < 3_600 => format!("{}m", s.max(60) / 60),
        s if s < 86_400 => format!("{}h{:02}m", s / 3_600, (s % 3_600) / 60),
        s => format!("{}d{}h", s / 86_400, (s % 86_400) / 3_600),
    }
}

fn footer(left_out: usize) -> String {
    format!("({left_out} more item{} not shown; run `abcd checklist` to see them)\n", if left_out == 1 { "" } else { "s" })
}

/// The render in its parts, each already cut to the budget; `text()` joins them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rendered {
    /// The one header line: what abcd keeps, how to change it, the counts.
    pub header: String,
    /// One `! ` line per note that fits.
    pub notes: String,
    /// The working items shown, under their section line.
    pub working: String,
    /// The waiting items shown, under their section line.
    pub waiting: String,
    /// The done line (a count, and the newest few by id and title).
    pub done: String,
    /// What was left out and how to see it; empty when nothing was.
    pub footer: String,
}

impl Rendered {
    pub fn text(&self) -> String {
        [&self.header, &self.notes, &self.working, &self.waiting, &self.done, &self.footer].into_iter().map(String::as_str).collect()
    }
}

/// Which part a unit of the render goes to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Working,
    Waiting,
    Done,
}

/// Renders within `budget` characters (counted as chars, as the host counts them).
/// `notes` are one-line remarks (a fallback, skipped events) shown after the header.
pub fn render(items: &[Item], notes: &[String], budget: usize, now: Timestamp) -> String {
    render_parts(items, notes, budget, now).text()
}

/// `render`, in its parts.
pub fn render_parts(items: &[Item], notes: &[String], budget: usize, now: Timestamp) -> Rendered {
    let ordered = render_order(items);
    let open: Vec<&Item> = ordered.iter().copied().filter(|i| i.fields.state.is_open()).collect();
    let count = |state: ItemState| items.iter().filter(|i| i.fields.state == state).count();
    let mut out = Rendered { header: format!("{HEADER}\n"), ..Default::default() };
    // The units cut whole, each with the items it stands for: each open item (the first
    // of a section carries its section's line), then the done line.
    let mut units: Vec<(Part, String, usize)> = Vec::new();
    for (n, item) in open.iter().enumerate() {
        let state = item.fields.state;
        let part = if state == ItemState::Working { Part::Working } else { Part::Waiting };
        let mut text = String::new();
        if n == 0 || open[n - 1].fields.state != state {
            text.push_str(&format!("{} ({}):\n", state.name(), count(state)));
        }
        text.push_str(&render_line(item, now));
        units.push((part, text, 1));
    }
    // Done items are counted, not listed: `abcd checklist` lists them.
    let done = count(ItemState::Done);
    if done > 0 {
        units.push((Part::Done, format!("done ({done})\n"), done));
    }
    let total = units.len();
    // Items from each unit on: what the footer counts when the render stops there.
    let mut rest_items = vec![0usize; total + 1];
    for i in (0..total).rev() {
        rest_items[i] = rest_items[i + 1] + units[i].2;
    }
    let mut used = out.header.chars().count();
    for n in notes {
        let line = format!("! {n}\n");
        let len = line.chars().count();
        if used + len + footer(rest_items[0]).chars().count() <= budget {
            out.notes.push_str(&line);
            used += len;
        }
    }
    if units.is_empty() {
        out.working.push_str("(no open items)\n");
        return out;
    }
    let lens: Vec<usize> = units.iter().map(|(_, t, _)| t.chars().count()).collect();
    // Suffix sums: what every unit from here on costs, to know when the rest fits whole.
    let mut rest_cost = vec![0usize; total + 1];
    for i in (0..total).rev() {
        rest_cost[i] = rest_cost[i + 1] + lens[i];
    }
    let push = |out: &mut Rendered, (part, text, _): &(Part, String, usize)| match part {
        Part::Working => out.working.push_str(text),
        Part::Waiting => out.waiting.push_str(text),
        Part::Done => out.done.push_str(text),
    };
    for shown in 0..total {
        if used + rest_cost[shown] <= budget {
            units[shown..].iter().for_each(|u| push(&mut out, u));
            return out;
        }
        // Not everything fits: show this one only if the footer still fits after it.
        if used + lens[shown] + footer(rest_items[shown + 1]).chars().count() > budget {
            out.footer = footer(rest_items[shown]);
            return out;
        }
        push(&mut out, &units[shown]);
        used += lens[shown];
    }
    out
}

/// Between the away block and the checklist.
pub const BLOCK_SEP: &str = "\n\n";

/// What the session-start hook injects, in its parts: the away block (while away, with
/// its separator), then the render within what the block leaves of the budget.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Context {
    pub away: String,
    pub render: Rendered,
}

impl Context {
    pub fn text(&self) -> String {
        format!("{}{}", self.away, self.render.text())
    }
}

/// The away block, if any, and the render within `budget` less the block (never less
/// than [`MIN_BUDGET_CHARS`]).
pub fn context_parts(away_block: Option<&str>, items: &[Item], notes: &[String], budget: usize, now: Timestamp) -> Context {
    let away = away_block.map(|b| format!("{b}{BLOCK_SEP}")).unwrap_or_default();
    let left = budget.saturating_sub(away.chars().count()).max(MIN_BUDGET_CHARS);
    Context { render: render_parts(items, notes, left, now), away }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checklist::item::ItemFields;
    use quickcheck::{Arbitrary, Gen, QuickCheck};

    fn item(n: u64, state: ItemState, title: &str) -> Item {
        let t: Timestamp = "2026-11-30T08:00:00Z".parse().unwrap();
        Item {
            fields: ItemFields {
                id: format!("item-{n}"),
                title: title.into(),
                state,
                waits_on: None,
                next_look: None,
                promise: None,
                owner_refs: vec![],
                credential: None,
                blocker: None,
            },
            created_at: t,
            updated_at: t,
            added_seq: n,
            changed_seq: n,
            promise_fired: None,
            promised_by: None,
        }
    }

    fn now() -> Timestamp {
        "2026-11-30T09:00:00Z".parse().unwrap()
    }

    fn item_lines(text: &str) -> usize {
        text.lines().filter(|l| l.starts_with("item-")).count()
    }

    #[test]
    fn open_items_come_first_working_then_waiting_newest_first() {
        let items = vec![
            item(1, ItemState::Waiting, "old waiting"),
            item(2, ItemState::Working, "old working"),
            item(3, ItemState::Done, "done one"),
            item(4, ItemState::Working, "new working"),
            item(5, ItemState::Dropped, "dropped"),
            item(6, ItemState::Waiting, "new waiting"),
        ];
        let order: Vec<u64> = render_order(&items).iter().map(|i| i.added_seq).collect();
        assert_eq!(order, vec![4, 2, 6, 1, 3]);
        let text = render(&items, &[], DEFAULT_BUDGET_CHARS, now());
        assert_eq!(
            text,
            format!(
                "{HEADER}\nworking (2):\nitem-4: new working\nitem-2: old working\nwaiting (2):\nitem-6: new waiting\nitem-1: old waiting\ndone (1)\n"
            )
        );
    }

    #[test]
    fn an_item_line_carries_every_detail_and_a_look_in_utc() {
        let mut waiting = item(7, ItemState::Waiting, "Review of the auth refactor");
        waiting.fields.waits_on = Some("pr:412".into());
        waiting.fields.next_look = Some("2026-11-30T12:30:00Z".parse().unwrap());
        waiting.fields.promise = Some("approved => merge".into());
        waiting.fields.owner_refs = vec!["feat/auth".into()];
        assert_eq!(
            render_line(&waiting, now()),
            "item-7: Review of the auth refactor · waits on pr:412 · look 2026-11-30T12:30Z · promise: approved => merge · refs: feat/auth\n"
        );
        let due = "2026-11-30T12:30:00Z".parse().unwrap();
        assert!(render_line(&waiting, due).contains(" · look due since 2026-11-30T12:30Z · "));
    }

    /// The render reads `now` only to know whether a look is due: any two instants on
    /// the same side of every look give the same text.
    #[test]
    fn the_render_changes_with_now_only_when_a_look_falls_due() {
        let look: Timestamp = "2026-11-30T12:30:00Z".parse().unwrap();
        let mut items: Vec<Item> = (0..3).map(|n| item(n, ItemState::Waiting, "wait for it")).collect();
        items[1].fields.next_look = Some(look);
        let at = |t: &str| render(&items, &[], DEFAULT_BUDGET_CHARS, t.parse().unwrap());
        let before = at("2026-11-29T00:00:00Z");
        assert_eq!(before, at("2026-11-30T12:29:59Z"));
        assert_ne!(before, at("2026-11-30T12:30:00Z"), "the look falls due");
        assert_eq!(at("2026-11-30T12:30:00Z"), at("2027-06-01T00:00:00Z"));
    }

    #[test]
    fn three_hundred_long_items_fit_the_budget_and_name_what_was_left_out() {
        let items: Vec<Item> = (0..300).map(|n| item(n, ItemState::Working, &"long title words ".repeat(11)[..187])).collect();
        for budget in [MIN_BUDGET_CHARS, 1_000, DEFAULT_BUDGET_CHARS] {
            let text = render(&items, &[], budget, now());
            assert!(text.chars().count() <= budget, "{} > {budget}", text.chars().count());
            let shown = item_lines(&text);
            assert!(text.ends_with(&footer(300 - shown)), "{text}");
            // Newest first: the first shown item is the last added.
            if shown > 0 {
                assert!(text.contains("\nitem-299: "));
            }
        }
    }

    #[test]
    fn the_budget_edge_holds_on_both_sides() {
        let items: Vec<Item> = (0..3).map(|n| item(n, ItemState::Working, "a title as long as a real one")).collect();
        let full = render(&items, &[], usize::MAX, now());
        let exact = full.chars().count();
        assert!(exact > MIN_BUDGET_CHARS, "the edge is one `render --budget` accepts");
        assert_eq!(render(&items, &[], exact, now()), full, "a budget of exactly the full size cuts nothing");
        let cut = render(&items, &[], exact - 1, now());
        assert!(cut.chars().count() < exact && cut.contains("more item"), "{cut}");
    }

    #[test]
    fn the_parts_join_to_the_text_and_the_block_counts_against_the_budget() {
        let mut items: Vec<Item> = (0..40).map(|n| item(n, ItemState::Working, "a title of some thirty characters")).collect();
        items[3].fields.state = ItemState::Waiting;
        items[4].fields.state = ItemState::Done;
        let notes = vec!["a note".to_string()];
        let block = "b".repeat(700);
        let context = context_parts(Some(&block), &items, &notes, 1_500, now());
        let text = context.text();
        assert!(text.starts_with(&format!("{block}{BLOCK_SEP}{HEADER}\n! a note\nworking (38):\n")), "{text}");
        assert!(text.chars().count() <= 1_500, "{}", text.chars().count());
        let r = &context.render;
        assert_eq!(
            text,
            [&context.away, &r.header, &r.notes, &r.working, &r.waiting, &r.done, &r.footer].into_iter().cloned().collect::<String>()
        );
        assert!(r.waiting.is_empty() && r.done.is_empty(), "cut from the end: {r:?}");
        assert_eq!(r.footer, footer(40 - item_lines(&r.working)));
        // A block that leaves less than the smallest budget still leaves the smallest.
        let huge = context_parts(Some(&"b".repeat(2_000)), &items, &notes, 1_500, now());
        assert!(huge.render.text().chars().count() <= MIN_BUDGET_CHARS);
        assert!(huge.render.footer.contains("more items"));
    }

    /// An item of any shape, from the ones the field rules allow.
    #[derive(Clone, Debug)]
    struct AnyItem(Item);

    impl Arbitrary for AnyItem {
        fn arbitrary(g: &mut Gen) -> AnyItem {
            let n = u64::from(u16::arbitrary(g));
            let state = *g.choose(&ItemState::ALL).unwrap();
            let title_len = usize::from(u8::arbitrary(g)) % 200 + 1;
            let mut it = item(n, state, &"é".repeat(title_len));
            let words = |g: &mut Gen, max: usize| "w".repeat(usize::from(u16::arbitrary(g)) % max + 1);
            if bool::arbitrary(g) {
                it.fields.promise = Some(format!("{} => {}", words(g, 190), words(g, 190)));
            }
            if bool::arbitrary(g) {
                it.fields.next_look = Some(now() + jiff::SignedDuration::from_mins(i64::from(i16::arbitrary(g))));
            }
            if bool::arbitrary(g) {
                it.fields.waits_on = Some(format!("slot:{}", words(g, 190)));
            }
            AnyItem(it)
        }
    }

    #[test]
    fn the_render_never_exceeds_its_budget() {
        fn prop(items: Vec<AnyItem>, notes: Vec<u8>, budget: u16) -> bool {
            let items: Vec<Item> = items.into_iter().map(|a| a.0).collect();
            let notes: Vec<String> = notes.iter().map(|n| "n".repeat(usize::from(*n))).collect();
            let budget = MIN_BUDGET_CHARS + usize::from(budget) % (HOOK_OUTPUT_CAP_CHARS - MIN_BUDGET_CHARS + 1);
            let text = render(&items, &notes, budget, now());
            let shown = text.lines().filter(|l| l.starts_with("item-")).count();
            let listed = items.iter().filter(|i| i.fields.state.is_open()).count();
            let cut = text.lines().last().is_some_and(|l| l.ends_with("to see them)"));
            text.chars().count() <= budget && (cut || shown == listed)
        }
        let cases = std::env::var("ABCD_QUICKCHECK_TESTS").ok().and_then(|v| v.parse().ok()).unwrap_or(200);
        QuickCheck::new().tests(cases).quickcheck(prop as fn(Vec<AnyItem>, Vec<u8>, u16) -> bool);
    }
}
