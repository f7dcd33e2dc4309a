//! `GET /v1/openapi.json`: the HTTP API described for tools (OpenAPI 3.1), no key needed.
//!
//! The document is `docs/openapi.json`, compiled in: what a gateway serves is what its own
//! build was tested against (the router's test checks every route is in it, and the
//! integration tests check every response they see against it).

use axum::http::header;
use axum::response::IntoResponse;

/// The document, as kept in the repository.
pub const OPENAPI_JSON: &str = include_str!("../../../../docs/openapi.json");

/// `GET /v1/openapi.json`.
pub async fn openapi() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], OPENAPI_JSON)
}
