//! How a request ends: a tab answers or declines, the deadline passes, or the agent withdraws.
//!
//! Every ending takes the same path. Under the lock, the first ending to find the request
//! `Open` wins and moves it to `Resolving` (rivals wait); with the lock released, the
//! resolution is committed to the store; under the lock again, it becomes `Resolved` and is
//! announced: `resolved` to every tab, `outcome` to the waiting agent, "already resolved" to
//! the rivals. Should the store fail, the request is `Open` again and a rival may take it.
//!
//! A local store always keeps the winner the hub chose. A shared store may say otherwise:
//! another node's ending won first (`Lost`: that one is announced, and this one refused as
//! "already resolved"), the deadline has not come by its clock (`Early`: the request opens
//! again and its timer is set for what is left), or the request is gone (acknowledged
//! elsewhere). A notice of another node's ending may also have been applied while this one was
//! in flight; then the request is already `Resolved`, and nothing is announced twice.

use std::sync::Arc;
use std::time::Duration;

use askgate_protocol::approval::quorum;
use askgate_protocol::wire::ToTab;
use askgate_protocol::{
    ErrorCode, FieldError, Outcome, RequestId, SessionId, TabId, ValidationErrors,
};
use serde_json::Value;

use super::Hub;
use super::auditing::counted_refusals;
use super::peers::frame::Frame;
use super::peers::links::TabHandle;
use super::request::EntryState;
use super::rules::{self, RuleChanges, RulesToMake};
use super::session::Session;
use super::voting::{self, Counted, VoteCast};
use crate::audit::{Note, RULE_BY_PREFIX};
use crate::clock::now_ms;
use crate::metrics::count;
use crate::notify::RequestFacts;
use crate::people::{KeyRefusal, NotAllowed, Person};
use crate::store::{StoreError, StoreOp, StoredResolution, Verdict};

/// How long a request whose deadline passed waits before timing out again, when the store
/// could not keep its timing out.
pub(super) const STORE_RETRY: Duration = Duration::from_secs(1);

/// How many times a vote is counted again when other nodes' votes came first.
const MAX_RECOUNTS: usize = 8;

/// How a request is ending.
#[derive(Debug)]
pub(super) enum Ending {
    /// A person's answer (checked against the questions under the lock), from a tab, or
    /// without one (`tab: None`: a mail's link, which names the asking it was made for in
    /// `asked_at_ms`, so that it cannot land on a later asking of the same id).
    Answer {
        tab: Option<TabId>,
        person: Person,
        response: Value,
        asked_at_ms: Option<u64>,
    },
    /// A tab declined, or with `dismiss` put it aside.
    Decline {
        tab: Option<TabId>,
        person: Person,
        dismiss: bool,
    },
    /// The deadline passed.
    TimedOut,
    /// Withdrawn: by its agent, an operator, or the gateway (`via` says which).
    Withdrawn { via: askgate_protocol::wire::Via },
    /// Remembered rules approved every call when it was asked (its `ruled`).
    ByRule,
    /// The votes kept on a request with a quorum decide every call, and its ending was not
    /// made: made now, as by the last voter.
    Decided,
}

/// What trying to end a request came to.
enum Begun {
    /// This ending won here: its resolution, when the request was asked, its deadline, how
    /// it ends instead should the store find it late, the refusals the session's tabs were
    /// counting on it, to record, and (when people are notified) what the request is.
    Won(Box<Won>),
    /// Another ending is being stored: wait until it is kept or fails.
    Wait(tokio::sync::futures::OwnedNotified),
    /// A vote on a request with a quorum that decided nothing: to keep.
    Voted(Box<VoteCast>),
}

/// What a winning ending takes from under the lock (see [`Begun::Won`]).
type Won = (
    StoredResolution,
    u64,
    Option<u64>,
    Option<StoredResolution>,
    Vec<Note<'static>>,
    Option<RequestFacts>,
    Vec<StoreOp>,
    Option<RulesToMake>,
);

