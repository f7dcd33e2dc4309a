//! What the log keeps of a commit, and how redb takes it.
//!
//! A [`StoreOp`] becomes the changes it makes: rows to put, resolve or delete, and its audit
//! entry as the time and members to seal (sealing needs the chain's head, which redb holds).
//! The checkpointer applies these as they come from the syncer; a restart applies them as read
//! back from the log; both through [`apply_all`], so the two cannot disagree.

use std::borrow::Cow;
use std::collections::HashMap;
use std::collections::hash_map::Entry;

use redb::ReadableTable as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

use askgate_protocol::{RequestId, SessionId};

use super::trails::TrailTables;
use crate::audit::{Note, tail};
use crate::store::{FollowUp, KeptTable, StoreOp, StoredRequest};

/// One change redb is to take.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(super) enum Logged {
    /// Keep a request, replacing any of the same id.
    Put(RequestRow),
    /// Record how a request ended (nothing, if it is not kept): a
    /// [`StoredResolution`](crate::store::StoredResolution).
    Resolve {
        session: SessionId,
        id: RequestId,
        resolution: Encoded,
    },
    /// Forget a request.
    Delete { session: SessionId, id: RequestId },
    /// Seal an entry onto `session`'s audit trail.
    Audit {
        session: SessionId,
        at_ms: u64,
        /// Its members after `seq` and `at_ms` ([`tail`]).
        tail: String,
    },
    /// Drop the audit trails whose newest entry is older than `before_ms`, whole.
    DropStaleTrails { before_ms: u64 },
    /// Keep a notification to send: a [`StoredDelivery`](crate::store::StoredDelivery).
    Deliver {
        session: SessionId,
        id: String,
        delivery: Encoded,
    },
    /// Forget a notification (sent, or given up).
    Delivered { session: SessionId, id: String },
    /// A person follows a session (`on`), or no longer.
    Follow {
        session: SessionId,
        user: String,
        on: bool,
    },
    /// A follow-up of a request happened: its bit ([`follow_up_bit`]) is set.
    FollowedUp {
        session: SessionId,
        id: RequestId,
        bit: u8,
    },
    /// A field of a kept table set (`value`) or deleted.
    Keep {
        table: KeptTable,
        key: String,
        field: String,
        value: Option<String>,
    },
    /// Every field under a key of a kept table deleted.
    Unkeep { table: KeptTable, key: String },
}

/// The bit a follow-up sets in the follow-ups table.
pub(super) fn follow_up_bit(follow_up: FollowUp) -> u8 {
    match follow_up {
        FollowUp::Remind => 1,
        FollowUp::Escalate => 2,
    }
}

impl Logged {
    /// The session it changes, and the request, if it names one.
    pub(super) fn names(&self) -> Option<(&str, Option<&str>)> {
        match self {
            Logged::Put(row) => Some((row.session.as_str(), Some(row.id.as_str()))),
            Logged::Resolve { session, id, .. }
            | Logged::Delete { session, id }
            | Logged::FollowedUp { session, id, .. } => Some((session.as_str(), Some(id.as_str()))),
            Logged::Audit { session, .. } | Logged::Follow { session, .. } => {
                Some((session.as_str(), None))
            }
            Logged::Deliver { session, .. } | Logged::Delivered { session, .. } => {
                Some((session.as_str(), None))
            }
            Logged::DropStaleTrails { .. } | Logged::Keep { .. } | Logged::Unkeep { .. } => None,
        }
    }
}

/// JSON as it was encoded once, when its commit was written to the log (where it is these very
/// bytes): the checkpointer writes it to redb as it is, rather than a value to encode again.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub(super) struct Encoded(Box<RawValue>);

impl Encoded {
    fn of(value: &impl Serialize) -> Result<Self, String> {
        serde_json::value::to_raw_value(value)
            .map(Encoded)
            .map_err(|e| format!("encoding: {e}"))
    }

    fn text(&self) -> &str {
        self.0.get()
    }
}

impl PartialEq for Encoded {
    fn eq(&self, other: &Self) -> bool {
        self.text() == other.text()
    }
}

/// A request as its row holds it (the JSON of its [`StoredRequest`]), and its key.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct RequestRow {
    session: SessionId,
    id: RequestId,
    json: Encoded,
}

