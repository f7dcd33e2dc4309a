//! The harness's bounds, in code points after stripping (items for lists).

/// At least this many questions per call.
pub const MIN_QUESTIONS: usize = 1;
/// At most this many questions per call (`MAX_QUESTIONS` in the harness).
pub const MAX_QUESTIONS: usize = 10;
/// At least this many options per question.
pub const MIN_OPTIONS: usize = 2;
/// At most this many options per question.
pub const MAX_OPTIONS: usize = 6;
/// Longest header, in code points.
pub const MAX_HEADER_CHARS: usize = 25;
/// Longest question text, in code points.
pub const MAX_QUESTION_CHARS: usize = 500;
/// Longest option label, in code points.
pub const MAX_LABEL_CHARS: usize = 50;
/// Longest option description, in code points.
pub const MAX_DESCRIPTION_CHARS: usize = 200;
