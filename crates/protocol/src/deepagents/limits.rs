//! How much a deepagents question set may hold: nothing bounds it in deepagents itself, so
//! askgate names its own bounds for what it forwards to browsers, and says when they apply.
//!
//! deepagents-code 0.2.2 puts no limit on the number of questions, the number of choices, or
//! the length of any text (a 10,000-character question passes; so do 500 choices). A gateway
//! that fans every question out to every open tab cannot take that at face value, so
//! [`Bounds::Gateway`] adds the limits below. [`Bounds::Framework`] applies only deepagents'
//! own rules: `askgate validate` uses it, because its job is to give the real package's
//! verdict.

/// Which rules judge a question set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Bounds {
    /// deepagents' own rules and nothing else: the verdict the real package gives a model's
    /// call. Used by `askgate validate` and by anything that mirrors the framework.
    Framework,
    /// deepagents' rules plus askgate's bounds ([`MAX_QUESTIONS`], [`MAX_CHOICES`],
    /// [`MAX_TEXT_CHARS`]). Used by the gateway for every `ask` it accepts.
    #[default]
    Gateway,
}

impl Bounds {
    /// Whether askgate's own bounds apply.
    pub fn limited(self) -> bool {
        self == Bounds::Gateway
    }
}

/// Most questions in one `ask` the gateway accepts (deepagents: unbounded). Beyond it the
/// `ask` is rejected at `questions` with `too_many_items`.
pub const MAX_QUESTIONS: usize = 50;

/// Most choices one question may offer through the gateway (deepagents: unbounded). Beyond
/// it the `ask` is rejected at `questions[i].choices` with `too_many_items`.
pub const MAX_CHOICES: usize = 50;

/// Longest question text or choice value the gateway forwards, in code points (deepagents:
/// unbounded). Beyond it the `ask` is rejected at that field with `too_long`.
pub const MAX_TEXT_CHARS: usize = 10_000;

/// Longest text a person may type for one question, in code points: a text answer, an "Other"
/// text, each custom value of a `multi_select` (offered choices are bounded by the ask, however
/// many are ticked). Beyond it the answer is rejected with `invalid_answer` and the request
/// stays open.
pub const MAX_ANSWER_CHARS: usize = 10_000;

/// Most custom "Other" values one `multi_select` answer may carry: the TUI's
/// `MAX_MULTI_SELECT_OTHER_ENTRIES`, enforced on tabs too.
pub const MAX_OTHER_ENTRIES: usize = 10;

/// deepagents' `MAX_ASK_USER_AUTHORIZATION_ANSWER_CHARS`: an answer longer than this (code
/// points of the wire string) withholds the authorization receipt.
pub const RECEIPT_MAX_ANSWER_CHARS: usize = 4000;

/// The label of the free-text row the TUI appends to every choice question.
pub const OTHER_CHOICE_LABEL: &str = "Other (type your answer)";
