//! The `askgate` binary's `validate` and `schema` commands, run as a user runs them.

use std::io::Write;
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;

/// `askgate args...` started, its three streams piped to the test.
fn spawn_askgate(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_askgate"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("askgate starts")
}

fn askgate(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = spawn_askgate(args);
    let mut input = child.stdin.take().expect("stdin");
    let data = stdin.to_vec();
    let writer = std::thread::spawn(move || input.write_all(&data));
    let output = child.wait_with_output().expect("askgate finishes");
    writer.join().expect("writer").expect("stdin written");
    output
}

fn data(path: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/../../tests/data/{path}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("test data readable")
}

/// `askgate schema` prints the same tool definition pydantic-ai sends the model.
#[test]
fn schema_equals_what_pydantic_ai_sends() {
    let output = askgate(&["schema", "--dialect", "harness"], b"");
    assert!(output.status.success());
    let printed: Value = serde_json::from_slice(&output.stdout).expect("schema is JSON");
    let reference: Value = serde_json::from_str(&data("harness_tool_schema.json")).unwrap();
    assert_eq!(printed, reference["tool_definition"]);
}

/// Every vector line gets exactly one answer line, in order, and the stream survives
/// garbage, blank lines and invalid UTF-8 in between.
#[test]
fn validate_answers_every_line_in_order() {
    let vectors = data("conformance/vectors.jsonl");
    let mut input = Vec::new();
    let mut expected_ok = Vec::new();
    for (i, line) in vectors.lines().enumerate() {
        input.extend_from_slice(line.as_bytes());
        input.push(b'\n');
        let vector: Value = serde_json::from_str(line).unwrap();
        expected_ok.push(vector["expect"]["ok"].clone());
        if i % 50 == 0 {
            input.extend_from_slice(
                b"not json\n\n\xff\xfe\n{\"dialect\":\"harness\",\"kind\":\"nope\",\"input\":{}}\n",
            );
            expected_ok.extend(std::iter::repeat_n(Value::Bool(false), 4));
        }
    }
    let output = askgate(&["validate"], &input);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let answers: Vec<Value> = String::from_utf8(output.stdout)
        .expect("output is UTF-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("each answer is JSON"))
        .collect();
    assert_eq!(answers.len(), expected_ok.len());
    for (i, (answer, ok)) in answers.iter().zip(&expected_ok).enumerate() {
        assert_eq!(&answer["ok"], ok, "line {}: {answer}", i + 1);
        if answer["ok"] == false {
            assert!(answer["error"].is_string(), "line {}: {answer}", i + 1);
        }
    }
}

/// Input poured through a pipe (read as it arrives, several reads to a block) and the same
/// input in a file (read in whole blocks) get the same answers, byte for byte.
#[test]
fn validate_answers_a_pipe_and_a_file_alike() {
    let vectors = data("conformance/vectors.jsonl");
    // Many blocks (of 512 KiB), with an unfinished last line.
    let mut input = vectors.repeat((8 << 20) / vectors.len() + 1).into_bytes();
    input.extend_from_slice(br#"{"dialect":"harness","kind":"#);
    let piped = askgate(&["validate"], &input);
    assert!(piped.status.success());

    let path = std::env::temp_dir().join(format!("askgate-cli-file-{}", std::process::id()));
    std::fs::write(&path, &input).expect("write the input file");
    let from_file = Command::new(env!("CARGO_BIN_EXE_askgate"))
        .arg("validate")
        .stdin(std::fs::File::open(&path).expect("open the input file"))
        .output()
        .expect("askgate runs");
    std::fs::remove_file(&path).ok();
    assert!(from_file.status.success());
    let lines = input.iter().filter(|&&b| b == b'\n').count() + 1;
    assert_eq!(piped.stdout.iter().filter(|&&b| b == b'\n').count(), lines);
    assert!(
        piped.stdout == from_file.stdout,
        "the piped and the file answers differ"
    );
}

/// A line longer than `--max-line-bytes` is answered with an error naming its length, from a
/// pipe and from a file alike, and the lines after it as usual; the limit must be a number
/// of bytes of at least 1.
#[test]
fn validate_answers_a_line_over_the_limit_with_an_error() {
    let short = r#"{"dialect":"harness","kind":"render","input":{"timed_out":true}}"#;
    let long = format!(r#"{{"note":"{}"}}"#, "x".repeat(3 << 20));
    let input = format!("{short}\n{long}\n{short}\n{long}");
    let args = ["validate", "--max-line-bytes", "1000"];
    let piped = askgate(&args, input.as_bytes());
    assert!(
        piped.status.success(),
        "{}",
        String::from_utf8_lossy(&piped.stderr)
    );

    let path = std::env::temp_dir().join(format!("askgate-cli-long-{}", std::process::id()));
    std::fs::write(&path, &input).expect("write the input file");
    let from_file = Command::new(env!("CARGO_BIN_EXE_askgate"))
        .args(args)
        .stdin(std::fs::File::open(&path).expect("open the input file"))
        .output()
        .expect("askgate runs");
    std::fs::remove_file(&path).ok();
    assert!(
        piped.stdout == from_file.stdout,
        "the piped and the file answers differ"
    );

    let answers: Vec<Value> = String::from_utf8(piped.stdout)
        .expect("output is UTF-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("each answer is JSON"))
        .collect();
    assert_eq!(answers.len(), 4);
    let too_long = format!(
        "the line is {} bytes long, over the limit of 1000 (--max-line-bytes): not read",
        long.len()
    );
    for (i, answer) in answers.iter().enumerate() {
        if i % 2 == 0 {
            assert_eq!(answer["ok"], true, "line {}: {answer}", i + 1);
        } else {
            assert_eq!(answer["error"], too_long.as_str(), "line {}", i + 1);
            assert_eq!(answer["errors"][0]["code"], "too_long");
        }
    }

    let refused = askgate(&["validate", "--max-line-bytes", "0"], b"");
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("--max-line-bytes") && stderr.contains("at least 1"),
        "{stderr}"
    );
}

/// A reader that stops reading (`askgate validate < lines | head -1`) ends askgate quietly
/// and successfully, as it would end `cat`: no broken-pipe error on stderr.
#[test]
fn validate_ends_quietly_when_its_reader_stops_reading() {
    use std::io::BufRead as _;
    let vectors = data("conformance/vectors.jsonl");
    // Far more answers than a pipe holds, so askgate is still writing when the reader leaves.
    let input = vectors.repeat((16 << 20) / vectors.len() + 1).into_bytes();
    let mut child = spawn_askgate(&["validate"]);
    let mut stdin = child.stdin.take().expect("stdin");
    // askgate may leave before reading everything: a failed write is expected then.
    let writer = std::thread::spawn(move || stdin.write_all(&input).ok());
    let mut stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut first = String::new();
    stdout.read_line(&mut first).expect("a first answer");
    assert!(first.starts_with(r#"{"ok":"#), "{first}");
    drop(stdout);
    let (ended, exit) = std::sync::mpsc::channel();
    std::thread::spawn(move || ended.send(child.wait_with_output()).ok());
    let output = exit
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("askgate ends once its reader has gone")
        .expect("askgate's exit");
    writer.join().expect("writer");
    assert!(output.status.success(), "{:?}", output.status);
    assert_eq!(String::from_utf8_lossy(&output.stderr), "");
}

/// `askgate schema --dialect deepagents` prints the function tool LangChain sends the model.
#[test]
fn deepagents_schema_equals_what_langchain_sends() {
    let output = askgate(&["schema", "--dialect", "deepagents"], b"");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let printed: Value = serde_json::from_slice(&output.stdout).expect("schema is JSON");
    let reference: Value = serde_json::from_str(&data("deepagents_tool_schema.json")).unwrap();
    assert_eq!(printed, reference["openai_function_tool"]);
}

/// A deepagents line with lone surrogates in its arguments is judged as Python would judge
/// it, and the surrogates come back out as `\udXXX` escapes.
#[test]
fn validate_keeps_lone_surrogates_in_deepagents_answers() {
    let line = br#"{"dialect":"deepagents","kind":"request","input":{"args":{"questions":[{"question":"\ud800?","type":"text"}]}}}
"#;
    let output = askgate(&["validate"], line);
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).expect("output is UTF-8");
    assert_eq!(
        text.trim_end(),
        r#"{"ok":true,"normalized":{"type":"ask_user","questions":[{"question":"\ud800?","type":"text"}],"tool_call_id":"call_1"}}"#
    );
}

/// A deepagents request error carries deepagents' own message and askgate's paths.
#[test]
fn validate_reports_deepagents_errors_both_ways() {
    let line = br#"{"dialect":"deepagents","kind":"request","input":{"args":{"questions":[{"question":"Q","type":"multiple_choice","choices":[{"value":" "}]}]}}}
"#;
    let output = askgate(&["validate"], line);
    let answer: Value = serde_json::from_slice(&output.stdout).expect("answer is JSON");
    assert_eq!(answer["ok"], false);
    assert_eq!(
        answer["error"],
        "Error invoking tool 'ask_user' with kwargs {'questions': [{'question': 'Q', 'type': 'multiple_choice', 'choices': [{'value': ' '}]}]} with error:\n questions.0.choices.0: Value error, choice has a blank 'value': {'value': ' '}\n Please fix the error and try again."
    );
    assert_eq!(answer["errors"][0]["path"], "questions[0].choices[0].value");
    assert_eq!(answer["errors"][0]["code"], "blank");
    assert_eq!(answer["framework_errors"][0]["type"], "value_error");
}

/// A host may keep `askgate validate` running and write a line at a time, waiting for each
/// answer before the next line: every answer comes out while stdin is still open.
#[test]
fn validate_answers_a_line_before_the_next_arrives() {
    use std::io::BufRead as _;
    use std::time::Duration;

    let mut child = spawn_askgate(&["validate"]);
    let mut input = child.stdin.take().expect("stdin");
    let output = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let (answers, answer) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in output.lines() {
            if answers.send(line.expect("an answer line")).is_err() {
                break;
            }
        }
    });
    let vectors = data("conformance/vectors.jsonl");
    for line in vectors.lines().take(3) {
        writeln!(input, "{line}").expect("write a line");
        input.flush().expect("flush");
        let got = answer
            .recv_timeout(Duration::from_secs(10))
            .expect("the answer arrives while stdin stays open");
        let expect: Value = serde_json::from_str(line).unwrap();
        let got: Value = serde_json::from_str(&got).unwrap();
        assert_eq!(got["ok"], expect["expect"]["ok"], "{line}");
    }
    drop(input);
    assert!(child.wait().expect("askgate exits").success());
}

/// `askgate serve --help` explains every flag the operator needs, with its variable.
#[test]
fn serve_help_names_each_flag_and_its_environment_variable() {
    let output = askgate(&["serve", "--help"], b"");
    assert!(output.status.success());
    let help = String::from_utf8(output.stdout).expect("help is text");
    for needle in [
        "--listen",
        "ASKGATE_LISTEN",
        "127.0.0.1:8080",
        "--public-url",
        "--agent-key",
        "ASKGATE_AGENT_KEYS",
        "--secret-file",
        "--data-dir",
        "ASKGATE_DATA_DIR",
        "--store",
    ] {
        assert!(
            help.contains(needle),
            "`serve --help` lacks {needle}:\n{help}"
        );
    }
}

/// Without an agent key anyone who can reach the port could ask; so only loopback binds.
#[test]
fn serve_without_a_key_refuses_a_public_address() {
    let data = std::env::temp_dir().join(format!("askgate-cli-public-{}", std::process::id()));
    let output = Command::new(env!("CARGO_BIN_EXE_askgate"))
        .args([
            "serve",
            "--listen",
            "0.0.0.0:0",
            "--store",
            "memory",
            "--data-dir",
        ])
        .arg(&data)
        .env_remove("ASKGATE_AGENT_KEYS")
        .stdin(Stdio::null())
        .output()
        .expect("askgate runs");
    assert!(!output.status.success(), "it must not start");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("without an agent key"), "{stderr}");
    let _ = std::fs::remove_dir_all(&data);
}

/// ASKGATE_AGENT_KEYS takes `KEY:PREFIX` in its comma list as `--agent-key` does, and a bad
/// prefix stops the gateway before it listens, naming the key's position but not the key.
#[test]
fn serve_reads_scoped_keys_from_the_environment() {
    let data = std::env::temp_dir().join(format!("askgate-cli-scopes-{}", std::process::id()));
    let mut child = Command::new(env!("CARGO_BIN_EXE_askgate"))
        .args(["serve", "--listen", "127.0.0.1:0", "--store", "memory"])
        .arg("--data-dir")
        .arg(&data)
        .env("ASKGATE_AGENT_KEYS", "ka:team-a-, kb, ksecret:team/c")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("askgate starts");
    // A gateway that took the keys would serve until stopped: it must refuse within the tests'
    // patience.
    let deadline = std::time::Instant::now() + crate::support::TIMEOUT;
    while child.try_wait().expect("askgate's status").is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            let _ = std::fs::remove_dir_all(&data);
            panic!("askgate started serving with a malformed session prefix");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let output = child.wait_with_output().expect("askgate's output");
    assert!(!output.status.success(), "it must not start");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--agent-key number 3: the session prefix after `:` may hold only"),
        "{stderr}"
    );
    assert!(!stderr.contains("secret"), "the key leaked: {stderr}");
    assert!(
        !data.exists(),
        "the data directory was created before the keys were read"
    );
}