/// A resolution being committed, and what announcing it needs.
struct Resolution {
    pub(super) session: SessionId,
    pub(super) id: RequestId,
    pub(super) resolution: StoredResolution,
    pub(super) asked_at_ms: u64,
    pub(super) deadline_ms: Option<u64>,
    /// Where the `Resolve` is among the ops committed (a deciding vote's come first).
    pub(super) resolve_at: usize,
    /// The rules the answer made, riding in its commit: held here once it is kept.
    pub(super) rules: Vec<(String, Vec<String>, askgate_protocol::approval::rules::Rule)>,
    /// A deciding vote's: the votes it was counted on.
    pub(super) counted_on: Vec<askgate_protocol::approval::Vote>,
}

/// Why an ending did not take.
#[derive(Debug)]
pub(super) enum Refusal {
    /// No such request.
    Unknown,
    /// Another ending won first.
    AlreadyResolved,
    /// The answer does not fit the questions; the request stays open.
    DoesNotFit(ValidationErrors),
    /// This person may not answer this request; the request stays open.
    Forbidden(NotAllowed),
    /// The tab's personal link has expired: it is no one now, and the request stays open.
    LinkExpired,
    /// The store could not keep the resolution; the request stays open.
    Store(String),
    /// A vote was counted on votes that changed before it was kept (another node's vote
    /// came first): to count again.
    Recount,
}

impl Refusal {
    pub(super) fn into_errors(self) -> Vec<FieldError> {
        match self {
            Refusal::Unknown => vec![FieldError::new(
                "id",
                ErrorCode::InvalidValue,
                "no open request with this id",
            )],
            Refusal::AlreadyResolved => {
                vec![FieldError::new(
                    "id",
                    ErrorCode::InvalidValue,
                    "already resolved",
                )]
            }
            Refusal::DoesNotFit(errors) => errors.into_vec(),
            Refusal::Forbidden(why) => {
                vec![FieldError::new("", ErrorCode::Forbidden, why.message())]
            }
            Refusal::LinkExpired => vec![FieldError::new(
                "",
                ErrorCode::Forbidden,
                KeyRefusal::Expired.reason(),
            )],
            Refusal::Store(error) => vec![FieldError::new(
                "",
                ErrorCode::Unavailable,
                format!("the gateway could not save the answer ({error}); try again"),
            )],
            Refusal::Recount => vec![FieldError::new(
                "",
                ErrorCode::Unavailable,
                "other votes kept coming in while this one was counted; try again",
            )],
        }
    }
}

impl TabHandle {
    /// An `answer` from this tab. `None` if it won; else why not.
    pub async fn answer(&self, id: &str, response: Value) -> Option<Rejected> {
        let ending = Ending::Answer {
            tab: Some(self.tab.clone()),
            person: self.person.clone(),
            response,
            asked_at_ms: None,
        };
        self.end(id, "answer", ending).await
    }

    /// A `decline` from this tab (with `dismiss`: put aside, not refused). `None` if it won;
    /// else why not.
    pub async fn decline(&self, id: &str, dismiss: bool) -> Option<Rejected> {
        self.end(
            id,
            "decline",
            Ending::Decline {
                tab: Some(self.tab.clone()),
                person: self.person.clone(),
                dismiss,
            },
        )
        .await
    }

    async fn end(&self, id: &str, action: &'static str, ending: Ending) -> Option<Rejected> {
        let refusal = match RequestId::parse(id) {
            Ok(request) => self
                .hub
                .resolve(&self.session, &request, ending)
                .await
                .err()?,
            Err(_) => Refusal::Unknown,
        };
        count(&self.hub.metrics.rejected_answers);
        if let Refusal::Forbidden(why) = &refusal {
            self.record_refusal(id, action, why).await;
        }
        let for_who = matches!(refusal, Refusal::Forbidden(_) | Refusal::LinkExpired);
        Some(Rejected {
            frame: Frame::encode(&ToTab::AnswerRejected {
                id: id.to_owned(),
                errors: refusal.into_errors(),
            }),
            for_who,
        })
    }
}

