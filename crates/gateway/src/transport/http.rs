//! Plain HTTP: health and metrics.

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;

use crate::server::AppState;

/// `GET /healthz`: answers as soon as the listener is up.
pub async fn healthz() -> &'static str {
    "ok\n"
}

/// `GET /metrics`: Prometheus text format.
pub async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        state.hub.metrics().render(),
    )
}