/// `askgate ARGS` run to its end, without stdin.
fn run_askgate(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_askgate"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("askgate runs")
}

/// `askgate audit export` and `audit verify` with a `--session` the store holds no trail of
/// say so on stderr, naming it, and exit 2; the store's own session still reads. (Before,
/// `export` printed nothing and exited 0, and `verify` passed "1 sessions, 0 entries".)
#[tokio::test]
async fn audit_of_an_unknown_session_says_there_is_none_and_exits_2() {
    use crate::support::ops::{put, resolve};
    use askgate::store::{DurableStore, Store as _};

    let dir = crate::support::tempdir("cli-audit-nosuch");
    let store = DurableStore::open_keyed(&dir, Default::default(), Default::default(), None)
        .expect("a store");
    store.commit(vec![put("r1")]).await.expect("asked");
    store.commit(vec![resolve("r1")]).await.expect("declined");
    drop(store);
    let data = dir.to_str().expect("a UTF-8 path");
    for command in ["export", "verify"] {
        let output = run_askgate(&["audit", command, "--session", "nosuch", "--data-dir", data]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "audit {command}: {stderr}");
        assert!(
            stderr.contains("--session nosuch: there is no such session"),
            "audit {command}: {stderr}"
        );
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            "",
            "audit {command}"
        );
        let known = run_askgate(&["audit", command, "--session", "s", "--data-dir", data]);
        assert!(
            known.status.success(),
            "audit {command} --session s: {}",
            String::from_utf8_lossy(&known.stderr)
        );
        assert!(!known.stdout.is_empty(), "audit {command} --session s");
    }
    crate::support::remove_scratch(&dir);
}

