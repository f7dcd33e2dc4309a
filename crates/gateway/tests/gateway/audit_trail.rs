//! The audit trail, end to end, on the embedded store and on Redis with three nodes: every
//! event of every request appears with the right person, each session's chain verifies, and
//! changing one byte of one stored entry makes `askgate audit verify` name that entry.
#![cfg(target_os = "linux")]

use crate::support;

use std::process::Command;

use askgate::audit::verify::ChainCheck;
use askgate_testkit::frames::{answer, ask};
use serde_json::{Value, json};
use support::nodes::Node;
use support::redis::RedisServer;
use support::{TIMEOUT, tempdir};

const SESSION: &str = "audited";

/// A personal link for `user` from `node`: its URL.
async fn personal_link(node: &Node, user: &str) -> String {
    let (status, body) = node
        .http(
            "POST",
            &format!("/v1/sessions/{SESSION}/links"),
            Some(&json!({"user": user, "ttl_s": 3600})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let link: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(link["user"], user);
    link["url"].as_str().unwrap().to_owned()
}

/// The session's trail as `GET /v1/audit` streams it from `node`, after `since`.
async fn trail(node: &Node, since: u64) -> Vec<Value> {
    let (status, body) = node
        .http(
            "GET",
            &format!("/v1/audit?session={SESSION}&since={since}"),
            None,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    body.lines()
        .map(|line| serde_json::from_str(line).expect("each line is JSON"))
        .collect()
}

/// Waits until the trail has an entry satisfying `wanted`: what ends happen after their
/// frames (an ack has no reply), so the trail is read until it shows them.
async fn trail_until(node: &Node, wanted: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        let entries = trail(node, 0).await;
        if wanted(&entries) {
            return entries;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the trail never showed what was waited for: {entries:#?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

fn event<'a>(entries: &'a [Value], id: Option<&str>, name: &str) -> &'a Value {
    entries
        .iter()
        .find(|e| e["event"] == name && id.is_none_or(|id| e["id"] == id))
        .unwrap_or_else(|| panic!("no {name} entry for {id:?} in {entries:#?}"))
}

/// Every kind of event, asked on the first node, watched and answered on the others: the
/// trail as the last node streams it.
async fn every_event(nodes: &[&Node]) -> Vec<Value> {
    let (first, second, third) = (nodes[0], nodes[1 % nodes.len()], nodes[2 % nodes.len()]);
    let mut agent = first.agent().await;
    agent.open(SESSION).await;
    let alice_url = personal_link(first, "alice@example.com").await;
    let bob_url = personal_link(second, "bob@example.com").await;
    let (mut alice, snapshot) = second.tab(SESSION, &alice_url).await;
    assert_eq!(snapshot["you"]["user"], "alice@example.com");
    let alice_tab = snapshot["tab"].as_str().unwrap().to_owned();
    let (mut bob, snapshot) = third.tab(SESSION, &bob_url).await;
    let bob_tab = snapshot["tab"].as_str().unwrap().to_owned();

    let mut only_alice = ask(SESSION, "r-answer", &["Color"], None);
    only_alice["answerers"] = json!(["alice@example.com"]);
    agent.send(&only_alice).await;
    agent.recv_about("accepted", "r-answer").await;
    bob.recv_about("request", "r-answer").await;
    bob.send(&answer("r-answer", &["Color"], "Red")).await;
    let refused = bob.recv_until("answer_rejected").await;
    assert_eq!(refused["errors"][0]["code"], "forbidden", "{refused}");
    alice.recv_about("request", "r-answer").await;
    alice.send(&answer("r-answer", &["Color"], "Blue")).await;
    let outcome = agent.recv_about("outcome", "r-answer").await;
    assert_eq!(outcome["user"], "alice@example.com", "{outcome}");
    assert_eq!(outcome["by"], alice_tab.as_str());

    agent
        .send(&ask(SESSION, "r-decline", &["Color"], None))
        .await;
    alice.recv_about("request", "r-decline").await;
    alice
        .send(&json!({"type": "decline", "id": "r-decline"}))
        .await;
    agent.recv_about("outcome", "r-decline").await;

    agent
        .send(&ask(SESSION, "r-timeout", &["Color"], Some(0.2)))
        .await;
    let timed_out = agent.recv_about("outcome", "r-timeout").await;
    assert_eq!(timed_out["outcome"], "timed_out");

    agent
        .send(&ask(SESSION, "r-withdraw", &["Color"], None))
        .await;
    agent.recv_about("accepted", "r-withdraw").await;
    agent
        .send(&json!({"type": "cancel", "session": SESSION, "id": "r-withdraw"}))
        .await;
    agent.recv_about("outcome", "r-withdraw").await;

    for id in ["r-answer", "r-decline", "r-timeout", "r-withdraw"] {
        agent
            .send(&json!({"type": "ack", "session": SESSION, "id": id}))
            .await;
    }
    let entries = trail_until(third, |entries| {
        entries.iter().filter(|e| e["event"] == "acked").count() == 4
    })
    .await;

    let issued: Vec<&Value> = entries
        .iter()
        .filter(|e| e["event"] == "link_issued")
        .map(|e| &e["user"])
        .collect();
    assert_eq!(
        issued,
        [&json!("alice@example.com"), &json!("bob@example.com")]
    );
    let asked = event(&entries, Some("r-answer"), "asked");
    assert_eq!(asked["answerers"], json!(["alice@example.com"]));
    assert_eq!(asked["digest"].as_str().map(str::len), Some(64));
    let refusal = event(&entries, Some("r-answer"), "refused");
    assert_eq!(refusal["user"], "bob@example.com");
    assert_eq!(refusal["tab"], bob_tab.as_str());
    assert_eq!(refusal["via"], "personal-link");
    assert_eq!(refusal["reason"], "not an answerer");
    let answered = event(&entries, Some("r-answer"), "answered");
    assert_eq!(answered["user"], "alice@example.com");
    assert_eq!(answered["tab"], alice_tab.as_str());
    assert_eq!(answered["via"], "personal-link");
    assert_eq!(
        answered["answer"]["answers"][0]["selected"],
        json!(["Blue"])
    );
    assert_eq!(
        event(&entries, Some("r-decline"), "declined")["user"],
        "alice@example.com"
    );
    assert_eq!(
        event(&entries, Some("r-timeout"), "timed_out")["user"],
        Value::Null
    );
    event(&entries, Some("r-withdraw"), "withdrawn");
    // Only the winner is recorded: one ending per request.
    for id in ["r-answer", "r-decline", "r-timeout", "r-withdraw"] {
        let endings = entries
            .iter()
            .filter(|e| e["id"] == id)
            .filter(|e| {
                ["answered", "declined", "timed_out", "withdrawn"]
                    .contains(&e["event"].as_str().unwrap_or_default())
            })
            .count();
        assert_eq!(endings, 1, "{id}: {entries:#?}");
    }
    // Every entry has what the API promises, and the chain holds, keyed with the node's key.
    let mut check = ChainCheck::with_key(SESSION, Some(chain_key_of(first)));
    for entry in &entries {
        for field in [
            "seq", "at_ms", "session", "id", "event", "user", "tab", "prev", "hash",
        ] {
            assert!(entry.get(field).is_some(), "{field} missing in {entry}");
        }
    }
    let (_, raw) = third
        .http("GET", &format!("/v1/audit?session={SESSION}"), None)
        .await;
    for line in raw.lines() {
        check.next(line).unwrap_or_else(|broken| panic!("{broken}"));
    }
    assert_eq!(check.checked() as usize, entries.len());
    // `since` gives what came after.
    let later = trail(first, 3).await;
    assert_eq!(later.len(), entries.len() - 3);
    assert_eq!(later[0]["seq"], 4);
    entries
}

/// The audit key `node` seals with: the one generated in its data directory (embedded), or
/// the tests' Redis key.
fn chain_key_of(node: &Node) -> askgate::audit::chain::ChainKey {
    let generated = node.data.join("audit-key");
    let file = if generated.exists() {
        generated
    } else {
        support::test_audit_key_file()
    };
    let key = askgate::audit::chain::AuditKey::parse(&std::fs::read(file).unwrap()).unwrap();
    askgate::audit::chain::ChainKey::Keyed(std::sync::Arc::new(key))
}

/// What `askgate audit ARGS...` did: its exit status, and what it printed.
struct Said {
    ok: bool,
    stdout: String,
    stderr: String,
}

impl std::fmt::Display for Said {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}{}", self.stdout, self.stderr)
    }
}

fn audit(args: &[&str]) -> Said {
    let output = Command::new(env!("CARGO_BIN_EXE_askgate"))
        .arg("audit")
        .args(args)
        .output()
        .expect("askgate audit runs");
    Said {
        ok: output.status.success(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Checks an export printed exactly `entries`, one line each, then the session's signed
/// checkpoint naming the last of them, and nothing else: no warning on its standard error
/// either.
fn assert_exported(exported: &Said, entries: &[Value]) {
    assert!(exported.ok, "{exported}");
    assert_eq!(
        exported.stderr, "",
        "an export that went well says nothing else"
    );
    let mut lines: Vec<Value> = exported
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).expect("each exported line is JSON"))
        .collect();
    let checkpoint = lines.pop().expect("a checkpoint last");
    assert_eq!(lines, entries, "the export and the streamed trail differ");
    let last = entries.last().unwrap();
    assert_eq!(checkpoint["checkpoint"], "askgate audit checkpoint v1");
    assert_eq!(
        (&checkpoint["last_seq"], &checkpoint["last_hash"]),
        (&last["seq"], &last["hash"]),
        "{checkpoint}"
    );
}

/// `askgate audit ARGS | head -0`: a reader that stopped reading had what it wanted, so the
/// export ends quietly with success rather than reporting the broken pipe.
fn assert_quiet_into_a_closed_pipe(args: &[&str]) {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    // Nobody will read: every write the command makes fails with a broken pipe.
    drop(reader);
    let output = Command::new(env!("CARGO_BIN_EXE_askgate"))
        .arg("audit")
        .args(args)
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .expect("askgate audit runs");
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "exit {:?}: {said}", output.status);
    assert!(said.is_empty(), "said: {said}");
}

/// Changes one byte of `line`, in the answer it records (still valid JSON, so only the hash
/// can tell).
fn with_one_byte_changed(line: &str) -> String {
    let changed = line.replacen("Blue", "Blua", 1);
    assert_ne!(changed, line, "the entry holds the answer");
    changed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_the_embedded_store_every_event_is_recorded_and_a_changed_byte_is_named() {
    let data = tempdir("audit-embedded");
    let mut node = Node::start_in(data.clone(), "embedded", &[]);
    let entries = every_event(&[&node]).await;
    node.kill();
    let data_dir = data.to_str().unwrap();

    let said = audit(&["verify", "--data-dir", data_dir]);
    assert!(said.ok, "{said}");
    assert!(said.stdout.contains("every chain holds"), "{said}");
    assert_exported(&audit(&["export", "--data-dir", data_dir]), &entries);
    assert_quiet_into_a_closed_pipe(&["export", "--data-dir", data_dir]);

    let answered = entries.iter().find(|e| e["event"] == "answered").unwrap();
    let seq = answered["seq"].as_u64().unwrap();
    // What the killed gateway's log held reaches redb when the store next opens (`audit`
    // reads without writing): opened and closed here, so the entry is in redb to change.
    let key = std::fs::read(data.join("audit-key")).unwrap();
    let key = askgate::audit::chain::AuditKey::parse(&key).unwrap();
    drop(
        askgate::store::DurableStore::open_keyed(
            &data,
            Default::default(),
            Default::default(),
            Some(std::sync::Arc::new(key)),
        )
        .unwrap(),
    );
    {
        const AUDIT: redb::TableDefinition<'_, (&str, u64), &str> =
            redb::TableDefinition::new("audit");
        use redb::ReadableTable as _;
        let db = redb::Database::open(data.join("askgate.redb")).unwrap();
        let txn = db.begin_write().unwrap();
        {
            // A row holds what one checkpoint sealed onto the session, a line an entry: the
            // row whose lines include the answer's, with that line changed.
            let mut table = txn.open_table(AUDIT).unwrap();
            let entry_start = format!(r#"{{"seq":{seq},"#);
            let (first, row) = table
                .range((SESSION, 0)..=(SESSION, seq))
                .unwrap()
                .map(|row| {
                    let (key, value) = row.unwrap();
                    (key.value().1, value.value().to_owned())
                })
                .find(|(_, row)| row.split('\n').any(|l| l.starts_with(&entry_start)))
                .expect("the answer's entry is in a row");
            let changed: Vec<String> = row
                .split('\n')
                .map(|line| {
                    if line.starts_with(&entry_start) {
                        with_one_byte_changed(line)
                    } else {
                        line.to_owned()
                    }
                })
                .collect();
            table
                .insert((SESSION, first), changed.join("\n").as_str())
                .unwrap();
        }
        txn.commit().unwrap();
    }
    let said = audit(&["verify", "--data-dir", data_dir]);
    assert!(!said.ok, "a changed entry must fail verification: {said}");
    let said = said.to_string();
    assert!(
        said.contains(&format!("session {SESSION}: entry seq {seq} ")),
        "{said}"
    );
    assert!(said.contains("does not match its contents"), "{said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_redis_with_three_nodes_every_event_is_recorded_and_a_changed_byte_is_named() {
    let redis = RedisServer::start(&[]);
    let url = redis.url();
    let nodes: Vec<Node> = (0..3).map(|_| Node::start(&url, &[])).collect();
    let entries = every_event(&nodes.iter().collect::<Vec<_>>()).await;
    let key_file = support::test_audit_key_file().to_str().unwrap().to_owned();

    let said = audit(&["verify", "--store", &url, "--audit-key-file", &key_file]);
    assert!(said.ok, "{said}");
    assert!(said.stdout.contains("1 sessions"), "{said}");
    assert_exported(
        &audit(&[
            "export",
            "--store",
            &url,
            "--session",
            SESSION,
            "--audit-key-file",
            &key_file,
        ]),
        &entries,
    );

    let answered = entries.iter().find(|e| e["event"] == "answered").unwrap();
    let seq = answered["seq"].as_u64().unwrap();
    let key = format!("askgate:{{{SESSION}}}:audit");
    let index = (seq - 1).to_string();
    let line = redis.cli(&["LINDEX", &key, &index]);
    let line = line.trim_end_matches('\n');
    assert_eq!(
        redis
            .cli(&["LSET", &key, &index, &with_one_byte_changed(line)])
            .trim(),
        "OK"
    );
    let said = audit(&["verify", "--store", &url, "--audit-key-file", &key_file]);
    assert!(!said.ok, "a changed entry must fail verification: {said}");
    let said = said.to_string();
    assert!(
        said.contains(&format!("session {SESSION}: entry seq {seq} ")),
        "{said}"
    );
}