impl RequestRow {
    pub(super) fn of(request: &StoredRequest) -> Result<Self, String> {
        Ok(RequestRow {
            session: request.session.clone(),
            id: request.id.clone(),
            json: Encoded::of(request)?,
        })
    }

    fn key(&self) -> (&str, &str) {
        (self.session.as_str(), self.id.as_str())
    }
}

impl Serialize for RequestRow {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.json.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for RequestRow {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        /// What the key is read from.
        #[derive(Deserialize)]
        struct Key {
            session: SessionId,
            id: RequestId,
        }
        let json = Encoded::deserialize(deserializer)?;
        let key: Key = serde_json::from_str(json.text()).map_err(serde::de::Error::custom)?;
        Ok(RequestRow {
            session: key.session,
            id: key.id,
            json,
        })
    }
}

/// Appends to `out` the changes `op` makes, committed at `now_ms`: its audit entry first, as
/// it was recorded before the change it records.
pub(super) fn log_op(op: StoreOp, now_ms: u64, out: &mut Vec<Logged>) -> Result<(), String> {
    if let Some(note) = Note::of(&op, now_ms) {
        out.push(Logged::Audit {
            session: note.session.clone(),
            at_ms: note.at_ms,
            tail: tail(&note),
        });
    }
    match op {
        StoreOp::Put(request) => out.push(Logged::Put(RequestRow::of(&request)?)),
        StoreOp::Resolve {
            session,
            id,
            resolution,
            ..
        } => out.push(Logged::Resolve {
            session,
            id,
            resolution: Encoded::of(&resolution)?,
        }),
        StoreOp::Delete { session, id, .. } => out.push(Logged::Delete { session, id }),
        StoreOp::DropStaleTrails { before_ms } => out.push(Logged::DropStaleTrails { before_ms }),
        StoreOp::Note(_) => {}
        StoreOp::Notify { deliveries, .. } => {
            for delivery in deliveries {
                out.push(Logged::Deliver {
                    delivery: Encoded::of(&delivery)?,
                    session: delivery.session,
                    id: delivery.id,
                });
            }
        }
        StoreOp::Delivered { session, id } => out.push(Logged::Delivered { session, id }),
        StoreOp::Follow {
            session, user, on, ..
        } => out.push(Logged::Follow { session, user, on }),
        StoreOp::FollowedUp {
            session,
            id,
            follow_up,
            ..
        } => out.push(Logged::FollowedUp {
            session,
            id,
            bit: follow_up_bit(follow_up),
        }),
        StoreOp::Keep {
            table,
            key,
            field,
            value,
        } => out.push(Logged::Keep {
            table,
            key,
            field,
            value,
        }),
        StoreOp::Unkeep { table, key } => out.push(Logged::Unkeep { table, key }),
        ref vote @ StoreOp::Vote { .. } => {
            if let Some(field) = vote.vote_field(now_ms) {
                out.push(Logged::Keep {
                    table: field.table,
                    key: field.key,
                    field: field.field,
                    value: Some(field.value),
                });
            }
        }
    }
    Ok(())
}

/// What a checkpoint leaves of a request's row, written once at its end: most requests are
/// put, resolved and deleted within one checkpoint, and then leave nothing to write.
#[derive(Clone, Copy)]
enum Row<'c> {
    /// Put by this checkpoint, and resolved since if `resolution`.
    Put {
        request: &'c RequestRow,
        resolution: Option<&'c Encoded>,
    },
    /// Resolved by this checkpoint, as redb holds it (nothing, if redb does not).
    Resolved(&'c Encoded),
    /// Deleted by this checkpoint.
    Deleted,
}

