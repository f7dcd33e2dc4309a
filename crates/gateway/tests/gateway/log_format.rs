//! `--log-format`: JSON lines (the default when stderr is not a terminal) or text; the
//! `askgate listening on` line plain either way.

use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};

use askgate_testkit::frames::ask;
use serde_json::Value;

use crate::support;
use support::nodes::Node;

/// The lines `node` wrote that are JSON objects.
fn json_lines(node: &Node) -> Vec<Value> {
    node.said()
        .iter()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(Value::is_object)
        .collect()
}

async fn open_and_ask(node: &Node) {
    let (mut agent, _) = node.agent_opening("logged").await;
    agent.send(&ask("logged", "r1", &["Color"], None)).await;
    agent.recv_until("accepted").await;
}

#[tokio::test]
async fn json_logs_are_one_object_a_line_with_level_target_message_fields_and_time() {
    for (args, env) in [
        (&["--log-format", "json"][..], &[][..]),
        (&[][..], &[("ASKGATE_LOG_FORMAT", "json")][..]),
    ] {
        let node = Node::start_with_env("embedded", args, env);
        open_and_ask(&node).await;
        let said = node.said();
        // Read by the tests and the clients' test helpers: plain.
        assert!(
            said.iter()
                .any(|line| line.starts_with("askgate listening on http://")),
            "{said:#?}"
        );
        let lines = json_lines(&node);
        let listening = lines
            .iter()
            .find(|line| line["fields"]["message"] == "askgate listening")
            .unwrap_or_else(|| panic!("{args:?} {env:?}: {said:#?}"));
        assert_eq!(listening["level"], "INFO", "{listening}");
        assert!(listening["target"].is_string(), "{listening}");
        assert!(listening["timestamp"].is_string(), "{listening}");
        assert!(listening["fields"]["addr"].is_string(), "{listening}");
        // An event about a request (its acceptance, a debug line) names its session and id.
        assert!(
            node.wrote_line("\"session\":\"logged\"").await,
            "{:#?}",
            node.said()
        );
        // Every line but the plain one is JSON.
        let said = node.said();
        let plain: Vec<&String> = said
            .iter()
            .filter(|line| !serde_json::from_str::<Value>(line).is_ok_and(|v| v.is_object()))
            .collect();
        assert_eq!(plain.len(), 1, "{said:#?}");
        let about = json_lines(&node)
            .into_iter()
            .find(|line| line["fields"]["session"] == "logged")
            .expect("the line waited for");
        assert_eq!(about["fields"]["request"], "r1", "{about}");
    }
}

#[tokio::test]
async fn text_logs_are_lines_for_a_person() {
    for (args, env) in [
        (&["--log-format", "text"][..], &[][..]),
        (&[][..], &[("ASKGATE_LOG_FORMAT", "text")][..]),
    ] {
        let node = Node::start_with_env("embedded", args, env);
        open_and_ask(&node).await;
        assert!(json_lines(&node).is_empty(), "{:#?}", node.said());
        assert!(
            node.wrote_line("askgate listening addr=").await,
            "{:#?}",
            node.said()
        );
    }
}

/// Without the flag or the variable, stderr not being a terminal (a pipe here), every line
/// before the plain `askgate listening on` line is JSON.
#[test]
fn logs_to_a_pipe_are_json_by_default() {
    let data = support::tempdir("log-format-default");
    let mut child = Command::new(env!("CARGO_BIN_EXE_askgate"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&data)
        .env("RUST_LOG", "info")
        .env_remove("ASKGATE_LOG_FORMAT")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("askgate serve starts");
    let stderr = child.stderr.take().expect("stderr");
    let mut before = Vec::new();
    // Read on this thread: the gateway writes the line once it listens, or ends (EOF).
    for line in BufReader::new(stderr).lines().map_while(Result::ok) {
        if line.starts_with("askgate listening on http://") {
            break;
        }
        before.push(line);
    }
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&data);
    let objects: Vec<Value> = before
        .iter()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line:?}: {e}")))
        .collect();
    assert!(
        objects
            .iter()
            .any(|line| line["fields"]["message"] == "askgate listening" && line["level"] == "INFO"),
        "{before:#?}"
    );
}