/// An answer or decline that did not end its request.
pub struct Rejected {
    /// The `answer_rejected` frame for the tab.
    pub frame: Frame,
    /// Refused because of who sent it (not an answerer, no identity, an expired link): what
    /// a tab that keeps sending costs the trail, unlike a race lost to another tab or an
    /// answer that does not fit, which every page meets in ordinary use.
    pub for_who: bool,
}

impl Hub {
    /// Ends a request, if it is still open. A withdrawal is answered with how it ended, as
    /// stored (the agent's `cancel` and `DELETE` return it); other endings with nothing, so
    /// no copy of a long answer is made for it under the lock.
    pub(super) async fn resolve(
        self: &Arc<Self>,
        session: &SessionId,
        id: &RequestId,
        ending: Ending,
    ) -> Result<Option<StoredResolution>, Refusal> {
        let mut recounts = 0;
        loop {
            match self.resolve_once(session, id, &ending).await {
                // Another node's vote came first: counted again on the votes as they are now.
                Err(Refusal::Recount) if recounts < MAX_RECOUNTS => recounts += 1,
                ended => return ended,
            }
        }
    }

    /// [`resolve`](Self::resolve), once: a vote counted on votes that changed meanwhile (on
    /// another node) is refused as [`Refusal::Recount`], its request open again with the
    /// votes as they are.
    async fn resolve_once(
        self: &Arc<Self>,
        session: &SessionId,
        id: &RequestId,
        ending: &Ending,
    ) -> Result<Option<StoredResolution>, Refusal> {
        let (resolution, asked_at_ms, deadline_ms, if_late, counted, facts, deciding_vote, to_make) = loop {
            match self.begin_ending(session, id, ending)? {
                Begun::Won(won) => break *won,
                Begun::Wait(settled) => settled.await,
                Begun::Voted(cast) => {
                    return self.keep_vote(session, id, *cast).await.map(|()| None);
                }
            }
        };
        let late = if_late.as_ref().map(|late| StoredResolution {
            at_ms: now_ms(),
            ..late.clone()
        });
        let notify = self
            .notifier
            .as_ref()
            .zip(facts)
            .and_then(|(notifier, facts)| notifier.resolved(&facts, &resolution, late.as_ref()));
        // A deciding vote's trail entry comes before the ending it makes.
        let resolve_at = deciding_vote.len();
        let deciding_vote_counted_on = deciding_vote.iter().find_map(|op| match op {
            StoreOp::Vote { counted_on, .. } => Some(counted_on.clone()),
            _ => None,
        });
        let mut ops = deciding_vote;
        ops.push(StoreOp::Resolve {
            session: session.clone(),
            id: id.clone(),
            resolution: resolution.clone(),
            if_late,
        });
        ops.extend(notify.clone());
        // The rules the answer asked for ride after it: made only with it.
        let rules = match to_make {
            Some(to_make) => self.rule_changes(to_make).await,
            None => RuleChanges::default(),
        };
        let made_rules = !rules.ops.is_empty();
        let counted_on = deciding_vote_counted_on.unwrap_or_default();
        ops.extend(rules.ops);
        let ending = Resolution {
            session: session.clone(),
            id: id.clone(),
            resolution,
            asked_at_ms,
            deadline_ms,
            resolve_at,
            rules: rules.book,
            counted_on,
        };
        let ended = self
            .commit_then(ops, move |hub, committed| {
                hub.finish_resolve(ending, committed)
            })
            .await
            .unwrap_or_else(|error| Err(Refusal::Store(error.to_string())));
        if let (Some(notifier), Some(op)) = (&self.notifier, notify) {
            if ended.is_ok() {
                notifier.committed(op);
            } else {
                notifier.not_committed(op);
            }
        }
        if ended.is_ok() && made_rules {
            self.tell_rules(session).await;
        }
        // After the ending, whether it was kept or not: the counts are of what happened.
        self.record_notes(counted).await;
        ended
    }

