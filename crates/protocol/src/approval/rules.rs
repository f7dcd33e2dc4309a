//! Remembered approvals: a person approving a call may ask that calls like it are approved
//! without asking, for the rest of the session or always for the agent key
//! (`{"type": "approve", "remember": "session" | "key", "args": "same" | "any"}`). Each such
//! approval makes a [`Rule`]; a later call a rule matches is approved by it.
//!
//! Pure: what a decision asks to remember, what a rule is, and which calls rules cover. Where
//! rules are kept, listed and revoked is the gateway's.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::calls::Call;
use crate::error::{ErrorCode, FieldError, json_kind};
use crate::field_paths::key_path;

/// How long a rule lives when the operator does not say: 30 days.
pub const DEFAULT_RULE_TTL_MS: u64 = 30 * 86_400 * 1000;

/// Where a rule holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleScope {
    /// The rest of the session it was made in.
    Session,
    /// Every session of the agent key that asked.
    Key,
}

/// Which later calls a rule takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleArgs {
    /// Only calls whose arguments equal the approved call's.
    Same,
    /// Every call to the tool.
    Any,
}

/// What an approve decision asks to remember.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Remember {
    /// Where.
    pub scope: RuleScope,
    /// For which calls.
    pub args: RuleArgs,
}

impl Remember {
    /// Reads `remember` and `args` from an approve decision's `fields` (at `path`, e.g.
    /// `response.decisions[0]`); `None` when it asks nothing remembered.
    ///
    /// # Errors
    /// A `remember` other than `session` or `key`, or an `args` other than `same` or `any`
    /// (or `args` without `remember`), at its path.
    pub fn read(fields: &Map<String, Value>, path: &str) -> Result<Option<Remember>, FieldError> {
        let scope = match fields.get("remember") {
            None | Some(Value::Null) => None,
            Some(Value::String(scope)) if scope == "session" => Some(RuleScope::Session),
            Some(Value::String(scope)) if scope == "key" => Some(RuleScope::Key),
            Some(other) => {
                return Err(FieldError::new(
                    key_path(path, "remember"),
                    ErrorCode::InvalidValue,
                    format!("must be \"session\" or \"key\", got {}", describe(other)),
                ));
            }
        };
        let args = match fields.get("args") {
            None | Some(Value::Null) => RuleArgs::Same,
            Some(Value::String(args)) if args == "same" => RuleArgs::Same,
            Some(Value::String(args)) if args == "any" => RuleArgs::Any,
            Some(other) => {
                return Err(FieldError::new(
                    key_path(path, "args"),
                    ErrorCode::InvalidValue,
                    format!("must be \"same\" or \"any\", got {}", describe(other)),
                ));
            }
        };
        match scope {
            Some(scope) => Ok(Some(Remember { scope, args })),
            None if fields.get("args").is_some_and(|args| !args.is_null()) => Err(FieldError::new(
                key_path(path, "args"),
                ErrorCode::InvalidValue,
                "takes effect only with `remember`",
            )),
            None => Ok(None),
        }
    }
}

fn describe(value: &Value) -> String {
    match value {
        Value::String(text) => format!("{text:?}"),
        other => json_kind(other).to_owned(),
    }
}

/// A remembered approval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rule {
    /// Its id, for listing and revoking.
    pub id: String,
    /// The session it was made in (its trail records it, and its revocation).
    pub session: String,
    /// The agent key whose request it was made on (the key's id, never the key).
    pub key: String,
    /// The tool it approves calls to.
    pub tool: String,
    /// Where it holds.
    pub scope: RuleScope,
    /// The arguments a call must have, or `None` for any.
    pub args: Option<Map<String, Value>>,
    /// Who approved (the rule acts as them).
    pub user: String,
    /// When it was made (Unix ms).
    pub created_ms: u64,
    /// When it stops matching (Unix ms).
    pub expires_ms: u64,
}

impl Rule {
    /// The rule `remember` makes from `user`'s approval of `call` at `now_ms`, living `ttl_ms`,
    /// on a request of `session` asked with the agent key `key`.
    pub fn of(id: String, call: &Call, remember: Remember, made: Made<'_>) -> Rule {
        let Made {
            user,
            session,
            key,
            now_ms,
            ttl_ms,
        } = made;
        Rule {
            id,
            session: session.to_owned(),
            key: key.to_owned(),
            tool: call.name.clone(),
            scope: remember.scope,
            args: (remember.args == RuleArgs::Same).then(|| call.args.clone()),
            user: user.to_owned(),
            created_ms: now_ms,
            expires_ms: now_ms.saturating_add(ttl_ms),
        }
    }

    /// Whether it approves `call` at `now_ms`: the same tool, the same arguments unless it
    /// takes any, not expired, and a call the person may approve at all.
    pub fn matches(&self, call: &Call, now_ms: u64) -> bool {
        now_ms < self.expires_ms
            && call.decisions.contains(&super::DecisionKind::Approve)
            && self.tool == call.name
            && self.args.as_ref().is_none_or(|args| *args == call.args)
    }
}

