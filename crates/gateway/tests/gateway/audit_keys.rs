//! A keyed audit chain: someone who can write the store but does not hold the audit key
//! cannot rewrite an entry and hash every later one again so that `askgate audit verify`
//! passes (on an unkeyed chain, from before audit keys, they can: that was the fault); a
//! wrong key fails verification; a malformed key file is refused at start; an export ends
//! with signed checkpoints that show a trail cut short or rewritten since, and a forged one.
#![cfg(target_os = "linux")]

use crate::support;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use askgate::audit::chain::AuditKey;
use askgate::audit::{read_line, seal};
use askgate::store::{DurableStore, Store};
use askgate_testkit::frames::ask;
use redb::{ReadableDatabase as _, ReadableTable as _};
use serde_json::json;
use support::cli::askgate;
use support::ops::{put, resolve};
use support::{remove_scratch, tempdir};

const AUDIT: redb::TableDefinition<'_, (&str, u64), &str> = redb::TableDefinition::new("audit");
const HEADS: redb::TableDefinition<'_, &str, &str> = redb::TableDefinition::new("audit_heads");
const META: redb::TableDefinition<'_, &str, u64> = redb::TableDefinition::new("meta");

fn key(byte: u8) -> AuditKey {
    AuditKey::from_bytes([byte; 32])
}

fn key_file(dir: &Path, name: &str, key: &AuditKey) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("{}\n", key.to_hex())).unwrap();
    path
}

/// A store in `dir` with three requests asked and declined (six entries in session `s`),
/// keyed with `key` if given, closed.
async fn store_with_a_trail(dir: &Path, key: Option<AuditKey>) {
    let store =
        DurableStore::open_keyed(dir, Arc::default(), Default::default(), key.map(Arc::new))
            .unwrap();
    let session = askgate_protocol::SessionId::parse("s").unwrap();
    for id in ["r1", "r2", "r3"] {
        store.commit(vec![put(id)]).await.unwrap();
        // Reading the trail waits for a checkpoint: each request's entries land in a row of
        // their own, so the trail spans rows whatever the machine's speed, as it does on a
        // busy one.
        store.trails().recent_audit(&session, 1).await.unwrap();
        store.commit(vec![resolve(id)]).await.unwrap();
    }
    drop(store);
    assert!(
        rows(dir).len() > 1,
        "the trail fills one row: {:?}",
        rows(dir)
    );
}

/// Session `s`'s trail as redb keeps it: each row's first seq and its lines.
fn rows(dir: &Path) -> Vec<(u64, Vec<String>)> {
    let db = redb::Database::open(dir.join("askgate.redb")).unwrap();
    let txn = db.begin_read().unwrap();
    let table = txn.open_table(AUDIT).unwrap();
    table
        .range(("s", 0)..=("s", u64::MAX))
        .unwrap()
        .map(|row| {
            let (key, value) = row.unwrap();
            let lines = value.value().split('\n').map(str::to_owned).collect();
            (key.value().1, lines)
        })
        .collect()
}

/// Writes `rows` back as session `s`'s trail, and its head as the last line says.
fn write_rows(dir: &Path, rows: &[(u64, Vec<String>)]) {
    let db = redb::Database::open(dir.join("askgate.redb")).unwrap();
    let txn = db.begin_write().unwrap();
    {
        let mut table = txn.open_table(AUDIT).unwrap();
        let old: Vec<u64> = table
            .range(("s", 0)..=("s", u64::MAX))
            .unwrap()
            .map(|row| row.unwrap().0.value().1)
            .collect();
        for first in old {
            table.remove(("s", first)).unwrap();
        }
        for (first, lines) in rows {
            table
                .insert(("s", *first), lines.join("\n").as_str())
                .unwrap();
        }
        let last = rows.last().unwrap().1.last().unwrap().clone();
        let read = read_line(&last).unwrap();
        let head = format!("{} {} {}", read.seq, read.at_ms, read.hash);
        txn.open_table(HEADS)
            .unwrap()
            .insert("s", head.as_str())
            .unwrap();
    }
    txn.commit().unwrap();
}

/// What someone who can write the store but holds no key can do: change entry 2 (`declined`
/// to `answered`) and hash it and every later entry again, with plain SHA-256 as the chain
/// was before audit keys.
fn rewrite_and_rehash(dir: &Path) {
    rehash_trail(dir, 2);
}

