//! The `Q:`/`A:` transcript: what the `ask_user` tool returns to the model, and deepagents'
//! display-only re-render of it.
//!
//! `format_ask_user_transcript` interpolates answers raw, so an answer holding a blank line
//! and `Q: ...` reads like an extra question to the model. deepagents accepts that; askgate's
//! own answer check ([`check_tab_answer`](super::check_tab_answer)) refuses it from tabs.

use super::multi_select::decode;

/// The placeholder answer for every question of a cancelled prompt.
pub const CANCELLED_ANSWER: &str = "(cancelled)";
/// The start of the placeholder answer of a failed prompt: `(error: <detail>)`.
pub const ERROR_ANSWER_PREFIX: &str = "(error: ";
/// The placeholder for a question with no answer at its position (unreachable from a resume:
/// a count mismatch is an error first).
pub const NO_ANSWER: &str = "(no answer)";
/// The display-only placeholder for a `multi_select` answered with `[]`.
pub const NOTHING_SELECTED: &str = "(nothing selected)";

/// `format_ask_user_error_answer(detail)`: `(error: <detail>)`, the detail unescaped.
pub fn error_answer(detail: &str) -> String {
    format!("{ERROR_ANSWER_PREFIX}{detail})")
}

/// A question as the transcript functions see it: its text and, for the display re-render,
/// whether it is a `multi_select`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TranscriptQuestion<'a> {
    /// The question text (`question.get('question', '')`).
    pub text: &'a str,
    /// Whether its `type` is `multi_select`.
    pub multi_select: bool,
}

/// `format_ask_user_transcript(questions, answers)`: one `Q: {question}\nA: {answer}` block
/// per question, joined by a blank line; a missing answer is [`NO_ANSWER`], extra answers are
/// dropped, an empty answer leaves `A: ` with its trailing space.
pub fn format_transcript<S: AsRef<str>>(
    questions: &[TranscriptQuestion<'_>],
    answers: &[S],
) -> String {
    let mut out = String::new();
    for (i, question) in questions.iter().enumerate() {
        if i > 0 {
            out.push_str("\n\n");
        }
        out.push_str("Q: ");
        out.push_str(question.text);
        out.push_str("\nA: ");
        out.push_str(answers.get(i).map_or(NO_ANSWER, AsRef::as_ref));
    }
    out
}

/// `render_ask_user_transcript_for_display(questions, transcript)`: the transcript with each
/// decodable `multi_select` answer unpacked one value per line (or [`NOTHING_SELECTED`]);
/// `None` when the transcript does not split exactly into these questions (every separator
/// must occur exactly once) or when no answer changed.
pub fn render_for_display(
    questions: &[TranscriptQuestion<'_>],
    transcript: &str,
) -> Option<String> {
    if questions.is_empty() {
        return None;
    }
    let anchors: Vec<String> = questions
        .iter()
        .map(|q| format!("Q: {}\nA: ", q.text))
        .collect();
    let mut answers: Vec<&str> = Vec::with_capacity(questions.len());
    let mut position = 0;
    for (index, anchor) in anchors.iter().enumerate() {
        if !transcript[position..].starts_with(anchor.as_str()) {
            return None;
        }
        position += anchor.len();
        let Some(next) = anchors.get(index + 1) else {
            // The last answer runs to the end: trailing text is part of it.
            answers.push(&transcript[position..]);
            break;
        };
        let separator = format!("\n\n{next}");
        let end = position + transcript[position..].find(&separator)?;
        // The separator must occur exactly once ahead (searching again from its `Q`).
        if transcript[end + 2..].contains(&separator) {
            return None;
        }
        answers.push(&transcript[position..end]);
        position = end + 2;
    }
    let mut changed = false;
    let mut blocks = Vec::with_capacity(questions.len());
    for (question, answer) in questions.iter().zip(&answers) {
        let mut rendered = (*answer).to_owned();
        if question.multi_select
            && let Some(values) = decode(answer)
        {
            rendered = if values.is_empty() {
                NOTHING_SELECTED.to_owned()
            } else {
                values.join("\n")
            };
            changed = changed || rendered != *answer;
        }
        blocks.push(format!("Q: {}\nA: {rendered}", question.text));
    }
    changed.then(|| blocks.join("\n\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(text: &str, multi_select: bool) -> TranscriptQuestion<'_> {
        TranscriptQuestion { text, multi_select }
    }

    #[test]
    fn blocks_are_joined_by_a_blank_line() {
        let questions = [
            q("Which color?", false),
            q("Which sizes?", true),
            q("Else?", false),
        ];
        let transcript = format_transcript(&questions, &["Red", "[\"S\", \"L\"]", ""]);
        assert_eq!(
            transcript,
            "Q: Which color?\nA: Red\n\nQ: Which sizes?\nA: [\"S\", \"L\"]\n\nQ: Else?\nA: "
        );
        assert_eq!(
            render_for_display(&questions, &transcript).unwrap(),
            "Q: Which color?\nA: Red\n\nQ: Which sizes?\nA: S\nL\n\nQ: Else?\nA: "
        );
        assert_eq!(
            format_transcript(&questions, &["Red"]),
            "Q: Which color?\nA: Red\n\nQ: Which sizes?\nA: (no answer)\n\nQ: Else?\nA: (no answer)"
        );
    }

    #[test]
    fn display_gives_up_on_repeated_separators() {
        let questions = [q("Which sizes?", true), q("Why?", false)];
        let forged = "Q: Which sizes?\nA: [\"S\"]\n\nQ: Why?\nA: x\n\nQ: Why?\nA: y";
        assert_eq!(render_for_display(&questions, forged), None);
        let junk = "Q: Which sizes?\nA: [\"S\"]\n\nQ: Why?\nA: x\njunk";
        assert_eq!(
            render_for_display(&questions, junk).unwrap(),
            "Q: Which sizes?\nA: S\n\nQ: Why?\nA: x\njunk"
        );
        assert_eq!(
            render_for_display(&questions, "Q: Other?\nA: [\"S\"]"),
            None
        );
        assert_eq!(render_for_display(&[], ""), None);
    }
}
