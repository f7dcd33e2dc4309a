//! Web Push messages as askgate encrypts and signs them, opened by someone else: a push service
//! and browser of the test's own (`tests/oracle/web_push_decrypt.py`) decrypts every body with
//! the `http_ece` package and verifies every VAPID token with `py_vapid`, not askgate's code.

use std::time::{SystemTime, UNIX_EPOCH};

use askgate::notify::web_push::{self, MAX_PUSH_BODY, MAX_PUSH_PAYLOAD, VapidKey};
use askgate_testkit::oracle_process::OracleProcess;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::{Rng as _, RngCore as _};
use serde_json::Value;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use crate::support::browser_keys::BrowserKeys;
use crate::support::{self, TIMEOUT};

const SUBJECT: &str = "mailto:ops@askgate.example";

/// One push as a sender would post it: `(status, what the oracle found)`.
async fn push(
    oracle: &mut OracleProcess,
    path: &str,
    body: &[u8],
    authorization: &str,
) -> (u16, Value) {
    let mut stream = TcpStream::connect(("127.0.0.1", oracle.port))
        .await
        .expect("the oracle takes connections");
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: {authorization}\r\n\
         Content-Encoding: aes128gcm\r\nContent-Type: application/octet-stream\r\nTTL: 60\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        oracle.port,
        body.len()
    );
    stream.write_all(head.as_bytes()).await.expect("write");
    stream.write_all(body).await.expect("write");
    let mut response = Vec::new();
    tokio::time::timeout(TIMEOUT, stream.read_to_end(&mut response))
        .await
        .expect("a response in time")
        .expect("read");
    let response = String::from_utf8_lossy(&response);
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|status| status.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {response:?}"));
    let line = oracle.line(TIMEOUT).await;
    let found = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line:?}: {e}"));
    (status, found)
}

fn now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
}

#[tokio::test]
async fn messages_decrypt_and_tokens_verify_outside_askgate() {
    let mut rng = support::seeded_rng("messages_decrypt_and_tokens_verify_outside_askgate");
    let subscription = BrowserKeys::new(&mut rng);
    let mut oracle = OracleProcess::start(
        "web_push_decrypt.py",
        &[&subscription.private_b64, &subscription.auth],
    )
    .await;
    let vapid = VapidKey::generate();
    let origin = format!("http://127.0.0.1:{}", oracle.port);

    let mut largest = vec![0u8; MAX_PUSH_PAYLOAD];
    rng.fill_bytes(&mut largest);
    let payloads: [(&str, Vec<u8>); 4] = [
        ("empty", Vec::new()),
        ("one-byte", vec![rng.random()]),
        (
            "text",
            "Frage: « Darf ich deployen? » — 質問 ✅ {\"id\":\"r1\"}"
                .as_bytes()
                .to_vec(),
        ),
        ("largest", largest),
    ];
    for (index, (name, payload)) in payloads.iter().enumerate() {
        let body = web_push::encrypt(payload, &subscription.p256dh, &subscription.auth)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(body.len() <= MAX_PUSH_BODY, "{name}: {} bytes", body.len());
        let path = format!("/wpush/v2/{name}");
        let endpoint = format!("{origin}{path}?channel=7");
        let expires_at_s = now_s() + 3600 * (index as u64 + 1);
        let authorization = vapid
            .authorization(&endpoint, SUBJECT, expires_at_s)
            .unwrap_or_else(|e| panic!("{name}: {e}"));

        let (status, found) = push(
            &mut oracle,
            &format!("{path}?channel=7"),
            &body,
            &authorization,
        )
        .await;
        assert_eq!(found["decrypt_error"], Value::Null, "{name}: {found}");
        let plaintext = URL_SAFE_NO_PAD
            .decode(found["plaintext_b64"].as_str().expect("a plaintext"))
            .expect("base64url");
        assert_eq!(&plaintext, payload, "{name}: the plaintext differs");
        assert_eq!(found["rs"], 4096, "{name}");
        assert_eq!(found["idlen"], 65, "{name}");
        assert_eq!(found["scheme"], "vapid", "{name}");
        assert_eq!(found["k"], vapid.public_key_base64url(), "{name}");
        assert_eq!(found["signature_valid"], true, "{name}: {found}");
        assert_eq!(
            found["jose_header"],
            serde_json::json!({"typ": "JWT", "alg": "ES256"}),
            "{name}"
        );
        assert_eq!(
            found["claims"],
            serde_json::json!({"aud": origin, "exp": expires_at_s, "sub": SUBJECT}),
            "{name}"
        );
        assert_eq!(status, 201, "{name}: {found}");
    }

    let over = vec![0u8; MAX_PUSH_PAYLOAD + 1];
    let refused = web_push::encrypt(&over, &subscription.p256dh, &subscription.auth)
        .expect_err("one byte over the limit is refused");
    assert!(refused.contains(&MAX_PUSH_PAYLOAD.to_string()), "{refused}");
}

/// A token signed by another key, or a body sealed for another subscription, is caught by the
/// oracle: its passes above mean something.
#[tokio::test]
async fn the_oracle_refuses_a_wrong_key_or_a_wrong_subscription() {
    let mut rng = support::seeded_rng("the_oracle_refuses_a_wrong_key_or_a_wrong_subscription");
    let subscription = BrowserKeys::new(&mut rng);
    let stranger = BrowserKeys::new(&mut rng);
    let mut oracle = OracleProcess::start(
        "web_push_decrypt.py",
        &[&subscription.private_b64, &subscription.auth],
    )
    .await;
    let endpoint = format!("http://127.0.0.1:{}/wpush/x", oracle.port);
    let vapid = VapidKey::generate();
    let authorization = vapid
        .authorization(&endpoint, SUBJECT, now_s() + 600)
        .expect("signs");

    let for_stranger =
        web_push::encrypt(b"hello", &stranger.p256dh, &stranger.auth).expect("encrypts");
    let (status, found) = push(&mut oracle, "/wpush/x", &for_stranger, &authorization).await;
    assert_ne!(found["decrypt_error"], Value::Null, "{found}");
    assert_eq!(status, 400);

    let body =
        web_push::encrypt(b"hello", &subscription.p256dh, &subscription.auth).expect("encrypts");
    let other_key = VapidKey::generate().public_key_base64url();
    let (token, _) = authorization.split_once(", k=").expect("t and k");
    let forged = format!("{token}, k={other_key}");
    let (status, found) = push(&mut oracle, "/wpush/x", &body, &forged).await;
    assert_eq!(found["decrypt_error"], Value::Null, "{found}");
    assert_eq!(found["signature_valid"], false, "{found}");
    assert_eq!(status, 400);
}
