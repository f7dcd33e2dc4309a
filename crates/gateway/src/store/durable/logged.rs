//! What the log keeps of a commit, and how redb takes it.
//!
//! A [`StoreOp`] becomes the changes it makes: rows to put, resolve or delete, and its audit
//! entry as the time and members to seal (sealing needs the chain's head, which redb holds).
//! The checkpointer applies these as they come from the syncer; a restart applies them as read
//! back from the log; both through [`apply_all`], so the two cannot disagree.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use redb::ReadableTable as _;
use serde::{Deserialize, Serialize};

use askgate_protocol::{RequestId, SessionId};

use super::trails::TrailTables;
use crate::audit::{Note, tail};
use crate::store::{StoreOp, StoredRequest, StoredResolution};

/// One change redb is to take.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(super) enum Logged {
    /// Keep a request, replacing any of the same id.
    Put(StoredRequest),
    /// Record how a request ended (nothing, if it is not kept).
    Resolve {
        session: SessionId,
        id: RequestId,
        resolution: StoredResolution,
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
}

/// Appends to `out` the changes `op` makes, committed at `now_ms`: its audit entry first, as
/// it was recorded before the change it records.
pub(super) fn log_op(op: StoreOp, now_ms: u64, out: &mut Vec<Logged>) {
    if let Some(note) = Note::of(&op, now_ms) {
        out.push(Logged::Audit {
            session: note.session.clone(),
            at_ms: note.at_ms,
            tail: tail(&note),
        });
    }
    match op {
        StoreOp::Put(request) => out.push(Logged::Put(request)),
        StoreOp::Resolve {
            session,
            id,
            resolution,
            ..
        } => out.push(Logged::Resolve {
            session,
            id,
            resolution,
        }),
        StoreOp::Delete { session, id, .. } => out.push(Logged::Delete { session, id }),
        StoreOp::DropStaleTrails { before_ms } => out.push(Logged::DropStaleTrails { before_ms }),
        StoreOp::Note(_) => {}
    }
}

/// What a checkpoint leaves of a request's row, written once at its end: most requests are
/// put, resolved and deleted within one checkpoint, and then leave nothing to write.
#[derive(Clone, Copy)]
enum Row<'c> {
    /// Put by this checkpoint, and resolved since if `resolution`.
    Put {
        request: &'c StoredRequest,
        resolution: Option<&'c StoredResolution>,
    },
    /// Resolved by this checkpoint, as redb holds it (nothing, if redb does not).
    Resolved(&'c StoredResolution),
    /// Deleted by this checkpoint.
    Deleted,
}

/// Applies `changes`, in order, in the write transaction whose tables these are: trail
/// entries as they come, each request's row once, as the changes leave it.
pub(super) fn apply_all<'c>(
    table: &mut redb::Table<'_, (&str, &str), &[u8]>,
    trails: &mut TrailTables<'_>,
    changes: impl IntoIterator<Item = &'c Logged>,
) -> Result<(), String> {
    let mut rows: HashMap<(&'c str, &'c str), Row<'c>> = HashMap::new();
    for change in changes {
        match change {
            Logged::Put(request) => {
                let key = (request.session.as_str(), request.id.as_str());
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
            }
            Logged::Audit {
                session,
                at_ms,
                tail,
            } => trails.record(session.as_str(), *at_ms, tail)?,
            Logged::DropStaleTrails { before_ms } => trails.drop_stale(*before_ms)?,
        }
    }
    trails.write_heads()?;
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
    let encode =
        |request: &StoredRequest| serde_json::to_vec(request).map_err(|e| format!("encoding: {e}"));
    let bytes = match row {
        Row::Put {
            request,
            resolution: None,
        } => encode(request)?,
        Row::Put {
            request,
            resolution: Some(resolution),
        } => {
            let mut request = request.clone();
            request.resolution = Some(resolution.clone());
            encode(&request)?
        }
        Row::Resolved(resolution) => {
            let current = table
                .get(key)
                .map_err(|e| format!("reading a request: {e}"))?
                .map(|v| v.value().to_vec());
            let Some(bytes) = current else {
                return Ok(());
            };
            let mut request: StoredRequest =
                serde_json::from_slice(&bytes).map_err(|e| format!("decoding a request: {e}"))?;
            request.resolution = Some(resolution.clone());
            encode(&request)?
        }
        Row::Deleted => {
            table
                .remove(key)
                .map_err(|e| format!("deleting a request: {e}"))?;
            return Ok(());
        }
    };
    table
        .insert(key, bytes.as_slice())
        .map_err(|e| format!("writing a request: {e}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use redb::{Database, ReadableDatabase as _};

    use super::*;
    use crate::store::durable::REQUESTS;
    use crate::store::durable::trails::{AUDIT, HEADS};
    use askgate_protocol::{Dialect, Outcome, QuestionSet};

    fn question_set() -> QuestionSet {
        let questions = serde_json::json!([{"header": "Color", "question": "Which?",
            "options": [{"label": "Red"}, {"label": "Blue"}]}]);
        QuestionSet::validate(Dialect::HARNESS, &questions).unwrap()
    }

    fn request(id: &str, asked_at_ms: u64) -> StoredRequest {
        StoredRequest {
            session: SessionId::parse(if id < "r2" { "s1" } else { "s2" }).unwrap(),
            id: RequestId::parse(id).unwrap(),
            dialect: Dialect::HARNESS,
            questions: question_set().to_json(),
            title: None,
            asked_at_ms,
            deadline_ms: None,
            answerers: None,
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
                    0 => Logged::Put(put),
                    1 => Logged::Resolve {
                        session: put.session,
                        id: put.id,
                        resolution: StoredResolution::untouched(
                            question_set().settle_without_answer(Outcome::Withdrawn),
                            at,
                        ),
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
        for row in txn.open_table(AUDIT).unwrap().iter().unwrap() {
            out.push(row.unwrap().1.value().to_owned());
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
                let mut trails = TrailTables::open(&txn).unwrap();
                apply_all(&mut table, &mut trails, *batch).unwrap();
            }
            txn.commit().unwrap();
        }
        contents(&db)
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
