//! Design-done (issue 35): a trade-off decision tied to a checklist item (`abcd decide
//! --tradeoff KIND --item <id>`), the person's answer to it (`abcd decide --answer <seq>
//! keep|undo`), and `abcd checklist design-done <id>`, yes only when every trade-off tied
//! to the item has an answer. The trade-offs and answers are the repository journal's (the
//! away family's); the item is the working copy's checklist's, so design-done reads both.

use serde_json::json;

use super::away::{PersonOnly, Repository, item_held, named, read_record};
use super::{CommandError, caller_event};
pub use crate::away::text::answer_command;
use crate::away::{Answer, DecisionAnswered, TradeoffRecord};
use crate::event;
use crate::places::Place;
use crate::refusal::{Refusal, RefusalKind as K};

/// `abcd decide --answer`: what was answered, and the answer it replaces, if any.
pub struct Answered {
    pub record: TradeoffRecord,
    pub replaced: Option<Answer>,
    pub seq: Option<u64>,
}

/// The person's answer to the trade-off recorded at `seq`. Only the person's route: a
/// process a host's tool started is refused by the refusal the away mode's verbs give
/// (`away::refuse_person_only`). A later answer replaces an earlier one (the journal keeps both).
pub fn answer(
    repo: &Repository,
    seq_text: &str,
    answer_text: &str,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<Answered, CommandError> {
    // The seq is named only when it is one: a pasted secret is never repeated.
    let shown_seq = seq_text.parse::<u64>().map_or("<seq>".to_string(), |n| n.to_string());
    let command = format!("abcd decide --answer {shown_seq} keep|undo");
    super::away::refuse_person_only(PersonOnly { command: &command, act: "answers a trade-off", unchanged: "nothing was written" }, var)?;
    let names: Vec<&str> = Answer::ALL.iter().map(|a| a.name()).collect();
    let Some(answer) = Answer::parse(answer_text) else {
        return Err(Refusal::new(K::BadValue, "decide --answer", format!("an answer is {}", names.join(" or ")))
            .nothing_written()
            .instead("run `abcd decide --answer <seq> keep` to keep the trade-off, or `… undo` to have it undone")
            .into());
    };
    let not_tradeoff = |seq: &str| {
        CommandError::from(
            Refusal::new(
                K::DecisionState,
                "decide --answer",
                format!("seq {seq} is not a trade-off decision of this repository, so there is nothing to answer"),
            )
            .nothing_written()
            .instead(
                "`abcd mode back` and the return lists print each trade-off with its seq, and `abcd checklist design-done <id>` the ones an item waits on",
            ),
        )
    };
    let seq: u64 = match seq_text.parse() {
        Ok(n) => n,
        // A seq is digits; anything else is not repeated (it may be a pasted secret).
        Err(_) => return Err(not_tradeoff("(the one given, not a number)")),
    };
    let data = DecisionAnswered { seq, answer, working_copy: repo.working_copy.clone() };
    let written = repo.store.append_with(Some(&repo.scope), |state| match state.away.tradeoff_at(seq) {
        None => (vec![], None),
        Some(t) => (vec![caller_event(event::DECISION_ANSWERED, json!(data))], Some((t.clone(), t.answer))),
    })?;
    let Some((mut record, replaced)) = written.outcome else {
        return Err(not_tradeoff(&seq.to_string()));
    };
    record.answer = Some(answer);
    Ok(Answered { record, replaced, seq: written.appended.first().map(|a| a.seq) })
}

/// `abcd checklist design-done <id>`: every trade-off tied to the item, each with its
/// answer when given.
pub struct DesignDone {
    pub item: String,
    pub tradeoffs: Vec<TradeoffRecord>,
}

impl DesignDone {
    /// Yes when every tied trade-off has an answer (none tied: yes).
    pub fn done(&self) -> bool {
        self.tradeoffs.iter().all(|t| t.answer.is_some())
    }

    pub fn unanswered(&self) -> impl Iterator<Item = &TradeoffRecord> {
        self.tradeoffs.iter().filter(|t| t.answer.is_none())
    }
}

pub fn design_done(place: &Place, item: &str) -> Result<DesignDone, CommandError> {
    if !item_held(place, item)? {
        return Err(Refusal::new(
            K::NotFound,
            "checklist design-done",
            format!("no checklist item{} in this working copy, so there is no design to be done", named(item)),
        )
        .instead("run `abcd checklist` to see the ids")
        .into());
    }
    let repo = super::away::open_repository(place)?;
    let record = read_record(&repo)?;
    let tradeoffs = record.tied_to(&repo.working_copy, item).cloned().collect();
    Ok(DesignDone { item: item.to_string(), tradeoffs })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::away::check_tied_item;
    use crate::command::checklist::{AddRequest, CredentialInput, add};
    use crate::journal::storage::RealDisk;
    use crate::places::tests::Folder;
    use crate::store::Store;

    fn add_item(place: &Place, title: &str) -> String {
        let (paths, scope) = place.working_copy().unwrap();
        let store = Store::new(place.open_scoped_for_verb(RealDisk::shared(), paths, &scope).unwrap());
        let request = AddRequest {
            title: title.into(),
            waits_on: None,
            next_look: None,
            promise: None,
            owner_refs: vec![],
            credential: CredentialInput::default(),
            blocker: None,
        };
        let now = || Ok(jiff::Timestamp::from_second(1_800_000_000).unwrap().to_zoned_datetime(jiff::tz::TimeZone::UTC));
        add(&store, &scope, request, &now, None).unwrap().id
    }

    #[test]
    fn an_item_is_tied_only_when_the_places_checklist_holds_it() {
        let f = Folder::managed();
        let place = f.place("");
        let id = add_item(&place, "Pick the storage engine");
        assert!(check_tied_item(&place, &id, true).is_ok());
        let unknown = check_tied_item(&place, "no-such-item", true).unwrap_err();
        assert_eq!(unknown.blame(), crate::command::Blame::Refused, "{unknown:?}");
        // Held, but with no trade-off to tie: refused all the same.
        let untraded = check_tied_item(&place, &id, false).unwrap_err();
        assert_eq!(untraded.blame(), crate::command::Blame::Refused, "{untraded:?}");
        // Another working copy's checklist does not hold it.
        let other = Folder::managed();
        assert!(check_tied_item(&other.place(""), &id, true).is_err());
    }
}
