//! A damaged log stops the gateway instead of losing answers: one flipped bit in a record that
//! is not the torn tail of the last log file makes `askgate serve` refuse to start, naming
//! the file, the byte and the record, with every file left as it was; `askgate store check`
//! says so without changing anything; `--recover-damaged-log` starts, moves the damaged file
//! aside and logs what it held. A torn tail (a crash mid-append) is still taken, and `askgate
//! audit verify` never changes the store it checks.

use crate::support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use support::cli::{askgate, serve_refused};
use support::nodes::Node;
use support::peer::{Peer, answer, ask};
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
    let mut agent = Peer::agent(node).await;
    agent
        .send(&json!({"type": "open", "session": SESSION}))
        .await;
    let viewer = agent.recv_type("opened").await["viewer_url"]
        .as_str()
        .unwrap()
        .to_owned();
    let (mut tab, _) = Peer::tab(node, SESSION, &viewer).await;
    for n in 1..=count {
        let id = format!("r{n}");
        agent.send(&ask(SESSION, &id, None)).await;
        tab.recv_about("request", &id).await;
        tab.send(&answer(&id, "Blue")).await;
        let outcome = agent.recv_about("outcome", &id).await;
        assert_eq!(outcome["outcome"], "answered", "{outcome}");
    }
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
        // Records are a 16-byte header (the payload's length first) and the payload; the
        // file's zeros follow the last.
        while at + 16 <= bytes.len() && bytes[at..at + 16].iter().any(|b| *b != 0) {
            starts.push(at);
            at += 16 + u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
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
    let mut node = Node::start_in(data.clone(), "embedded", &[]);
    answered(&node, 12).await;
    node.kill();
    drop(node);

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
    let moved: Vec<PathBuf> = std::fs::read_dir(&data)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("damaged-"))
        })
        .collect();
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
    let mut node = Node::start_in(data.clone(), "embedded", &[]);
    answered(&node, 3).await;
    node.kill();
    drop(node);

    // A crash mid-append: a header claiming 200 bytes and a few of them, then the file's
    // zeros.
    let (log, starts) = records_of_the_log(&data);
    let mut bytes = std::fs::read(&log).unwrap();
    let last = *starts.last().unwrap();
    let end = last + 16 + u32::from_le_bytes(bytes[last..last + 4].try_into().unwrap()) as usize;
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
    let mut agent = Peer::agent(&node).await;
    agent
        .send(&json!({"type": "open", "session": SESSION}))
        .await;
    agent.recv_type("opened").await;
    drop(node);
    remove_scratch(&data);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_verify_and_export_leave_the_data_directory_as_they_found_it() {
    let data = tempdir("verify-read-only");
    let mut node = Node::start_in(data.clone(), "embedded", &[]);
    answered(&node, 3).await;
    // Killed: redb not closed, the log holding what it has not taken.
    node.kill();
    drop(node);
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
