//! The embedded store's log: each commit one record, written before `commit` returns and made
//! durable by the syncer, one wait for the disk for every record written meanwhile; counted
//! for `/metrics`, and what it committed there after a restart.
#![cfg(target_os = "linux")]

use crate::support;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use askgate::store::{Durability, DurableStore, LogSettings, Store, StoreOp};
use askgate_protocol::{RequestId, SessionId};
use futures_util::FutureExt as _;
use support::ops::{put, resolve};
use support::{remove_scratch, tempdir};

fn ack(id: &str) -> StoreOp {
    StoreOp::Delete {
        session: SessionId::parse("s").unwrap(),
        id: RequestId::parse(id).unwrap(),
        acked: true,
    }
}

/// Transactions so far.
fn transactions(store: &DurableStore) -> u64 {
    store.writes().transactions.load(Ordering::Relaxed)
}

/// Waits for the disk so far.
fn syncs(store: &DurableStore) -> u64 {
    store.writes().syncs.load(Ordering::Relaxed)
}

/// Times redb's pages were sent to the disk between durable checkpoints so far.
fn writebacks(store: &DurableStore) -> u64 {
    store.writes().writebacks.load(Ordering::Relaxed)
}

async fn ids(store: &DurableStore) -> Vec<String> {
    let mut ids: Vec<String> = store
        .load()
        .await
        .unwrap()
        .iter()
        .map(|r| r.id.as_str().to_owned())
        .collect();
    ids.sort();
    ids
}

#[tokio::test]
async fn each_commit_is_a_transaction_and_is_counted() {
    let store = DurableStore::open(&tempdir("durable-writes")).unwrap();
    store.commit(vec![put("r1")]).await.unwrap();
    store.commit(vec![resolve("r1")]).await.unwrap();
    store.commit(vec![ack("r1")]).await.unwrap();
    assert_eq!(transactions(&store), 3);
    assert_eq!(ids(&store).await, Vec::<String>::new());
    // One caller's operations are one transaction.
    store
        .commit(vec![put("r2"), resolve("r2"), ack("r2")])
        .await
        .unwrap();
    assert_eq!(transactions(&store), 4);
}

/// The first step is the record's writing, done by the time the commit is handed over; the
/// second waits for the disk.
#[tokio::test]
async fn a_commit_is_taken_at_once_and_durable_after_a_sync() {
    let store = DurableStore::open(&tempdir("durable-writes-steps")).unwrap();
    let steps = store.decide_in_steps(vec![put("r1")], Durability::Prompt);
    assert!(
        steps
            .taken
            .now_or_never()
            .is_some_and(|taken| taken.is_ok()),
        "taken as the commit is handed over"
    );
    assert_eq!(transactions(&store), 1);
    steps.durable.await.unwrap();
    assert_eq!(syncs(&store), 1);
}

/// A record nobody waits on promptly (an ack's deletion) does not make the syncer wait for the
/// disk by itself: it rides the next prompt record's sync, or is synced within its bound.
#[tokio::test]
async fn lazy_records_ride_a_prompt_ones_sync_or_are_synced_within_their_bound() {
    // Riding: with a bound no machine's stall reaches (the default, 200 ms, a busy one did:
    // the lazy record was synced alone before the prompt one came).
    let dir = tempdir("durable-writes-lazy");
    let patient = LogSettings {
        sync_lazily_within: Duration::from_secs(3600),
        ..LogSettings::default()
    };
    let store = DurableStore::open_with(&dir, Arc::default(), patient).unwrap();
    for id in ["r1", "r2", "r3"] {
        store.commit(vec![put(id)]).await.unwrap();
    }
    let before = syncs(&store);
    let mut lazy = store.decide_in_steps(vec![ack("r1")], Durability::Lazy);
    (&mut lazy.taken).await.unwrap();
    let waited = tokio::time::timeout(Duration::from_millis(50), &mut lazy.durable).await;
    assert!(waited.is_err(), "a lazy record alone is not synced at once");
    assert_eq!(syncs(&store), before);
    store.commit(vec![ack("r2")]).await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), lazy.durable)
        .await
        .expect("durable with the prompt record")
        .unwrap();
    assert_eq!(syncs(&store) - before, 1, "both in one sync");
    drop(store);

    // Alone, it is synced within its bound all the same (the default).
    let store = DurableStore::open(&dir).unwrap();
    let before = syncs(&store);
    let alone = store.decide_in_steps(vec![ack("r3")], Durability::Lazy);
    tokio::time::timeout(Duration::from_secs(10), alone.durable)
        .await
        .expect("durable within its bound")
        .unwrap();
    assert_eq!(syncs(&store) - before, 1);
    assert_eq!(ids(&store).await, Vec::<String>::new());
    drop(store);
    remove_scratch(&dir);
}

