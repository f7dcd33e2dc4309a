//! A damaged log stops the gateway instead of losing answers: one flipped bit in a record that
//! is not the torn tail of the last log file makes `askgate serve` refuse to start, naming
//! the file, the byte and the record, with every file left as it was; `askgate store check`
//! says so without changing anything; `--recover-damaged-log` starts, moves the damaged file
//! aside and logs what it held. A torn tail (a crash mid-append) is still taken, and `askgate
//! audit verify` never changes the store it checks.

use crate::support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use askgate::store::{DurableStore, Store as _};
use askgate_testkit::frames::{answer, ask};
use support::cli::{askgate, serve_refused};
use support::nodes::Node;
use support::{remove_scratch, tempdir};

const SESSION: &str = "s";

/// Every file under `dir`, by its path inside it, with its bytes.
fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                out.insert(path.strip_prefix(root).unwrap().to_owned(), bytes);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// `count` requests asked, answered by a tab, and their outcomes delivered to the agent (the
/// gateway tells the agent only once the outcome is durable).
async fn answered(node: &Node, count: usize) {
    let (mut agent, viewer) = node.agent_opening(SESSION).await;
    let (mut tab, _) = node.tab(SESSION, &viewer).await;
    for n in 1..=count {
        let id = format!("r{n}");
        agent.send(&ask(SESSION, &id, &["Color"], None)).await;
        tab.recv_about("request", &id).await;
        tab.send(&answer(&id, &["Color"], "Blue")).await;
        let outcome = agent.recv_about("outcome", &id).await;
        assert_eq!(outcome["outcome"], "answered", "{outcome}");
    }
}

/// The bytes of the record at `at`: a 16-byte header (the payload's length first, its top bit
/// set when the payload is followed by a 32-byte MAC, as on a store with keyed chains), the
/// payload and the MAC.
fn record_len(bytes: &[u8], at: usize) -> usize {
    let field = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
    let mac = if field & (1 << 31) != 0 { 32 } else { 0 };
    16 + (field & !(1 << 31)) as usize + mac
}

/// A gateway on `data` that answered `count` requests, then killed: redb not closed, the log
/// holding what redb has not taken.
async fn answered_then_killed(data: &Path, count: usize) {
    let mut node = Node::start_in(data.to_owned(), "embedded", &[]);
    answered(&node, count).await;
    node.kill();
}

/// Takes the MAC away from the record at `at` (the length's top bit cleared, the 32 bytes
/// removed and zeros put at the file's end), as someone without the key could try.
fn strip_mac(bytes: &mut Vec<u8>, at: usize) {
    let end = at + record_len(bytes, at);
    let field = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
    assert!(
        field & (1 << 31) != 0,
        "a keyed store's record carries a MAC"
    );
    bytes[at..at + 4].copy_from_slice(&(field & !(1 << 31)).to_le_bytes());
    bytes.drain(end - 32..end);
    bytes.extend_from_slice(&[0; 32]);
}

/// The `damaged-<time>` folders the damaged log files were moved into.
fn damaged_folders(data: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(data)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("damaged-"))
        })
        .collect()
}