/// Applies `changes`, in order, in the write transaction whose tables these are: trail
/// entries and notifications as they come, each request's row once, as the changes leave it.
pub(super) fn apply_all<'c>(
    table: &mut redb::Table<'_, (&str, &str), &[u8]>,
    outbox: &mut redb::Table<'_, (&str, &str), &[u8]>,
    follow_ups: &mut redb::Table<'_, (&str, &str), u8>,
    followers: &mut redb::Table<'_, (&str, &str), u8>,
    kept: &mut redb::Table<'_, (&str, &str, &str), &str>,
    trails: &mut TrailTables<'_>,
    changes: impl IntoIterator<Item = &'c Logged>,
) -> Result<(), String> {
    let mut rows: HashMap<(&'c str, &'c str), Row<'c>> = HashMap::new();
    for change in changes {
        match change {
            Logged::Put(request) => {
                let key = request.key();
                // A new request starts with none of its follow-ups done.
                follow_ups
                    .remove(key)
                    .map_err(|e| format!("clearing follow-ups: {e}"))?;
                let row = Row::Put {
                    request,
                    resolution: None,
                };
                rows.insert(key, row);
            }
            Logged::Resolve {
                session,
                id,
                resolution,
            } => match rows.entry((session.as_str(), id.as_str())) {
                Entry::Occupied(mut row) => match row.get_mut() {
                    Row::Put { resolution: r, .. } => *r = Some(resolution),
                    Row::Resolved(r) => *r = resolution,
                    Row::Deleted => {}
                },
                Entry::Vacant(row) => {
                    row.insert(Row::Resolved(resolution));
                }
            },
            Logged::Delete { session, id } => {
                rows.insert((session.as_str(), id.as_str()), Row::Deleted);
                follow_ups
                    .remove((session.as_str(), id.as_str()))
                    .map_err(|e| format!("clearing follow-ups: {e}"))?;
            }
            Logged::FollowedUp { session, id, bit } => {
                let key = (session.as_str(), id.as_str());
                let done = follow_ups
                    .get(key)
                    .map_err(|e| format!("reading follow-ups: {e}"))?
                    .map_or(0, |v| v.value());
                follow_ups
                    .insert(key, done | bit)
                    .map_err(|e| format!("writing follow-ups: {e}"))?;
            }
            Logged::Follow { session, user, on } => {
                let key = (session.as_str(), user.as_str());
                if *on {
                    followers.insert(key, 1)
                } else {
                    followers.remove(key)
                }
                .map_err(|e| format!("writing followers: {e}"))?;
            }
            Logged::Audit {
                session,
                at_ms,
                tail,
            } => trails.record(session.as_str(), *at_ms, tail)?,
            Logged::DropStaleTrails { before_ms } => trails.drop_stale(*before_ms)?,
            Logged::Deliver {
                session,
                id,
                delivery,
            } => {
                outbox
                    .insert((session.as_str(), id.as_str()), delivery.text().as_bytes())
                    .map_err(|e| format!("writing a notification: {e}"))?;
            }
            Logged::Delivered { session, id } => {
                outbox
                    .remove((session.as_str(), id.as_str()))
                    .map_err(|e| format!("deleting a notification: {e}"))?;
            }
            Logged::Keep {
                table,
                key,
                field,
                value,
            } => {
                let row = (table.as_str(), key.as_str(), field.as_str());
                match value {
                    Some(value) => kept.insert(row, value.as_str()).map(drop),
                    None => kept.remove(row).map(drop),
                }
                .map_err(|e| format!("writing the kept table: {e}"))?;
            }
            Logged::Unkeep { table, key } => {
                let under = (table.as_str(), key.as_str());
                let mut fields = Vec::new();
                for row in kept
                    .range((under.0, under.1, "")..)
                    .map_err(|e| format!("reading the kept table: {e}"))?
                {
                    let (row, _) = row.map_err(|e| format!("reading the kept table: {e}"))?;
                    let (t, k, field) = row.value();
                    if (t, k) != under {
                        break;
                    }
                    fields.push(field.to_owned());
                }
                for field in fields {
                    kept.remove((under.0, under.1, field.as_str()))
                        .map_err(|e| format!("writing the kept table: {e}"))?;
                }
            }
        }
    }
    trails.write_sealed()?;
    for (key, row) in rows {
        write_row(table, key, row)?;
    }
    Ok(())
}

fn write_row(
    table: &mut redb::Table<'_, (&str, &str), &[u8]>,
    key: (&str, &str),
    row: Row<'_>,
) -> Result<(), String> {
    let bytes = match row {
        Row::Put {
            request,
            resolution: None,
        } => Cow::Borrowed(request.json.text().as_bytes()),
        Row::Put {
            request,
            resolution: Some(resolution),
        } => Cow::Owned(with_resolution(request.json.text(), resolution)?.into_bytes()),
        Row::Resolved(resolution) => {
            let current = table
                .get(key)
                .map_err(|e| format!("reading a request: {e}"))?
                .map(|v| v.value().to_vec());
            let Some(bytes) = current else {
                return Ok(());
            };
            let text =
                std::str::from_utf8(&bytes).map_err(|e| format!("decoding a request: {e}"))?;
            Cow::Owned(with_resolution(text, resolution)?.into_bytes())
        }
        Row::Deleted => {
            table
                .remove(key)
                .map_err(|e| format!("deleting a request: {e}"))?;
            return Ok(());
        }
    };
    table
        .insert(key, bytes.as_ref())
        .map_err(|e| format!("writing a request: {e}"))?;
    Ok(())
}

