//! `askgate demo` as a user runs it: it prints a link, asks three question sets, and prints
//! what the model reads for each answer.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use futures_util::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

const TIMEOUT: Duration = Duration::from_secs(30);

/// The demo agent's questions reach a tab, the tab's answers reach the agent, and the agent
/// prints the exact text the model would read.
#[tokio::test(flavor = "multi_thread")]
async fn the_demo_asks_and_prints_what_the_model_reads() {
    let data_dir = std::env::temp_dir().join(format!("askgate-demo-test-{}", std::process::id()));
    let mut demo = Demo(
        Command::new(env!("CARGO_BIN_EXE_askgate"))
            .args(["demo", "--once", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(&data_dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("askgate demo starts"),
    );
    let (lines_tx, lines) = mpsc::channel::<String>();
    let stdout = demo.0.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    let next_line_with = |needle: &str| -> String {
        loop {
            let line = lines
                .recv_timeout(TIMEOUT)
                .unwrap_or_else(|_| panic!("no line with {needle:?}"));
            if line.contains(needle) {
                return line;
            }
        }
    };
    let url = next_line_with("/s/demo#k=").trim().to_owned();
    let (base, key) = url.split_once("/s/demo#k=").expect("a viewer URL");
    let ws_url = format!(
        "{}/v1/sessions/demo/live",
        base.replacen("http://", "ws://", 1)
    );
    let (mut tab, _) = tokio::time::timeout(TIMEOUT, tokio_tungstenite::connect_async(ws_url))
        .await
        .expect("connect in time")
        .expect("connect");
    tab.send(Message::text(
        json!({"type": "hello", "key": key, "tab": "test-tab"}).to_string(),
    ))
    .await
    .unwrap();
    let answers = [
        json!({"answers": [{"header": "Database", "selected": ["PostgreSQL"]}]}),
        json!({"answers": [{"header": "Features", "selected": ["Invoices", "Coupons"]}, {"header": "Currency", "custom_answer": "CHF"}]}),
        json!({"answers": [{"header": "Deploy", "selected": ["Wait for Monday"]}]}),
    ];
    let expected = [
        r#"{"Database":["PostgreSQL"]}"#,
        r#"{"Features":["Invoices","Coupons"],"Currency":["CHF"]}"#,
        r#"{"Deploy":["Wait for Monday"]}"#,
    ];
    for (answer, expected) in answers.iter().zip(expected) {
        let id = loop {
            let frame = next_frame(&mut tab).await;
            if frame["type"] == "request" {
                break frame["request"]["id"].as_str().unwrap().to_owned();
            }
            if frame["type"] == "snapshot" && !frame["requests"].as_array().unwrap().is_empty() {
                break frame["requests"][0]["id"].as_str().unwrap().to_owned();
            }
        };
        tab.send(Message::text(
            json!({"type": "answer", "id": id, "response": answer}).to_string(),
        ))
        .await
        .unwrap();
        let printed = next_line_with("the model reads");
        assert!(printed.ends_with(expected), "{printed}");
    }
    next_line_with("done");
    let status = demo.0.wait().expect("the demo exits");
    assert!(status.success());
    let _ = std::fs::remove_dir_all(&data_dir);
}

/// The demo's process, killed if the test ends early: a dropped `Child` is left running.
struct Demo(std::process::Child);

impl Drop for Demo {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn next_frame(
    tab: &mut tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
) -> Value {
    loop {
        match tokio::time::timeout(TIMEOUT, tab.next())
            .await
            .expect("a frame in time")
        {
            Some(Ok(Message::Text(text))) => return serde_json::from_str(&text).unwrap(),
            Some(Ok(_)) => {}
            other => panic!("the socket ended: {other:?}"),
        }
    }
}