    /// Wins the request for `ending` if it is open (under the lock), or says what to wait
    /// for. A tab's link expiry is judged first, before the lock is taken.
    fn begin_ending(
        &self,
        session: &SessionId,
        id: &RequestId,
        ending: &Ending,
    ) -> Result<Begun, Refusal> {
        if let Ending::Answer { person, .. } | Ending::Decline { person, .. } = ending
            && person.expired_at(now_ms())
        {
            // Judged as the ending is taken, not when the tab joined: the link may have run
            // out since, with its tab's close not yet sent. Before the lock, not under it: a
            // link that runs out while the lock is awaited still ends this one answer.
            return Err(Refusal::LinkExpired);
        }
        let mut sessions = self.lock();
        let state = sessions.get_mut(session).ok_or(Refusal::Unknown)?;
        let tab_ending = matches!(ending, Ending::Answer { .. } | Ending::Decline { .. });
        if tab_ending && !state.requests.contains_key(id) && state.forgot_lately(id) {
            return Err(Refusal::AlreadyResolved);
        }
        let entry = state.requests.get_mut(id).ok_or(Refusal::Unknown)?;
        match entry.state {
            EntryState::Open => {}
            EntryState::Committing => return Err(Refusal::Unknown),
            EntryState::Resolved(_) => return Err(Refusal::AlreadyResolved),
            // Another ending is being stored. It wins, unless the store fails it and the
            // request opens again: wait to know which, rather than tell this one "already
            // resolved" for a request that may yet stay open.
            EntryState::Resolving => {
                return Ok(Begun::Wait(Arc::clone(&entry.resolved).notified_owned()));
            }
        }
        if let Ending::Answer {
            asked_at_ms: Some(asked_at_ms),
            ..
        } = ending
            && *asked_at_ms != entry.asked_at_ms
        {
            return Err(Refusal::Unknown);
        }
        // The gateway withdraws only a request still orphaned: its agent may have come back
        // since the withdrawal was decided.
        if let Ending::Withdrawn {
            via: askgate_protocol::wire::Via::Gateway,
        } = ending
            && entry.orphaned_since_ms.is_none()
        {
            return Err(Refusal::Unknown);
        }
        if let Ending::Answer { person, .. } | Ending::Decline { person, .. } = ending {
            self.people
                .may_answer(person, entry.answerers.as_deref())
                .map_err(Refusal::Forbidden)?;
        }
        // Before any vote is counted: a request with a quorum remembers nothing.
        let to_make = match ending {
            Ending::Answer {
                person, response, ..
            } => rules::rules_asked(
                session,
                entry,
                person,
                response,
                (
                    &self.limits.approval_rules,
                    u64::try_from(self.limits.approval_rule_ttl.as_millis()).unwrap_or(u64::MAX),
                ),
            )?,
            _ => None,
        };
        let ruled = match (ending, &entry.ruled) {
            (Ending::ByRule, Some(ruled)) if ruled.iter().all(Option::is_some) => {
                ruled.first().cloned().flatten()
            }
            (Ending::ByRule, _) => return Err(Refusal::Unknown),
            _ => None,
        };
        // With a quorum, an answer or a decline is a vote: kept if it decides nothing, else
        // the ending, with what the votes decided and who voted.
        let mut decided = None;
        if let (Some(quorum), Ending::Decided) = (entry.quorum, ending) {
            // The votes kept decide it (or the request is not one a vote can decide).
            let calls = entry.questions.approval_calls().len();
            let answer = quorum
                .decisions(calls, &entry.votes)
                .ok_or(Refusal::Unknown)?;
            decided = Some((answer, quorum::voters(&entry.votes), None));
        } else if let Ending::Decided = ending {
            return Err(Refusal::Unknown);
        }
        if let (Some(quorum), Ending::Answer { .. } | Ending::Decline { .. }) =
            (entry.quorum, ending)
        {
            let (counted, user) = voting::count(entry, quorum, ending)?;
            // The votes this one was counted on: a shared store keeps it only if they are
            // still the votes it holds.
            let counted_on = entry.votes.clone();
            match counted {
                Counted::Kept(votes) => {
                    let deadline_ms = entry.deadline_ms.filter(|_| entry.timed_here);
                    state.begin_resolving(id, false);
                    return Ok(Begun::Voted(Box::new(VoteCast {
                        user,
                        votes,
                        counted_on,
                        deadline_ms,
                    })));
                }
                Counted::Decides {
                    answer,
                    voters,
                    votes,
                } => {
                    let vote = StoreOp::Vote {
                        session: session.clone(),
                        id: id.clone(),
                        user,
                        votes,
                        counted_on,
                    };
                    decided = Some((answer, voters, Some(vote)));
                }
            }
        }
        let (voters, mut deciding_vote) = match &decided {
            Some((_, voters, vote)) => (Some(voters.clone()), vote.clone().into_iter().collect()),
            None => (None, Vec::new()),
        };
        // A shared store keeps the votes with the request, and deletes them with it.
        if entry.quorum.is_some() && self.replica.is_none() {
            // However it ends, its votes are no longer needed: the ending has its voters.
            deciding_vote.push(StoreOp::Unkeep {
                table: crate::store::KeptTable::Votes,
                key: voting::votes_key(session, id),
            });
        }
        let by_person = |settlement, tab: &Option<TabId>, person: &Person| StoredResolution {
            settlement,
            by: tab.as_ref().map(TabId::to_string),
            user: person.name().map(str::to_owned),
            via: Some(person.via),
            voters: voters.clone(),
            at_ms: now_ms(),
        };
        let resolution = match ending {
            Ending::Answer { tab, person, .. } | Ending::Decline { tab, person, .. }
                if decided.is_some() =>
            {
                let answer = decided
                    .as_ref()
                    .map(|(answer, ..)| answer)
                    .unwrap_or(&Value::Null);
                by_person(
                    entry
                        .questions
                        .settle_answer(answer)
                        .map_err(Refusal::DoesNotFit)?,
                    tab,
                    person,
                )
            }
            Ending::Answer {
                tab,
                person,
                response,
                ..
            } => {
                let with_ruled = entry
                    .ruled
                    .as_ref()
                    .map(|ruled| rules::with_ruled_approved(response, ruled));
                by_person(
                    entry
                        .questions
                        .settle_answer(with_ruled.as_ref().unwrap_or(response))
                        .map_err(Refusal::DoesNotFit)?,
                    tab,
                    person,
                )
            }
            Ending::Decline {
                tab,
                person,
                dismiss,
            } => by_person(
                if *dismiss {
                    entry.questions.settle_dismissed()
                } else {
                    entry.questions.settle_without_answer(Outcome::Declined)
                },
                tab,
                person,
            ),
            Ending::TimedOut => entry.deadline_ending(now_ms()),
            Ending::Decided => {
                let answer = decided
                    .as_ref()
                    .map(|(answer, ..)| answer)
                    .unwrap_or(&Value::Null);
                StoredResolution {
                    settlement: entry
                        .questions
                        .settle_answer(answer)
                        .map_err(Refusal::DoesNotFit)?,
                    by: None,
                    // As by the person whose vote decided it.
                    user: entry.votes.last().map(|vote| vote.user.clone()),
                    via: None,
                    voters: voters.clone(),
                    at_ms: now_ms(),
                }
            }
            Ending::ByRule => {
                let calls = entry.questions.approval_calls().len();
                let answer = rules::approved_by_rules(calls);
                let rule = ruled.as_ref();
                StoredResolution {
                    settlement: entry
                        .questions
                        .settle_answer(&answer)
                        .map_err(Refusal::DoesNotFit)?,
                    by: rule.map(|rule| format!("{RULE_BY_PREFIX}{}", rule.rule)),
                    user: rule.map(|rule| rule.user.clone()),
                    via: Some(askgate_protocol::wire::Via::Rule),
                    voters: None,
                    at_ms: now_ms(),
                }
            }
            Ending::Withdrawn { via } => StoredResolution {
                via: Some(*via),
                // An operator a trusted proxy named is audited by name (an operator key has none).
                user: (*via == askgate_protocol::wire::Via::Operator)
                    .then(super::acting::acting_operator)
                    .flatten(),
                ..StoredResolution::untouched(
                    entry.questions.settle_without_answer(Outcome::Withdrawn),
                    now_ms(),
                )
            },
        };
        // A shared store judges lateness on its own clock: it needs the deadline's ending (the
        // default, or the timeout) to put instead; the store gives it its time.
        let by_votes = tab_ending || matches!(ending, Ending::Decided);
        let if_late = (by_votes && self.replica.is_some() && entry.deadline_ms.is_some())
            .then(|| entry.deadline_ending(0));
        let (asked_at_ms, deadline_ms) = (entry.asked_at_ms, entry.deadline_ms);
        // Nobody was told of a request rules approved at once: nobody but its callback is
        // told it ended.
        let by_rule = matches!(ending, Ending::ByRule);
        let facts = self
            .notifier
            .as_ref()
            .filter(|notifier| (!by_rule && notifier.tells_people()) || entry.callback.is_some())
            .and_then(|_| self.facts_of_entry(session, entry))
            .map(|facts| RequestFacts {
                quiet: by_rule,
                ..facts
            });
        state.begin_resolving(id, matches!(ending, Ending::TimedOut));
        Ok(Begun::Won(Box::new((
            resolution,
            asked_at_ms,
            deadline_ms,
            if_late,
            counted_refusals(state, id),
            facts,
            deciding_vote,
            to_make,
        ))))
    }
}

