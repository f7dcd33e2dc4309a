//! Web Push end to end, against `askgate serve` and a push service and browser of the test's
//! own (`tests/oracle/web_push_decrypt.py`: each push decrypted with `http_ece`, each VAPID
//! token verified with `py_vapid`, not askgate's code): subscriptions per person from the
//! page's key, one push per device with the request's TTL and urgency, the payload the
//! service worker shows, a 410 deleting its subscription, at most ten devices, and a push
//! kept across a SIGKILL sent once after the restart.
#![cfg(target_os = "linux")]

use std::path::Path;

use askgate_testkit::frames::ask;
use askgate_testkit::http::http;
use askgate_testkit::oracle_process::OracleProcess;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use p256::SecretKey;
use p256::elliptic_curve::sec1::ToEncodedPoint as _;
use serde_json::{Value, json};

use crate::support::browser_keys::BrowserKeys;
use crate::support::{self, TIMEOUT};
use support::nodes::Node;

const ALICE: &str = "alice@example.com";
const SUBJECT: &str = "mailto:ops@askgate.example";
const PUBLIC: &str = "https://askgate.example";

async fn push_service(browser: &BrowserKeys, port: Option<u16>) -> OracleProcess {
    let port = port.map(|p| p.to_string());
    let mut args = vec![browser.private_b64.as_str(), browser.auth.as_str()];
    if let Some(port) = &port {
        args.extend(["--port", port]);
    }
    OracleProcess::start("web_push_decrypt.py", &args).await
}

fn notify_file(dir: &Path) -> String {
    let path = dir.join("notify.toml");
    let text = format!("[people.\"{ALICE}\"]\n\n[push]\nsubject = \"{SUBJECT}\"\n");
    std::fs::write(&path, text).expect("the notify file is written");
    path.display().to_string()
}

/// Alice's personal key for `session`.
async fn alices_key(node: &Node, session: &str) -> String {
    node.link_key(&format!("/v1/sessions/{session}/links"), ALICE)
        .await
}

/// POSTs `body` to `path` with `key`: status and body.
async fn post_json(
    addr: std::net::SocketAddr,
    path: &str,
    body: &Value,
    key: &str,
) -> (u16, Value) {
    http(addr, "POST", path, Some(body), Some(key)).await
}

fn subscription(browser: &BrowserKeys, endpoint: &str, label: &str) -> Value {
    json!({"endpoint": endpoint, "keys": {"p256dh": browser.p256dh, "auth": browser.auth},
           "label": label})
}

/// The payload a push carried, as the service worker reads it.
fn payload(found: &Value) -> Value {
    let plaintext = found["plaintext_b64"]
        .as_str()
        .unwrap_or_else(|| panic!("it did not decrypt: {found}"));
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(plaintext).unwrap()).unwrap()
}