/// The log file holding records, and where each of its records starts.
fn records_of_the_log(data: &Path) -> (PathBuf, Vec<usize>) {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(data)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "wal"))
        .collect();
    logs.sort();
    for log in logs {
        let bytes = std::fs::read(&log).unwrap();
        let mut starts = Vec::new();
        let mut at = 0;
        // The file's zeros follow the last record.
        while at + 16 <= bytes.len() && bytes[at..at + 16].iter().any(|b| *b != 0) {
            starts.push(at);
            at += record_len(&bytes, at);
        }
        if !starts.is_empty() {
            return (log, starts);
        }
    }
    panic!("no log file holds a record in {}", data.display());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flipped_bit_before_the_tail_stops_the_start_and_recovery_moves_it_aside_and_says_what_was_lost()
 {
    let data = tempdir("damaged-log");
    answered_then_killed(&data, 12).await;

    // One bit of the second record's payload, far from the log's end.
    let (log, starts) = records_of_the_log(&data);
    assert!(starts.len() >= 12, "{starts:?}");
    let at = starts[1];
    let mut bytes = std::fs::read(&log).unwrap();
    bytes[at + 16 + 5] ^= 0x04;
    std::fs::write(&log, &bytes).unwrap();
    let name = log.file_name().unwrap().to_str().unwrap().to_owned();
    let before = files(&data);

    let refused = serve_refused(&data, &["--store", "embedded"]);
    assert!(!refused.ok, "{refused}");
    for said in [
        name.as_str(),
        &format!("is damaged at byte {at}"),
        "should be record seq 2",
        "records after it pass their checks",
        "--recover-damaged-log",
    ] {
        assert!(refused.said.contains(said), "{said:?} not in: {refused}");
    }
    assert!(
        files(&data) == before,
        "a refused start changed the data directory"
    );

    let checked = askgate(&["store", "check"], &data);
    assert!(!checked.ok, "{checked}");
    assert!(checked.said.contains("DAMAGED"), "{checked}");
    assert!(
        checked
            .said
            .contains(&format!("{name} is damaged at byte {at}")),
        "{checked}"
    );
    assert!(checked.said.contains("recoverable: "), "{checked}");
    let verified = askgate(&["audit", "verify"], &data);
    assert!(
        !verified.ok,
        "a damaged log is not a trail that holds: {verified}"
    );
    assert!(verified.said.contains("damaged: "), "{verified}");
    assert!(
        files(&data) == before,
        "store check or audit verify changed the data directory"
    );

    let node = Node::start_in(data.clone(), "embedded", &["--recover-damaged-log"]);
    let said = node.said().join("\n");
    let lost = node
        .said()
        .into_iter()
        .find(|line| line.contains("ERROR") && line.contains("--recover-damaged-log"))
        .unwrap_or_else(|| panic!("no ERROR saying what was lost: {said}"));
    for part in [
        "lost_seqs=",
        "lost_records=",
        "requests=",
        "s/r",
        &format!("byte {at}"),
    ] {
        assert!(lost.contains(part), "{part:?} not in: {lost}");
    }
    drop(node);
    let moved = damaged_folders(&data);
    assert_eq!(moved.len(), 1, "{moved:?}");
    assert_eq!(
        std::fs::read(moved[0].join(&name)).unwrap(),
        before[Path::new(&name)],
        "the damaged file is kept as it was"
    );
    let checked = askgate(&["store", "check"], &data);
    assert!(checked.ok, "recovered, the store starts: {checked}");
    remove_scratch(&data);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_torn_tail_is_still_taken() {
    let data = tempdir("torn-tail");
    answered_then_killed(&data, 3).await;

    // A crash mid-append: a header claiming 200 bytes and a few of them, then the file's
    // zeros.
    let (log, starts) = records_of_the_log(&data);
    let mut bytes = std::fs::read(&log).unwrap();
    let last = *starts.last().unwrap();
    let end = last + record_len(&bytes, last);
    bytes[end..end + 20]
        .copy_from_slice(&[200, 0, 0, 0, 1, 2, 3, 4, 9, 9, 9, 9, 9, 9, 9, 9, 7, 7, 7, 7]);
    std::fs::write(&log, &bytes).unwrap();

    let checked = askgate(&["store", "check"], &data);
    assert!(checked.ok, "{checked}");
    assert!(
        checked
            .said
            .contains(&format!("torn by a crash mid-append at byte {end}")),
        "{checked}"
    );
    let node = Node::start_in(data.clone(), "embedded", &[]);
    let said = node.said().join("\n");
    assert!(said.contains("torn by a crash mid-append"), "{said}");
    let mut agent = node.agent().await;
    agent.open(SESSION).await;
    drop(node);
    remove_scratch(&data);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_verify_and_export_leave_the_data_directory_as_they_found_it() {
    let data = tempdir("verify-read-only");
    // Killed: redb not closed, the log holding what it has not taken.
    answered_then_killed(&data, 3).await;
    let before = files(&data);
    assert!(
        before
            .keys()
            .any(|p| p.extension().is_some_and(|e| e == "wal"))
    );
    let verified = askgate(&["audit", "verify"], &data);
    assert!(verified.ok, "{verified}");
    assert!(verified.said.contains("every chain holds"), "{verified}");
    let exported = askgate(&["audit", "export"], &data);
    assert!(exported.ok, "{exported}");
    let answered: Vec<Value> = exported
        .said
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|entry| entry["event"] == "answered")
        .collect();
    assert_eq!(
        answered.len(),
        3,
        "the log's entries are in the export: {exported}"
    );
    assert!(
        files(&data) == before,
        "audit verify or export changed the data directory"
    );
    remove_scratch(&data);
}

/// Sets the CRC-32 of the record at `at` to what its seq and the bytes after its header (its
/// payload, and its MAC if it carries one) make, as someone who can write the files can.
fn recompute_crc(bytes: &mut [u8], at: usize) {
    let len = record_len(bytes, at);
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&bytes[at + 8..at + 16]);
    hasher.update(&bytes[at + 16..at + len]);
    let crc = hasher.finalize().to_le_bytes();
    bytes[at + 4..at + 8].copy_from_slice(&crc);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_record_rewritten_without_the_audit_key_stops_the_start_of_a_keyed_store() {
    for strip in [false, true] {
        let data = tempdir("forged-log");
        answered_then_killed(&data, 6).await;
        // The key kept elsewhere, as it should be: the commands are given it.
        let elsewhere = tempdir("forged-log-key");
        let key = elsewhere.join("audit-key");
        std::fs::rename(data.join("audit-key"), &key).unwrap();
        let flag = ["--audit-key-file", key.to_str().unwrap()];

        let (log, starts) = records_of_the_log(&data);
        let mut bytes = std::fs::read(&log).unwrap();
        // An answered record, its answer changed (same length), its CRC made to match.
        let at = *starts
            .iter()
            .find(|at| {
                let record = &bytes[**at..**at + record_len(&bytes, **at)];
                record.windows(6).any(|w| w == b"\"Blue\"")
            })
            .expect("a record of an answer");
        let end = at + record_len(&bytes, at);
        let blue = at
            + bytes[at..end]
                .windows(6)
                .position(|w| w == b"\"Blue\"")
                .unwrap();
        bytes[blue + 1..blue + 5].copy_from_slice(b"Pink");
        if strip {
            strip_mac(&mut bytes, at);
        }
        recompute_crc(&mut bytes, at);
        std::fs::write(&log, &bytes).unwrap();
        let name = log.file_name().unwrap().to_str().unwrap().to_owned();
        let why = if strip {
            "carries no MAC"
        } else {
            "fails its MAC"
        };
        let before = files(&data);

        let refused = serve_refused(&data, &flag);
        assert!(!refused.ok, "{refused}");
        for said in [name.as_str(), &format!("is damaged at byte {at}"), why] {
            assert!(refused.said.contains(said), "{said:?} not in: {refused}");
        }
        let checked = askgate(&[&["store", "check"][..], &flag].concat(), &data);
        assert!(!checked.ok, "{checked}");
        assert!(
            checked.said.contains("DAMAGED: the store's log")
                && checked
                    .said
                    .contains(&format!("{name} is damaged at byte {at}"))
                && checked.said.contains(why),
            "{checked}"
        );
        let verified = askgate(&[&["audit", "verify"][..], &flag].concat(), &data);
        assert!(!verified.ok, "{verified}");
        assert!(verified.said.contains(why), "{verified}");
        assert!(
            files(&data) == before,
            "serve, store check or audit verify changed the data directory"
        );
        remove_scratch(&elsewhere);
        remove_scratch(&data);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damage_in_records_redb_already_holds_is_a_warning_and_the_file_is_kept_aside() {
    let data = tempdir("applied-damage");
    let key = askgate::audit::chain::AuditKey::from_bytes([9; 32]);
    std::fs::write(data.join("audit-key"), format!("{}\n", key.to_hex())).unwrap();
    // Closed cleanly: redb holds every record, and the log file is still there.
    let store = DurableStore::open_keyed(
        &data,
        Default::default(),
        Default::default(),
        Some(std::sync::Arc::new(key)),
    )
    .unwrap();
    for n in 1..=4 {
        let id = format!("r{n}");
        store.commit(vec![support::ops::put(&id)]).await.unwrap();
        store
            .commit(vec![support::ops::resolve(&id)])
            .await
            .unwrap();
    }
    drop(store);
    let (log, starts) = records_of_the_log(&data);
    let at = starts[1];
    let mut bytes = std::fs::read(&log).unwrap();
    bytes[at + 16 + 5] ^= 0x04;
    std::fs::write(&log, &bytes).unwrap();
    let name = log.file_name().unwrap().to_str().unwrap().to_owned();

    let checked = askgate(&["store", "check"], &data);
    assert!(checked.ok, "nothing is lost, the gateway starts: {checked}");
    assert!(
        checked.said.contains("already applied, nothing lost")
            && checked
                .said
                .contains(&format!("{name} is damaged at byte {at}")),
        "{checked}"
    );
    let verified = askgate(&["audit", "verify"], &data);
    assert!(verified.ok, "{verified}");
    assert!(
        verified.said.contains("1 sessions, 8 entries"),
        "{verified}"
    );

    let node = Node::start_in(data.clone(), "embedded", &[]);
    let warned = node
        .said()
        .into_iter()
        .find(|line| line.contains("WARN") && line.contains("already applied, nothing lost"))
        .unwrap_or_else(|| panic!("no WARN: {}", node.said().join("\n")));
    assert!(
        warned.contains(&name) && warned.contains(&format!("at={at}")),
        "{warned}"
    );
    let mut agent = node.agent().await;
    agent.open("s").await;
    drop(agent);
    drop(node);
    let kept = damaged_folders(&data);
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(
        std::fs::read(kept[0].join(&name)).unwrap(),
        bytes,
        "the damaged file is kept as it was"
    );
    // (The trail itself is past its retention by now: its requests were asked in 1970.)
    let verified = askgate(&["audit", "verify"], &data);
    assert!(verified.ok, "{verified}");
    remove_scratch(&data);
}

/// The entries of `dir`, by name.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_verify_copies_beside_the_data_and_leaves_nothing_even_when_interrupted() {
    let parent = tempdir("verify-scratch");
    let data = parent.join("data");
    // Killed: redb must be repaired, so verify reads a copy.
    answered_then_killed(&data, 2).await;

    let verified = askgate(&["audit", "verify"], &data);
    assert!(verified.ok, "{verified}");
    let copy = verified
        .said
        .split("read from a copy in ")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .unwrap_or_else(|| panic!("no copy named: {verified}"));
    assert_eq!(
        Path::new(copy).parent(),
        Some(parent.as_path()),
        "the copy is beside the data directory, on its filesystem: {verified}"
    );
    assert_eq!(names_in(&parent), ["data"], "the copy was removed");

    // Interrupted while it holds the copy: it waits to read a checkpoint file that is a pipe
    // no one writes to.
    let elsewhere = tempdir("verify-scratch-fifo");
    let fifo = elsewhere.join("checkpoints");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    for (signal, code) in [("INT", 130), ("TERM", 143)] {
        let mut verify = std::process::Command::new(env!("CARGO_BIN_EXE_askgate"))
            .args(["audit", "verify", "--checkpoint"])
            .arg(&fifo)
            .arg("--data-dir")
            .arg(&data)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + support::TIMEOUT;
        while !names_in(&parent)
            .iter()
            .any(|name| name.starts_with(".data.askgate-read-"))
        {
            assert!(
                std::time::Instant::now() < deadline,
                "SIG{signal}: no copy was made beside the data: {:?}",
                names_in(&parent)
            );
            assert!(
                verify.try_wait().unwrap().is_none(),
                "SIG{signal}: it ended"
            );
            // Looking again for the copy to appear (there is no event to wait on for it).
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let pid = verify.id().to_string();
        assert!(
            std::process::Command::new("kill")
                .args([&format!("-{signal}"), &pid])
                .status()
                .unwrap()
                .success()
        );
        let output = verify.wait_with_output().unwrap();
        assert_eq!(output.status.code(), Some(code), "SIG{signal}: {output:?}");
        assert_eq!(
            names_in(&parent),
            ["data"],
            "SIG{signal}: the copy was removed"
        );
    }
    remove_scratch(&elsewhere);
    remove_scratch(&parent);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_start_of_a_store_from_before_audit_keys_leaves_every_file_as_it_was() {
    let data = tempdir("damaged-unkeyed");
    // Trails sealed unkeyed, as before audit keys; then a gateway (no key is made for it)
    // killed with its log holding what redb does not.
    let store = DurableStore::open(&data).unwrap();
    store.commit(vec![support::ops::put("old")]).await.unwrap();
    drop(store);
    answered_then_killed(&data, 6).await;
    assert!(!data.join("audit-key").exists());
    let (log, starts) = records_of_the_log(&data);
    let at = starts[1];
    let mut bytes = std::fs::read(&log).unwrap();
    bytes[at + 16 + 5] ^= 0x04;
    std::fs::write(&log, &bytes).unwrap();
    let before = files(&data);

    let refused = serve_refused(&data, &[]);
    assert!(!refused.ok, "{refused}");
    assert!(
        refused.said.contains(&format!("is damaged at byte {at}")),
        "{refused}"
    );
    assert!(
        files(&data) == before,
        "a refused start changed the data directory (redb repaired?)"
    );
    remove_scratch(&data);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keyed_log_stripped_of_every_mac_is_damage_for_store_check_too() {
    let data = tempdir("stripped-log");
    answered_then_killed(&data, 3).await;
    let (log, starts) = records_of_the_log(&data);
    let mut bytes = std::fs::read(&log).unwrap();
    // Last record first, so the places of the earlier ones hold.
    for at in starts.iter().rev() {
        strip_mac(&mut bytes, *at);
        recompute_crc(&mut bytes, *at);
    }
    std::fs::write(&log, &bytes).unwrap();
    let before = files(&data);

    let checked = askgate(&["store", "check"], &data);
    assert!(!checked.ok, "{checked}");
    assert!(
        checked
            .said
            .contains("is damaged at byte 0: the record there carries no MAC"),
        "{checked}"
    );
    let refused = serve_refused(&data, &[]);
    assert!(!refused.ok, "{refused}");
    assert!(refused.said.contains("carries no MAC"), "{refused}");
    assert!(
        files(&data) == before,
        "store check changed the data directory"
    );
    remove_scratch(&data);
}
