//! What one click in a mail may answer, and the answer it makes.
//!
//! A link can carry a whole answer only when the answer is a single pick: one option of a
//! request that is one single-choice question (harness) with few enough options to list as
//! links, or approving or rejecting a request that is one tool call (approval). Anything
//! else (several questions, several picks, free text, an edit, a form) needs the page, and
//! its mail carries one link to it instead.
//!
//! What a request is, is read from its normalised payload (a notification's `questions`, a
//! tab's view), so that the mail and the link's page agree with what tabs are shown.

use askgate_protocol::Dialect;
use askgate_protocol::approval::DecisionKind;
use serde_json::{Value, json};

/// Most options a single question may have for each to be its own link; a longer list reads
/// better on the page, where they can be compared.
pub const MAX_LINKED_OPTIONS: usize = 6;

/// One answer a link gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    /// The option at this index of the only question.
    Option(u8),
    /// Run the only call as it is.
    Approve,
    /// Do not run the only call.
    Reject,
}

impl Choice {
    /// How a link's key names it: `o0`..`o5`, `approve`, `reject`.
    pub fn as_key(self) -> String {
        match self {
            Choice::Option(index) => format!("o{index}"),
            Choice::Approve => "approve".to_owned(),
            Choice::Reject => "reject".to_owned(),
        }
    }

    /// The choice a key names, if any.
    pub fn from_key(text: &str) -> Option<Choice> {
        match text {
            "approve" => Some(Choice::Approve),
            "reject" => Some(Choice::Reject),
            _ => {
                let digits = text.strip_prefix('o')?;
                // One digit only: `o01` would be a second spelling of the same choice.
                let index = match digits.as_bytes() {
                    [digit @ b'0'..=b'9'] => digit - b'0',
                    _ => return None,
                };
                (usize::from(index) < MAX_LINKED_OPTIONS).then_some(Choice::Option(index))
            }
        }
    }
}

/// A choice a request offers, in the words it is shown with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Offer {
    /// The choice.
    pub choice: Choice,
    /// Its label: the option's, or "Approve" / "Reject".
    pub label: String,
    /// What choosing it means, when the agent said.
    pub description: Option<String>,
}

/// The lone single-choice harness question, if that is all `questions` is.
fn lone_question(dialect: Dialect, questions: &Value) -> Option<&Value> {
    if dialect != Dialect::HARNESS {
        return None;
    }
    let [question] = questions.as_array()?.as_slice() else {
        return None;
    };
    let single = question.get("multi_select").and_then(Value::as_bool) == Some(false);
    let options = question.get("options")?.as_array()?;
    (single && !options.is_empty() && options.len() <= MAX_LINKED_OPTIONS).then_some(question)
}

/// The lone call, if that is all an approval's `questions` is.
fn lone_call(dialect: Dialect, questions: &Value) -> Option<&Value> {
    if dialect.as_str() != "approval" {
        return None;
    }
    match questions.as_array()?.as_slice() {
        [call] => Some(call),
        _ => None,
    }
}

/// Whether `call` allows `kind`.
fn allows(call: &Value, kind: DecisionKind) -> bool {
    call.get("decisions")
        .and_then(Value::as_array)
        .is_some_and(|kinds| kinds.iter().any(|k| k.as_str() == Some(kind.as_str())))
}

/// The choices a mail about a `dialect` request of `questions` offers as links, in the order
/// shown: each option of a lone single-choice question, or approve and reject (those the
/// call allows) of a lone call; none for anything else.
pub fn offers(dialect: Dialect, questions: &Value) -> Vec<Offer> {
    if let Some(question) = lone_question(dialect, questions) {
        let options = question["options"]
            .as_array()
            .map_or(&[][..], Vec::as_slice);
        return options
            .iter()
            .enumerate()
            .filter_map(|(index, option)| {
                Some(Offer {
                    choice: Choice::Option(u8::try_from(index).ok()?),
                    label: option.get("label")?.as_str()?.to_owned(),
                    description: option
                        .get("description")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                })
            })
            .collect();
    }
    if let Some(call) = lone_call(dialect, questions) {
        return [
            (Choice::Approve, DecisionKind::Approve, "Approve"),
            (Choice::Reject, DecisionKind::Reject, "Reject"),
        ]
        .into_iter()
        .filter(|(_, kind, _)| allows(call, *kind))
        .map(|(choice, _, label)| Offer {
            choice,
            label: label.to_owned(),
            description: None,
        })
        .collect();
    }
    Vec::new()
}

/// The offer `choice` names in a `dialect` request of `questions`, if it offers it.
pub fn offered(dialect: Dialect, questions: &Value, choice: Choice) -> Option<Offer> {
    offers(dialect, questions)
        .into_iter()
        .find(|offer| offer.choice == choice)
}

/// The answer `choice` gives, as a tab would send it; `None` if the request does not offer it.
pub fn response(dialect: Dialect, questions: &Value, choice: Choice) -> Option<Value> {
    let offer = offered(dialect, questions, choice)?;
    Some(match choice {
        Choice::Option(_) => {
            let header = lone_question(dialect, questions)?.get("header")?.as_str()?;
            json!({"answers": [{"header": header, "selected": [offer.label]}]})
        }
        Choice::Approve => json!({"decisions": [{"type": "approve"}]}),
        Choice::Reject => json!({"decisions": [{"type": "reject"}]}),
    })
}