/// Where and when a rule is made, and by whom.
#[derive(Clone, Copy, Debug)]
pub struct Made<'a> {
    /// The person approving.
    pub user: &'a str,
    /// The session of the request.
    pub session: &'a str,
    /// The id of the agent key that asked it.
    pub key: &'a str,
    /// Now (Unix ms).
    pub now_ms: u64,
    /// How long the rule lives.
    pub ttl_ms: u64,
}

/// A call of a request that a rule approved when it was asked, as tabs are shown it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuledCall {
    /// The rule's id.
    pub rule: String,
    /// Who made it.
    pub user: String,
    /// Where it holds.
    pub scope: RuleScope,
}

impl RuledCall {
    /// How `rule` is shown on the call it approved.
    pub fn of(rule: &Rule) -> RuledCall {
        RuledCall {
            rule: rule.id.clone(),
            user: rule.user.clone(),
            scope: rule.scope,
        }
    }
}

/// For each of `calls`, the first of `rules` that approves it at `now_ms`, if any.
pub fn covered<'r>(rules: &'r [Rule], calls: &[Call], now_ms: u64) -> Vec<Option<&'r Rule>> {
    calls
        .iter()
        .map(|call| rules.iter().find(|rule| rule.matches(call, now_ms)))
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::approval::validate_calls;

    fn call(name: &str, args: &Value) -> Call {
        validate_calls(&json!([{"name": name, "args": args}]))
            .unwrap()
            .remove(0)
    }

    fn read(value: &Value) -> Result<Option<Remember>, String> {
        Remember::read(value.as_object().unwrap(), "response.decisions[0]")
            .map_err(|e| format!("{}: {}", e.path, e.message))
    }

    #[test]
    fn an_approval_says_what_to_remember_at_its_paths() {
        assert_eq!(read(&json!({"type": "approve"})), Ok(None));
        assert_eq!(
            read(&json!({"type": "approve", "remember": "session"})),
            Ok(Some(Remember {
                scope: RuleScope::Session,
                args: RuleArgs::Same
            }))
        );
        assert_eq!(
            read(&json!({"type": "approve", "remember": "key", "args": "any"})),
            Ok(Some(Remember {
                scope: RuleScope::Key,
                args: RuleArgs::Any
            }))
        );
        assert_eq!(
            read(&json!({"remember": "forever"})),
            Err(
                "response.decisions[0].remember: must be \"session\" or \"key\", got \"forever\""
                    .into()
            )
        );
        assert_eq!(
            read(&json!({"remember": "session", "args": 3})),
            Err("response.decisions[0].args: must be \"same\" or \"any\", got a number".into())
        );
        assert_eq!(
            read(&json!({"args": "any"})),
            Err("response.decisions[0].args: takes effect only with `remember`".into())
        );
        assert_eq!(read(&json!({"args": null, "remember": null})), Ok(None));
    }

    #[test]
    fn a_rule_matches_its_tool_its_arguments_and_only_until_it_expires() {
        let rm = call("rm", &json!({"path": "/tmp/x"}));
        let same = Remember {
            scope: RuleScope::Session,
            args: RuleArgs::Same,
        };
        let made = Made {
            user: "alice",
            session: "s",
            key: "local",
            now_ms: 1_000,
            ttl_ms: 500,
        };
        let rule = Rule::of("1".into(), &rm, same, made);
        assert!(rule.matches(&rm, 1_000));
        assert!(!rule.matches(&call("rm", &json!({"path": "/etc"})), 1_000));
        assert!(!rule.matches(&call("ls", &json!({"path": "/tmp/x"})), 1_000));
        assert!(!rule.matches(&rm, 1_500), "expired");
        let rejects_only = validate_calls(&json!([
            {"name": "rm", "args": {"path": "/tmp/x"}, "decisions": ["reject", "respond"]}
        ]))
        .unwrap()
        .remove(0);
        assert!(
            !rule.matches(&rejects_only, 1_000),
            "a call that cannot be approved"
        );
        let any = Rule::of(
            "2".into(),
            &rm,
            Remember {
                args: RuleArgs::Any,
                ..same
            },
            made,
        );
        assert!(any.matches(&call("rm", &json!({"path": "/etc"})), 1_000));
        let rules = [rule, any];
        let calls = [rm.clone(), call("ls", &json!({}))];
        let found = covered(&rules, &calls, 1_000);
        assert_eq!(found[0].map(|r| r.id.as_str()), Some("1"));
        assert!(found[1].is_none());
        let back: Rule = serde_json::from_value(serde_json::to_value(&rules[0]).unwrap()).unwrap();
        assert_eq!(back, rules[0]);
    }
}
