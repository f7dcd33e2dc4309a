//! One request's life: its states, and every change between them as one method of its
//! session that does all the bookkeeping the change needs. Nothing else in the hub moves a
//! request from one state to another or touches what these methods keep in step: the
//! `open_requests` and `kept_outcomes` gauges, the operator's history (asks, and the
//! gateway's own time to show an ask and to hand its outcome back), the session's and the gateway's open count and
//! bytes, the deadline timer, the finished list (and the stale `history`), the frames the
//! change sends, and the waiters it wakes.
//!
//! ```text
//! ask ─begin_ask─► Committing ─open─► Open ─begin_resolving─► Resolving ─settle─► Resolved ─forget─► forgotten
//!
//! Committing ─drop_unstored─► gone           Committing ─found_ended─► Resolved
//! Open ─take_back─► gone                     Resolving ─reopen─► Open
//! Resolving ─vanished─► gone                 Open, Resolved ─discard─► forgotten
//! stored ─admit_record─► Open or Resolved    every request ─let_go─► not held here
//! ```
//!
//! | change            | from → to               | bookkeeping                                                         |
//! |-------------------|-------------------------|---------------------------------------------------------------------|
//! | `begin_ask`       | new → Committing        | open count and bytes +; earlier listing of the id dropped           |
//! | `drop_unstored`   | Committing → gone       | open count and bytes −                                              |
//! | `open`            | Committing → Open       | open gauge +; deadline timer; `request` to every tab; asked here: counted, and its time to the first tab |
//! | `found_ended`     | Committing → Resolved   | kept gauge +; open count and bytes −; listed finished               |
//! | `admit_record`    | store → Open, Resolved  | as `begin_ask` + `open`, or kept gauge + and listed finished        |
//! | `take_back`       | Open → gone             | open gauge −, count and bytes −; timer stopped; `resolved` withdrawn |
//! | `begin_resolving` | Open → Resolving        | timer stopped (unless it is the one ending it); the answer's time noted |
//! | `reopen`          | Resolving → Open        | timer set again; rival endings woken                                |
//! | `settle`          | Open, Resolving → Resolved | open gauge −, kept +; count and bytes −; timer stopped; listed finished; `resolved` to tabs, `outcome` to the agent (a person's decision: its time from the answer); waiters woken |
//! | `vanished`        | Resolving → gone        | open gauge −, count and bytes −; waiters woken                      |
//! | `forget`          | Resolved → forgotten    | kept gauge −; listing runs out; remembered as lately forgotten      |
//! | `discard`         | Open, Resolved → forgotten | its gauge −, count and bytes − if open; timer stopped; no frames |
//! | `let_go`          | every request → (not held here) | gauges −, timers stopped                                    |
//! | `remind`          | Open → Open             | marked reminded (its follow-up timer goes on to the next)           |
//! | `escalate`        | Open → Open             | marked; answerers widened; view re-encoded, bytes resized; `escalated` to every tab |
//! | `unattended`      | Open → Open             | its agent gone for now: the grace timer set (where its timers are made) |
//! | `attended`        | Open → Open             | its agent back: the timer stopped; if orphaned, view re-encoded and `request` to every tab |
//! | `orphan`          | Open → Open             | orphaned: view re-encoded, bytes resized; `orphaned` to every tab; the withdrawal timer set if it has no deadline |
//! | `record_votes`    | Resolving → Open        | a vote kept: as `votes_changed`, then as `reopen` |
//! | `votes_changed`   | Open, Resolving → same  | votes counted (here or on another node), view's tally re-encoded; `tally` to every tab |
//! | `vote_not_kept`   | Resolving → Open, Resolved, gone | a shared store refused a vote: votes taken as it holds them and `reopen` (to count again), or as `settle`, or `vanished` |
//!
//! At its deadline a request ends as its `default` if the ask gave one (`Entry::deadline_ending`),
//! else as timed out; either goes through `begin_resolving` and `settle` like any ending.
//!
//! Only `Open` can be won; a rival arriving in `Resolved` is told "already resolved", one
//! arriving in `Resolving` waits to learn whether the store kept the winner (`Resolved`) or not
//! (`Open` again). Alongside, [`Entry::storing`] says whether its agent is still to hear
//! `accepted`: a request is open to tabs once the store has taken it, but promised to its
//! agent only once it is durable, which the embedded store says later (the syncer's
//! `fdatasync`).

#[cfg(test)]
mod tests;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use askgate_protocol::approval::rules::{RuleScope, RuledCall};
use askgate_protocol::approval::{Quorum, Vote};
use askgate_protocol::wire::callback::Callback;
use askgate_protocol::wire::{RequestView, Via};
use askgate_protocol::{Outcome, QuestionSet, RequestId, SessionId};
use bytes::Bytes;
use serde_json::Value;
use tokio::sync::Notify;
use tokio::task::AbortHandle;
use tokio_util::task::AbortOnDropHandle;

use super::Hub;
use super::ending::{Ending, Refusal};
use super::followers::Followers;
use super::inboxes::{Inboxes, Reach};
use super::peers::frame::Frame;
use super::peers::links::Link;
use super::peers::wakes::FanOutWakes;
use super::session::Session;
use super::shown::ending_frames::{outcome_frame, resolved_frame};
use crate::clock::{now_ms, until};
use crate::metrics::{Metrics, gauge_add};
use crate::store::{FollowUp, FollowUps, StoredRequest, StoredResolution, Verdict};

/// The `by` of a request its default ended: no tab's id, since none answered.
pub(crate) const DEFAULT_BY: &str = "default";

/// Whether `resolution` is a person's decision (an answer or decline from a tab, a link, a
/// vote), not a default, a rule or a withdrawal: what the history counts as an answer.
pub(super) fn decided_by_a_person(resolution: &StoredResolution) -> bool {
    matches!(
        resolution.settlement.outcome,
        Outcome::Answered | Outcome::Declined
    ) && !matches!(resolution.via, Some(Via::Default | Via::Rule))
}

/// How many forgotten request ids a session remembers. A tab learns a request ended the
/// moment it does; this covers answers already on their way, not days-old ones.
const FORGOTTEN_REMEMBERED: usize = 64;

/// What every session's requests count into, gateway-wide, and the hub their deadline timers
/// end them through.
#[derive(Debug)]
pub(super) struct Ledger {
    pub(super) metrics: Arc<Metrics>,
    /// Bytes every session's open requests hold (as tabs receive them), for
    /// `--max-open-bytes`.
    pub(super) open_bytes_total: AtomicUsize,
    /// Weak: a sleeping timer must not keep a stopped gateway (and its store) alive.
    hub: Weak<Hub>,
    /// Who follows each session: what a request naming no one is shown to, besides its tabs.
    pub(super) followers: Followers,
    /// The open inboxes, told of a request's changes as its session's tabs are.
    pub(super) inboxes: Inboxes,
    /// Whether requests are orphaned here at all (a local store's hub; not yet on a shared
    /// store, whose agents may come back to other nodes).
    pub(super) orphans: bool,
    /// How long an open request may go without its agent before it is orphaned.
    pub(super) agent_grace: std::time::Duration,
    /// How long a request without a deadline stays orphaned before it is withdrawn, if ever.
    pub(super) orphan_withdraw_after: Option<std::time::Duration>,
    /// The tasks big fan-outs are still to wake, in order.
    pub(super) fan_out_wakes: Arc<FanOutWakes>,
}

