//! A webhook whose name resolves to a refused address at send time (it passed the start check,
//! or was configured around it, as here): the gateway does not call it, counts the refusal,
//! and the request works as if no webhook were configured.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use askgate::notify::{NotifyConfig, NotifySettings};
use askgate::people::Groups;
use askgate_testkit::TIMEOUT;
use askgate_testkit::frames::{answer, ask};
use askgate_tests::server::{TestServer, test_config};

#[tokio::test]
async fn a_webhook_on_a_refused_address_is_not_called_and_the_request_still_works() {
    // `localhost` resolves to loopback: refused without --notify-allow-private. Nothing need
    // listen there: were it called, the try would fail as "connection refused", not as this.
    let text = "[webhooks.ops]\nurl = \"http://localhost:9/hook\"\nsecret = \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"\n";
    let settings = NotifySettings::parse(
        text,
        "notify.toml",
        &mut Groups::default(),
        &askgate::notify::settings::FromEnv::default(),
    )
    .expect("the file reads");
    let mut config = test_config();
    config.public_url = Some("https://askgate.example".into());
    config.notify = Some(NotifyConfig {
        settings,
        retry_for: Duration::from_secs(3600),
        allow_private: false,
        vapid_key: None,
    });
    let server = TestServer::start_with(config).await;
    let (mut tab, _) = server.tab("s").await;
    let mut agent = server.agent().await;
    agent.send(&ask("s", "r", &["Color"], None)).await;
    agent.recv_until("accepted").await;
    let refused = &server.state.hub.metrics().notify.channels[0].refused;
    let deadline = Instant::now() + TIMEOUT;
    while refused.load(Ordering::Relaxed) == 0 {
        assert!(Instant::now() < deadline, "no refusal was counted");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let metrics = server.state.hub.metrics();
    assert_eq!(metrics.notify.channels[0].sent.load(Ordering::Relaxed), 0);
    tab.recv_about("request", "r").await;
    tab.send(&answer("r", &["Color"], "Red")).await;
    let outcome = agent.recv_until("outcome").await;
    assert_eq!(outcome["outcome"], "answered");
}
