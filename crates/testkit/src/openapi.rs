//! Every HTTP response a test sees, checked against `docs/openapi.json`: the [`http`](crate::http)
//! calls pass theirs to [`check_response`], so the document cannot drift from what the gateway
//! answers without a test failing.
//!
//! The operation is found by method and path template (`/v1/sessions/{session}/requests`); its
//! status must be listed, the body's media type must be one the status lists, and a JSON body
//! must match the schema given for it, validated with the `jsonschema` crate (JSON Schema
//! 2020-12, as OpenAPI 3.1 uses). The document is read from the repository at run time, so a
//! change to it is tested without building anything again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use jsonschema::Validator;
use serde_json::Value;

/// Where the document is, from this crate's manifest (`crates/testkit`).
const DOCUMENT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/openapi.json");

/// The methods an OpenAPI path item may have operations for.
const METHODS: [&str; 7] = ["get", "post", "put", "patch", "delete", "head", "options"];

/// The document, read once per test process.
fn document() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| {
        let text =
            std::fs::read_to_string(DOCUMENT).unwrap_or_else(|e| panic!("reading {DOCUMENT}: {e}"));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{DOCUMENT} is not JSON: {e}"))
    })
}

/// What the document says of a method and path.
enum Found<'d> {
    /// No path template matches: not one of the gateway's routes.
    NoPath,
    /// The path is documented, not for this method.
    NoMethod(&'d str),
    /// The template, and its operation.
    Operation(&'d str, &'d Value),
}

/// The operation for `method` on `path` (no query). A template's `{name}` matches any one
/// non-empty segment; where several match, the one with the most literal segments wins, as
/// in the router.
fn find<'d>(document: &'d Value, method: &str, path: &str) -> Found<'d> {
    let Some(paths) = document["paths"].as_object() else {
        return Found::NoPath;
    };
    let segments: Vec<&str> = path.split('/').collect();
    let best = paths
        .iter()
        .filter_map(|(template, item)| {
            let parts: Vec<&str> = template.split('/').collect();
            if parts.len() != segments.len() {
                return None;
            }
            let mut literal = 0;
            for (part, segment) in parts.iter().zip(&segments) {
                if part.starts_with('{') && part.ends_with('}') {
                    if segment.is_empty() {
                        return None;
                    }
                } else if part == segment {
                    literal += 1;
                } else {
                    return None;
                }
            }
            Some((literal, template.as_str(), item))
        })
        .max_by_key(|(literal, ..)| *literal);
    let Some((_, template, item)) = best else {
        return Found::NoPath;
    };
    // HEAD is answered as GET, without the body.
    let method = method.to_ascii_lowercase();
    let method = if method == "head" && item.get("head").is_none() {
        "get".to_owned()
    } else {
        method
    };
    match item.get(&method) {
        Some(operation) if METHODS.contains(&method.as_str()) => {
            Found::Operation(template, operation)
        }
        _ => Found::NoMethod(template),
    }
}

/// The value a `$ref` inside the document points at (`#/components/responses/NotFound`), or
/// the value itself when it is not a reference.
fn resolve<'d>(document: &'d Value, value: &'d Value) -> Result<&'d Value, String> {
    match value.get("$ref").and_then(Value::as_str) {
        Some(reference) => {
            let pointer = reference
                .strip_prefix('#')
                .ok_or_else(|| format!("{reference}: only references inside the document"))?;
            document
                .pointer(pointer)
                .ok_or_else(|| format!("{reference}: nothing there"))
        }
        None => Ok(value),
    }
}

/// A validator for `schema`, its `#/components/...` references resolved in the document:
/// the schema becomes the root of a copy that carries the document's components beside it.
fn validator(document: &Value, key: &str, schema: &Value) -> Result<Arc<Validator>, String> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<Validator>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Mutex::default);
    if let Some(found) = cache
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(key)
    {
        return Ok(Arc::clone(found));
    }
    let mut root = match schema {
        Value::Object(fields) => fields.clone(),
        Value::Bool(true) => serde_json::Map::new(),
        other => return Err(format!("{key}: a schema that is not an object: {other}")),
    };
    root.insert("components".to_owned(), document["components"].clone());
    let built = jsonschema::draft202012::new(&Value::Object(root))
        .map_err(|e| format!("{key}: the schema does not compile: {e}"))?;
    let built = Arc::new(built);
    cache
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .insert(key.to_owned(), Arc::clone(&built));
    Ok(built)
}