impl Ledger {
    pub(super) fn new(metrics: Arc<Metrics>, hub: Weak<Hub>) -> Self {
        Ledger {
            metrics,
            open_bytes_total: AtomicUsize::new(0),
            hub,
            followers: Followers::default(),
            inboxes: Inboxes::default(),
            orphans: true,
            agent_grace: crate::config::DEFAULT_AGENT_GRACE,
            orphan_withdraw_after: Some(crate::config::DEFAULT_ORPHAN_WITHDRAW_AFTER),
            fan_out_wakes: Arc::default(),
        }
    }

    /// These, with whether requests are orphaned here (`orphans`), how long a request waits
    /// for its agent (`agent_grace`) and then, orphaned, before it is withdrawn
    /// (`withdraw_after`).
    pub(super) fn with_orphans(
        mut self,
        orphans: bool,
        agent_grace: std::time::Duration,
        withdraw_after: Option<std::time::Duration>,
    ) -> Self {
        self.orphans = orphans;
        self.agent_grace = agent_grace;
        self.orphan_withdraw_after = withdraw_after;
        self
    }

    /// Sets `entry`'s orphan timer (in `session`): [`Hub::orphan_due`] `after` from now, at
    /// `stage`, superseding any earlier one (a task of an earlier one already waiting on the
    /// lock finds its generation passed and does nothing).
    fn arm_orphan_timer(
        &self,
        session: &SessionId,
        entry: &mut Entry,
        after: std::time::Duration,
        stage: OrphanStage,
    ) {
        entry.orphan_generation += 1;
        let generation = entry.orphan_generation;
        let hub = Weak::clone(&self.hub);
        let (session, id) = (session.clone(), entry.id.clone());
        entry.orphan_timer = Some(AbortOnDropHandle::new(tokio::spawn(async move {
            tokio::time::sleep(after).await;
            if let Some(hub) = hub.upgrade() {
                hub.orphan_due(&session, &id, stage, generation).await;
            }
        })));
    }

    /// A ledger of its own, with no hub to time requests out through.
    #[cfg(test)]
    pub(super) fn detached() -> Arc<Self> {
        Arc::new(Ledger::new(Arc::default(), Weak::new()))
    }

    /// Makes request `id` of `session`'s follow-ups that are still to come, each at its time
    /// (one past already, at once), until the handle is dropped.
    fn follow_up_timer(
        &self,
        session: &SessionId,
        id: &RequestId,
        mut pending: Vec<(FollowUp, u64)>,
    ) -> AbortOnDropHandle<()> {
        let hub = Weak::clone(&self.hub);
        let (session, id) = (session.clone(), id.clone());
        pending.sort_by_key(|(_, at_ms)| *at_ms);
        AbortOnDropHandle::new(tokio::spawn(async move {
            for (follow_up, at_ms) in pending {
                tokio::time::sleep(until(at_ms)).await;
                let Some(hub) = hub.upgrade() else {
                    return;
                };
                hub.follow_up(&session, &id, follow_up).await;
            }
        }))
    }

    /// Times request `id` of `session` out at `deadline_ms`, unless aborted first.
    /// Ends request `id` of `session` by its votes `after` from now, should it still be open
    /// then: votes kept that decide every call, whose ending was not made (a node died between
    /// the two, or the store failed the ending; a restart found them).
    fn decided_timer(&self, session: &SessionId, id: &RequestId, after: std::time::Duration) {
        let hub = Weak::clone(&self.hub);
        let (session, id) = (session.clone(), id.clone());
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            if let Some(hub) = hub.upgrade() {
                let _ = hub.resolve(&session, &id, Ending::Decided).await;
            }
        });
    }

    fn deadline_timer(&self, session: &SessionId, id: &RequestId, deadline_ms: u64) -> AbortHandle {
        let hub = Weak::clone(&self.hub);
        let (session, id) = (session.clone(), id.clone());
        tokio::spawn(async move {
            tokio::time::sleep(until(deadline_ms)).await;
            if let Some(hub) = hub.upgrade() {
                let _ = hub.resolve(&session, &id, Ending::TimedOut).await;
            }
        })
        .abort_handle()
    }
}

/// How long votes that decide a request still open wait for the ending of the node that
/// counted them before this node makes it ([`Ledger::decided_timer`]).
pub(super) const DECIDED_ENDING_AFTER: std::time::Duration = std::time::Duration::from_secs(5);

/// Where an open request without its agent is: waiting out the grace, or orphaned and waiting
/// to be withdrawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum OrphanStage {
    /// The grace is over: orphaned, if still without its agent.
    Grace,
    /// Orphaned long enough: withdrawn by the gateway.
    Withdraw,
}

/// A session's unresolved requests (committing, open or resolving): how many, and their
/// bytes as tabs receive them, for the per-session limits (the bytes bound a snapshot); the
/// bytes are counted into the gateway-wide total too. Changed only by the transitions here.
#[derive(Debug)]
pub(super) struct OpenCounts {
    unresolved: usize,
    bytes: usize,
    pub(super) ledger: Arc<Ledger>,
}

impl OpenCounts {
    pub(super) fn new(ledger: Arc<Ledger>) -> Self {
        OpenCounts {
            unresolved: 0,
            bytes: 0,
            ledger,
        }
    }

    /// How many requests are unresolved.
    pub(super) fn unresolved(&self) -> usize {
        self.unresolved
    }

    /// Their bytes as tabs receive them.
    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }

    fn count(&mut self, bytes: usize) {
        self.unresolved += 1;
        self.resize(0, bytes);
    }

    fn uncount(&mut self, bytes: usize) {
        self.unresolved -= 1;
        self.resize(bytes, 0);
    }

    /// An unresolved request that held `before` bytes now holds `after`.
    fn resize(&mut self, before: usize, after: usize) {
        let old = self.bytes;
        self.bytes = (old + after).saturating_sub(before);
        let total = &self.ledger.open_bytes_total;
        if self.bytes > old {
            total.fetch_add(self.bytes - old, Ordering::Relaxed);
        } else {
            total.fetch_sub(old - self.bytes, Ordering::Relaxed);
        }
    }
}

