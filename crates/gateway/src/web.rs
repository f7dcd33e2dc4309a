//! The answer page, the inbox, the operator console and the landing page: plain HTML, CSS and
//! JS from `web/`, embedded at compile time (or read from `--web-dir` while developing), served
//! with strict headers.

use std::path::PathBuf;

use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

const JAVASCRIPT: &str = "text/javascript; charset=utf-8";

/// The embedded files: (name, content type, content). Only these names are served.
const EMBEDDED: &[(&str, &str, &str)] = &[
    (
        "index.html",
        "text/html; charset=utf-8",
        include_str!("../../../web/index.html"),
    ),
    (
        "session.html",
        "text/html; charset=utf-8",
        include_str!("../../../web/session.html"),
    ),
    (
        "inbox.html",
        "text/html; charset=utf-8",
        include_str!("../../../web/inbox.html"),
    ),
    (
        "ops.html",
        "text/html; charset=utf-8",
        include_str!("../../../web/ops.html"),
    ),
    ("sw.js", JAVASCRIPT, include_str!("../../../web/sw.js")),
    (
        "js/push.js",
        JAVASCRIPT,
        include_str!("../../../web/js/push.js"),
    ),
    (
        "js/inbox.js",
        JAVASCRIPT,
        include_str!("../../../web/js/inbox.js"),
    ),
    (
        "js/follow.js",
        JAVASCRIPT,
        include_str!("../../../web/js/follow.js"),
    ),
    (
        "js/main.js",
        JAVASCRIPT,
        include_str!("../../../web/js/main.js"),
    ),
    (
        "js/page.js",
        JAVASCRIPT,
        include_str!("../../../web/js/page.js"),
    ),
    (
        "js/readiness.js",
        JAVASCRIPT,
        include_str!("../../../web/js/readiness.js"),
    ),
    (
        "js/connection.js",
        JAVASCRIPT,
        include_str!("../../../web/js/connection.js"),
    ),
    (
        "js/cards.js",
        JAVASCRIPT,
        include_str!("../../../web/js/cards.js"),
    ),
    (
        "js/dialects.js",
        JAVASCRIPT,
        include_str!("../../../web/js/dialects.js"),
    ),
    (
        "js/harness.js",
        JAVASCRIPT,
        include_str!("../../../web/js/harness.js"),
    ),
    (
        "js/deepagents.js",
        JAVASCRIPT,
        include_str!("../../../web/js/deepagents.js"),
    ),
    (
        "js/status.js",
        JAVASCRIPT,
        include_str!("../../../web/js/status.js"),
    ),
    (
        "js/unicode14.js",
        JAVASCRIPT,
        include_str!("../../../web/js/unicode14.js"),
    ),
    (
        "js/finished.js",
        JAVASCRIPT,
        include_str!("../../../web/js/finished.js"),
    ),
    (
        "js/history.js",
        JAVASCRIPT,
        include_str!("../../../web/js/history.js"),
    ),
    (
        "js/people.js",
        JAVASCRIPT,
        include_str!("../../../web/js/people.js"),
    ),
    (
        "js/approval.js",
        JAVASCRIPT,
        include_str!("../../../web/js/approval.js"),
    ),
    (
        "js/rules.js",
        JAVASCRIPT,
        include_str!("../../../web/js/rules.js"),
    ),
    (
        "js/argtree.js",
        JAVASCRIPT,
        include_str!("../../../web/js/argtree.js"),
    ),
    (
        "js/argedit.js",
        JAVASCRIPT,
        include_str!("../../../web/js/argedit.js"),
    ),
    (
        "js/argcheck.js",
        JAVASCRIPT,
        include_str!("../../../web/js/argcheck.js"),
    ),
    (
        "js/form.js",
        JAVASCRIPT,
        include_str!("../../../web/js/form.js"),
    ),
    (
        "js/formfields.js",
        JAVASCRIPT,
        include_str!("../../../web/js/formfields.js"),
    ),
    (
        "js/punycode.js",
        JAVASCRIPT,
        include_str!("../../../web/js/punycode.js"),
    ),
    (
        "js/formats.js",
        JAVASCRIPT,
        include_str!("../../../web/js/formats.js"),
    ),
    (
        "js/claude.js",
        JAVASCRIPT,
        include_str!("../../../web/js/claude.js"),
    ),
    (
        "js/ops.js",
        JAVASCRIPT,
        include_str!("../../../web/js/ops.js"),
    ),
    (
        "js/opscharts.js",
        JAVASCRIPT,
        include_str!("../../../web/js/opscharts.js"),
    ),
    (
        "js/opsformat.js",
        JAVASCRIPT,
        include_str!("../../../web/js/opsformat.js"),
    ),
    (
        "js/opsrequests.js",
        JAVASCRIPT,
        include_str!("../../../web/js/opsrequests.js"),
    ),
    (
        "style.css",
        "text/css; charset=utf-8",
        include_str!("../../../web/style.css"),
    ),
];