/// What a request asks, one line of text per question (or call, or form), as plain text for
/// a mail or a link's page: each question's text; "Run NAME?" for each call of an approval;
/// a form's message.
pub fn asked(questions: &Value) -> Vec<String> {
    match questions {
        Value::Array(items) => items
            .iter()
            .filter_map(|item| {
                if let Some(text) = item.get("question").and_then(Value::as_str) {
                    return Some(text.to_owned());
                }
                let name = item.get("name").and_then(Value::as_str)?;
                Some(format!("Run {name}?"))
            })
            .collect(),
        Value::Object(fields) => fields
            .get("message")
            .and_then(Value::as_str)
            .map(|message| vec![message.to_owned()])
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// For an approval of one call: its description and arguments (JSON, cut at `max_chars`),
/// so the person knows what they approve.
pub fn call_details(dialect: Dialect, questions: &Value, max_chars: usize) -> Option<String> {
    if dialect.as_str() != "approval" {
        return None;
    }
    let [call] = questions.as_array()?.as_slice() else {
        return None;
    };
    let mut out = String::new();
    if let Some(description) = call.get("description").and_then(Value::as_str) {
        out.push_str(description);
        out.push_str("\n\n");
    }
    let args = serde_json::to_string_pretty(call.get("args")?).ok()?;
    let mut shown: String = args.chars().take(max_chars).collect();
    if args.chars().count() > max_chars {
        shown.push_str("\n… (the rest is on the page)");
    }
    out.push_str("Arguments:\n");
    out.push_str(&shown);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn question(options: usize, multi_select: bool) -> Value {
        let options: Vec<Value> = (0..options)
            .map(|i| json!({"label": format!("L{i}"), "description": null}))
            .collect();
        json!([{"header": "Pick", "question": "Which?", "options": options,
                "multi_select": multi_select}])
    }

    fn approval() -> Dialect {
        Dialect::parse("approval").unwrap()
    }

    #[test]
    fn a_lone_single_choice_question_of_up_to_six_options_is_answered_by_links() {
        let offered = offers(Dialect::HARNESS, &question(6, false));
        assert_eq!(offered.len(), 6);
        assert_eq!(offered[5].choice, Choice::Option(5));
        assert_eq!(offered[5].label, "L5");
        assert_eq!(
            response(Dialect::HARNESS, &question(3, false), Choice::Option(2)),
            Some(json!({"answers": [{"header": "Pick", "selected": ["L2"]}]}))
        );
        assert_eq!(
            response(Dialect::HARNESS, &question(3, false), Choice::Option(3)),
            None,
            "no fourth option"
        );
        // Too many options, several picks, several questions, another dialect: the page.
        assert!(offers(Dialect::HARNESS, &question(7, false)).is_empty());
        assert!(offers(Dialect::HARNESS, &question(2, true)).is_empty());
        let mut two = question(2, false);
        let first = two[0].clone();
        two.as_array_mut().unwrap().push(first);
        assert!(offers(Dialect::HARNESS, &two).is_empty());
        let claude = Dialect::parse("claude").unwrap();
        assert!(offers(claude, &question(2, false)).is_empty());
        assert!(offers(approval(), &question(2, false)).is_empty());
    }

    #[test]
    fn a_lone_call_is_approved_or_rejected_by_links_as_it_allows() {
        let call = json!([{"name": "deploy", "args": {}, "decisions": ["approve", "edit", "reject"],
                           "edit_check": "object"}]);
        let labels: Vec<String> = offers(approval(), &call)
            .into_iter()
            .map(|o| o.label)
            .collect();
        assert_eq!(labels, ["Approve", "Reject"]);
        assert_eq!(
            response(approval(), &call, Choice::Reject),
            Some(json!({"decisions": [{"type": "reject"}]}))
        );
        let approve_only = json!([{"name": "deploy", "args": {}, "decisions": ["approve"]}]);
        assert_eq!(response(approval(), &approve_only, Choice::Reject), None);
        let two = json!([{"name": "a", "args": {}, "decisions": ["approve"]},
                         {"name": "b", "args": {}, "decisions": ["approve"]}]);
        assert!(offers(approval(), &two).is_empty());
        assert_eq!(offered(Dialect::HARNESS, &call, Choice::Approve), None);
    }

    #[test]
    fn a_choice_has_one_spelling() {
        for choice in [
            Choice::Option(0),
            Choice::Option(5),
            Choice::Approve,
            Choice::Reject,
        ] {
            assert_eq!(Choice::from_key(&choice.as_key()), Some(choice));
        }
        for bad in ["o6", "o01", "o", "O1", "o-1", "approved", ""] {
            assert_eq!(Choice::from_key(bad), None, "{bad}");
        }
    }

    #[test]
    fn what_is_asked_reads_from_any_dialects_payload() {
        assert_eq!(asked(&question(2, false)), ["Which?"]);
        assert_eq!(
            asked(&json!([{"name": "deploy", "args": {}}])),
            ["Run deploy?"]
        );
        assert_eq!(
            asked(&json!({"message": "Your name?", "schema": {}})),
            ["Your name?"]
        );
        assert!(asked(&json!(null)).is_empty());
    }
}