/// A session dropped with requests still counted (a hub shutting down, a shared store's copy
/// let go) gives their bytes back to the gateway-wide count.
impl Drop for OpenCounts {
    fn drop(&mut self) {
        self.ledger
            .open_bytes_total
            .fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

/// Requests forgotten lately (acked, or kept past their retention), newest last: a tab's late
/// answer to one is told "already resolved", as the design says, rather than that there is no
/// such request. At most [`FORGOTTEN_REMEMBERED`].
#[derive(Debug, Default)]
#[expect(
    clippy::box_collection,
    reason = "a pointer in every session instead of an empty VecDeque's 32 bytes"
)]
pub(super) struct LatelyForgotten(Option<Box<VecDeque<RequestId>>>);

impl LatelyForgotten {
    fn note(&mut self, id: &RequestId) {
        // Boxed when first needed: a session nothing was forgotten in (an idle tab's) pays
        // one pointer.
        let ids = self.0.get_or_insert_default();
        if ids.len() == FORGOTTEN_REMEMBERED {
            ids.pop_front();
        }
        ids.push_back(id.clone());
    }

    fn contains(&self, id: &RequestId) -> bool {
        self.0.as_ref().is_some_and(|ids| ids.contains(id))
    }
}

/// Who times a request out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Deadline {
    /// This node: its timer is set.
    Here,
    /// The shared store's sweep (the request was asked on another node), or the caller at
    /// once (a restored request whose deadline passed while the gateway was down).
    Elsewhere,
}

/// Where a stored request comes into this node's hub from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Arrival {
    /// The store, at a restart: an ended request is listed finished.
    Restored,
    /// The shared store (asked on another node, or missed here). An ended one is not listed
    /// finished, as before this module gathered the transitions; its deadline is the sweep's.
    Shared,
}

/// What a new request carries besides what tabs are shown.
#[derive(Default)]
pub(super) struct AskTerms {
    /// Its reminder and escalation.
    pub(super) follow_ups: FollowUps,
    /// The id of the agent key that asked it.
    pub(super) asked_by: Option<String>,
    /// Where its outcome is POSTed when it ends.
    pub(super) callback: Option<Box<Callback>>,
}

/// What a stored request came in as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Admitted {
    /// Open (and timed here, if restored with a deadline to come).
    Open,
    /// Restored open with its deadline past: the caller times it out now.
    Overdue,
    /// Already ended: its outcome kept.
    Resolved,
}

/// The transitions. Each one looks up request `id` itself and does nothing to a request not
/// in the state it changes from (a notice or another node's change may have moved it first).
impl Session {
    /// A new request, being stored: `Committing`, counted as unresolved. Returns its record.
    pub(super) fn begin_ask(
        &mut self,
        id: &RequestId,
        questions: &Arc<QuestionSet>,
        view: RequestView,
        encoded: EncodedRequest,
        asker: Option<&Link>,
        terms: AskTerms,
    ) -> StoredRequest {
        let AskTerms {
            follow_ups,
            asked_by,
            callback,
        } = terms;
        let record = StoredRequest {
            quorum: view.quorum.as_ref().map(|(quorum, _)| *quorum),
            asked_by,
            callback,
            ruled: view.ruled,
            remember: view.remember,
            session: self.id.clone(),
            id: id.clone(),
            dialect: view.dialect,
            questions: view.questions,
            title: view.title,
            asked_at_ms: view.asked_at_ms,
            deadline_ms: view.deadline_ms,
            answerers: view.answerers,
            follow_ups,
            default: view.default,
            votes: Vec::new(),
            resolution: None,
        };
        self.open.count(encoded.view.len());
        // The id is asked anew: its earlier ending is no longer what a tab should show for it.
        self.finished.remove(id);
        let entry = Entry {
            id: id.clone(),
            seq: self.take_seq(),
            questions: Arc::clone(questions),
            asked_at_ms: record.asked_at_ms,
            deadline_ms: record.deadline_ms,
            answerers: record.answerers.clone().map(Arc::from),
            default: record.default.clone(),
            title: record.title.clone(),
            orphaned_since_ms: None,
            polls: 0,
            timed_here: false,
            orphan_timer: None,
            orphan_generation: 0,
            quorum: record.quorum,
            votes: Vec::new(),
            asked_by: record.asked_by.clone(),
            callback: record.callback.clone(),
            ruled: record.ruled.clone(),
            remember: record.remember.clone(),
            encoded,
            asker: asker.cloned(),
            state: EntryState::Committing,
            storing: Some(Arc::new(Notify::new())),
            timer: None,
            follow_ups: record.follow_ups.clone(),
            follow_up_timer: None,
            resolved: Arc::new(Notify::new()),
            taken_at: tokio::time::Instant::now(),
            resolving_since: None,
        };
        self.requests.insert(id.clone(), entry);
        record
    }

    /// `Committing` → gone: the store did not take it (or the ask is not this node's to
    /// finish).
    pub(super) fn drop_unstored(&mut self, id: &RequestId) {
        if let Some(entry) = self.requests.remove(id) {
            self.open.uncount(entry.encoded.view.len());
        }
    }

    /// `Committing` → `Open`: shown to every tab, and timed out here if `deadline` says so.
    pub(super) fn open(&mut self, id: &RequestId, deadline: Deadline) {
        let ledger = Arc::clone(&self.open.ledger);
        let Some(entry) = self.requests.get_mut(id) else {
            return;
        };
        if !matches!(entry.state, EntryState::Committing) {
            return;
        }
        entry.state = EntryState::Open;
        entry.timed_here = matches!(deadline, Deadline::Here);
        if let (Deadline::Here, Some(deadline_ms)) = (deadline, entry.deadline_ms) {
            entry.timer = Some(ledger.deadline_timer(&self.id, id, deadline_ms));
        }
        let pending = entry.follow_ups.pending();
        if matches!(deadline, Deadline::Here) && !pending.is_empty() {
            entry.follow_up_timer = Some(ledger.follow_up_timer(&self.id, id, pending));
        }
        gauge_add(&ledger.metrics.open_requests, 1);
        let request_frame = entry.encoded.frame.clone();
        let reach = Reach::of(entry);
        // Counted once, where it was asked (a repeat adopted from another node opens
        // `Elsewhere`); timed only when a tab is there to be shown it, or it would time the
        // wait for a person to open one.
        if matches!(deadline, Deadline::Here) {
            ledger.metrics.asked();
            if self.tabs.iter().next().is_some() {
                ledger.metrics.shown_to_tab(entry.taken_at.elapsed());
            }
        }
        self.broadcast(&request_frame, &ledger.metrics);
        self.tell_inboxes(&reach, &request_frame);
        // Posted over HTTP, no long-poll waits on it yet: its grace starts now.
        self.unattended(id);
    }

    /// `Committing` → `Resolved`: the id was asked on another node, and has ended there. Its
    /// tabs never saw it open; they see it finished.
    pub(super) fn found_ended(&mut self, id: &RequestId, resolution: &StoredResolution) {
        let Some(entry) = self.requests.get_mut(id) else {
            return;
        };
        if !matches!(entry.state, EntryState::Committing) {
            return;
        }
        let view = entry.encoded.view.clone();
        entry.state = EntryState::Resolved(Box::new(resolution.clone()));
        self.record_ended(id, &view, resolution);
        self.open.uncount(view.len());
        gauge_add(&self.open.ledger.metrics.kept_outcomes, 1);
    }