/// No inline script or style, nothing from elsewhere; sockets only back to this origin.
const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; \
     form-action 'none'";

/// Where the pages come from.
#[derive(Clone, Debug, Default)]
pub struct WebAssets {
    /// Serve from this directory instead of the embedded copies.
    pub dir: Option<PathBuf>,
}

impl WebAssets {
    async fn serve(&self, name: &str) -> Response {
        let Some((_, content_type, embedded)) = EMBEDDED.iter().find(|(n, ..)| *n == name) else {
            return StatusCode::NOT_FOUND.into_response();
        };
        let body = match &self.dir {
            Some(dir) => match tokio::fs::read_to_string(dir.join(name)).await {
                Ok(text) => text,
                Err(_) => return StatusCode::NOT_FOUND.into_response(),
            },
            None => (*embedded).to_owned(),
        };
        let mut response = body.into_response();
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
        headers.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CONTENT_SECURITY_POLICY),
        );
        headers.insert(
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        );
        headers.insert(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        );
        headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        response
    }
}

/// `GET /`.
pub async fn landing(State(web): State<WebAssets>) -> Response {
    web.serve("index.html").await
}

/// `GET /s/{session}`: the page reads the session from its path and the key from the
/// fragment, so the server serves the same file for every session.
pub async fn session_page(State(web): State<WebAssets>) -> Response {
    web.serve("session.html").await
}

/// `GET /inbox`: the person comes from the key in the fragment, or from the proxy's header
/// on the page's socket, so the server serves the same file to everyone.
pub async fn inbox_page(State(web): State<WebAssets>) -> Response {
    web.serve("inbox.html").await
}

/// `GET /ops`: the operator console. The page holds nothing secret: its figures come from the
/// operator API, which asks for the operator key (or a proxy's operator identity) on each call.
pub async fn ops_page(State(web): State<WebAssets>) -> Response {
    web.serve("ops.html").await
}

/// `GET /js/{file}`: the page's ES modules. Only names in the embedded table are served, so
/// `--web-dir` never reads outside `web/js/`.
pub async fn js(State(web): State<WebAssets>, UrlPath(file): UrlPath<String>) -> Response {
    web.serve(&format!("js/{file}")).await
}

/// `GET /sw.js`: the service worker that shows Web Push notifications. It is served from the
/// root because a worker only controls pages under its own path; `Service-Worker-Allowed`
/// says so outright, and `no-cache` lets a browser's update check see a new copy at once.
pub async fn service_worker(State(web): State<WebAssets>) -> Response {
    let mut response = web.serve("sw.js").await;
    if response.status().is_success() {
        response.headers_mut().insert(
            HeaderName::from_static("service-worker-allowed"),
            HeaderValue::from_static("/"),
        );
    }
    response
}

/// `GET /style.css`.
pub async fn style(State(web): State<WebAssets>) -> Response {
    web.serve("style.css").await
}

#[cfg(test)]
mod tests {
    use super::EMBEDDED;

    /// A module left out of the table is a 404, and the page's whole module graph fails.
    #[test]
    fn every_file_of_the_page_is_embedded() {
        let web = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../web");
        let mut missing = Vec::new();
        for dir in ["", "js"] {
            for entry in std::fs::read_dir(web.join(dir)).expect("web/ is there") {
                let path = entry.expect("a directory entry").path();
                if path.is_dir() {
                    continue;
                }
                let name = path.file_name().unwrap().to_string_lossy();
                let name = if dir.is_empty() {
                    name.into_owned()
                } else {
                    format!("{dir}/{name}")
                };
                if !EMBEDDED.iter().any(|(embedded, _, _)| *embedded == name) {
                    missing.push(name);
                }
            }
        }
        assert!(missing.is_empty(), "not embedded: {missing:?}");
    }

    /// A dialect the gateway accepts but the page cannot show would reach people as a card
    /// saying it is not supported: each one in the registry has its entry in the page's
    /// table of dialects.
    #[test]
    fn the_page_has_a_card_for_every_dialect() {
        let (_, _, cards) = EMBEDDED
            .iter()
            .find(|(name, _, _)| *name == "js/dialects.js")
            .expect("dialects.js is embedded");
        let table = cards
            .split_once("export const DIALECTS = {")
            .and_then(|(_, rest)| rest.split_once("\n};"))
            .map(|(table, _)| table)
            .expect("dialects.js has its table of dialects");
        for dialect in askgate_protocol::Dialect::all() {
            let entry = format!("\n  {}: {{", dialect.as_str());
            assert!(
                table.contains(&entry),
                "dialects.js has no card for {dialect}"
            );
        }
    }
}
