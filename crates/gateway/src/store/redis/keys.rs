//! The names of everything askgate keeps in Redis. Everything of one session carries the hash
//! tag `{session}`, so on Redis Cluster it lives in one slot and every transition is one script;
//! session ids cannot contain braces, so the tag is exactly the id.

use askgate_protocol::{RequestId, SessionId};

/// Key names under one deployment's prefix.
#[derive(Clone, Debug)]
pub(super) struct Keys {
    prefix: String,
}

impl Keys {
    /// Names under `prefix`, which holds no brace (checked by the configuration).
    pub(super) fn new(prefix: &str) -> Keys {
        Keys {
            prefix: prefix.to_owned(),
        }
    }

    fn tagged(&self, session: &SessionId) -> String {
        format!("{}{{{}}}", self.prefix, session.as_str())
    }

    /// The hash of one request.
    pub(super) fn request(&self, session: &SessionId, id: &RequestId) -> String {
        format!("{}{}", self.request_prefix(session), id.as_str())
    }

    /// What every request key of `session` starts with.
    pub(super) fn request_prefix(&self, session: &SessionId) -> String {
        format!("{}:q:", self.tagged(session))
    }

    /// The session's request ids, scored by creation order.
    pub(super) fn ids(&self, session: &SessionId) -> String {
        format!("{}:ids", self.tagged(session))
    }

    /// Who follows the session (a set of people's names).
    pub(super) fn followers(&self, session: &SessionId) -> String {
        format!("{}:followers", self.tagged(session))
    }

    /// Every node's presence in the session.
    pub(super) fn presence(&self, session: &SessionId) -> String {
        format!("{}:p", self.tagged(session))
    }

    /// The requests whose agent waits on each node (a hash: node id → expiry and ids).
    pub(super) fn held(&self, session: &SessionId) -> String {
        format!("{}:held", self.tagged(session))
    }

    /// The session's sequence number.
    pub(super) fn seq(&self, session: &SessionId) -> String {
        format!("{}:seq", self.tagged(session))
    }

    /// The channel the session's notices go to.
    pub(super) fn channel(&self, session: &SessionId) -> String {
        format!("{}:ch", self.tagged(session))
    }

    /// The session a notice's channel belongs to, if it is one of ours.
    pub(super) fn session_of_channel(&self, channel: &str) -> Option<SessionId> {
        let tagged = channel.strip_prefix(&self.prefix)?.strip_prefix('{')?;
        let session = tagged.strip_suffix("}:ch")?;
        SessionId::parse(session).ok()
    }

    /// The session's audit trail (a list of sealed lines, oldest first).
    pub(super) fn trail(&self, session: &SessionId) -> String {
        format!("{}:audit", self.tagged(session))
    }

    /// The head of the session's audit trail: `"{seq} {hash}"` of its newest entry.
    pub(super) fn trail_head(&self, session: &SessionId) -> String {
        format!("{}:audit:head", self.tagged(session))
    }

    /// The sessions with audit trails, scored by when each was last written (for exports and
    /// verification, which have to find them).
    pub(super) fn trails(&self) -> String {
        format!("{}{{audit}}", self.prefix)
    }

    /// The deadline index every node sweeps.
    pub(super) fn due(&self) -> String {
        format!("{}{{due}}", self.prefix)
    }

    /// The session's notifications not yet sent: id → a `StoredDelivery`'s JSON.
    pub(super) fn outbox(&self, session: &SessionId) -> String {
        format!("{}:out", self.tagged(session))
    }

    /// The hash of one key of a kept table. Every kept hash shares one slot: they are read and
    /// written one at a time, never with a session's keys in one script.
    pub(super) fn kept(&self, table: crate::store::KeptTable, key: &str) -> String {
        format!("{}{{kept}}:{}:{key}", self.prefix, table.as_str())
    }

    /// The notification index every node claims from: members name a session's
    /// notification (`session`, a line feed, its id), scored by when it is next due.
    pub(super) fn outbox_index(&self) -> String {
        format!("{}{{notify}}", self.prefix)
    }

    /// The member of the notification index for one notification.
    pub(super) fn outbox_member(session: &SessionId, id: &str) -> String {
        format!("{}\n{id}", session.as_str())
    }