    /// A request the store holds comes into this node: `Open` (shown to the tabs) or
    /// `Resolved`, as the record says.
    pub(super) fn admit_record(
        &mut self,
        record: StoredRequest,
        questions: Arc<QuestionSet>,
        arrival: Arrival,
    ) -> Admitted {
        let answerers = answerers_now(record.answerers.as_deref(), &record.follow_ups);
        let view = RequestView {
            orphaned: false,
            id: record.id.to_string(),
            dialect: record.dialect,
            title: record.title,
            // As read back: what the dialect works out (a form's host) is this askgate's reading.
            questions: questions.to_json(),
            asked_at_ms: record.asked_at_ms,
            deadline_ms: record.deadline_ms,
            answerers: answerers.clone(),
            escalated_to: record
                .follow_ups
                .escalated
                .then(|| record.follow_ups.escalate_to.clone()),
            default: record.default.clone(),
            // Its votes so far are applied after (`record_votes`), from the kept table.
            quorum: record.quorum.map(|quorum| {
                let calls = questions.approval_calls().len();
                (quorum, vec![Default::default(); calls])
            }),
            ruled: record.ruled.clone(),
            remember: record.remember.clone(),
        };
        let encoded = EncodedRequest::new(&view);
        let id = record.id;
        // A shared store's votes so far (a local store's come from the kept table, after).
        let stored_votes = record.votes;
        let mut admitted = Admitted::Open;
        let mut timer = None;
        let mut follow_up_timer = None;
        let state = match record.resolution {
            Some(resolution) => {
                if arrival == Arrival::Restored {
                    self.record_ended(&id, &encoded.view, &resolution);
                } else {
                    self.finished.remove(&id);
                    self.history_ended();
                }
                admitted = Admitted::Resolved;
                EntryState::Resolved(Box::new(resolution))
            }
            None => {
                self.open.count(encoded.view.len());
                if arrival == Arrival::Shared {
                    self.finished.remove(&id);
                }
                match (arrival, record.deadline_ms) {
                    (Arrival::Restored, Some(deadline)) if deadline <= now_ms() => {
                        admitted = Admitted::Overdue;
                    }
                    (Arrival::Restored, Some(deadline)) => {
                        timer = Some(self.open.ledger.deadline_timer(&self.id, &id, deadline));
                    }
                    _ => {}
                }
                let pending = record.follow_ups.pending();
                if arrival == Arrival::Restored && !pending.is_empty() {
                    let ledger = &self.open.ledger;
                    follow_up_timer = Some(ledger.follow_up_timer(&self.id, &id, pending));
                }
                EntryState::Open
            }
        };
        let metrics = &self.open.ledger.metrics;
        gauge_add(
            match admitted {
                Admitted::Resolved => &metrics.kept_outcomes,
                _ => &metrics.open_requests,
            },
            1,
        );
        let frame = matches!(state, EntryState::Open).then(|| encoded.frame.clone());
        let entry = Entry {
            id: id.clone(),
            seq: self.take_seq(),
            questions,
            asked_at_ms: record.asked_at_ms,
            deadline_ms: record.deadline_ms,
            answerers: answerers.map(Arc::from),
            default: record.default,
            title: view.title.clone(),
            orphaned_since_ms: None,
            polls: 0,
            timed_here: arrival == Arrival::Restored,
            orphan_timer: None,
            orphan_generation: 0,
            quorum: record.quorum,
            votes: Vec::new(),
            asked_by: record.asked_by,
            callback: record.callback,
            ruled: record.ruled,
            remember: record.remember,
            encoded,
            asker: None,
            state,
            storing: None,
            timer,
            follow_ups: record.follow_ups,
            follow_up_timer,
            resolved: Arc::new(Notify::new()),
            taken_at: tokio::time::Instant::now(),
            resolving_since: None,
        };
        let reach = Reach::of(&entry);
        self.requests.insert(id.clone(), entry);
        if !stored_votes.is_empty() {
            self.votes_changed(&id, "", stored_votes);
        }
        if let Some(frame) = frame {
            let ledger = Arc::clone(&self.open.ledger);
            self.broadcast(&frame, &ledger.metrics);
            self.tell_inboxes(&reach, &frame);
        }
        if admitted == Admitted::Open {
            // Restored with no agent yet: its agent has the grace to come back.
            self.unattended(&id);
        }
        admitted
    }

    /// `Open` → gone: shown, but the store never made it durable. Every tab is told it was
    /// withdrawn.
    pub(super) fn take_back(&mut self, id: &RequestId) {
        let Some(mut entry) = self.requests.remove(id) else {
            return;
        };
        if let Some(timer) = entry.timer.take() {
            timer.abort();
        }
        self.open.uncount(entry.encoded.view.len());
        let metrics = Arc::clone(&self.open.ledger.metrics);
        gauge_add(&metrics.open_requests, -1);
        entry.resolved.notify_waiters();
        let withdrawn = entry.questions.settle_without_answer(Outcome::Withdrawn);
        let resolution = StoredResolution::untouched(withdrawn, now_ms());
        let frame = resolved_frame(id, &resolution);
        self.broadcast(&frame, &metrics);
        self.tell_inboxes(&Reach::of(&entry), &frame);
    }

    /// `Open` → `Resolving`: an ending won here and is being stored; rivals wait on it. Its
    /// timer stops, unless the timer is what is ending it (a task must not abort itself).
    pub(super) fn begin_resolving(&mut self, id: &RequestId, timing_out: bool) {
        let Some(entry) = self.requests.get_mut(id) else {
            return;
        };
        if !matches!(entry.state, EntryState::Open) {
            return;
        }
        entry.state = EntryState::Resolving;
        entry.resolving_since = Some(tokio::time::Instant::now());
        if let Some(timer) = entry.timer.take()
            && !timing_out
        {
            timer.abort();
        }
    }

    /// `Resolving` → `Open`: the store did not keep the ending (or, by its clock, the deadline
    /// has not come). Timed out again at `timer_at`, if given; rival endings may now take it.
    pub(super) fn reopen(&mut self, id: &RequestId, timer_at: Option<u64>) {
        let ledger = Arc::clone(&self.open.ledger);
        let Some(entry) = self.requests.get_mut(id) else {
            return;
        };
        // Settled meanwhile (another node's ending, heard first): it stays so.
        if !matches!(entry.state, EntryState::Resolving) {
            return;
        }
        entry.state = EntryState::Open;
        // The ending that started the clock was not kept: a later one starts its own.
        entry.resolving_since = None;
        if let Some(at) = timer_at {
            entry.timer = Some(ledger.deadline_timer(&self.id, id, at));
        }
        entry.resolved.notify_waiters();
        // Its agent may have left while the ending was being stored.
        self.unattended(id);
    }