/// What is wrong with the response, measured against the document; `Ok` when it is as
/// documented, or when `path` is none of the document's (`gateway_only` says whether such a
/// path is still an error: a call known to be to the gateway).
fn judge(
    method: &str,
    path: &str,
    status: u16,
    content_type: Option<&str>,
    body: &str,
    gateway_only: bool,
) -> Result<(), String> {
    let document = document();
    let path = path.split(['?', '#']).next().unwrap_or_default();
    let (template, operation) = match find(document, method, path) {
        Found::Operation(template, operation) => (template, operation),
        Found::NoPath if gateway_only => {
            return Err("no path of the document matches it".to_owned());
        }
        Found::NoPath => return Ok(()),
        // The router's own answer to a method a route does not take.
        Found::NoMethod(_) if status == 405 => return Ok(()),
        Found::NoMethod(template) => {
            return Err(format!("{template} has no {method} operation"));
        }
    };
    let listed = &operation["responses"][status.to_string()];
    if listed.is_null() {
        let statuses: Vec<&String> = operation["responses"]
            .as_object()
            .map(|responses| responses.keys().collect())
            .unwrap_or_default();
        return Err(format!(
            "status {status} is not listed for {method} {template} (listed: {statuses:?})"
        ));
    }
    let response = resolve(document, listed)?;
    let essence = content_type
        .map(|value| {
            value
                .split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase()
        })
        .filter(|essence| !essence.is_empty());
    let content = response["content"].as_object();
    let Some(essence) = essence else {
        let may_be_empty = content.is_none_or(serde_json::Map::is_empty)
            || response["x-may-be-empty"] == Value::Bool(true);
        return if body.is_empty() && may_be_empty {
            Ok(())
        } else if body.is_empty() {
            Err("an empty body with no content type, where the document lists content".into())
        } else {
            Err(format!("a body with no content type: {}", shorten(body)))
        };
    };
    let Some(media) = content.and_then(|content| content.get(&essence)) else {
        let listed: Vec<&String> = content
            .map(|content| content.keys().collect())
            .unwrap_or_default();
        return Err(format!(
            "content type {essence} is not listed for {status} (listed: {listed:?})"
        ));
    };
    if !(essence == "application/json" || essence.ends_with("+json")) {
        return Ok(());
    }
    let instance: Value = serde_json::from_str(body)
        .map_err(|e| format!("the body is not JSON ({e}): {}", shorten(body)))?;
    let schema = resolve(document, &media["schema"])?;
    let key = format!("{method} {template} {status} {essence}");
    let validator = validator(document, &key, schema)?;
    let errors: Vec<String> = validator
        .iter_errors(&instance)
        .map(|error| format!("at {:?}: {error}", error.instance_path().as_str()))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the body does not match the schema: {}; body: {}",
            errors.join("; "),
            shorten(body)
        ))
    }
}

/// At most the first 600 characters of `body`, for messages.
fn shorten(body: &str) -> String {
    match body.char_indices().nth(600) {
        Some((at, _)) => format!("{}...", &body[..at]),
        None => body.to_owned(),
    }
}

/// Fails the test when a response of the gateway is not as `docs/openapi.json` says: its
/// status not listed for the operation, a body of a media type not listed, or a JSON body off
/// its schema. `path` is the request's path (a query, if any, is ignored); `to_gateway` says
/// the call was to the gateway, so that a path the document lacks is an error too (a full URL
/// may be another server's: those are skipped).
///
/// # Panics
/// On a response off the document, naming the method, the path, the status and what is
/// wrong.
pub fn check_response(
    method: &str,
    path: &str,
    status: u16,
    content_type: Option<&str>,
    body: &str,
    to_gateway: bool,
) {
    if let Err(wrong) = judge(method, path, status, content_type, body, to_gateway) {
        panic!("{method} {path} answered {status}, off docs/openapi.json: {wrong}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The checks that guard the document: each kind of departure is caught, and what is as
    /// documented passes.
    #[test]
    fn responses_off_the_document_are_caught() {
        let json = Some("application/json");
        let pending =
            r#"{"state":"pending","id":"r","deadline_ms":null,"viewer_url":"http://x/s/s#k=1"}"#;
        let path = "/v1/sessions/s/requests/r?wait_s=1";
        assert_eq!(judge("GET", path, 200, json, pending, true), Ok(()));
        // A field of the wrong type, a status not listed, a media type not listed.
        let bad = pending.replace("\"r\"", "5");
        let wrong = judge("GET", path, 200, json, &bad, true).unwrap_err();
        assert!(wrong.contains("schema"), "{wrong}");
        let wrong = judge("GET", path, 418, json, pending, true).unwrap_err();
        assert!(wrong.contains("418 is not listed"), "{wrong}");
        let wrong = judge("GET", path, 200, Some("text/plain"), "x", true).unwrap_err();
        assert!(wrong.contains("text/plain is not listed"), "{wrong}");
        // A reference to a shared response, followed to its schema.
        let error = r#"{"errors":[{"path":"id","message":"no","code":"invalid_value"}]}"#;
        assert_eq!(judge("GET", path, 404, json, error, true), Ok(()));
        let wrong = judge("GET", path, 404, json, r#"{"errors":[{}]}"#, true).unwrap_err();
        assert!(wrong.contains("required"), "{wrong}");
        // Paths: a gateway path the document lacks is an error; another server's is not.
        assert!(judge("GET", "/nowhere", 404, None, "", true).is_err());
        assert_eq!(judge("GET", "/nowhere", 404, None, "", false), Ok(()));
        assert_eq!(judge("PUT", "/healthz", 405, None, "", true), Ok(()));
        assert!(judge("PUT", "/healthz", 200, None, "", true).is_err());
    }
}