/// The syncer paces its waits for the disk only under load (the fan-out benchmark counts them):
/// one caller committing at a time is not held back to share a wait with others that do not
/// come.
#[tokio::test]
async fn one_commit_at_a_time_is_not_paced() {
    let settings = LogSettings {
        sync_at_most_every: Duration::from_secs(3600),
        ..LogSettings::default()
    };
    let dir = tempdir("durable-writes-unpaced");
    let store = DurableStore::open_with(&dir, Arc::default(), settings).unwrap();
    for id in ["r1", "r2", "r3"] {
        tokio::time::timeout(Duration::from_secs(10), store.commit(vec![put(id)]))
            .await
            .expect("not held for the pace")
            .unwrap();
    }
}

/// Commits made together are each written and made durable, with no more waits for the disk
/// than commits. How many they share depends on how fast this disk syncs against how fast
/// the records are written (a fast sync can take each alone): that they share what was
/// written meanwhile is `syncer::tests::records_written_meanwhile_share_one_wait_for_the_disk`.
#[tokio::test]
async fn concurrent_commits_are_each_durable_with_a_sync_at_most_each() {
    let store = DurableStore::open(&tempdir("durable-writes-grouped")).unwrap();
    let commits: Vec<_> = (0..50)
        .map(|n| store.commit(vec![put(&format!("r{n}"))]))
        .collect();
    for committed in futures_util::future::join_all(commits).await {
        committed.unwrap();
    }
    assert_eq!(transactions(&store), 50);
    assert!(
        syncs(&store) <= 50,
        "{} syncs for 50 commits",
        syncs(&store)
    );
    assert_eq!(ids(&store).await.len(), 50);
}

#[tokio::test]
async fn what_was_committed_is_there_after_a_restart() {
    let dir = tempdir("durable-writes-restart");
    {
        let store = DurableStore::open(&dir).unwrap();
        for id in ["r1", "r2"] {
            store.commit(vec![put(id)]).await.unwrap();
            store.commit(vec![resolve(id)]).await.unwrap();
        }
        store.commit(vec![ack("r1")]).await.unwrap();
        assert_eq!(transactions(&store), 5);
    }
    let store = DurableStore::open(&dir).unwrap();
    assert_eq!(ids(&store).await, ["r2"]);
}

/// Between durable checkpoints, redb's written pages are sent to the disk as often as the
/// settings say, and counted.
#[tokio::test]
async fn redb_pages_are_sent_to_the_disk_between_durable_checkpoints() {
    let settings = LogSettings {
        writeback_every: Duration::ZERO,
        ..LogSettings::default()
    };
    let dir = tempdir("durable-writeback");
    let store = DurableStore::open_with(&dir, Arc::default(), settings).unwrap();
    assert_eq!(writebacks(&store), 0);
    // A reader's flush is a checkpoint; the writeback follows it, before the next one.
    for (held, id) in (1..).zip(["r1", "r2"]) {
        store.commit(vec![put(id)]).await.unwrap();
        assert_eq!(ids(&store).await.len(), held);
    }
    assert!(
        writebacks(&store) >= 1,
        "no writeback after two checkpoints"
    );
    drop(store);
    remove_scratch(&dir);
}

/// A store whose checkpoints wait an hour: what it commits is in its log, not in redb.
fn logging_only(dir: &std::path::Path, rotate_at_bytes: u64) -> DurableStore {
    let settings = LogSettings {
        checkpoint_every: Duration::from_secs(3600),
        rotate_at_bytes,
        ..LogSettings::default()
    };
    DurableStore::open_with(dir, Arc::default(), settings).unwrap()
}

/// A copy of `dir`'s files, as a crash would leave them while the store runs.
fn copied(dir: &std::path::Path, name: &str) -> std::path::PathBuf {
    let copy = tempdir(name);
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), copy.join(entry.file_name())).unwrap();
    }
    copy
}

fn log_files(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".wal"))
        .collect();
    names.sort();
    names
}

async fn trail(store: &DurableStore) -> Vec<String> {
    let session = SessionId::parse("s").unwrap();
    store.trails().audit(&session, 0, 100).await.unwrap()
}