/// `askgate requests withdraw` of a session or request the gateway does not know says so,
/// naming both, and exits 2 (apart from 1: the gateway refused or could not be reached); a
/// listing that matches nothing says so on stderr, its stdout (the listing) left empty.
#[tokio::test]
async fn requests_of_an_unknown_session_say_there_is_none() {
    let node = crate::support::nodes::Node::start(
        "memory",
        &[
            "--agent-key",
            "cli-agent-key",
            "--operator-key",
            "cli-operator-key",
        ],
    );
    let url = format!("http://{}", node.addr);
    let gateway = ["--url", &url, "--key", "cli-operator-key"];
    let withdraw = run_askgate(&[&["requests", "withdraw", "nosuch", "r9"][..], &gateway].concat());
    let stderr = String::from_utf8_lossy(&withdraw.stderr);
    assert_eq!(withdraw.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("there is no request r9 in session nosuch"),
        "{stderr}"
    );
    assert_eq!(String::from_utf8_lossy(&withdraw.stdout), "");

    let listed = run_askgate(
        &[
            &["requests", "list", "--session-prefix", "nosuch"][..],
            &gateway,
        ]
        .concat(),
    );
    assert!(listed.status.success(), "{listed:?}");
    assert_eq!(String::from_utf8_lossy(&listed.stdout), "");
    assert_eq!(
        String::from_utf8_lossy(&listed.stderr).trim(),
        r#"no open requests in sessions starting "nosuch""#
    );
}

