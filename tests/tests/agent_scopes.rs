//! Agent keys on a real gateway: how a key is presented, and which sessions it may act on.

use askgate_tests::server::{TestServer, WsClient, http_with_headers, questions, test_config};
use serde_json::json;

/// The authentication scheme is case-insensitive (RFC 7235), and any run of spaces or tabs
/// may separate it from the key: clients that write `bearer` were refused.
#[tokio::test(flavor = "multi_thread")]
async fn the_bearer_scheme_is_read_in_any_case() {
    let mut config = test_config();
    config.agent_keys = vec!["k1".into()];
    let server = TestServer::start_with(config).await;
    let url = server.ws_url("/v1/agent");
    for authorization in ["bearer k1", "BEARER \t k1"] {
        let mut agent =
            WsClient::connect_with_headers(&url, &[("authorization", authorization)]).await;
        agent.send(&json!({"type": "open", "session": "s"})).await;
        let opened = agent.recv().await;
        assert_eq!(opened["type"], "opened", "{authorization:?}: {opened}");
    }
    let post = json!({"questions": questions(&["Color"])});
    for (n, authorization) in ["bearer k1", "bEaReR\tk1"].into_iter().enumerate() {
        let headers = format!(
            "Host: {}\r\nAuthorization: {authorization}\r\n",
            server.addr
        );
        let path = format!("/v1/sessions/http-{n}/requests");
        let (status, body) =
            http_with_headers(server.addr, "POST", &path, Some(&post), &headers).await;
        assert_eq!(status, 201, "{authorization:?}: {body}");
    }
}