/// Commits redb has not been given yet come back from the log alone, with the same audit
/// entries sealed as a checkpoint seals them; a record cut short at the log's end (a crash
/// mid-append) is left out, and the store goes on from there.
#[tokio::test]
async fn the_log_alone_brings_back_what_redb_was_not_given() {
    let dir = tempdir("durable-log-only");
    let store = logging_only(&dir, u64::MAX);
    store.commit(vec![put("r1")]).await.unwrap();
    store.commit(vec![resolve("r1")]).await.unwrap();
    store.commit(vec![put("r2")]).await.unwrap();
    store.commit(vec![ack("r1")]).await.unwrap();
    let crashed = copied(&dir, "durable-log-only-crashed");
    // Reading the trail makes the running store write redb: its lines are what a checkpoint
    // seals.
    let checkpointed = trail(&store).await;
    let events: Vec<String> = checkpointed
        .iter()
        .map(|line| {
            let entry: serde_json::Value = serde_json::from_str(line).unwrap();
            format!(
                "{} {}",
                entry["event"].as_str().unwrap(),
                entry["id"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(events, ["asked r1", "declined r1", "asked r2", "acked r1"]);
    drop(store);

    // A crash mid-append leaves a record cut short after the last one (records are a
    // 16-byte header, its first four bytes the payload's length, then the payload; the
    // file's zeros follow them).
    let log = crashed.join(&log_files(&crashed)[0]);
    let mut bytes = std::fs::read(&log).unwrap();
    let mut end = 0;
    while bytes[end..end + 16].iter().any(|b| *b != 0) {
        end += 16 + u32::from_le_bytes(bytes[end..end + 4].try_into().unwrap()) as usize;
    }
    bytes[end..end + 6].copy_from_slice(&[200, 0, 0, 0, 1, 2]);
    std::fs::write(&log, &bytes).unwrap();
    let recovered = DurableStore::open(&crashed).unwrap();
    assert_eq!(ids(&recovered).await, ["r2"]);
    assert_eq!(
        trail(&recovered).await,
        checkpointed,
        "the same lines, sealed on replay"
    );
    let loaded = recovered.load().await.unwrap();
    assert_eq!(loaded[0].resolution, None, "r2 is still open");
    recovered.commit(vec![resolve("r2")]).await.unwrap();
    drop(recovered);
    let reopened = DurableStore::open(&crashed).unwrap();
    let loaded = reopened.load().await.unwrap();
    assert!(
        loaded[0].resolution.is_some(),
        "what follows the torn record is kept"
    );
    assert_eq!(trail(&reopened).await.len(), 5);
    drop(reopened);
    remove_scratch(&dir);
    remove_scratch(&crashed);
}

/// A full log file is closed and a new one started; closed files are deleted once redb holds
/// them, and a start replays every file and deletes them.
#[tokio::test]
async fn full_log_files_are_deleted_once_redb_holds_them() {
    let dir = tempdir("durable-log-files");
    let store = logging_only(&dir, 1);
    for id in ["r1", "r2", "r3"] {
        store.commit(vec![put(id)]).await.unwrap();
    }
    let written = log_files(&dir);
    assert!(
        written.len() >= 4,
        "three full files and the current one: {written:?}"
    );
    let crashed = copied(&dir, "durable-log-files-crashed");
    trail(&store).await;
    let left = log_files(&dir);
    assert!(
        left.iter().all(|name| name.as_str() > "log-00000003.wal"),
        "the full files are deleted: {left:?}"
    );
    drop(store);
    let reopened = DurableStore::open(&dir).unwrap();
    assert_eq!(ids(&reopened).await, ["r1", "r2", "r3"]);
    drop(reopened);
    let recovered = DurableStore::open(&crashed).unwrap();
    assert_eq!(
        ids(&recovered).await,
        ["r1", "r2", "r3"],
        "every file replayed"
    );
    let left = log_files(&crashed);
    assert!(
        left.iter().all(|name| !written.contains(name)),
        "replayed files deleted: {left:?}"
    );
    drop(recovered);
    remove_scratch(&dir);
    remove_scratch(&crashed);
}

/// A store written before the log (format 1) opens, and is marked with this build's format.
#[tokio::test]
async fn a_store_from_before_the_log_is_taken() {
    let dir = tempdir("durable-format-1");
    let meta = redb::TableDefinition::<&str, u64>::new("meta");
    {
        let db = redb::Database::create(dir.join(askgate::store::FILE_NAME)).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(meta).unwrap().insert("format", 1).unwrap();
        txn.commit().unwrap();
    }
    let store = DurableStore::open(&dir).unwrap();
    store.commit(vec![put("r1")]).await.unwrap();
    drop(store);
    let db = redb::Database::open(dir.join(askgate::store::FILE_NAME)).unwrap();
    let txn = redb::ReadableDatabase::begin_read(&db).unwrap();
    let format = redb::ReadableTable::get(&txn.open_table(meta).unwrap(), "format")
        .unwrap()
        .unwrap()
        .value();
    assert_eq!(
        format,
        askgate::store::UNKEYED_FORMAT_VERSION,
        "no audit key: unkeyed"
    );
    drop(txn);
    drop(db);
    assert_eq!(ids(&DurableStore::open(&dir).unwrap()).await, ["r1"]);
    remove_scratch(&dir);
}

/// A store of format 2 kept one audit entry a row: its trails read back as they were, and the
/// entries sealed now chain on from them (several to a row).
#[tokio::test]
async fn a_trail_written_one_entry_a_row_reads_back_and_is_chained_onto() {
    use askgate::audit::verify::ChainCheck;
    use askgate::audit::{GENESIS, seal};
    let dir = tempdir("durable-format-2");
    let meta = redb::TableDefinition::<&str, u64>::new("meta");
    let audit = redb::TableDefinition::<(&str, u64), &str>::new("audit");
    let heads = redb::TableDefinition::<&str, &str>::new("audit_heads");
    let mut older = Vec::new();
    {
        let db = redb::Database::create(dir.join(askgate::store::FILE_NAME)).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(meta).unwrap().insert("format", 2).unwrap();
        let mut prev = GENESIS.to_owned();
        for seq in 1..=3 {
            let sealed = seal(
                &prev,
                seq,
                1_000 + seq,
                &format!(r#""session":"s","n":{seq}"#),
            );
            txn.open_table(audit)
                .unwrap()
                .insert(("s", seq), sealed.line.as_str())
                .unwrap();
            older.push(sealed.line);
            prev = sealed.hash;
        }
        let head = format!("3 1003 {prev}");
        txn.open_table(heads)
            .unwrap()
            .insert("s", head.as_str())
            .unwrap();
        txn.commit().unwrap();
    }
    let store = DurableStore::open(&dir).unwrap();
    store.commit(vec![put("r1")]).await.unwrap();
    store.commit(vec![resolve("r1")]).await.unwrap();
    let session = SessionId::parse("s").unwrap();
    let lines = store.trails().audit(&session, 0, 100).await.unwrap();
    assert_eq!(lines.len(), 5, "{lines:#?}");
    assert_eq!(lines[..3], older[..]);
    let mut check = ChainCheck::new("s");
    for line in &lines {
        check.next(line).unwrap();
    }
    assert_eq!(
        store.trails().audit(&session, 2, 2).await.unwrap(),
        lines[2..4]
    );
    assert_eq!(
        store.trails().audit(&session, 4, 100).await.unwrap(),
        lines[4..]
    );
    assert_eq!(
        store.trails().recent_audit(&session, 3).await.unwrap(),
        lines[2..]
    );
    drop(store);
    remove_scratch(&dir);
}

/// However long a checkpoint may wait, one runs as soon as this many changes are held: what
/// the checkpointer keeps in memory stays bounded at any rate of commits.
#[tokio::test]
async fn a_checkpoint_runs_early_once_its_most_changes_are_held() {
    let dir = tempdir("durable-most-held");
    let store = logging_only(&dir, u64::MAX);
    let checkpoints = || store.writes().checkpoints.load(Ordering::Relaxed);
    store.commit(vec![put("first")]).await.unwrap();
    assert_eq!(checkpoints(), 0, "one change waits its hour");
    let many: Vec<StoreOp> = (0..askgate::store::MOST_CHANGES_HELD)
        .map(|n| put(&format!("r{n}")))
        .collect();
    store.commit(many).await.unwrap();
    let patience = std::time::Instant::now() + support::TIMEOUT;
    while checkpoints() == 0 {
        assert!(
            std::time::Instant::now() < patience,
            "no checkpoint with {} changes held",
            askgate::store::MOST_CHANGES_HELD + 1
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    drop(store);
    remove_scratch(&dir);
}