/// Session `s`'s trail with entry 2 changed and every entry from seq `from` on hashed again
/// ([`rehashed`]), written back row by row. The chain runs across rows: how many rows the
/// trail fills depends on how the store's checkpoints fell, so it is hashed as one.
fn rehash_trail(dir: &Path, from: u64) {
    let mut rows = rows(dir);
    let lines: Vec<String> = rows.iter().flat_map(|(_, l)| l.iter().cloned()).collect();
    let mut all = rehashed(&lines, from).into_iter();
    for (_, lines) in &mut rows {
        for line in lines.iter_mut() {
            *line = all.next().unwrap();
        }
    }
    write_rows(dir, &rows);
}

/// `lines` (a trail's, oldest first, or the continuation of one) with entry 2 changed from
/// `declined` to `answered` and every entry from seq `from` on hashed again with plain
/// SHA-256.
fn rehashed(lines: &[String], from: u64) -> Vec<String> {
    let mut prev: Option<String> = None;
    let mut out = Vec::new();
    for line in lines {
        let read = read_line(line).unwrap();
        if read.seq < from {
            prev = Some(read.hash.to_owned());
            out.push(line.clone());
            continue;
        }
        let tail = if read.seq == 2 {
            read.tail.replace("declined", "answered")
        } else {
            read.tail.to_owned()
        };
        let prev_hash = prev.as_deref().unwrap_or(askgate::audit::GENESIS);
        let sealed = seal(prev_hash, read.seq, read.at_ms, &tail);
        prev = Some(sealed.hash.clone());
        out.push(sealed.line);
    }
    out
}

/// The downgrade someone who can write the store but holds no key can try: mark the store as
/// one from before audit keys (`format` set to `mark`, or removed), and re-hash the whole
/// trail with plain SHA-256, entry 2 changed.
fn mark_unkeyed_and_rehash(dir: &Path, mark: Option<u64>) {
    rehash_trail(dir, 1);
    let db = redb::Database::open(dir.join("askgate.redb")).unwrap();
    let txn = db.begin_write().unwrap();
    {
        let mut meta = txn.open_table(META).unwrap();
        match mark {
            Some(format) => drop(meta.insert("format", format).unwrap()),
            None => drop(meta.remove("format").unwrap()),
        }
    }
    txn.commit().unwrap();
}

/// Drops the trail's last entry.
fn cut_last_entry(dir: &Path) {
    let mut rows = rows(dir);
    let last = rows.last_mut().unwrap();
    last.1.pop();
    if last.1.is_empty() {
        rows.pop();
    }
    write_rows(dir, &rows);
}

#[tokio::test]
async fn a_trail_rehashed_without_the_key_fails_on_a_keyed_chain_and_passed_on_an_unkeyed_one() {
    // Unkeyed, as stores were before audit keys: the rewrite goes unseen. That is the fault
    // a keyed chain closes, and what such a store still proves no more than.
    let unkeyed = tempdir("audit-unkeyed");
    store_with_a_trail(&unkeyed, None).await;
    rewrite_and_rehash(&unkeyed);
    let verified = askgate(&["audit", "verify"], &unkeyed);
    assert!(verified.ok, "{verified}");
    assert!(verified.said.contains("unkeyed SHA-256"), "{verified}");

    let keyed = tempdir("audit-keyed");
    let file = key_file(&keyed, "audit-key", &key(1));
    store_with_a_trail(&keyed, Some(key(1))).await;
    let verified = askgate(&["audit", "verify"], &keyed);
    assert!(verified.ok, "untouched, it holds: {verified}");
    rewrite_and_rehash(&keyed);
    let verified = askgate(&["audit", "verify"], &keyed);
    assert!(!verified.ok, "{verified}");
    assert!(
        verified
            .said
            .contains("session s: entry seq 2 (line 2 of its trail): its hash does not match"),
        "{verified}"
    );

    // Another key than the chain's fails from the first entry.
    let wrong = key_file(&keyed, "wrong-key", &key(2));
    let _ = std::fs::remove_file(file);
    let verified = askgate(
        &[
            "audit",
            "verify",
            "--audit-key-file",
            wrong.to_str().unwrap(),
        ],
        &keyed,
    );
    assert!(!verified.ok, "{verified}");
    assert!(verified.said.contains("entry seq 1 "), "{verified}");
    remove_scratch(&unkeyed);
    remove_scratch(&keyed);
}