    /// `Open` or `Resolving` → `Resolved`, and everyone here told: its tabs `resolved`, its
    /// waiting agent `outcome` (an agent not yet told `accepted` hears it right after, from
    /// its ask). Listed finished, in the order endings are settled here. Does nothing to one
    /// already resolved: a notice of another node's ending may have settled it first.
    pub(super) fn settle(&mut self, id: &RequestId, resolution: StoredResolution) {
        let metrics = Arc::clone(&self.open.ledger.metrics);
        let Some(entry) = self.requests.get_mut(id) else {
            return;
        };
        if !matches!(entry.state, EntryState::Open | EntryState::Resolving) {
            return;
        }
        if let Some(timer) = entry.timer.take() {
            timer.abort();
        }
        entry.follow_up_timer = None;
        entry.orphan_timer = None;
        entry.orphaned_since_ms = None;
        gauge_add(&metrics.open_requests, -1);
        gauge_add(&metrics.kept_outcomes, 1);
        let handed = match (&entry.asker, &entry.storing) {
            (Some(asker), None) => {
                asker.send(outcome_frame(&self.id, id, &resolution), &metrics);
                true
            }
            // A long-poll waits: woken below, it answers with the outcome.
            _ => entry.polls > 0,
        };
        // Timed on the node whose ending won, from the answer's coming in (a notice of another
        // node's ending has no start here).
        if let Some(since) = entry.resolving_since.take()
            && handed
            && decided_by_a_person(&resolution)
        {
            metrics.handed_back(since.elapsed());
        }
        let resolved = resolved_frame(id, &resolution);
        let view = entry.encoded.view.clone();
        let reach = Reach::of(entry);
        self.record_ended(id, &view, &resolution);
        if let Some(entry) = self.requests.get_mut(id) {
            entry.state = EntryState::Resolved(Box::new(resolution));
            entry.resolved.notify_waiters();
        }
        self.open.uncount(view.len());
        self.broadcast(&resolved, &metrics);
        self.tell_inboxes(&reach, &resolved);
    }

    /// `Open`, reminded (kept by the store): marked so, that it happens once. `false` if it
    /// was not open.
    pub(super) fn remind(&mut self, id: &RequestId) -> bool {
        match self.requests.get_mut(id) {
            Some(entry) if entry.is_open() => {
                entry.follow_ups.mark(FollowUp::Remind);
                true
            }
            _ => false,
        }
    }

    /// `Open`, escalated (kept by the store): those its `escalate.to` names may answer too
    /// (unless anyone with the link already may), its view says so, and every tab is told
    /// (`escalated`). `false` if it was not open, or was escalated here already (a shared
    /// store's notice of this node's own escalation comes back).
    pub(super) fn escalate(&mut self, id: &RequestId) -> bool {
        let metrics = Arc::clone(&self.open.ledger.metrics);
        let Some(entry) = self.requests.get_mut(id) else {
            return false;
        };
        if !entry.is_open() {
            return false;
        }
        let Ok(mut view) = serde_json::from_slice::<RequestView>(&entry.encoded.view) else {
            return false;
        };
        if view.escalated_to.is_some() {
            return false;
        }
        let before = Reach::unescalated(entry);
        entry.follow_ups.mark(FollowUp::Escalate);
        let to = entry.follow_ups.escalate_to.clone();
        let answerers = answerers_now(entry.answerers.as_deref(), &entry.follow_ups);
        entry.answerers = answerers.clone().map(Arc::from);
        let after = Reach::of(entry);
        let bytes_before = entry.encoded.view.len();
        view.answerers = answerers.clone();
        view.escalated_to = Some(to.clone());
        entry.encoded = EncodedRequest::new(&view);
        self.reencoded += 1;
        let request_frame = entry.encoded.frame.clone();
        let bytes_after = entry.encoded.view.len();
        if matches!(entry.state, EntryState::Open | EntryState::Resolving) {
            self.open.resize(bytes_before, bytes_after);
        }
        let frame = Frame::encode(&askgate_protocol::wire::ToTab::Escalated {
            id: id.to_string(),
            to,
            answerers: answerers.clone(),
        });
        self.broadcast(&frame, &metrics);
        self.tell_inboxes_widened((&before, &after), (&frame, &request_frame));
        true
    }

    /// `Open` → `Open`, without its agent now (the socket that asked closed, the last
    /// long-poll ended, or none was there: posted over HTTP, restored): unless one comes back
    /// within the grace, it is orphaned. Only where its timers are made.
    pub(super) fn unattended(&mut self, id: &RequestId) {
        let ledger = Arc::clone(&self.open.ledger);
        let Some(entry) = self.requests.get_mut(id) else {
            return;
        };
        let held_elsewhere = self
            .sync
            .as_ref()
            .is_some_and(|sync| sync.held_elsewhere(id));
        let waiting = entry.awaited(held_elsewhere);
        if !matches!(entry.state, EntryState::Open)
            || waiting
            || !ledger.orphans
            || entry.orphaned_since_ms.is_some()
            || entry.orphan_timer.is_some()
        {
            return;
        }
        ledger.arm_orphan_timer(&self.id, entry, ledger.agent_grace, OrphanStage::Grace);
    }

    /// `Open` → `Open`, its agent back (it re-asked, or a long-poll waits on it): the grace
    /// stops; an orphaned request is shown as live again, its `request` sent anew.
    pub(super) fn attended(&mut self, id: &RequestId) {
        let metrics = Arc::clone(&self.open.ledger.metrics);
        let Some(entry) = self.requests.get_mut(id) else {
            return;
        };
        entry.orphan_timer = None;
        entry.orphan_generation += 1;
        if entry.orphaned_since_ms.take().is_none() || !entry.is_open() {
            return;
        }
        let Some(request_frame) = self.reencode(id, |view| view.orphaned = false) else {
            return;
        };
        self.broadcast(&request_frame, &metrics);
        if let Some(entry) = self.requests.get(id) {
            let reach = Reach::of(entry);
            self.tell_inboxes(&reach, &request_frame);
        }
    }

    /// On a shared store, once the store said which requests' agents wait on other nodes:
    /// each open request whose agent waits somewhere is `attended` (if it was orphaned, or
    /// its grace running), each whose agent waits nowhere `unattended`.
    pub(super) fn judge_agents(&mut self) {
        let Some(sync) = self.sync.as_ref() else {
            return;
        };
        let (mut live, mut gone) = (Vec::new(), Vec::new());
        for entry in self.requests.values() {
            if !matches!(entry.state, EntryState::Open) {
                continue;
            }
            let somewhere = entry.awaited(sync.held_elsewhere(&entry.id));
            // Orphaned, or its grace running.
            let judged_gone = entry.orphaned_since_ms.is_some() || entry.orphan_timer.is_some();
            match (somewhere, judged_gone) {
                (true, true) => live.push(entry.id.clone()),
                (false, false) => gone.push(entry.id.clone()),
                _ => {}
            }
        }
        for id in &live {
            self.attended(id);
        }
        for id in &gone {
            self.unattended(id);
        }
    }