/// `askgate serve` started with `args` and `env`: the process and its stderr's lines.
fn serve_with(args: &[&str], env: &[(&str, &str)]) -> (Child, std::sync::mpsc::Receiver<String>) {
    use std::io::BufRead as _;
    let mut child = Command::new(env!("CARGO_BIN_EXE_askgate"))
        .args(["serve", "--store", "memory"])
        .args(args)
        .env_remove("ASKGATE_LISTEN")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("askgate serve starts");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, lines)
}

/// The addresses of the first `count` "askgate listening on http://ADDR" lines.
fn listening_on(lines: &std::sync::mpsc::Receiver<String>, count: usize) -> Vec<String> {
    let mut said = Vec::new();
    let mut addresses = Vec::new();
    while addresses.len() < count {
        let line = lines
            .recv_timeout(crate::support::TIMEOUT)
            .unwrap_or_else(|_| panic!("only {addresses:?} listening: {said:?}"));
        if let Some(addr) = line.strip_prefix("askgate listening on http://") {
            addresses.push(addr.to_owned());
        }
        said.push(line);
    }
    addresses
}

/// `--listen` takes a host name (every address it resolves to is bound), an IPv6 address in
/// brackets, and may be given several times (ASKGATE_LISTEN: separated by commas): a
/// "listening on" line per bound address, the first given first, and each serves. (Before,
/// `localhost:8093` was refused as "invalid socket address syntax".)
#[tokio::test]
async fn serve_listens_on_host_names_ipv6_and_several_addresses() {
    use std::net::ToSocketAddrs as _;
    let localhost = ("localhost", 0)
        .to_socket_addrs()
        .expect("localhost resolves")
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let ipv6 = std::net::TcpListener::bind("[::1]:0").is_ok();
    let mut given = vec!["--listen", "127.0.0.1:0", "--listen", "localhost:0"];
    if ipv6 {
        given.extend(["--listen", "[::1]:0"]);
    }
    let expected = 1 + localhost + usize::from(ipv6);
    let data = crate::support::tempdir("cli-listen");
    let data_arg = ["--data-dir", data.to_str().unwrap()];
    let (mut child, lines) = serve_with(&[&given[..], &data_arg].concat(), &[]);
    let addresses = listening_on(&lines, expected);
    assert!(addresses[0].starts_with("127.0.0.1:"), "{addresses:?}");
    if ipv6 {
        assert!(
            addresses[expected - 1].starts_with("[::1]:"),
            "{addresses:?}"
        );
    }
    for addr in &addresses {
        let (status, body) = askgate_testkit::http::http_text(
            addr.parse().expect("a socket address"),
            "GET",
            "/healthz",
            None,
            None,
        )
        .await;
        assert_eq!(status, 200, "{addr}: {body}");
    }
    let _ = child.kill();
    let _ = child.wait();

    // The variable, comma-separated.
    let (mut child, lines) =
        serve_with(&data_arg, &[("ASKGATE_LISTEN", "localhost:0, 127.0.0.1:0")]);
    let addresses = listening_on(&lines, localhost + 1);
    assert!(
        addresses[localhost].starts_with("127.0.0.1:"),
        "{addresses:?}"
    );
    let _ = child.kill();
    let _ = child.wait();

    // Errors name the flag and the value; a public address among several still needs a key.
    for (value, why) in [
        ("localhost", "--listen localhost: "),
        ("nosuch.invalid:80", "--listen nosuch.invalid:80: "),
        ("0.0.0.0:0", "without an agent key"),
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_askgate"))
            .args([
                "serve",
                "--store",
                "memory",
                "--listen",
                "127.0.0.1:0",
                "--listen",
                value,
            ])
            .args(data_arg)
            .env_remove("ASKGATE_LISTEN")
            .env_remove("ASKGATE_AGENT_KEYS")
            .stdin(Stdio::null())
            .output()
            .expect("askgate runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{value}: it must not start");
        assert!(stderr.contains(why), "{value}: {stderr}");
        assert!(
            !stderr.contains("askgate listening on"),
            "{value}: {stderr}"
        );
    }
    crate::support::remove_scratch(&data);
}