#[tokio::test]
async fn a_checkpoint_shows_a_trail_cut_short_or_rewritten_and_a_forged_one_fails() {
    let dir = tempdir("audit-checkpoint");
    key_file(&dir, "audit-key", &key(3));
    store_with_a_trail(&dir, Some(key(3))).await;
    let exported = askgate(&["audit", "export"], &dir);
    assert!(exported.ok, "{exported}");
    let last: serde_json::Value =
        serde_json::from_str(exported.stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["checkpoint"], "askgate audit checkpoint v1", "{last}");
    assert_eq!(
        (&last["session"], &last["last_seq"]),
        (&json!("s"), &json!(6))
    );
    let checkpoint = dir.join("export.jsonl");
    std::fs::write(&checkpoint, &exported.stdout).unwrap();
    let with_checkpoint = [
        "audit",
        "verify",
        "--checkpoint",
        checkpoint.to_str().unwrap(),
    ];

    let verified = askgate(&with_checkpoint, &dir);
    assert!(verified.ok, "{verified}");
    assert!(
        verified.said.contains(&format!(
            "signed by public key {}",
            last["public_key"].as_str().unwrap()
        )),
        "{verified}"
    );

    // A signature over other words.
    let forged = exported
        .stdout
        .replace(r#""last_seq":6"#, r#""last_seq":5"#);
    let forged_file = dir.join("forged.jsonl");
    std::fs::write(&forged_file, forged).unwrap();
    let verified = askgate(
        &[
            "audit",
            "verify",
            "--checkpoint",
            forged_file.to_str().unwrap(),
        ],
        &dir,
    );
    assert!(!verified.ok, "{verified}");
    assert!(
        verified.said.contains("its signature does not hold"),
        "{verified}"
    );

    // The trail cut short: every chain left holds, but not up to the checkpoint.
    let before = rows(&dir);
    cut_last_entry(&dir);
    let plain = askgate(&["audit", "verify"], &dir);
    assert!(
        plain.ok,
        "without the checkpoint a cut goes unseen: {plain}"
    );
    let verified = askgate(&with_checkpoint, &dir);
    assert!(!verified.ok, "{verified}");
    assert!(verified.said.contains("it was cut short"), "{verified}");
    write_rows(&dir, &before);

    // Rewritten by someone holding the key (sealing anew with it): the chain holds, the
    // checkpoint does not.
    let mut rows = rows(&dir);
    let keyed = askgate::audit::chain::ChainKey::Keyed(Arc::new(key(3)));
    let mut prev = askgate::audit::GENESIS.to_owned();
    for (_, lines) in &mut rows {
        for line in lines.iter_mut() {
            let read = read_line(line).unwrap();
            let tail = read.tail.replace("\"t-1\"", "\"t-9\"");
            let sealed =
                askgate::audit::chain::seal_with(&keyed, &prev, read.seq, read.at_ms, &tail);
            prev = sealed.hash.clone();
            *line = sealed.line;
        }
    }
    write_rows(&dir, &rows);
    assert!(askgate(&["audit", "verify"], &dir).ok);
    let verified = askgate(&with_checkpoint, &dir);
    assert!(!verified.ok, "{verified}");
    assert!(
        verified.said.contains("the trail was rewritten since"),
        "{verified}"
    );

    // A checkpoint signed with another key is not this store's.
    let other = key_file(&dir, "other-key", &key(4));
    let verified = askgate(
        &[
            "audit",
            "verify",
            "--audit-key-file",
            other.to_str().unwrap(),
            "--checkpoint",
            checkpoint.to_str().unwrap(),
        ],
        &dir,
    );
    assert!(!verified.ok, "{verified}");
    assert!(verified.said.contains("not this audit key's"), "{verified}");
    remove_scratch(&dir);
}

/// `askgate serve` with `args` on a fresh data directory, expected to stop before listening:
/// what it said.
fn serve_refused(args: &[&str]) -> String {
    let data = tempdir("audit-key-refused");
    let ran = support::cli::serve_refused(&data, args);
    assert!(!ran.ok, "{ran}");
    remove_scratch(&data);
    ran.said
}

#[test]
fn a_malformed_key_file_is_refused_at_start_naming_it_and_what_is_wrong() {
    let dir = tempdir("audit-bad-keys");
    let digits = "0123456789abcdef".repeat(4);
    for (name, contents, wrong) in [
        ("short", &digits[..62], "found 62 bytes"),
        (
            "two-newlines",
            &format!("{digits}\n\n")[..],
            "more than one line end",
        ),
        (
            "not-hex",
            &format!("{}x", &digits[..63])[..],
            "byte 64 is 'x', not a hex digit",
        ),
        ("spaced", &format!(" {digits}")[..], "found 65 bytes"),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, contents).unwrap();
        let said = serve_refused(&["--audit-key-file", path.to_str().unwrap()]);
        assert!(
            said.contains(&format!("the audit key file {}: ", path.display()))
                && said.contains(wrong),
            "{name}: {said}"
        );
    }
    let missing = dir.join("missing");
    let said = serve_refused(&["--audit-key-file", missing.to_str().unwrap()]);
    assert!(
        said.contains(&format!("reading the audit key file {}", missing.display())),
        "{said}"
    );
    let said = serve_refused(&["--store", "redis://127.0.0.1:1"]);
    assert!(
        said.contains("a Redis store needs --audit-key-file"),
        "{said}"
    );
    remove_scratch(&dir);
}