/// The JSON of a stored request, `request`, with its resolution set to `resolution`. An open
/// request's JSON ends with its `resolution`, null (the last field of [`StoredRequest`]): the
/// resolution takes the null's place; otherwise it is decoded and encoded again.
fn with_resolution(request: &str, resolution: &Encoded) -> Result<String, String> {
    const OPEN_END: &str = r#""resolution":null}"#;
    if let Some(head) = request.strip_suffix(OPEN_END) {
        let mut out = String::with_capacity(request.len() + resolution.text().len());
        out.push_str(head);
        out.push_str(r#""resolution":"#);
        out.push_str(resolution.text());
        out.push('}');
        return Ok(out);
    }
    let decode = |e| format!("decoding a request: {e}");
    let mut decoded: StoredRequest = serde_json::from_str(request).map_err(decode)?;
    decoded.resolution = Some(serde_json::from_str(resolution.text()).map_err(decode)?);
    serde_json::to_string(&decoded).map_err(|e| format!("encoding: {e}"))
}

#[cfg(test)]
mod tests {
    use redb::{Database, ReadableDatabase as _};

    use super::*;
    use crate::store::StoredResolution;
    use crate::store::durable::trails::{AUDIT, HEADS};
    use crate::store::durable::{FOLLOW_UPS, FOLLOWERS, KEPT, OUTBOX, REQUESTS};
    use askgate_protocol::{Dialect, Outcome, QuestionSet};

    fn question_set() -> QuestionSet {
        let questions = serde_json::json!([{"header": "Color", "question": "Which?",
            "options": [{"label": "Red"}, {"label": "Blue"}]}]);
        QuestionSet::validate(Dialect::HARNESS, &questions).unwrap()
    }

    fn request(id: &str, asked_at_ms: u64) -> StoredRequest {
        StoredRequest {
            quorum: None,
            asked_by: None,
            callback: None,
            ruled: None,
            remember: Vec::new(),
            votes: Vec::new(),
            default: None,
            session: SessionId::parse(if id < "r2" { "s1" } else { "s2" }).unwrap(),
            id: RequestId::parse(id).unwrap(),
            dialect: Dialect::HARNESS,
            questions: question_set().to_json(),
            title: None,
            asked_at_ms,
            deadline_ms: None,
            answerers: None,
            follow_ups: Default::default(),
            resolution: None,
        }
    }

    /// A run of puts, resolutions, deletions and trail entries over a few ids.
    fn changes(seed: u64) -> Vec<Logged> {
        use rand::{Rng as _, SeedableRng as _};
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let ids = ["r0", "r1", "r2", "r3"];
        (0..60)
            .map(|at| {
                let id = ids[rng.random_range(0..ids.len())];
                let put = request(id, at);
                match rng.random_range(0..4) {
                    0 => Logged::Put(RequestRow::of(&put).unwrap()),
                    1 => Logged::Resolve {
                        session: put.session,
                        id: put.id,
                        resolution: Encoded::of(&StoredResolution::untouched(
                            question_set().settle_without_answer(Outcome::Withdrawn),
                            at,
                        ))
                        .unwrap(),
                    },
                    2 => Logged::Delete {
                        session: put.session,
                        id: put.id,
                    },
                    _ => Logged::Audit {
                        session: put.session,
                        at_ms: at,
                        tail: format!(r#""event":"n{at}""#),
                    },
                }
            })
            .collect()
    }

    /// Every row and trail entry, as text.
    fn contents(db: &Database) -> Vec<String> {
        let txn = db.begin_read().unwrap();
        let mut out = Vec::new();
        for row in txn.open_table(REQUESTS).unwrap().iter().unwrap() {
            let (key, value) = row.unwrap();
            let (session, id) = key.value();
            out.push(format!(
                "{session}/{id} {}",
                String::from_utf8_lossy(value.value())
            ));
        }
        // Lines, not rows: how entries are grouped into rows follows the checkpoints.
        for row in txn.open_table(AUDIT).unwrap().iter().unwrap() {
            out.extend(row.unwrap().1.value().split('\n').map(str::to_owned));
        }
        for row in txn.open_table(HEADS).unwrap().iter().unwrap() {
            let (session, head) = row.unwrap();
            out.push(format!("{} {}", session.value(), head.value()));
        }
        out
    }

    fn applied(batches: &[&[Logged]]) -> Vec<String> {
        let db = Database::builder()
            .create_with_backend(redb::backends::InMemoryBackend::new())
            .unwrap();
        for batch in batches {
            let txn = db.begin_write().unwrap();
            {
                let mut table = txn.open_table(REQUESTS).unwrap();
                let mut outbox = txn.open_table(OUTBOX).unwrap();
                let mut follow_ups = txn.open_table(FOLLOW_UPS).unwrap();
                let mut followers = txn.open_table(FOLLOWERS).unwrap();
                let mut kept = txn.open_table(KEPT).unwrap();
                let mut trails =
                    TrailTables::open(&txn, &crate::audit::chain::ChainKey::Unkeyed).unwrap();
                apply_all(
                    &mut table,
                    &mut outbox,
                    &mut follow_ups,
                    &mut followers,
                    &mut kept,
                    &mut trails,
                    *batch,
                )
                .unwrap();
            }
            txn.commit().unwrap();
        }
        contents(&db)
    }

    /// A put, encoded once as its commit is written, is in the log what serde writes of the
    /// request (so logs written before it was encoded once still replay), and reads back whole.
    #[test]
    fn a_put_is_logged_as_the_request_serialised_and_reads_back() {
        let mut request = request("r1", 5);
        request.title = Some("a \"title\" ✓".into());
        let logged = Logged::Put(RequestRow::of(&request).unwrap());
        let text = serde_json::to_string(&logged).unwrap();
        let plain = serde_json::to_string(&serde_json::json!({ "Put": request })).unwrap();
        assert_eq!(text, plain);
        let back: Logged = serde_json::from_str(&text).unwrap();
        assert_eq!(back, logged);
        let Logged::Put(row) = back else {
            panic!("a put")
        };
        assert_eq!(row.key(), ("s1", "r1"));
        let decoded: StoredRequest = serde_json::from_str(row.json.text()).unwrap();
        assert_eq!(decoded, request);
        // A row without its key is damage, not a request of nobody's.
        let keyless = r#"{"Put":{"id":"r1"}}"#;
        assert!(serde_json::from_str::<Logged>(keyless).is_err());
    }

    /// A resolution put into a stored request's JSON gives what encoding the request with its
    /// resolution gives, whether it was open (the null replaced) or had ended already.
    #[test]
    fn a_resolution_set_into_a_rows_json_is_the_request_resolved() {
        let resolution = |at| {
            StoredResolution::untouched(
                question_set().settle_without_answer(Outcome::Withdrawn),
                at,
            )
        };
        let mut request = request("r1", 5);
        request.answerers = Some(vec!["ann".into()]);
        let open = serde_json::to_string(&request).unwrap();
        for (row, at) in [(open, 7), (String::new(), 9)] {
            let row = if row.is_empty() {
                let mut ended = request.clone();
                ended.resolution = Some(resolution(8));
                serde_json::to_string(&ended).unwrap()
            } else {
                row
            };
            let set = with_resolution(&row, &Encoded::of(&resolution(at)).unwrap()).unwrap();
            let mut expected = request.clone();
            expected.resolution = Some(resolution(at));
            assert_eq!(set, serde_json::to_string(&expected).unwrap());
        }
    }

    /// A checkpoint that writes each row once leaves what applying the changes one at a time
    /// leaves, rows and trails alike, however they are split into checkpoints.
    #[test]
    fn a_checkpoint_leaves_what_its_changes_one_by_one_leave() {
        for seed in 0..40 {
            let changes = changes(seed);
            let one_by_one: Vec<&[Logged]> = changes.chunks(1).collect();
            let expected = applied(&one_by_one);
            assert!(expected.len() > 10, "seed {seed}: {expected:?}");
            assert_eq!(
                applied(&[&changes]),
                expected,
                "seed {seed}, one checkpoint"
            );
            let (first, second) = changes.split_at(25);
            assert_eq!(applied(&[first, second]), expected, "seed {seed}, two");
        }
    }
}