    /// `Open` → `Open`, orphaned: the grace passed with no agent. Tabs get `orphaned`; a
    /// request without a deadline is withdrawn after `--orphan-withdraw-after-s`. `false` if
    /// it is not (an agent came back, it ended).
    pub(super) fn orphan(&mut self, id: &RequestId, generation: u64) -> bool {
        let ledger = Arc::clone(&self.open.ledger);
        let Some(entry) = self.requests.get_mut(id) else {
            return false;
        };
        if entry.orphan_generation != generation {
            return false;
        }
        let held_elsewhere = self
            .sync
            .as_ref()
            .is_some_and(|sync| sync.held_elsewhere(id));
        let waiting = entry.awaited(held_elsewhere);
        if !matches!(entry.state, EntryState::Open) || waiting || entry.orphaned_since_ms.is_some()
        {
            // The grace's timer has run: its handle goes, so that a later `unattended` (the
            // request open again after a failed ending, say) sets a new one.
            if entry.orphaned_since_ms.is_none() {
                entry.orphan_timer = None;
            }
            return false;
        }
        entry.orphaned_since_ms = Some(now_ms());
        match (entry.deadline_ms, ledger.orphan_withdraw_after) {
            (None, Some(after)) => {
                ledger.arm_orphan_timer(&self.id, entry, after, OrphanStage::Withdraw);
            }
            _ => entry.orphan_timer = None,
        }
        if self.reencode(id, |view| view.orphaned = true).is_none() {
            return false;
        }
        let frame = Frame::encode(&askgate_protocol::wire::ToTab::Orphaned { id: id.to_string() });
        self.broadcast(&frame, &ledger.metrics);
        if let Some(entry) = self.requests.get(id) {
            let reach = Reach::of(entry);
            self.tell_inboxes(&reach, &frame);
        }
        true
    }

    /// `Resolving` → `Open` (or `Open` → `Open`, restored), with `votes` counted: a vote that
    /// decided nothing was kept. As [`votes_changed`](Self::votes_changed); then rival endings
    /// waiting on the vote go on, and the deadline timer is set again.
    pub(super) fn record_votes(&mut self, id: &RequestId, user: &str, votes: Vec<Vote>) {
        let Some(entry) = self.requests.get(id) else {
            return;
        };
        let resolving = matches!(entry.state, EntryState::Resolving);
        let timer_at = entry.deadline_ms.filter(|_| entry.timed_here);
        self.votes_changed(id, user, votes);
        // Whatever came of the counting, a request held for the vote is open again.
        if resolving {
            self.reopen(id, timer_at);
        }
    }

    /// `Open` or `Resolving`, unchanged: the request's votes are `votes` now (`user`'s vote
    /// counted here or on another node). The view's tally is encoded anew and every tab gets
    /// `tally`.
    pub(super) fn votes_changed(&mut self, id: &RequestId, user: &str, votes: Vec<Vote>) {
        let metrics = Arc::clone(&self.open.ledger.metrics);
        let Some(entry) = self.requests.get_mut(id) else {
            return;
        };
        let open = matches!(entry.state, EntryState::Open | EntryState::Resolving);
        let Some(quorum) = entry.quorum.filter(|_| open) else {
            return;
        };
        let calls = entry.questions.approval_calls().len();
        let tally: Vec<_> = quorum
            .tally(calls, &votes)
            .into_iter()
            .map(|(tally, _)| tally)
            .collect();
        // Votes that decide every call of a request still open: the ending they make was
        // not made. Made here after a pause, unless the node that counted them makes it
        // first (its ending's notice is on its way).
        if matches!(entry.state, EntryState::Open) && quorum.decisions(calls, &votes).is_some() {
            let ledger = Arc::clone(&self.open.ledger);
            ledger.decided_timer(&self.id, id, DECIDED_ENDING_AFTER);
        }
        entry.votes = votes;
        let shown = tally.clone();
        self.reencode(id, |view| view.quorum = Some((quorum, shown)));
        let frame = Frame::encode(&askgate_protocol::wire::ToTab::Tally {
            id: id.to_string(),
            calls: tally,
            needed: quorum.needed,
            user: user.to_owned(),
        });
        self.broadcast(&frame, &metrics);
        if let Some(entry) = self.requests.get(id) {
            let reach = Reach::of(entry);
            self.tell_inboxes(&reach, &frame);
        }
    }

    /// `Resolving` → `Open`, `Resolved` or gone: a vote (and the ending it would have made)
    /// was not kept, as the shared store's `verdict` says. Counted on votes that changed (it
    /// was counted on `counted_on`), it is to be counted again on the votes as they are
    /// ([`Refusal::Recount`]); too late (its deadline passed), refused; the request had ended,
    /// or is gone.
    pub(super) fn vote_not_kept(
        &mut self,
        id: &RequestId,
        verdict: Verdict,
        counted_on: &[Vote],
    ) -> Refusal {
        match verdict {
            Verdict::Stale(votes) => {
                let Some(entry) = self.requests.get(id) else {
                    return Refusal::Unknown;
                };
                let timer_at = entry.deadline_ms.filter(|_| entry.timed_here);
                // A notice may have brought newer votes than the store's reply: those stay.
                if entry.votes == counted_on && entry.votes != votes {
                    self.votes_changed(id, "", votes);
                }
                self.reopen(id, timer_at);
                Refusal::Recount
            }
            // Past its deadline by the store's clock: the timeout (or default) ends it.
            Verdict::Early { .. } => {
                let Some(entry) = self.requests.get(id) else {
                    return Refusal::Unknown;
                };
                let timer_at = entry.deadline_ms.filter(|_| entry.timed_here);
                self.reopen(id, timer_at);
                Refusal::AlreadyResolved
            }
            Verdict::Lost(winner) => {
                self.settle(id, *winner);
                Refusal::AlreadyResolved
            }
            _ => {
                self.vanished(id);
                Refusal::Unknown
            }
        }
    }

    /// An orphaned request's withdrawal failed: tried again `after`, while it stays orphaned.
    pub(super) fn retry_withdrawal(&mut self, id: &RequestId, after: std::time::Duration) {
        self.retry_orphan_stage(id, OrphanStage::Withdraw, after);
    }

    /// `stage` of an open request without its agent could not be judged (a shared store's
    /// presence could not be read, or its withdrawal failed): judged again `after`, while it is
    /// still in that stage.
    pub(super) fn retry_orphan_stage(
        &mut self,
        id: &RequestId,
        stage: OrphanStage,
        after: std::time::Duration,
    ) {
        let ledger = Arc::clone(&self.open.ledger);
        let Some(entry) = self.requests.get_mut(id) else {
            return;
        };
        let orphaned = entry.orphaned_since_ms.is_some();
        let in_stage = match stage {
            OrphanStage::Grace => !orphaned,
            OrphanStage::Withdraw => orphaned,
        };
        if matches!(entry.state, EntryState::Open) && in_stage {
            ledger.arm_orphan_timer(&self.id, entry, after, stage);
        }
    }

