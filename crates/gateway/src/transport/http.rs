//! Plain HTTP: health, readiness and metrics.

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;

use crate::server::AppState;

/// `GET /healthz`: answers as soon as the listener is up.
pub async fn healthz() -> &'static str {
    "ok\n"
}

/// `GET /readyz`: 200 when the gateway can decide asks and answers; 503 with the reason when
/// its shared store cannot be reached (load balancers send new connections elsewhere; the
/// node recovers by itself).
pub async fn readyz(State(state): State<AppState>) -> impl IntoResponse {
    match state.hub.ready() {
        Ok(()) => (StatusCode::OK, "ready\n".to_owned()),
        Err(why) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: {why}\n"),
        ),
    }
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
