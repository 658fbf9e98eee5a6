//! The checklist as text for a hook's context and a person's terminal. Pure: items,
//! notes, a budget and `now` in; a string that fits the budget out. Over budget, whole
//! items are cut (never part of one) and the last line says how many were left out.

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
/// Done items shown after the open ones, newest first.
pub const RECENT_DONE_MAX: usize = 5;

/// Items in render order: working, then waiting, each newest first; then the most
/// recently finished done items. Dropped items are not shown.
pub fn render_order(items: &[Item]) -> Vec<&Item> {
    let mut open: Vec<&Item> = items.iter().filter(|i| i.fields.state.is_open()).collect();
    open.sort_by_key(|i| (i.fields.state != ItemState::Working, std::cmp::Reverse(i.added_seq)));
    let mut done: Vec<&Item> = items.iter().filter(|i| i.fields.state == ItemState::Done).collect();
    done.sort_by_key(|i| std::cmp::Reverse(i.changed_seq));
    done.truncate(RECENT_DONE_MAX);
    open.extend(done);
    open
}

/// One item: a first line with state, id and title, then its details indented.
pub fn render_item(item: &Item, now: Timestamp) -> String {
    let f = &item.fields;
    let mut out = format!("- [{}] {} — {}\n", f.state.name(), f.id, f.title);
    let mut details = Vec::new();
    if let Some(w) = &f.waits_on {
        details.push(format!("waits on {w}"));
    }
    if let Some(t) = f.next_look {
        let when = if t <= now { "due".to_string() } else { format!("in {}", short_duration((t - now).as_secs())) };
        details.push(format!("next look {} ({when})", t.strftime("%Y-%m-%d %H:%M UTC")));
    }
    if let Some(p) = &f.promise {
        details.push(format!("promise: {p}"));
    }
    if !f.owner_refs.is_empty() {
        details.push(format!("refs: {}", f.owner_refs.join(", ")));
    }
    if let Some(c) = &f.credential {
        let expiry = c.expiry.map(|e| format!(", expires {}", e.strftime("%Y-%m-%d"))).unwrap_or_default();
        details.push(format!("needs credential: {} ({}{expiry})", c.kind, c.scope));
    }
    if !details.is_empty() {
        out.push_str(&format!("    {}\n", details.join(" · ")));
    }
    out
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

/// Renders within `budget` characters (counted as chars, as the host counts them).
/// `notes` are one-line remarks (a fallback, skipped events) shown first.
pub fn render(items: &[Item], notes: &[String], budget: usize, now: Timestamp) -> String {
    let ordered = render_order(items);
    let open = ordered.iter().filter(|i| i.fields.state.is_open()).count();
    let mut out = format!("abcd checklist: {open} open, {} recently done\n", ordered.len() - open);
    for n in notes {
        let line = format!("! {n}\n");
        if out.chars().count() + line.chars().count() + footer(ordered.len()).chars().count() <= budget {
            out.push_str(&line);
        }
    }
    if ordered.is_empty() {
        out.push_str("(no open items)\n");
        return out;
    }
    let texts: Vec<(String, usize)> = ordered
        .iter()
        .map(|i| render_item(i, now))
        .map(|t| {
            let n = t.chars().count();
            (t, n)
        })
        .collect();
    // Suffix sums: what every item from here on costs, to know when the rest fits whole.
    let mut rest_cost = vec![0usize; texts.len() + 1];
    for i in (0..texts.len()).rev() {
        rest_cost[i] = rest_cost[i + 1] + texts[i].1;
    }
    let mut used = out.chars().count();
    for (shown, (text, len)) in texts.iter().enumerate() {
        if used + rest_cost[shown] <= budget {
            texts[shown..].iter().for_each(|(t, _)| out.push_str(t));
            return out;
        }
        // Not everything fits: show this one only if the footer still fits after it.
        if used + len + footer(texts.len() - shown - 1).chars().count() > budget {
            out.push_str(&footer(texts.len() - shown));
            return out;
        }
        out.push_str(text);
        used += len;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checklist::item::ItemFields;

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
            },
            created_at: t,
            updated_at: t,
            added_seq: n,
            changed_seq: n,
        }
    }

    fn now() -> Timestamp {
        "2026-11-30T09:00:00Z".parse().unwrap()
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
    }

    #[test]
    fn three_hundred_long_items_fit_the_budget_and_name_what_was_left_out() {
        let items: Vec<Item> = (0..300).map(|n| item(n, ItemState::Working, &"long title words ".repeat(11)[..187])).collect();
        for budget in [MIN_BUDGET_CHARS, 1_000, DEFAULT_BUDGET_CHARS] {
            let text = render(&items, &[], budget, now());
            assert!(text.chars().count() <= budget, "{} > {budget}", text.chars().count());
            let shown = text.lines().filter(|l| l.starts_with("- [")).count();
            assert!(text.ends_with(&footer(300 - shown)), "{text}");
            // Newest first: the first shown item is the last added.
            if shown > 0 {
                assert!(text.contains("- [working] item-299 "));
            }
        }
    }

    #[test]
    fn the_budget_edge_holds_on_both_sides() {
        let items: Vec<Item> = (0..3).map(|n| item(n, ItemState::Working, "short")).collect();
        let full = render(&items, &[], usize::MAX, now());
        let exact = full.chars().count();
        assert_eq!(render(&items, &[], exact, now()), full, "a budget of exactly the full size cuts nothing");
        let cut = render(&items, &[], exact - 1, now());
        assert!(cut.chars().count() < exact && cut.contains("more item"), "{cut}");
    }
}
