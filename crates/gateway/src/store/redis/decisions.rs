//! The decisions on Redis: asking, resolving and forgetting a request, each one script that
//! Redis runs against its own clock, and the verdict read from its reply.

use askgate_protocol::{Outcome, RequestId, SessionId};

use super::Inner;
use super::keys::Keys;
use super::lua::Index;
use super::outbox;
use super::records::{self, Fields};
use super::seals::Seal;
use super::trails::Entry;
use crate::audit::Note;
use crate::store::{StoreError, StoreOp, StoredDelivery, StoredRequest, StoredResolution, Verdict};

impl Inner {
    /// The deadline index's entry for a request, brought forward to `at_ms` (or added).
    fn due_index(&self, session: &SessionId, id: &RequestId, at_ms: u64) -> Index {
        Index {
            key: self.keys.due(),
            mode: "LT",
            score: at_ms,
            member: Keys::due_member(session, id),
            keep_newest: None,
        }
    }

    async fn put(
        &self,
        request: &StoredRequest,
        notify: &[StoredDelivery],
    ) -> Result<Verdict, StoreError> {
        let (session, id) = (&request.session, &request.id);
        let timeout_ms = request
            .deadline_ms
            .map(|deadline| deadline.saturating_sub(request.asked_at_ms));
        let entry = Entry::of(&Note::asked(request));
        let seal = self.seals.arg(session, &entry.digest);
        let mut script = self.scripts.ask.key(self.keys.request(session, id));
        script
            .key(self.keys.ids(session))
            .key(self.keys.seq(session))
            .key(self.keys.trail(session))
            .key(self.keys.trail_head(session))
            .key(self.keys.outbox(session))
            .arg(id.as_str())
            .arg(records::digest(request))
            .arg(records::body(request))
            .arg(timeout_ms.map(|t| t.to_string()).unwrap_or_default())
            .arg(self.keys.channel(session))
            .arg(self.publish)
            .arg(&entry.tail)
            .arg(&entry.digest)
            .arg(self.audit_retention_ms)
            .arg(&seal.arg);
        for delivery in notify {
            script.arg(&delivery.id).arg(outbox::json(delivery)?);
        }
        // The operator's listing finds the session by this index (inbox_index.rs); written
        // with the ask, in its one write on one server.
        let mut indexes = vec![self.trails_index(session), self.asked_index(session)];
        indexes.extend(
            request
                .deadline_ms
                .map(|deadline| self.due_index(session, id, deadline)),
        );
        indexes.extend(notify.iter().map(|delivery| self.outbox_index(delivery)));
        indexes.extend(
            request
                .follow_ups
                .pending()
                .into_iter()
                .map(|(follow_up, at_ms)| Index {
                    key: self.keys.follow_index(),
                    mode: "NX",
                    score: at_ms,
                    member: Keys::follow_member(session, id, records::follow_up_letter(follow_up)),
                    keep_newest: None,
                }),
        );
        let sent_ms = crate::clock::now_ms();
        let reply: Vec<String> = self.index_then_run("asking", &indexes, &mut script).await?;
        let text = |i: usize| reply.get(i).map_or("", String::as_str);
        let bad =
            |e: String| StoreError::damaged(format!("redis replied to an ask unexpectedly: {e}"));
        match text(0) {
            "created" => {
                let asked_at_ms = records::millis(text(1)).map_err(bad)?;
                self.sealed(&seal, sent_ms, asked_at_ms, text(4));
                Ok(Verdict::Created {
                    asked_at_ms,
                    deadline_ms: records::deadline(text(2)).map_err(bad)?,
                })
            }
            "exists" => {
                let fields = Fields {
                    asked: text(1),
                    deadline: text(2),
                    state: text(3),
                    resolution: text(4),
                    resolved: text(5),
                    body: text(6),
                    follows: text(7),
                    votes: text(8),
                };
                let stored = records::request(session, id, &fields).map_err(bad)?;
                Ok(Verdict::Exists(Box::new(stored)))
            }
            "conflict" => Ok(Verdict::Conflict),
            other => Err(bad(format!("{other:?}"))),
        }
    }

