//! One HTTP exchange with a gateway: through reqwest for ordinary calls, or written by hand
//! for tests about the request's very bytes. Every response is checked against
//! `docs/openapi.json` ([`crate::openapi`]) before the test sees it.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use crate::openapi::check_response;

/// How long one exchange may take: long-polls may, and the gateway bounds them at 60 s.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(70);

/// One HTTP exchange: `(status, JSON body or null)`.
pub async fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: Option<&Value>,
    key: Option<&str>,
) -> (u16, Value) {
    let (status, text) = http_text(addr, method, path, body, key).await;
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// One HTTP exchange: `(status, body as text)`, for bodies that are not JSON (metrics, the
/// audit trail's lines) or that a test shows as sent.
pub async fn http_text(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: Option<&Value>,
    key: Option<&str>,
) -> (u16, String) {
    let method = reqwest::Method::from_bytes(method.as_bytes())
        .unwrap_or_else(|e| panic!("{method:?} is not an HTTP method: {e}"));
    // A client per exchange: a client's pooled connections belong to the runtime that made
    // them, and each test has its own.
    let mut request = reqwest::Client::new()
        .request(method.clone(), format!("http://{addr}{path}"))
        .timeout(EXCHANGE_TIMEOUT)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body.map(Value::to_string).unwrap_or_default());
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    let response = request
        .send()
        .await
        .unwrap_or_else(|e| panic!("{path}: no response: {e}"));
    let status = response.status().as_u16();
    let content_type = content_type(response.headers());
    let text = response
        .text()
        .await
        .unwrap_or_else(|e| panic!("{path}: reading the response: {e}"));
    check_response(
        method.as_str(),
        path,
        status,
        content_type.as_deref(),
        &text,
        true,
    );
    (status, text)
}

/// The response's `Content-Type`, if it has one that is text.
fn content_type(headers: &reqwest::header::HeaderMap) -> Option<String> {
    headers
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
}

/// One HTTP exchange written by hand, for tests about the request's very bytes: `headers`
/// (each line ending in `\r\n`, `Host` among them) go out exactly as given (a spoofed `Host`,
/// an authorization scheme in odd case with a tab), which an HTTP client would normalise.
pub async fn http_with_headers(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: Option<&Value>,
    headers: &str,
) -> (u16, Value) {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let body = body.map(Value::to_string).unwrap_or_default();
    let request = format!(
        "{method} {path} HTTP/1.1\r\n{headers}Connection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut raw = Vec::new();
    tokio::time::timeout(EXCHANGE_TIMEOUT, stream.read_to_end(&mut raw))
        .await
        .expect("a response in time")
        .expect("read");
    let text = String::from_utf8_lossy(&raw);
    let status: u16 = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_owned()
    };
    let content_type = head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("content-type")
            .then(|| value.trim())
    });
    check_response(method, path, status, content_type, &body, true);
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

/// A chunked body as sent, its chunks joined.
fn dechunk(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || tail.len() < size {
            break;
        }
        out.push_str(&tail[..size]);
        rest = tail[size..].trim_start_matches("\r\n");
    }
    out
}

/// One exchange with a full URL (a link the gateway made), with `headers` besides reqwest's
/// own and no body: `(status, body as text)`. A POST goes as an empty HTML form would.
pub async fn http_url(method: &str, url: &str, headers: &[(&str, &str)]) -> (u16, String) {
    form_exchange(method, url, headers, String::new()).await
}

/// A POST of a form `body` (already encoded) to `url`, with `headers`: `(status, body as
/// text)`.
pub async fn post_form(url: &str, headers: &[(&str, &str)], body: String) -> (u16, String) {
    form_exchange("POST", url, headers, body).await
}

async fn form_exchange(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: String,
) -> (u16, String) {
    let method = reqwest::Method::from_bytes(method.as_bytes())
        .unwrap_or_else(|e| panic!("{method:?} is not an HTTP method: {e}"));
    let mut request = reqwest::Client::new()
        .request(method.clone(), url)
        .timeout(EXCHANGE_TIMEOUT);
    if method == reqwest::Method::POST {
        request = request
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .body(body);
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request
        .send()
        .await
        .unwrap_or_else(|e| panic!("{url}: no response: {e}"));
    let status = response.status().as_u16();
    let content_type = content_type(response.headers());
    let path = response.url().path().to_owned();
    let text = response
        .text()
        .await
        .unwrap_or_else(|e| panic!("{url}: reading the response: {e}"));
    // A full URL may be another server's (a push service the test plays): only a path the
    // document has is checked.
    check_response(
        method.as_str(),
        &path,
        status,
        content_type.as_deref(),
        &text,
        false,
    );
    (status, text)
}