#[tokio::test]
async fn each_device_gets_the_request_decrypted_signed_and_timed() {
    let dir = support::tempdir("push");
    let mut rng = support::seeded_rng("each_device_gets_the_request_decrypted_signed_and_timed");
    let phone = BrowserKeys::new(&mut rng);
    let mut service = push_service(&phone, None).await;
    let file = notify_file(&dir);
    let node = Node::start_notifying("memory", None, &file);
    let (mut agent, viewer) = node.agent_opening("s").await;
    let key = alices_key(&node, "s").await;
    let path = "/v1/push/subscriptions?session=s";

    let (status, vapid) = http(node.addr, "GET", "/v1/push/key", None, None).await;
    assert_eq!(status, 200, "{vapid}");
    let vapid = vapid["key"].as_str().unwrap().to_owned();

    // Only a named person subscribes, with keys a push can be encrypted for.
    let device = format!("http://127.0.0.1:{}/push/phone", service.port);
    let anonymous = viewer.split_once("#k=").unwrap().1;
    let (status, body) = post_json(
        node.addr,
        path,
        &subscription(&phone, &device, "Phone"),
        anonymous,
    )
    .await;
    assert_eq!(status, 403, "{body}");
    let mut bad = subscription(&phone, &device, "Phone");
    bad["keys"]["p256dh"] = json!("AAAA");
    let (status, body) = post_json(node.addr, path, &bad, &key).await;
    assert_eq!(
        (status, &body["errors"][0]["path"]),
        (422, &json!("keys.p256dh")),
        "{body}"
    );
    let (status, body) = post_json(
        node.addr,
        path,
        &subscription(&phone, "ftp://x/y", "Phone"),
        &key,
    )
    .await;
    assert_eq!(
        (status, &body["errors"][0]["path"]),
        (422, &json!("endpoint")),
        "{body}"
    );

    let (status, body) = post_json(
        node.addr,
        path,
        &subscription(&phone, &device, "Phone"),
        &key,
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let (status, _) = post_json(
        node.addr,
        path,
        &subscription(&phone, &device, "Phone"),
        &key,
    )
    .await;
    assert_eq!(status, 200, "the same endpoint again is not a new device");
    let gone = format!("http://127.0.0.1:{}/gone/laptop", service.port);
    let (status, body) = post_json(
        node.addr,
        path,
        &subscription(&phone, &gone, "Laptop"),
        &key,
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["user"], ALICE);
    assert_eq!(body["devices"].as_array().unwrap().len(), 2, "{body}");

    // A question for alice with five minutes to go: one push per device, urgent.
    let mut frame = ask("s", "r1", &["Color"], Some(300.0));
    frame["title"] = json!("Pick <b>a</b> colour");
    frame["answerers"] = json!([ALICE]);
    let asked = std::time::Instant::now();
    agent.send(&frame).await;
    agent.recv_until("accepted").await;
    let mut pushes = [service.line(TIMEOUT).await, service.line(TIMEOUT).await];
    let waited_s = asked.elapsed().as_secs();
    pushes.sort();
    let pushes: Vec<Value> = pushes
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let (to_gone, to_phone) = (&pushes[0], &pushes[1]);
    assert_eq!(
        (to_phone["path"].as_str(), to_phone["status"].as_u64()),
        (Some("/push/phone"), Some(201)),
        "{to_phone}"
    );
    assert_eq!(
        (to_gone["path"].as_str(), to_gone["status"].as_u64()),
        (Some("/gone/laptop"), Some(410))
    );
    assert_eq!(to_phone["content_encoding"], "aes128gcm");
    assert_eq!(
        (to_phone["rs"].as_u64(), to_phone["idlen"].as_u64()),
        (Some(4096), Some(65))
    );
    assert_eq!(to_phone["scheme"], "vapid");
    assert_eq!(to_phone["signature_valid"], true, "{to_phone}");
    assert_eq!(
        to_phone["k"],
        json!(vapid),
        "signed with the key pages subscribe with"
    );
    let claims = &to_phone["claims"];
    assert_eq!(
        claims["aud"],
        json!(format!("http://127.0.0.1:{}", service.port))
    );
    assert_eq!(claims["sub"], SUBJECT);
    let ttl: u64 = to_phone["ttl"].as_str().unwrap().parse().unwrap();
    assert!(
        ttl <= 300 && ttl + waited_s + 1 >= 300,
        "TTL is the time left: {ttl} after {waited_s} s"
    );
    assert_eq!(to_phone["urgency"], "high");
    let shown = payload(to_phone);
    assert_eq!(
        shown["title"], "Pick <b>a</b> colour",
        "the page's text, shown as text by the worker"
    );
    assert_eq!(shown["body"], "Which Color?");
    assert_eq!(shown["tag"], "askgate:s:r1");
    let link = shown["url"].as_str().unwrap();
    assert!(link.starts_with(&format!("{PUBLIC}/s/s#k=")), "{link}");

    // A device's id is the first 16 hex digits of its endpoint's SHA-256, as a page works it
    // out to find itself in the list.
    let (_, listed) = http(node.addr, "GET", path, None, Some(&key)).await;
    let ids: Vec<&str> = listed["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap())
        .collect();
    let digest = <sha2::Sha256 as sha2::Digest>::digest(device.as_bytes());
    let expected: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    assert!(ids.contains(&expected.as_str()), "{expected} in {listed}");

    // The 410 deleted that device.
    assert!(
        node.wrote_line("a push subscription is gone").await,
        "{:?}",
        node.said()
    );
    let (_, body) = http(node.addr, "GET", path, None, Some(&key)).await;
    let labels: Vec<&str> = body["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["Phone"]);

    // A device subscribed from session s's personal link is told of s alone, and seen by
    // s's keys alone: a request for alice in session t reaches it not, and t's key lists none.
    let (mut other, _) = node.agent_opening("t").await;
    let t_key = alices_key(&node, "t").await;
    let (_, listed) = http(
        node.addr,
        "GET",
        "/v1/push/subscriptions?session=t",
        None,
        Some(&t_key),
    )
    .await;
    assert_eq!(listed["devices"], json!([]), "{listed}");
    let mut frame = ask("t", "elsewhere", &["Color"], None);
    frame["answerers"] = json!([ALICE]);
    other.send(&frame).await;
    other.recv_until("accepted").await;

    // No deadline: a day's TTL, normal urgency (and this is the next push: t's went nowhere).
    let mut frame = ask("s", "r2", &["Color"], None);
    frame["answerers"] = json!([ALICE]);
    agent.send(&frame).await;
    agent.recv_until("accepted").await;
    let to_phone: Value = serde_json::from_str(&service.line(TIMEOUT).await).unwrap();
    assert_eq!(
        (to_phone["ttl"].as_str(), to_phone["urgency"].as_str()),
        (Some("86400"), Some("normal"))
    );
    assert_eq!(payload(&to_phone)["tag"], "askgate:s:r2");

    // Ten devices at most: the eleventh pushes out the oldest.
    for n in 0..10 {
        let endpoint = format!("https://push.example/device-{n}");
        let (status, _) = http(
            node.addr,
            "POST",
            path,
            Some(&subscription(&phone, &endpoint, &format!("D{n}"))),
            Some(&key),
        )
        .await;
        assert_eq!(status, 201);
    }
    let (_, body) = http(node.addr, "GET", path, None, Some(&key)).await;
    let devices = body["devices"].as_array().unwrap();
    assert_eq!(devices.len(), 10, "{body}");
    assert!(
        devices.iter().all(|d| d["label"] != "Phone"),
        "the oldest went: {body}"
    );
    // Removing one.
    let id = devices[0]["id"].clone();
    let (status, _) = http(
        node.addr,
        "DELETE",
        path,
        Some(&json!({"id": id})),
        Some(&key),
    )
    .await;
    assert_eq!(status, 204);
    let (_, body) = http(node.addr, "GET", path, None, Some(&key)).await;
    assert_eq!(body["devices"].as_array().unwrap().len(), 9);

    // One device subscribed from session s's page and from the inbox is one device in the
    // inbox's list, and removing it there removes both.
    let inbox = node.link_key("/v1/inbox/links", ALICE).await;
    let both = subscription(&phone, "https://push.example/both", "Both");
    assert_eq!(post_json(node.addr, path, &both, &key).await.0, 201);
    let (status, listed) = post_json(node.addr, "/v1/push/subscriptions", &both, &inbox).await;
    assert_eq!(status, 201, "{listed}");
    let same: Vec<&Value> = listed["devices"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["label"] == "Both")
        .collect();
    assert_eq!(same.len(), 1, "{listed}");
    let id = same[0]["id"].clone();
    let (status, _) = http(
        node.addr,
        "DELETE",
        "/v1/push/subscriptions",
        Some(&json!({"id": id})),
        Some(&inbox),
    )
    .await;
    assert_eq!(status, 204);
    let (_, body) = http(node.addr, "GET", path, None, Some(&key)).await;
    assert!(
        body["devices"]
            .as_array()
            .unwrap()
            .iter()
            .all(|d| d["label"] != "Both"),
        "{body}"
    );
    drop(node);
    support::remove_scratch(&dir);
}

#[tokio::test]
async fn a_push_kept_before_a_sigkill_is_sent_after_the_restart_once() {
    let dir = support::tempdir("push-restart");
    let data = dir.join("data");
    std::fs::create_dir_all(&data).unwrap();
    let mut rng =
        support::seeded_rng("a_push_kept_before_a_sigkill_is_sent_after_the_restart_once");
    let phone = BrowserKeys::new(&mut rng);
    // Nothing listens at the push service's address while the first gateway runs.
    let port = support::free_port();
    let file = notify_file(&dir);
    let mut node = Node::start_notifying("embedded", Some(&data), &file);
    let key = alices_key(&node, "s").await;
    let endpoint = format!("http://127.0.0.1:{port}/push/phone");
    let (status, _) = post_json(
        node.addr,
        "/v1/push/subscriptions?session=s",
        &subscription(&phone, &endpoint, "Phone"),
        &key,
    )
    .await;
    assert_eq!(status, 201);
    let mut agent = node.agent().await;
    agent.open("s").await;
    let mut frame = ask("s", "kept", &["Color"], None);
    frame["answerers"] = json!([ALICE]);
    agent.send(&frame).await;
    agent.recv_until("accepted").await;
    assert!(
        node.wrote_line("a notification failed; it is tried again")
            .await,
        "{:?}",
        node.said()
    );
    node.kill();

    let mut service = push_service(&phone, Some(port)).await;
    let node = Node::start_notifying("embedded", Some(&data), &file);
    let got: Value = serde_json::from_str(&service.line(TIMEOUT).await).unwrap();
    assert_eq!(got["status"], 201, "{got}");
    assert_eq!(payload(&got)["tag"], "askgate:s:kept");
    assert!(
        node.wrote_line("a notification was sent").await,
        "{:?}",
        node.said()
    );
    drop(node);
    // Sent once: the next push is a new request's.
    let node = Node::start_notifying("embedded", Some(&data), &file);
    let mut agent = node.agent().await;
    agent.open("s").await;
    let mut frame = ask("s", "after", &["Color"], None);
    frame["answerers"] = json!([ALICE]);
    agent.send(&frame).await;
    agent.recv_until("accepted").await;
    let next: Value = serde_json::from_str(&service.line(TIMEOUT).await).unwrap();
    assert_eq!(
        payload(&next)["tag"],
        "askgate:s:after",
        "the first push came again: {next}"
    );
    drop(node);
    support::remove_scratch(&dir);
}

#[tokio::test]
async fn on_redis_a_device_subscribed_on_one_node_is_pushed_by_another() {
    let dir = support::tempdir("push-redis");
    let redis = support::redis::RedisServer::start(&[]);
    let mut rng =
        support::seeded_rng("on_redis_a_device_subscribed_on_one_node_is_pushed_by_another");
    let phone = BrowserKeys::new(&mut rng);
    let mut service = push_service(&phone, None).await;
    let file = notify_file(&dir);
    let nodes = [
        Node::start_notifying(&redis.url(), None, &file),
        Node::start_notifying(&redis.url(), None, &file),
    ];
    // Both nodes sign with the key derived from the secret Redis keeps: one key.
    let (_, first) = http(nodes[0].addr, "GET", "/v1/push/key", None, None).await;
    let (_, second) = http(nodes[1].addr, "GET", "/v1/push/key", None, None).await;
    assert_eq!(first["key"], second["key"]);
    let key = alices_key(&nodes[0], "s").await;
    let endpoint = format!("http://127.0.0.1:{}/push/phone", service.port);
    let (status, _) = post_json(
        nodes[0].addr,
        "/v1/push/subscriptions?session=s",
        &subscription(&phone, &endpoint, "Phone"),
        &key,
    )
    .await;
    assert_eq!(status, 201);
    let (_, listed) = http(
        nodes[1].addr,
        "GET",
        "/v1/push/subscriptions?session=s",
        None,
        Some(&key),
    )
    .await;
    assert_eq!(
        listed["devices"].as_array().map(Vec::len),
        Some(1),
        "{listed}"
    );

    let (mut agent, _) = nodes[1].agent_opening("s").await;
    let mut frame = ask("s", "r1", &["Color"], None);
    frame["answerers"] = json!([ALICE]);
    agent.send(&frame).await;
    agent.recv_until("accepted").await;
    let got: Value = serde_json::from_str(&service.line(TIMEOUT).await).unwrap();
    assert_eq!(got["status"], 201, "{got}");
    assert_eq!(got["k"], first["key"]);
    assert_eq!(payload(&got)["tag"], "askgate:s:r1");
    drop(nodes);
    support::remove_scratch(&dir);
}

#[tokio::test]
async fn a_vapid_key_file_is_the_key_pushes_are_signed_with() {
    use p256::pkcs8::EncodePrivateKey as _;
    let dir = support::tempdir("push-key-file");
    let mut rng = support::seeded_rng("a_vapid_key_file_is_the_key_pushes_are_signed_with");
    let secret = loop {
        let scalar: [u8; 32] = rand::Rng::random(&mut rng);
        if let Ok(secret) = SecretKey::from_slice(&scalar) {
            break secret;
        }
    };
    let pem = secret
        .to_pkcs8_pem(p256::pkcs8::LineEnding::LF)
        .expect("a PEM");
    let key_file = dir.join("vapid.pem");
    std::fs::write(&key_file, pem.as_bytes()).unwrap();
    let file = notify_file(&dir);
    let key_path = key_file.display().to_string();
    let args = [
        "--notify",
        file.as_str(),
        "--notify-allow-private",
        "--public-url",
        PUBLIC,
        "--vapid-key-file",
        key_path.as_str(),
    ];
    let node = Node::start("memory", &args);
    let (status, body) = http(node.addr, "GET", "/v1/push/key", None, None).await;
    assert_eq!(status, 200, "{body}");
    let expected = URL_SAFE_NO_PAD.encode(secret.public_key().to_encoded_point(false));
    assert_eq!(body["key"], json!(expected));
    drop(node);

    // A file that holds no key refuses the start, naming it.
    std::fs::write(&key_file, "not a key\n").unwrap();
    let refused = Node::try_start("memory", &args).err().expect("refused");
    let said = refused.join("\n");
    assert!(said.contains("--vapid-key-file"), "{said}");
    support::remove_scratch(&dir);
}

#[tokio::test]
async fn a_person_the_trusted_proxy_names_subscribes_without_a_key() {
    use askgate_testkit::http::http_with_headers;
    let dir = support::tempdir("push-proxy");
    let mut rng = support::seeded_rng("a_person_the_trusted_proxy_names_subscribes_without_a_key");
    let phone = BrowserKeys::new(&mut rng);
    let file = notify_file(&dir);
    let args = [
        "--notify",
        file.as_str(),
        "--notify-allow-private",
        "--public-url",
        PUBLIC,
        "--user-header",
        "X-Forwarded-User",
        "--trusted-proxy",
        "127.0.0.1/32",
    ];
    let node = Node::start("memory", &args);
    let host = format!("Host: {}\r\n", node.addr);
    let as_alice = format!("{host}X-Forwarded-User: {ALICE}\r\n");
    let body = subscription(&phone, "https://push.example/phone", "Phone");
    let (status, made) = http_with_headers(
        node.addr,
        "POST",
        "/v1/push/subscriptions",
        Some(&body),
        &as_alice,
    )
    .await;
    assert_eq!(status, 201, "{made}");
    assert_eq!(made["user"], ALICE);
    assert_eq!(made["devices"][0]["label"], "Phone");
    // Without the header (and without a key) nobody is named.
    let (status, _) =
        http_with_headers(node.addr, "GET", "/v1/push/subscriptions", None, &host).await;
    assert_eq!(status, 401);
    drop(node);
    support::remove_scratch(&dir);
}

/// The service worker's handling of a push and of a click (`tests/web/service_worker.test.js`,
/// run by Node's test runner against `web/sw.js` in a stand-in of a worker's scope): a browser
/// here cannot reach a push service to deliver one.
#[test]
fn the_service_worker_shows_a_push_and_opens_its_page_on_a_click() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let ran = std::process::Command::new("node")
        .arg("--test")
        .arg(root.join("tests/web/service_worker.test.js"))
        .output()
        .expect("node runs (scripts/setup-test-env.sh installs it)");
    let said = String::from_utf8_lossy(&ran.stdout);
    assert!(
        ran.status.success(),
        "{said}\n{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    assert!(said.contains("# pass 5"), "{said}");
}