    /// Whether the orphan timer of `generation` is still request `id`'s current one.
    pub(super) fn orphan_timer_current(&self, id: &RequestId, generation: u64) -> bool {
        self.requests.get(id).is_some_and(|entry| {
            matches!(entry.state, EntryState::Open) && entry.orphan_generation == generation
        })
    }

    /// Encodes open request `id`'s view again as `change` leaves it, its bytes counted anew
    /// (and the snapshot body known stale); its `request` frame.
    fn reencode(&mut self, id: &RequestId, change: impl FnOnce(&mut RequestView)) -> Option<Frame> {
        let entry = self.requests.get_mut(id)?;
        let mut view = serde_json::from_slice::<RequestView>(&entry.encoded.view).ok()?;
        change(&mut view);
        let before = entry.encoded.view.len();
        entry.encoded = EncodedRequest::new(&view);
        let after = entry.encoded.view.len();
        let frame = entry.encoded.frame.clone();
        self.open.resize(before, after);
        self.reencoded += 1;
        Some(frame)
    }

    /// `Resolving` → gone: the shared store no longer has it (acknowledged on another node).
    pub(super) fn vanished(&mut self, id: &RequestId) {
        if let Some(entry) = self.requests.remove(id) {
            self.open.uncount(entry.encoded.view.len());
            gauge_add(&self.open.ledger.metrics.open_requests, -1);
            entry.resolved.notify_waiters();
        }
    }

    /// `Resolved` → forgotten: acknowledged, or kept past its retention. Its listing runs out
    /// after a while; a late answer to it is told "already resolved". `false` if it was not
    /// held resolved.
    pub(super) fn forget(&mut self, id: &RequestId) -> bool {
        if !matches!(
            self.requests.get(id).map(|e| &e.state),
            Some(EntryState::Resolved(_))
        ) {
            return false;
        }
        self.discard(id);
        true
    }

    /// `Open` or `Resolved` → forgotten, unannounced: the shared store no longer has it.
    pub(super) fn discard(&mut self, id: &RequestId) {
        let Some(entry) = self.requests.remove(id) else {
            return;
        };
        self.finished.forgotten(id, now_ms());
        self.forgotten.note(id);
        if let Some(timer) = &entry.timer {
            timer.abort();
        }
        let metrics = &self.open.ledger.metrics;
        match entry.state {
            EntryState::Open => {
                gauge_add(&metrics.open_requests, -1);
                self.open.uncount(entry.encoded.view.len());
            }
            _ => gauge_add(&metrics.kept_outcomes, -1),
        }
        entry.resolved.notify_waiters();
    }

    /// This node lets go of the session (the shared store keeps it): its requests stop
    /// counting here, and their timers stop.
    pub(super) fn let_go(&self) {
        let metrics = &self.open.ledger.metrics;
        for entry in self.requests.values() {
            if let Some(timer) = &entry.timer {
                timer.abort();
            }
            if let Some(follow_ups) = &entry.follow_up_timer {
                follow_ups.abort();
            }
            if let Some(orphaning) = &entry.orphan_timer {
                orphaning.abort();
            }
            match entry.state {
                EntryState::Open => gauge_add(&metrics.open_requests, -1),
                EntryState::Resolved(_) => gauge_add(&metrics.kept_outcomes, -1),
                EntryState::Committing | EntryState::Resolving => {}
            }
        }
    }

    /// Gives request `id` the times the store set on its own clock, re-encoding what tabs
    /// are shown of it when they differ from this node's guess.
    pub(super) fn retime(&mut self, id: &RequestId, asked_at_ms: u64, deadline_ms: Option<u64>) {
        let Some(entry) = self.requests.get_mut(id) else {
            return;
        };
        if entry.asked_at_ms == asked_at_ms && entry.deadline_ms == deadline_ms {
            return;
        }
        let Ok(mut view) = serde_json::from_slice::<RequestView>(&entry.encoded.view) else {
            return;
        };
        view.asked_at_ms = asked_at_ms;
        view.deadline_ms = deadline_ms;
        let before = entry.encoded.view.len();
        entry.encoded = EncodedRequest::new(&view);
        entry.asked_at_ms = asked_at_ms;
        entry.deadline_ms = deadline_ms;
        let after = entry.encoded.view.len();
        self.open.resize(before, after);
    }

    /// Whether request `id` ended and was forgotten lately.
    pub(super) fn forgot_lately(&self, id: &RequestId) -> bool {
        self.forgotten.contains(id)
    }

    /// Resolved requests whose retention ran out by `now_ms`.
    pub(super) fn expired(&self, now_ms: u64, retention_ms: u64) -> Vec<RequestId> {
        self.requests
            .values()
            .filter(|e| match &e.state {
                EntryState::Resolved(r) => r.at_ms.saturating_add(retention_ms) <= now_ms,
                _ => false,
            })
            .map(|e| e.id.clone())
            .collect()
    }

    /// Request `id`, whose view tabs got is `view`, ended as `resolution`: it joins the
    /// finished list tabs are shown, and the next `history` is built again.
    fn record_ended(&mut self, id: &RequestId, view: &Bytes, resolution: &StoredResolution) {
        self.finished.push(id, view, resolution);
        self.history_ended();
    }

    /// The next request's place in the session's order.
    fn take_seq(&mut self) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        seq
    }
}

/// Where a request is in its life.
#[derive(Debug)]
pub(super) enum EntryState {
    /// Being written to the store.
    Committing,
    /// Shown to tabs; the first valid answer wins.
    Open,
    /// A winner was chosen; its resolution is being written to the store.
    Resolving,
    /// Ended; kept until the agent acks it or the retention runs out. Boxed: an open request
    /// should not carry room for an ending.
    Resolved(Box<StoredResolution>),
}