    /// Notes what a script that sealed an entry replied: Redis's clock (`redis_ms`, for a
    /// script sent at `sent_ms`) and whether it took the hash `seal` proposed (`taken`: `1`).
    fn sealed(&self, seal: &Seal, sent_ms: u64, redis_ms: u64, taken: &str) {
        self.seals.clock_read(sent_ms, redis_ms);
        if seal.proposed {
            let shared = &self.metrics.shared;
            shared.count(&shared.seals_proposed);
            if taken == "1" {
                shared.count(&shared.seals_taken);
            }
        }
    }

    /// `script` given the keys every change to an existing request names, in the order its
    /// script reads them: the request, the session's sequence, trail, trail head and outbox.
    fn changing_request<'s>(
        &self,
        script: &'s redis::Script,
        session: &SessionId,
        id: &RequestId,
    ) -> redis::ScriptInvocation<'s> {
        let mut invocation = script.key(self.keys.request(session, id));
        invocation
            .key(self.keys.seq(session))
            .key(self.keys.trail(session))
            .key(self.keys.trail_head(session))
            .key(self.keys.outbox(session));
        invocation
    }

    async fn resolve(
        &self,
        session: &SessionId,
        id: &RequestId,
        resolution: &StoredResolution,
        if_late: Option<&StoredResolution>,
        notify: Option<(&[StoredDelivery], &[StoredDelivery])>,
    ) -> Result<Verdict, StoreError> {
        // A default ends the request only once its deadline has passed, as a timeout does.
        let kind = match resolution.settlement.outcome {
            _ if resolution.via == Some(askgate_protocol::wire::Via::Default) => "timeout",
            Outcome::Answered | Outcome::Declined => "answer",
            Outcome::TimedOut => "timeout",
            Outcome::Withdrawn => "withdraw",
        };
        // The sweep forgets the outcome once its retention has run out, whichever node kept it.
        let retained_until = crate::clock::now_ms().saturating_add(self.retention_ms);
        let late_resolution = if_late.cloned();
        let won_entry = Entry::of(&Note::ended(session, id, resolution));
        let late_entry = late_resolution
            .as_ref()
            .map(|late| Entry::of(&Note::ended(session, id, late)))
            .unwrap_or_default();
        let (won, late) = notify.unwrap_or_default();
        let seal = self.seals.arg(session, &won_entry.digest);
        let mut script = self.changing_request(&self.scripts.resolve, session, id);
        script
            .arg(id.as_str())
            .arg(kind)
            .arg(records::ending(resolution))
            .arg(
                late_resolution
                    .as_ref()
                    .map(records::ending)
                    .unwrap_or_default(),
            )
            .arg(self.keys.channel(session))
            .arg(self.publish)
            .arg(&won_entry.tail)
            .arg(&won_entry.digest)
            .arg(&late_entry.tail)
            .arg(&late_entry.digest)
            .arg(self.audit_retention_ms)
            .arg(&seal.arg)
            .arg(won.len());
        for delivery in won.iter().chain(late) {
            script.arg(&delivery.id).arg(outbox::json(delivery)?);
        }
        let mut indexes = vec![self.due_index(session, id, retained_until)];
        indexes.extend(won.iter().chain(late).map(|d| self.outbox_index(d)));
        let sent_ms = crate::clock::now_ms();
        let reply: Vec<String> = self
            .index_then_run("resolving", &indexes, &mut script)
            .await?;
        let text = |i: usize| reply.get(i).map_or("", String::as_str);
        let bad = |e: String| {
            StoreError::damaged(format!("redis replied to a resolution unexpectedly: {e}"))
        };
        let verdict = match text(0) {
            "won" => {
                let at_ms = records::millis(text(2)).map_err(bad)?;
                self.sealed(&seal, sent_ms, at_ms, text(3));
                Verdict::Won { at_ms }
            }
            "lost" | "late" => Verdict::Lost(Box::new(
                records::resolution(text(1), text(2)).map_err(bad)?,
            )),
            "early" => Verdict::Early {
                left_ms: records::deadline(text(1)).map_err(bad)?.unwrap_or(u64::MAX),
            },
            "unknown" => Verdict::Unknown,
            other => return Err(bad(format!("{other:?}"))),
        };
        self.metrics.shared.script_outcome(text(0));
        Ok(verdict)
    }

    async fn forget(
        &self,
        session: &SessionId,
        id: &RequestId,
        acked: bool,
    ) -> Result<Verdict, StoreError> {
        let op = StoreOp::Delete {
            session: session.clone(),
            id: id.clone(),
            acked,
        };
        let entry = Entry::of_op(&op);
        let reply: String = self
            .run(
                "forgetting",
                self.scripts
                    .forget
                    .key(self.keys.request(session, id))
                    .key(self.keys.ids(session))
                    .key(self.keys.seq(session))
                    .key(self.keys.trail(session))
                    .key(self.keys.trail_head(session))
                    .arg(id.as_str())
                    .arg(self.keys.channel(session))
                    .arg(self.publish)
                    .arg("")
                    .arg(&entry.tail)
                    .arg(&entry.digest)
                    .arg(self.audit_retention_ms)
                    .arg(self.seals.arg(session, &entry.digest).arg),
            )
            .await?;
        Ok(match reply.as_str() {
            "done" | "kept" => Verdict::Done,
            "still_open" => Verdict::StillOpen,
            _ => Verdict::Unknown,
        })
    }

    /// Makes the follow-up `op` (a [`StoreOp::FollowedUp`]) with its notifications: `Done` if
    /// it was made now, `Unknown` if the request is not open or it was made before.
    async fn follow_up(
        &self,
        op: &StoreOp,
        notify: &[StoredDelivery],
    ) -> Result<Verdict, StoreError> {
        let StoreOp::FollowedUp {
            session,
            id,
            follow_up,
            ..
        } = op
        else {
            return Ok(Verdict::Unknown);
        };
        let entry = Entry::of_op(op);
        let mut script = self.changing_request(&self.scripts.follow_up, session, id);
        script
            .arg(id.as_str())
            .arg(records::follow_up_letter(*follow_up))
            .arg(&entry.tail)
            .arg(&entry.digest)
            .arg(self.audit_retention_ms)
            .arg(self.seals.arg(session, &entry.digest).arg)
            .arg(self.keys.channel(session))
            .arg(self.publish);
        for delivery in notify {
            script.arg(&delivery.id).arg(outbox::json(delivery)?);
        }
        let mut indexes = vec![self.trails_index(session)];
        indexes.extend(notify.iter().map(|delivery| self.outbox_index(delivery)));
        let reply: String = self
            .index_then_run("following up", &indexes, &mut script)
            .await?;
        self.metrics.shared.script_outcome(&reply);
        Ok(match reply.as_str() {
            "applied" => Verdict::Done,
            _ => Verdict::Unknown,
        })
    }

    /// Keeps the vote `op` (a [`StoreOp::Vote`]) if the request still holds the votes it was
    /// counted on: `Done`; else `Stale` with the votes it holds, `Lost` with its ending,
    /// `Early` (left 0) past its deadline, or `Unknown`.
    async fn vote(&self, op: &StoreOp) -> Result<Verdict, StoreError> {
        let StoreOp::Vote {
            session,
            id,
            user,
            votes,
            counted_on,
        } = op
        else {
            return Ok(Verdict::Unknown);
        };
        let entry = Entry::of_op(op);
        let mut script = self.scripts.vote.key(self.keys.request(session, id));
        script
            .key(self.keys.seq(session))
            .key(self.keys.trail(session))
            .key(self.keys.trail_head(session))
            .arg(id.as_str())
            .arg(records::votes(counted_on))
            .arg(records::votes(votes))
            .arg(user)
            .arg(&entry.tail)
            .arg(&entry.digest)
            .arg(self.audit_retention_ms)
            .arg(self.seals.arg(session, &entry.digest).arg)
            .arg(self.keys.channel(session))
            .arg(self.publish);
        let reply: Vec<String> = self
            .index_then_run("voting", &[self.trails_index(session)], &mut script)
            .await?;
        let text = |i: usize| reply.get(i).map_or("", String::as_str);
        let bad =
            |e: String| StoreError::damaged(format!("redis replied to a vote unexpectedly: {e}"));
        self.metrics.shared.script_outcome(text(0));
        Ok(match text(0) {
            "kept" => Verdict::Done,
            "stale" => Verdict::Stale(records::read_votes(text(1)).map_err(bad)?),
            "lost" => Verdict::Lost(Box::new(
                records::resolution(text(1), text(2)).map_err(bad)?,
            )),
            "unknown" => Verdict::Unknown,
            "late" => Verdict::Early { left_ms: 0 },
            other => return Err(bad(format!("{other:?}"))),
        })
    }

    /// Makes the follow or unfollow `op` (a [`StoreOp::Follow`]) once, within
    /// [`MAX_FOLLOWERS`](crate::hub::MAX_FOLLOWERS) across every node: `Done` if made now,
    /// `Unknown` if it already was so, `Conflict` if the session has the most followers.
    async fn follow(&self, op: &StoreOp) -> Result<Verdict, StoreError> {
        let StoreOp::Follow {
            session, user, on, ..
        } = op
        else {
            return Ok(Verdict::Unknown);
        };
        let entry = Entry::of_op(op);
        let reply: String = self
            .index_then_run(
                "following",
                &[self.trails_index(session)],
                self.scripts
                    .follow
                    .key(self.keys.followers(session))
                    .key(self.keys.trail(session))
                    .key(self.keys.trail_head(session))
                    .arg(user)
                    .arg(if *on { "1" } else { "0" })
                    .arg(crate::hub::MAX_FOLLOWERS)
                    .arg(&entry.tail)
                    .arg(&entry.digest)
                    .arg(self.audit_retention_ms)
                    .arg(self.seals.arg(session, &entry.digest).arg)
                    .arg(self.keys.channel(session))
                    .arg(self.publish),
            )
            .await?;
        Ok(match reply.as_str() {
            "changed" => Verdict::Done,
            "full" => Verdict::Conflict,
            _ => Verdict::Unknown,
        })
    }

    /// Runs `ops` in order. A `Notify` goes into the script of the ask or ending before it,
    /// so that its notifications are kept only with the change they tell of.
    pub(super) async fn decide(&self, ops: Vec<StoreOp>) -> Result<Vec<Verdict>, StoreError> {
        let mut verdicts = Vec::with_capacity(ops.len());
        let mut ops = ops.into_iter().peekable();
        while let Some(op) = ops.next() {
            let notify = match ops.peek() {
                Some(StoreOp::Notify { .. })
                    if matches!(
                        op,
                        StoreOp::Put(_) | StoreOp::Resolve { .. } | StoreOp::FollowedUp { .. }
                    ) =>
                {
                    match ops.next() {
                        Some(StoreOp::Notify {
                            deliveries,
                            if_late,
                        }) => Some((deliveries, if_late)),
                        _ => None,
                    }
                }
                _ => None,
            };
            let with = notify
                .as_ref()
                .map(|(won, late)| (won.as_slice(), late.as_slice()));
            let was_vote = matches!(op, StoreOp::Vote { .. });
            let was_ending = matches!(op, StoreOp::Resolve { .. });
            let verdict = match op {
                StoreOp::Put(request) => {
                    self.put(&request, with.map_or(&[][..], |(won, _)| won))
                        .await?
                }
                StoreOp::Resolve {
                    session,
                    id,
                    resolution,
                    if_late,
                } => {
                    self.resolve(&session, &id, &resolution, if_late.as_ref(), with)
                        .await?
                }
                StoreOp::Delete { session, id, acked } => self.forget(&session, &id, acked).await?,
                StoreOp::Note(note) => self.note(&note).await?,
                StoreOp::DropStaleTrails { before_ms } => self.drop_stale_trails(before_ms).await?,
                StoreOp::Notify { deliveries, .. } => self.keep_deliveries(&deliveries).await?,
                StoreOp::Delivered { session, id } => self.delivered(&session, &id).await?,
                op @ StoreOp::Follow { .. } => self.follow(&op).await?,
                StoreOp::Keep {
                    table,
                    key,
                    field,
                    value,
                } => self.keep(table, &key, &field, value.as_deref()).await?,
                StoreOp::Unkeep { table, key } => self.unkeep(table, &key).await?,
                op @ StoreOp::Vote { .. } => self.vote(&op).await?,
                op @ StoreOp::FollowedUp { .. } => {
                    let deliveries = with.map_or(&[][..], |(won, _)| won);
                    self.follow_up(&op, deliveries).await?
                }
            };
            // A vote not kept (counted on votes that changed, or on a request that ended), or an
            // ending that did not win, stops the commit: what follows rests on it (the ending a
            // deciding vote makes, the rules an answer asked for).
            let stopped = (was_vote && verdict != Verdict::Done)
                || (was_ending && !matches!(verdict, Verdict::Won { .. }));
            verdicts.push(verdict);
            if notify.is_some() {
                verdicts.push(Verdict::Done);
            }
            if stopped {
                break;
            }
        }
        Ok(verdicts)
    }
}
