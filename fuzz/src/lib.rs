//! What the targets share: how a fuzzer's bytes are read as a request and an answer, and the
//! properties every dialect's validation must keep whatever it is given.
//!
//! - [`targets`]: each target's body, for its libFuzzer binary and for the test suite's
//!   replay of the seeds.

pub mod targets;

use askgate_protocol::{Dialect, Outcome, QuestionSet};
use serde_json::Value;

/// The two halves of an input, split at its first NUL byte (which JSON text never holds
/// unescaped): the request, and the tab's answer to it if there is a second half.
pub fn halves(data: &[u8]) -> (&[u8], Option<&[u8]>) {
    match data.iter().position(|byte| *byte == 0) {
        Some(at) => (&data[..at], Some(&data[at + 1..])),
        None => (data, None),
    }
}

/// Validates `data`'s request as `dialect` and, if it passes, holds it to what the gateway
/// relies on:
/// - the normalised request validates again, to itself (a stored request is restored from its
///   normalised form after a restart; one refused then would be lost);
/// - an answer is judged the same by the request and by its restored copy, and a settlement
///   encodes as JSON;
/// - every ending without an answer settles.
///
/// Nothing may panic on the way.
pub fn exercise_dialect(dialect: Dialect, data: &[u8]) {
    let (request, answer) = halves(data);
    let Ok(request) = serde_json::from_slice::<Value>(request) else {
        return;
    };
    let Ok(set) = QuestionSet::validate(dialect, &request) else {
        return;
    };
    let normal = set.to_json();
    let restored = QuestionSet::validate(dialect, &normal).unwrap_or_else(|errors| {
        panic!("{dialect}: the normalised request is refused ({errors}): {normal}")
    });
    assert_eq!(
        restored.to_json(),
        normal,
        "{dialect}: normalising twice changed the request"
    );
    for outcome in [Outcome::Declined, Outcome::TimedOut, Outcome::Withdrawn] {
        let settled = set.settle_without_answer(outcome);
        assert_eq!(settled.outcome, outcome, "{dialect}");
    }
    let _ = set.settle_dismissed();
    let Some(answer) = answer.and_then(|text| serde_json::from_slice::<Value>(text).ok()) else {
        return;
    };
    let settled = set.settle_answer(&answer);
    let settled_again = restored.settle_answer(&answer);
    match (&settled, &settled_again) {
        (Ok(one), Ok(other)) => {
            assert_eq!(
                one, other,
                "{dialect}: the restored request settles otherwise"
            );
            serde_json::to_string(one).expect("a settlement encodes");
        }
        (Err(one), Err(other)) => assert_eq!(
            one.to_string(),
            other.to_string(),
            "{dialect}: the restored request refuses otherwise"
        ),
        _ => panic!("{dialect}: the restored request judges {answer} otherwise"),
    }
}

/// Holds a frame's fast reading to serde's tagged one: the same frame, or a refusal in the
/// same words.
pub fn readings_agree<T: PartialEq + std::fmt::Debug>(
    fast: &Result<T, serde_json::Error>,
    tagged: &Result<T, serde_json::Error>,
) {
    match (fast, tagged) {
        (Ok(one), Ok(other)) => assert_eq!(one, other, "the two readings differ"),
        (Err(one), Err(other)) => assert_eq!(
            one.to_string(),
            other.to_string(),
            "a bad frame is refused in other words"
        ),
        _ => panic!("one reading takes the frame, the other not: {fast:?} / {tagged:?}"),
    }
}

/// The dialect called `name` (the targets name only registered ones).
pub fn dialect(name: &str) -> Dialect {
    Dialect::parse(name).expect("a registered dialect")
}