#[tokio::test]
async fn a_keyed_store_started_with_another_key_is_refused() {
    let dir = tempdir("audit-other-key");
    store_with_a_trail(&dir, Some(key(5))).await;
    let other = key_file(&dir, "other-key", &key(6));
    let ran = support::cli::serve_refused(&dir, &["--audit-key-file", other.to_str().unwrap()]);
    assert!(!ran.ok, "{ran}");
    assert!(
        ran.said
            .contains("were sealed with another audit key than the one given"),
        "{ran}"
    );
    // Its own key starts it (and then the gateway is stopped by the test's end).
    let right = key_file(&dir, "right-key", &key(5));
    let store = DurableStore::open_keyed(
        &dir,
        Arc::default(),
        Default::default(),
        Some(Arc::new(
            AuditKey::parse(&std::fs::read(right).unwrap()).unwrap(),
        )),
    );
    assert!(store.is_ok());
    drop(store);
    remove_scratch(&dir);
}

/// A Redis server whose session `s` has a trail: a node (stopped since) accepted `ids` there.
async fn redis_with_a_trail(ids: &[&str]) -> support::redis::RedisServer {
    let redis = support::redis::RedisServer::start(&[]);
    let node = support::nodes::Node::start(&redis.url(), &[]);
    let mut agent = node.agent().await;
    for id in ids {
        agent.send(&ask("s", id, &["Color"], None)).await;
        agent.recv_about("accepted", id).await;
    }
    redis
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_node_given_another_key_than_the_trails_is_refused() {
    use support::nodes::Node;
    let redis = redis_with_a_trail(&["r1"]).await;
    let url = redis.url();
    let dir = tempdir("audit-redis-other-key");
    let other = key_file(&dir, "other-key", &key(7));
    let ran = support::cli::serve_refused(
        &dir,
        &["--store", &url, "--audit-key-file", other.to_str().unwrap()],
    );
    assert!(!ran.ok, "{ran}");
    assert!(
        ran.said
            .contains("sealed with another audit key than the one given"),
        "{ran}"
    );
    // The nodes' own key still starts one.
    drop(Node::start(&url, &[]));
    remove_scratch(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_key_file_the_embedded_store_makes_one_beside_the_data_and_warns_each_start() {
    use std::os::unix::fs::PermissionsExt as _;
    use support::nodes::Node;
    let dir = tempdir("audit-generated-key");
    let node = Node::start_in(dir.clone(), "embedded", &[]);
    let warned = |node: &Node| {
        node.said()
            .iter()
            .any(|line| line.contains("WARN") && line.contains("a key kept beside the data"))
    };
    assert!(warned(&node), "{:?}", node.said());
    drop(node);
    let path = dir.join("audit-key");
    let made = std::fs::read(&path).unwrap();
    assert!(AuditKey::parse(&made).is_ok());
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let node = Node::start_in(dir.clone(), "embedded", &[]);
    assert!(warned(&node), "{:?}", node.said());
    drop(node);
    assert_eq!(
        std::fs::read(&path).unwrap(),
        made,
        "reused, not made again"
    );
    remove_scratch(&dir);
}

#[tokio::test]
async fn a_keyed_store_marked_unkeyed_and_rehashed_without_the_key_is_refused() {
    for (mark, said) in [
        (
            Some(3),
            "is marked unkeyed (format 3) and holds audit trails",
        ),
        (None, "carries no format mark and holds audit trails"),
    ] {
        let dir = tempdir("audit-downgraded");
        let file = key_file(&dir, "audit-key", &key(8));
        store_with_a_trail(&dir, Some(key(8))).await;
        mark_unkeyed_and_rehash(&dir, mark);

        // The key beside the data, or given: either way the downgrade is refused, not
        // verified as an unkeyed chain that holds.
        let verified = askgate(&["audit", "verify"], &dir);
        assert!(!verified.ok, "{mark:?}: {verified}");
        assert!(verified.said.contains(said), "{mark:?}: {verified}");
        let elsewhere = tempdir("audit-downgraded-key");
        let given = key_file(&elsewhere, "key", &key(8));
        std::fs::remove_file(&file).unwrap();
        let flag = ["--audit-key-file", given.to_str().unwrap()];
        let verified = askgate(&[&["audit", "verify"][..], &flag].concat(), &dir);
        assert!(!verified.ok, "{mark:?}: {verified}");
        assert!(verified.said.contains(said), "{mark:?}: {verified}");
        let exported = askgate(&[&["audit", "export"][..], &flag].concat(), &dir);
        assert!(
            !exported.ok,
            "{mark:?}: no checkpoint signed over it: {exported}"
        );
        let refused = support::cli::serve_refused(&dir, &flag);
        assert!(!refused.ok, "{mark:?}: {refused}");
        assert!(refused.said.contains(said), "{mark:?}: {refused}");
        assert!(
            refused
                .said
                .contains("askgate audit verify --checkpoint FILE"),
            "{refused}"
        );
        // Nor is a new key made for it in place of the one removed.
        std::fs::copy(&given, &file).unwrap();
        let refused = support::cli::serve_refused(&dir, &[]);
        assert!(refused.said.contains(said), "{mark:?}: {refused}");
        remove_scratch(&elsewhere);
        remove_scratch(&dir);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_sealed_before_audit_keys_stays_unkeyed_and_gets_no_key_file() {
    use support::nodes::Node;
    let dir = tempdir("audit-legacy");
    store_with_a_trail(&dir, None).await;
    for start in 1..=2 {
        let node = Node::start_in(dir.clone(), "embedded", &[]);
        let said = node.said().join("\n");
        assert!(
            said.contains("sealed with unkeyed SHA-256 before audit keys"),
            "start {start}: {said}"
        );
        drop(node);
        assert!(
            !dir.join("audit-key").exists(),
            "start {start}: a key made for it would refuse its trails at the next start"
        );
    }
    let verified = askgate(&["audit", "verify"], &dir);
    assert!(verified.ok, "{verified}");
    assert!(verified.said.contains("unkeyed SHA-256"), "{verified}");
    remove_scratch(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_deployment_marked_unkeyed_or_unmarked_while_it_holds_trails_is_refused() {
    let redis = redis_with_a_trail(&["r1", "r2"]).await;
    let url = redis.url();
    assert_eq!(
        redis.cli(&["GET", "askgate:{audit}:chain"]).trim(),
        "hmac-sha256"
    );

    // Marked as a deployment from before audit keys, the trail re-hashed to match.
    let trail = "askgate:{s}:audit";
    let lines: Vec<String> = redis
        .cli(&["LRANGE", trail, "0", "-1"])
        .lines()
        .map(str::to_owned)
        .collect();
    assert!(lines.len() >= 2, "{lines:?}");
    let lines = rehashed(&lines, 1);
    let last = read_line(lines.last().unwrap()).unwrap();
    let head = format!("{} {}", last.seq, last.hash);
    redis.cli(&["DEL", trail]);
    redis.cli(
        &[
            &["RPUSH", trail][..],
            &lines.iter().map(String::as_str).collect::<Vec<_>>(),
        ]
        .concat(),
    );
    redis.cli(&["SET", "askgate:{s}:audit:head", &head]);
    redis.cli(&["SET", "askgate:{audit}:chain", "sha256"]);

    let key_file = support::test_audit_key_file();
    let keyed = [
        "--store",
        &url,
        "--audit-key-file",
        key_file.to_str().unwrap(),
    ];
    let dir = tempdir("audit-redis-downgraded");
    for (step, said) in [
        (
            "marked sha256",
            "marks its audit chains `sha256`, not `hmac-sha256`",
        ),
        (
            "unmarked",
            "holds no mark of how its audit chains are hashed",
        ),
    ] {
        if step == "unmarked" {
            redis.cli(&["DEL", "askgate:{audit}:chain"]);
        }
        let refused = support::cli::serve_refused(&dir, &keyed);
        assert!(!refused.ok, "{step}: {refused}");
        assert!(refused.said.contains(said), "{step}: {refused}");
        let verified = askgate(&[&["audit", "verify"][..], &keyed].concat(), &dir);
        assert!(!verified.ok, "{step}: {verified}");
        assert!(verified.said.contains(said), "{step}: {verified}");
    }
    remove_scratch(&dir);
}