/// `askgate schema --dialect form` prints a JSON Schema of the form dialect's request (MCP
/// elicitation: `message`, and `schema` or, in URL mode, `url`), and it agrees with `askgate
/// validate` on requests of every shape: those validate accepts pass it, those it refuses
/// fail it (checked by Python's `jsonschema`, in `.venv/mcp`). Before, it said the form dialect
/// "answers for other tools' calls", and printed nothing.
#[test]
fn form_schema_describes_what_validate_accepts() {
    let output = askgate(&["schema", "--dialect", "form"], b"");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let printed: Value = serde_json::from_slice(&output.stdout).expect("schema is JSON");
    assert_eq!(printed["type"], "object", "{printed}");
    assert_eq!(
        printed["required"],
        serde_json::json!(["message"]),
        "{printed}"
    );

    let fields = serde_json::json!({"type": "object", "properties": {"name": {"type": "string"}}});
    let requests = [
        serde_json::json!({"message": "Your name?", "schema": fields}),
        serde_json::json!({"message": "Your name?", "mode": "form", "server": "github", "schema": fields}),
        serde_json::json!({"message": "Your name?", "schema": fields, "url": null}),
        serde_json::json!({"message": "Sign in", "mode": "url", "url": "https://example.com/login"}),
        serde_json::json!({"message": "Sign in", "mode": "url", "url": "https://example.com/login", "elicitation_id": "e-1", "server": "bank"}),
        // MCP's name for the schema is not askgate's field.
        serde_json::json!({"message": "Your name?", "requestedSchema": fields}),
        serde_json::json!({"schema": fields}),
        serde_json::json!({"message": "", "schema": fields}),
        serde_json::json!({"message": "  ", "schema": fields}),
        serde_json::json!({"message": 5, "schema": fields}),
        serde_json::json!({"message": "x".repeat(10_001), "schema": fields}),
        serde_json::json!({"message": "Hi", "schema": "name"}),
        serde_json::json!({"message": "Hi", "mode": "popup", "schema": fields}),
        serde_json::json!({"message": "Hi", "schema": fields, "url": "https://example.com/"}),
        serde_json::json!({"message": "Hi", "schema": fields, "elicitation_id": "e-1"}),
        serde_json::json!({"message": "Hi", "mode": "url"}),
        serde_json::json!({"message": "Hi", "mode": "url", "url": 7}),
        serde_json::json!({"message": "Hi", "mode": "url", "url": "https://example.com/", "schema": fields}),
        serde_json::json!({"message": "Hi", "server": "a\u{7}b", "schema": fields}),
        serde_json::json!({"message": "Hi", "server": "", "schema": fields}),
        serde_json::json!({"message": "Hi", "server": "s".repeat(201), "schema": fields}),
    ];
    let lines: String = requests
        .iter()
        .map(|input| {
            format!(
                "{}\n",
                serde_json::json!({"dialect": "form", "kind": "request", "input": input})
            )
        })
        .collect();
    let validated = askgate(&["validate"], lines.as_bytes());
    let accepted: Vec<bool> = String::from_utf8(validated.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap()["ok"] == true)
        .collect();
    assert_eq!(accepted.len(), requests.len());
    assert_eq!(accepted.iter().filter(|ok| **ok).count(), 5, "{accepted:?}");

    let python = format!("{}/../../.venv/mcp/bin/python", env!("CARGO_MANIFEST_DIR"));
    assert!(
        std::path::Path::new(&python).exists(),
        "{python} is missing: run scripts/setup-test-env.sh"
    );
    let judge = r#"
import json, sys, jsonschema
schema = json.loads(sys.argv[1])
jsonschema.Draft202012Validator.check_schema(schema)
validator = jsonschema.Draft202012Validator(schema)
for line in sys.stdin:
    print(json.dumps(validator.is_valid(json.loads(line))))
"#;
    let requests_text: String = requests.iter().map(|r| format!("{r}\n")).collect();
    let mut child = Command::new(&python)
        .args(["-c", judge, &printed.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(requests_text.as_bytes())
        .unwrap();
    let judged = child.wait_with_output().expect("python finishes");
    assert!(
        judged.status.success(),
        "{}",
        String::from_utf8_lossy(&judged.stderr)
    );
    let valid: Vec<bool> = String::from_utf8(judged.stdout)
        .unwrap()
        .lines()
        .map(|line| line == "true")
        .collect();
    for ((request, accepted), valid) in requests.iter().zip(&accepted).zip(&valid) {
        assert_eq!(
            accepted, valid,
            "validate accepts it: {accepted}, the schema: {valid}: {request}"
        );
    }
    assert_eq!(valid.len(), requests.len());
}

/// `askgate schema | head -1`: a reader that stops reading has had what it wanted, so the
/// command ends quietly with success instead of reporting the broken pipe.
#[test]
fn schema_into_a_closed_pipe_ends_quietly() {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    // Nobody will read: every write the command makes fails with a broken pipe.
    drop(reader);
    let output = Command::new(env!("CARGO_BIN_EXE_askgate"))
        .args(["schema", "--dialect", "form"])
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .expect("askgate runs");
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "exit {:?}: {said}", output.status);
    assert!(said.is_empty(), "said: {said}");
}
