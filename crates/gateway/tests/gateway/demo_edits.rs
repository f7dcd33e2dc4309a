//! `askgate demo` telling what a person's edit of an approval changed.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;

use askgate_testkit::ws::WsClient;
use serde_json::{Value, json};

use crate::support::TIMEOUT;

/// An approval that comes back edited makes the demo agent print, per edited call, what the
/// edit changed: each argument's old and new value (an argument left out is `(absent)`).
#[tokio::test(flavor = "multi_thread")]
async fn the_demo_prints_what_an_edit_changed() {
    let data_dir = crate::support::tempdir("demo-edits");
    let mut child = Command::new(env!("CARGO_BIN_EXE_askgate"))
        .args(["demo", "--once", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&data_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("askgate demo starts");
    let stdout = child.stdout.take().expect("stdout");
    let (lines_tx, lines) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    let next_line_with = |needle: &str| loop {
        let line = lines
            .recv_timeout(TIMEOUT)
            .unwrap_or_else(|_| panic!("no line with {needle:?}"));
        if line.contains(needle) {
            return line;
        }
    };
    let url = next_line_with("/s/demo#k=").trim().to_owned();
    let (base, key) = url.split_once("/s/demo#k=").expect("a viewer URL");
    let live = format!(
        "{}/v1/sessions/demo/live",
        base.replacen("http://", "ws://", 1)
    );
    let mut tab = WsClient::connect(&live, None).await;
    tab.send(&json!({"type": "hello", "key": key})).await;
    let answers = [
        json!({"answers": [{"header": "Database", "selected": ["PostgreSQL"]}]}),
        json!({"answers": [{"header": "Features", "selected": ["Invoices"]}, {"header": "Currency", "selected": ["EUR"]}]}),
        json!({"decisions": [
            {"type": "edit", "args": {"database": "billing_staging", "migration": "0007_add_invoices.sql"}},
            {"type": "approve"}]}),
    ];
    let mut said = Vec::new();
    for answer in &answers {
        let id = next_request(&mut tab).await;
        tab.send(&json!({"type": "answer", "id": id, "response": answer}))
            .await;
        loop {
            let line = next_line_with("[agent]");
            said.push(line.clone());
            if line.contains("the model reads") {
                break;
            }
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let edited: Vec<&String> = said.iter().filter(|l| l.contains("edited")).collect();
    assert_eq!(
        edited.first().map(|l| l.as_str()),
        Some(
            r#"[agent] edited run_migration: database "billing" → "billing_staging", dry_run false → (absent)"#
        ),
        "{said:#?}"
    );
    // Only the edited call is told of: the approved one changed nothing.
    assert!(
        !said.iter().any(|l| l.contains("edited send_email")),
        "{said:#?}"
    );
    crate::support::remove_scratch(&data_dir);
}

/// The id of the next request the tab is shown, in a snapshot or as it is asked, skipping
/// those already answered (a snapshot may still show them).
async fn next_request(tab: &mut WsClient) -> String {
    loop {
        let frame: Value = tab.recv_within(TIMEOUT).await.expect("a frame in time");
        if frame["type"] == "request" {
            return frame["request"]["id"].as_str().unwrap().to_owned();
        }
        if frame["type"] == "snapshot" && !frame["requests"].as_array().unwrap().is_empty() {
            return frame["requests"][0]["id"].as_str().unwrap().to_owned();
        }
    }
}
