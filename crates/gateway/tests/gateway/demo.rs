//! `askgate demo` as a user runs it: it prints a link, asks three question sets, and prints
//! what the model reads for each answer.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use askgate_testkit::ws::WsClient;
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(30);

/// The demo agent's questions reach a tab, the tab's answers reach the agent, and the agent
/// prints the exact text the model would read.
#[tokio::test(flavor = "multi_thread")]
async fn the_demo_asks_and_prints_what_the_model_reads() {
    let data_dir = data_dir("asks");
    let demo = Demo::start(&data_dir, &["--once"]);
    let mut tab = demo.tab().await;
    for (answer, expected) in ANSWERS.iter().zip(EXPECTED) {
        let id = next_request(&mut tab).await;
        answer_with(&mut tab, &id, answer).await;
        let printed = demo.next_line_with("the model reads");
        assert!(printed.ends_with(expected), "{printed}");
    }
    demo.next_line_with("done");
    let mut demo = demo;
    let status = demo.child.wait().expect("the demo exits");
    assert!(status.success());
    let _ = std::fs::remove_dir_all(&data_dir);
}

/// A demo killed while its second question set is open, and started again on the same data
/// directory, says the first was answered, shows the second as it was (the same request,
/// restored from the store) and goes on from there. Before, it asked the first again.
#[tokio::test(flavor = "multi_thread")]
async fn a_restarted_demo_goes_on_where_it_stopped() {
    let data_dir = data_dir("restart");
    let demo = Demo::start(&data_dir, &[]);
    let mut tab = demo.tab().await;
    let first = next_request(&mut tab).await;
    answer_with(&mut tab, &first, &ANSWERS[0]).await;
    demo.next_line_with("the model reads");
    let second = next_request(&mut tab).await;
    drop(tab);
    drop(demo);

    let demo = Demo::start(&data_dir, &["--once"]);
    let mut tab = demo.tab().await;
    let said = demo.next_line_with("before the restart");
    assert!(
        said.contains("question set 1") && said.ends_with(EXPECTED[0]),
        "{said}"
    );
    // The open request came back from the store, and the agent's re-ask picked it up.
    assert_eq!(next_request(&mut tab).await, second);
    answer_with(&mut tab, &second, &ANSWERS[1]).await;
    let printed = demo.next_line_with("the model reads");
    assert!(printed.ends_with(EXPECTED[1]), "{printed}");
    let mut done = second;
    for (answer, expected) in ANSWERS.iter().zip(EXPECTED).skip(2) {
        let next = next_request_after(&mut tab, &done).await;
        answer_with(&mut tab, &next, answer).await;
        let printed = demo.next_line_with("the model reads");
        assert!(printed.ends_with(expected), "{printed}");
        done = next;
    }
    demo.next_line_with("done");
    let _ = std::fs::remove_dir_all(&data_dir);
}

/// What the test answers to each question set, and what the model then reads.
static ANSWERS: std::sync::LazyLock<[Value; 4]> = std::sync::LazyLock::new(|| {
    [
        json!({"answers": [{"header": "Database", "selected": ["PostgreSQL"]}]}),
        json!({"answers": [{"header": "Features", "selected": ["Invoices", "Coupons"]}, {"header": "Currency", "custom_answer": "CHF"}]}),
        json!({"decisions": [
            {"type": "edit", "args": {"database": "billing_staging", "migration": "0007_add_invoices.sql"}},
            {"type": "respond", "message": "Wait until staging looks good."}]}),
        json!({"answers": [{"header": "Deploy", "selected": ["Wait for Monday"]}]}),
    ]
});
const EXPECTED: [&str; 4] = [
    r#"{"Database":["PostgreSQL"]}"#,
    r#"{"Features":["Invoices","Coupons"],"Currency":["CHF"]}"#,
    // The first of its two lines (a line per call).
    "run_migration: edited",
    r#"{"Deploy":["Wait for Monday"]}"#,
];

fn data_dir(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("askgate-demo-{name}-{}", std::process::id()))
}

/// The id of the next request the tab is shown (in a snapshot or as it is asked).
async fn next_request(tab: &mut WsClient) -> String {
    loop {
        let frame = tab.recv_within(TIMEOUT).await.expect("a frame in time");
        if frame["type"] == "request" {
            return frame["request"]["id"].as_str().unwrap().to_owned();
        }
        if frame["type"] == "snapshot" && !frame["requests"].as_array().unwrap().is_empty() {
            return frame["requests"][0]["id"].as_str().unwrap().to_owned();
        }
    }
}

/// The next request shown that is not `done` (already answered).
async fn next_request_after(tab: &mut WsClient, done: &str) -> String {
    loop {
        let id = next_request(tab).await;
        if id != done {
            return id;
        }
    }
}

async fn answer_with(tab: &mut WsClient, id: &str, answer: &Value) {
    tab.send(&json!({"type": "answer", "id": id, "response": answer}))
        .await;
}

/// The demo's process, killed when dropped (a dropped `Child` is left running), and the lines
/// it prints.
struct Demo {
    child: std::process::Child,
    lines: mpsc::Receiver<String>,
}

impl Drop for Demo {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Demo {
    /// `askgate demo` on a free port over `data_dir`, with `args`.
    fn start(data_dir: &std::path::Path, args: &[&str]) -> Demo {
        let mut child = Command::new(env!("CARGO_BIN_EXE_askgate"))
            .args(["demo", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(data_dir)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("askgate demo starts");
        let (lines_tx, lines) = mpsc::channel::<String>();
        let stdout = child.stdout.take().expect("stdout");
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if lines_tx.send(line).is_err() {
                    break;
                }
            }
        });
        Demo { child, lines }
    }

    /// The next printed line that holds `needle`.
    fn next_line_with(&self, needle: &str) -> String {
        loop {
            let line = self
                .lines
                .recv_timeout(TIMEOUT)
                .unwrap_or_else(|_| panic!("no line with {needle:?}"));
            if line.contains(needle) {
                return line;
            }
        }
    }

    /// A tab on the link the demo prints.
    async fn tab(&self) -> WsClient {
        let url = self.next_line_with("/s/demo#k=").trim().to_owned();
        let (base, key) = url.split_once("/s/demo#k=").expect("a viewer URL");
        let ws_url = format!(
            "{}/v1/sessions/demo/live",
            base.replacen("http://", "ws://", 1)
        );
        let mut tab = WsClient::connect(&ws_url, None).await;
        tab.send(&json!({"type": "hello", "key": key})).await;
        tab
    }
}