/// One request in a session.
#[derive(Debug)]
pub(super) struct Entry {
    /// The request id.
    pub(super) id: RequestId,
    /// Orders requests within a session (oldest first in snapshots).
    pub(super) seq: u64,
    /// The validated questions, for checking answers.
    pub(super) questions: Arc<QuestionSet>,
    /// When it was asked (Unix ms).
    pub(super) asked_at_ms: u64,
    /// When it times out (Unix ms), if it does.
    pub(super) deadline_ms: Option<u64>,
    /// Who alone may answer, when the ask said so.
    pub(super) answerers: Option<Arc<[String]>>,
    /// The answer given should the deadline pass with none (checked when asked).
    pub(super) default: Option<Value>,
    /// Its title, for the operator's listing.
    pub(super) title: Option<String>,
    /// Since when its agent is gone (Unix ms), once it is orphaned.
    pub(super) orphaned_since_ms: Option<u64>,
    /// HTTP long-polls waiting on it now: its agent is there while any does.
    pub(super) polls: usize,
    /// Whether this node makes its timers (its deadline, follow-ups, orphaning): a local
    /// store's, or on a shared store the node it was asked on or restored by.
    pub(super) timed_here: bool,
    /// Its grace without an agent, or once orphaned its withdrawal, running.
    pub(super) orphan_timer: Option<AbortOnDropHandle<()>>,
    /// Which orphan timer is the current one: each set or stopped makes the next.
    pub(super) orphan_generation: u64,
    /// For an approval that needs several people: how many, and the votes so far (in the
    /// order they were cast).
    pub(super) quorum: Option<Quorum>,
    pub(super) votes: Vec<Vote>,
    /// The id of the agent key that asked it (whose a rule `for this agent key` is).
    pub(super) asked_by: Option<String>,
    /// Where its outcome is POSTed when it ends (boxed: few requests have one).
    pub(super) callback: Option<Box<Callback>>,
    /// For an approval some of whose calls rules approved when it was asked: each call's
    /// rule. A tab's decision on those calls is taken as an approval.
    pub(super) ruled: Option<Vec<Option<RuledCall>>>,
    /// Where an approval of it may be remembered (empty: nowhere).
    pub(super) remember: Vec<RuleScope>,
    /// The request as tabs see it, encoded once.
    pub(super) encoded: EncodedRequest,
    /// The agent connection waiting for the outcome, if one is connected.
    pub(super) asker: Option<Link>,
    pub(super) state: EntryState,
    /// Until its agent has been told `accepted` (the store made it durable, or it failed to):
    /// what the agent's repeats and withdrawals wait on meanwhile.
    pub(super) storing: Option<Arc<Notify>>,
    /// The deadline timer, aborted when the request ends another way.
    pub(super) timer: Option<AbortHandle>,
    /// Its reminder and escalation: when due, whether done.
    pub(super) follow_ups: FollowUps,
    /// What makes its follow-ups here, stopped when it ends (or is dropped).
    pub(super) follow_up_timer: Option<AbortOnDropHandle<()>>,
    /// Woken when the request ends, is forgotten, or opens again after its resolution could
    /// not be stored: for long-polling lookups and rival endings.
    pub(super) resolved: Arc<Notify>,
    /// When this node took it (accepted its ask, or read it from the store): the ask's time
    /// to its first tab is measured from here.
    pub(super) taken_at: tokio::time::Instant,
    /// When the ending being stored began (its deciding answer came in), while one is: the
    /// outcome's time to its agent is measured from here.
    pub(super) resolving_since: Option<tokio::time::Instant>,
}

impl Entry {
    /// Whether its outcome is awaited: by an agent connection (here, or on another node when
    /// `held_elsewhere`), a long-poll, or its callback (a request with a callback has no agent
    /// waiting by design, and is never orphaned).
    pub(super) fn awaited(&self, held_elsewhere: bool) -> bool {
        self.asker.is_some() || self.polls > 0 || self.callback.is_some() || held_elsewhere
    }

    /// Whether tabs can still answer it (or are about to learn it ended).
    pub(super) fn is_open(&self) -> bool {
        matches!(self.state, EntryState::Open | EntryState::Resolving)
    }

    /// How it ends when its deadline passes with no answer, at `at_ms`: answered by its
    /// default (`by: "default"`, `via: "default"`, no person) if the ask gave one, else timed
    /// out in its dialect's words.
    pub(super) fn deadline_ending(&self, at_ms: u64) -> StoredResolution {
        if let Some(default) = &self.default {
            match self.questions.settle_default(default) {
                Ok(settlement) => {
                    return StoredResolution {
                        settlement,
                        by: Some(DEFAULT_BY.to_owned()),
                        user: None,
                        via: Some(Via::Default),
                        voters: None,
                        at_ms,
                    };
                }
                // Checked when it was asked; an askgate since upgraded may judge it otherwise,
                // and then the request times out as one without a default would.
                Err(errors) => tracing::error!(
                    request = %self.id,
                    %errors,
                    "the request's default no longer fits it; it times out instead"
                ),
            }
        }
        StoredResolution::untouched(
            self.questions.settle_without_answer(Outcome::TimedOut),
            at_ms,
        )
    }
}

/// Who may answer a request now: those the ask named, and once it has escalated, those its
/// escalation named (`None`, anyone with the link, stays so).
pub(super) fn answerers_now(
    asked: Option<&[String]>,
    follow_ups: &FollowUps,
) -> Option<Vec<String>> {
    let mut answerers = asked?.to_vec();
    if follow_ups.escalated {
        for name in &follow_ups.escalate_to {
            if !answerers.contains(name) {
                answerers.push(name.clone());
            }
        }
    }
    Some(answerers)
}

/// A request as tabs see it, encoded once: the `request` frame every tab gets when it is asked,
/// and the view inside that frame (the same bytes), which snapshots copy in as they are. A
/// joining tab then costs a copy of each open request, not a clone and a re-encoding of its
/// questions under the hub's lock.
#[derive(Debug)]
pub(super) struct EncodedRequest {
    pub(super) frame: Frame,
    /// The `RequestView` as JSON: a slice of `frame`.
    pub(super) view: Bytes,
}

impl EncodedRequest {
    /// What the `request` frame starts with; the view follows, then `}`.
    const FRAME_HEAD: &[u8] = br#"{"type":"request","request":"#;

    pub(super) fn new(view: &RequestView) -> EncodedRequest {
        let mut bytes = Self::FRAME_HEAD.to_vec();
        // Wire types are plain data: serialising them cannot fail.
        let _ = serde_json::to_writer(&mut bytes, view);
        bytes.push(b'}');
        let bytes = Bytes::from(bytes);
        EncodedRequest {
            view: bytes.slice(Self::FRAME_HEAD.len()..bytes.len() - 1),
            frame: Frame::from_json(bytes),
        }
    }
}

#[cfg(test)]
mod encoding_tests {
    use askgate_protocol::Dialect;
    use askgate_protocol::wire::ToTab;
    use serde_json::json;

    use super::*;

    #[test]
    fn the_shown_request_is_the_request_frame_and_its_view() {
        let view = RequestView {
            quorum: None,
            ruled: None,
            remember: Vec::new(),
            orphaned: false,
            default: None,
            id: "r-1".into(),
            dialect: Dialect::HARNESS,
            title: Some("a \"title\" ✓".into()),
            questions: json!([{"header": "H", "question": "Q?\nnext", "options": []}]),
            asked_at_ms: 5,
            deadline_ms: Some(7),
            answerers: None,
            escalated_to: None,
        };
        let encoded = EncodedRequest::new(&view);
        let frame = Frame::encode(&ToTab::Request {
            request: view.clone(),
        });
        assert_eq!(encoded.frame.text(), frame.text());
        let decoded: RequestView = serde_json::from_slice(&encoded.view).unwrap();
        assert_eq!(decoded, view);
    }
}
