//! The frames between a person's inbox page and the gateway (`GET /v1/inbox/live`).
//!
//! The inbox speaks as a session's tab does, with one more member: every frame about a
//! request names its `session`, because an inbox shows requests of many sessions. What the
//! gateway sends is a tab's frame with `session` added (built by the gateway from the tab's
//! encoding, so the two cannot drift); what the page sends is below.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// inbox page → gateway.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FromInbox {
    /// The first frame: the inbox key from the URL fragment; absent behind a trusted proxy,
    /// whose header says who the person is.
    Hello {
        /// The inbox key (`i1.…`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        key: Option<String>,
    },
    /// An answer to an open request of `session`.
    Answer {
        /// The session.
        session: String,
        /// The request.
        id: String,
        /// The dialect's answer.
        response: Value,
    },
    /// Declines an open request of `session` (with `dismiss`: puts it aside).
    Decline {
        /// The session.
        session: String,
        /// The request.
        id: String,
        /// Put aside rather than refused.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        dismiss: bool,
    },
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_inbox_frame_names_its_session_and_a_hello_may_name_no_key() {
        let answer: FromInbox = serde_json::from_value(json!({
            "type": "answer", "session": "s-1", "id": "r-1", "response": {"answers": []}
        }))
        .unwrap();
        assert_eq!(
            answer,
            FromInbox::Answer {
                session: "s-1".into(),
                id: "r-1".into(),
                response: json!({"answers": []}),
            }
        );
        let hello: FromInbox = serde_json::from_str(r#"{"type":"hello"}"#).unwrap();
        assert_eq!(hello, FromInbox::Hello { key: None });
        // An answer without its session is not one: the gateway could only guess where it goes.
        assert!(
            serde_json::from_value::<FromInbox>(
                json!({"type": "answer", "id": "r", "response": {}})
            )
            .is_err()
        );
    }
}