    /// The notification an index member names.
    pub(super) fn parse_outbox_member(member: &str) -> Option<(SessionId, &str)> {
        let (session, id) = member.split_once('\n')?;
        Some((SessionId::parse(session).ok()?, id))
    }

    /// The follow-up index every node sweeps: members name a request's follow-up (`session`,
    /// a line feed, its id, a line feed, the follow-up's letter), scored by when it is due.
    pub(super) fn follow_index(&self) -> String {
        format!("{}{{follow}}", self.prefix)
    }

    /// The member of the follow-up index for one follow-up.
    pub(super) fn follow_member(session: &SessionId, id: &RequestId, letter: &str) -> String {
        format!("{}\n{}\n{letter}", session.as_str(), id.as_str())
    }

    /// The follow-up a follow-up index member names.
    pub(super) fn parse_follow_member(member: &str) -> Option<(SessionId, RequestId, &str)> {
        let (session, rest) = member.split_once('\n')?;
        let (id, letter) = rest.split_once('\n')?;
        Some((
            SessionId::parse(session).ok()?,
            RequestId::parse(id).ok()?,
            letter,
        ))
    }

    /// The member of the deadline index for one request: session, a line feed, the id (neither
    /// can hold a line feed).
    pub(super) fn due_member(session: &SessionId, id: &RequestId) -> String {
        format!("{}\n{}", session.as_str(), id.as_str())
    }

    /// The request a deadline-index member names.
    pub(super) fn parse_due_member(member: &str) -> Option<(SessionId, RequestId)> {
        let (session, id) = member.split_once('\n')?;
        Some((SessionId::parse(session).ok()?, RequestId::parse(id).ok()?))
    }

    /// How this deployment's audit chains are hashed (`hmac-sha256` or `sha256`).
    pub(super) fn chain_mode(&self) -> String {
        format!("{}{{audit}}:chain", self.prefix)
    }

    /// The viewer-link secret nodes share when no secret file is given.
    pub(super) fn secret(&self) -> String {
        format!("{}{{secret}}", self.prefix)
    }

    /// The sessions where requests name `name` (a person or `group:NAME`) or that `name`
    /// follows, scored by when: where a node looks for what a person's inbox shows of the
    /// sessions it does not hold. All such indexes share the hash tag `{inbox}`.
    pub(super) fn inbox_index(&self, name: &str) -> String {
        format!("{}{{inbox}}:to:{name}", self.prefix)
    }

    /// The sessions asked in lately, for the operator's listing: a sorted set scored by when.
    pub(super) fn asked_index(&self) -> String {
        format!("{}{{inbox}}:asked", self.prefix)
    }

    /// The channel every node hears "a request in session S is for NAME" on.
    pub(super) fn inbox_channel(&self) -> String {
        format!("{}{{inbox}}:ch", self.prefix)
    }

    /// Every node's latest report, scored by when it was written (Unix ms).
    pub(super) fn node_reports(&self) -> String {
        format!("{}{{ops}}:nodes", self.prefix)
    }

    /// One node's latest report (its JSON), in the same slot as the index.
    pub(super) fn node_report(&self, node: &str) -> String {
        format!("{}{{ops}}:node:{node}", self.prefix)
    }

    /// The channel one node probes its own subscription with.
    pub(super) fn probe(&self, node: &str) -> String {
        format!("{}{{probe}}:{node}", self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_of_a_session_shares_its_hash_tag() {
        let keys = Keys::new("askgate:");
        let session = SessionId::parse("team-a:s-1").unwrap();
        let id = RequestId::parse("r{1}").unwrap();
        for key in [
            keys.request(&session, &id),
            keys.ids(&session),
            keys.seq(&session),
            keys.presence(&session),
            keys.channel(&session),
            keys.outbox(&session),
        ] {
            assert!(key.starts_with("askgate:{team-a:s-1}:"), "{key}");
        }
        assert_eq!(
            keys.session_of_channel(&keys.channel(&session)),
            Some(session.clone())
        );
        assert_eq!(keys.session_of_channel("other:{s}:ch"), None);
        let member = Keys::due_member(&session, &id);
        assert_eq!(Keys::parse_due_member(&member), Some((session.clone(), id)));
        let member = Keys::outbox_member(&session, "msg_1");
        assert_eq!(Keys::parse_outbox_member(&member), Some((session, "msg_1")));
    }
}