impl Hub {
    /// Counts an ending the store kept from this node: its outcome, and for a person's
    /// decision how long it took them. A rule's approval is no one's answer: timed, it would
    /// count the rule at zero.
    fn count_resolved(&self, resolution: &StoredResolution, asked_at_ms: u64) {
        let by_a_person = super::request::decided_by_a_person(resolution);
        let latency = by_a_person.then(|| resolution.at_ms.saturating_sub(asked_at_ms));
        self.metrics
            .resolved(resolution.settlement.outcome, latency);
    }

    /// After the store took (or refused) a resolution: announces what it decided, or reopens
    /// the request.
    fn finish_resolve(
        self: &Arc<Self>,
        ending: Resolution,
        committed: Result<Vec<Verdict>, StoreError>,
    ) -> Result<Option<StoredResolution>, Refusal> {
        let Resolution {
            session,
            id,
            mut resolution,
            asked_at_ms,
            deadline_ms,
            resolve_at,
            rules,
            counted_on,
        } = ending;
        let (session, id) = (&session, &id);
        // A deciding vote comes first: not kept, the ending after it was not made.
        let (vote, verdict) = match committed {
            Ok(verdicts) => {
                let mut verdicts = verdicts.into_iter();
                let vote = (resolve_at > 0).then(|| verdicts.next()).flatten();
                let ending = verdicts
                    .nth(resolve_at.saturating_sub(1))
                    .unwrap_or(Verdict::Done);
                (vote, Ok(ending))
            }
            Err(error) => (None, Err(error)),
        };
        if let Some(
            vote
            @ (Verdict::Stale(_) | Verdict::Lost(_) | Verdict::Unknown | Verdict::Early { .. }),
        ) = vote
        {
            let mut sessions = self.lock();
            let Some(state) = sessions.get_mut(session) else {
                return Err(Refusal::Unknown);
            };
            return Err(state.vote_not_kept(id, vote, &counted_on));
        }
        // Kept with the ending: held before the agent hears its outcome, so that its next
        // identical ask finds them.
        if matches!(verdict, Ok(Verdict::Won { .. } | Verdict::Done)) {
            self.rules_kept(rules);
        }
        let mut sessions = self.lock();
        let entry = sessions
            .get_mut(session)
            .and_then(|state| state.requests.get_mut(id));
        if entry.is_none() {
            // Gone while its ending was stored: on a shared store, the ending's own notice and
            // then the agent's acknowledgement came back before the store's reply did.
            return match verdict {
                Ok(Verdict::Won { at_ms }) => {
                    resolution.at_ms = at_ms;
                    self.count_resolved(&resolution, asked_at_ms);
                    let outcome = resolution.settlement.outcome;
                    Ok((outcome == Outcome::Withdrawn).then_some(resolution))
                }
                _ => Err(Refusal::Unknown),
            };
        }
        let Some(state) = sessions.get_mut(session) else {
            return Err(Refusal::Unknown);
        };
        let Some(entry) = state.requests.get_mut(id) else {
            return Err(Refusal::Unknown);
        };
        // Another node's ending reached this node first, as a notice: it has been announced.
        if let EntryState::Resolved(announced) = &entry.state {
            let announced = StoredResolution::clone(announced);
            return match verdict {
                Ok(Verdict::Won { .. } | Verdict::Done) => {
                    // Its own ending, heard back as a notice before the store's reply: won here,
                    // so counted here (no other node counts it).
                    self.count_resolved(&announced, asked_at_ms);
                    Ok((announced.settlement.outcome == Outcome::Withdrawn).then_some(announced))
                }
                _ => Err(Refusal::AlreadyResolved),
            };
        }
        match verdict {
            Ok(Verdict::Done) => {}
            Ok(Verdict::Won { at_ms }) => resolution.at_ms = at_ms,
            Ok(Verdict::Lost(winner)) => {
                tracing::debug!(%session, request = %id, "another node's ending won");
                state.settle(id, *winner);
                return Err(Refusal::AlreadyResolved);
            }
            Ok(Verdict::Early { left_ms }) => {
                let timer_at =
                    (left_ms != u64::MAX).then(|| now_ms().saturating_add(left_ms.max(1)));
                state.reopen(id, timer_at);
                return Err(Refusal::Unknown);
            }
            Ok(Verdict::Unknown) => {
                state.vanished(id);
                return Err(Refusal::Unknown);
            }
            Ok(other) => {
                let error =
                    StoreError::internal(format!("the store answered a resolution with {other:?}"));
                return Err(reopen(state, id, deadline_ms, &error));
            }
            Err(error) => return Err(reopen(state, id, deadline_ms, &error)),
        }
        let outcome = resolution.settlement.outcome;
        self.count_resolved(&resolution, asked_at_ms);
        tracing::debug!(%session, request = %id, outcome = outcome.as_str(), "resolved");
        let withdrawn = (outcome == Outcome::Withdrawn).then(|| resolution.clone());
        state.settle(id, resolution);
        Ok(withdrawn)
    }
}

/// The store did not keep the ending: the request is open again, its timer set again.
fn reopen(
    state: &mut Session,
    id: &RequestId,
    deadline_ms: Option<u64>,
    error: &StoreError,
) -> Refusal {
    let session = &state.id;
    tracing::error!(%session, request = %id, %error, "could not store a resolution; the request stays open");
    // A deadline already past (its timing out is what failed) is tried again after a pause,
    // not at once: the store would fail it again in a loop.
    let retry_at =
        deadline_ms.map(|deadline| deadline.max(now_ms() + STORE_RETRY.as_millis() as u64));
    state.reopen(id, retry_at);
    Refusal::Store(error.to_string())
}
