//! Remembered approvals: a person approving a call may have calls like it approved without
//! asking, for the rest of the session or always for the agent key that asked
//! ([`askgate_protocol::approval::rules`] says what a rule is and which calls it takes).
//!
//! Rules are a kept table ([`KeptTable::Rules`]): under `session:{session}` or `key:{key id}`,
//! a field per rule. A local store's are held here too ([`RuleBook`], read back at a
//! restart); a shared store's are read from it at each approval ask, so that a rule made or
//! revoked on one node holds on every node at once.
//!
//! A rule is made after the answer that asked for it has won (a separate commit: an answer
//! that lost the race makes none, and a crash between the two leaves the answer without its
//! rule). Making one forgets the expired rules under its key, and the oldest beyond
//! [`MAX_RULES_PER_SCOPE`].

use std::collections::HashMap;
use std::sync::Mutex;

use askgate_protocol::approval::Call;
use askgate_protocol::approval::decisions::remembered;
use askgate_protocol::approval::rules::{Made, Rule, RuleArgs, RuleScope, RuledCall};
use askgate_protocol::wire::{ToTab, Via};
use askgate_protocol::{ErrorCode, FieldError, ReplyCode, RequestId, SessionId, ValidationErrors};
use serde_json::{Value, json};

use super::Hub;
use super::ending::Refusal;
use super::peers::frame::Frame;
use super::peers::links::TabHandle;
use super::request::Entry;
use crate::audit::{Event, Note, Who};
use crate::clock::now_ms;
use crate::config::{MAX_RULE_ARGS_BYTES, MAX_RULES_PER_SCOPE};
use crate::keys::LOCAL_KEY_ID;
use crate::people::Person;
use crate::store::{KeptTable, StoreError, StoreOp};

/// Where a rule of `scope` is kept: under its session, or its agent key's id.
pub(super) fn rules_key(scope: RuleScope, session: &str, key: &str) -> String {
    match scope {
        RuleScope::Session => format!("session:{session}"),
        RuleScope::Key => format!("key:{key}"),
    }
}

/// The rule of each field of a kept key; a field that does not read (written by a later
/// askgate, or damaged) is skipped.
fn read_rules(fields: Vec<(String, String)>) -> Vec<Rule> {
    fields
        .into_iter()
        .filter_map(|(id, value)| {
            serde_json::from_str::<Rule>(&value)
                .inspect_err(|error| tracing::warn!(rule = %id, %error, "a kept rule does not read; skipped"))
                .ok()
        })
        .collect()
}

/// Orders `rules` oldest first (by id among those made in the same millisecond).
fn oldest_first(rules: &mut [Rule]) {
    rules.sort_by(|a, b| (a.created_ms, &a.id).cmp(&(b.created_ms, &b.id)));
}

/// A local store's rules, by kept key (a shared store's are read from it), and the ids of
/// the agent keys there are.
#[derive(Debug, Default)]
pub(super) struct RuleBook {
    by_key: Mutex<HashMap<String, Vec<Rule>>>,
    key_ids: std::sync::OnceLock<Vec<String>>,
}

impl RuleBook {
    fn with<T>(&self, change: impl FnOnce(&mut HashMap<String, Vec<Rule>>) -> T) -> T {
        let mut book = self
            .by_key
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        change(&mut book)
    }

    /// Takes the rules of kept fields read back at a restart; the store changes that forget
    /// those expired meanwhile.
    pub(super) fn restore(&self, key: String, fields: Vec<(String, String)>) -> Vec<StoreOp> {
        let now = now_ms();
        let (live, expired): (Vec<Rule>, Vec<Rule>) = read_rules(fields)
            .into_iter()
            .partition(|rule| rule.expires_ms > now);
        let forget = expired
            .into_iter()
            .map(|rule| StoreOp::Keep {
                table: KeptTable::Rules,
                key: key.clone(),
                field: rule.id,
                value: None,
            })
            .collect();
        self.with(|book| book.entry(key).or_default().extend(live));
        forget
    }
}

/// What a request's approval asked to have remembered, to make once its ending has won.
#[derive(Debug)]
pub(super) struct RulesToMake {
    pub(super) session: SessionId,
    pub(super) id: RequestId,
    pub(super) user: String,
    pub(super) rules: Vec<Rule>,
}

/// The rules an ending makes: the store changes, riding in its commit, and the change to a
/// local store's rules held here once kept (key, the rules it forgets, the rule).
#[derive(Debug, Default)]
pub(super) struct RuleChanges {
    pub(super) ops: Vec<StoreOp>,
    pub(super) book: Vec<(String, Vec<String>, Rule)>,
}

/// A rule revoked: what it was, and who revoked it.
#[derive(Clone, Copy, Debug)]
pub enum Revoker<'a> {
    /// An agent key whose scope covers the rule.
    Agent,
    /// An operator key.
    Operator,
    /// A person, on the page.
    Person(&'a str, Via),
}

/// A new rule's id: 10 hex digits, random (a scope holds at most [`MAX_RULES_PER_SCOPE`]).
pub(super) fn new_rule_id() -> String {
    let bytes: [u8; 5] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Hub {
    /// Names the agent keys there are (their ids), whose rules a session's page lists when
    /// made in it; unset, agents have no key ([`LOCAL_KEY_ID`]).
    pub fn set_agent_key_ids(&self, key_ids: Vec<String>) {
        let _ = self.rule_book.key_ids.set(key_ids);
    }

    fn agent_key_ids(&self) -> Vec<String> {
        self.rule_book
            .key_ids
            .get()
            .cloned()
            .unwrap_or_else(|| vec![LOCAL_KEY_ID.to_owned()])
    }

    /// The rules a page of `session` lists: the session's, and the agent keys' made in it.
    ///
    /// # Errors
    /// The store could not be read.
    pub(super) async fn rules_shown(&self, session: &SessionId) -> Result<Vec<Rule>, StoreError> {
        let mut rules = self.session_rules(session).await?;
        let keys = self.key_rules(&self.agent_key_ids()).await?;
        rules.extend(
            keys.into_iter()
                .filter(|rule| rule.session == session.as_str()),
        );
        oldest_first(&mut rules);
        Ok(rules)
    }

    /// Sends every tab of `session` held here its rules as they now are.
    pub(super) async fn tell_rules(&self, session: &SessionId) {
        let rules = match self.rules_shown(session).await {
            Ok(rules) => rules,
            Err(error) => {
                tracing::warn!(%session, %error, "the page's rules could not be read to tell it");
                return;
            }
        };
        let frame = Frame::encode(&ToTab::Rules { rules });
        let mut sessions = self.lock();
        if let Some(state) = sessions.get_mut(session) {
            state.broadcast(&frame, &self.metrics);
        }
    }

    /// Every rule kept under `key` (a [`rules_key`]), expired ones too: a shared store's read
    /// from it, a local one's from the book.
    ///
    /// # Errors
    /// A shared store could not be read.
    async fn kept_rules(&self, key: &str) -> Result<Vec<Rule>, StoreError> {
        Ok(match self.store.shared() {
            Some(shared) => read_rules(shared.kept(KeptTable::Rules, key).await?),
            None => self
                .rule_book
                .with(|book| book.get(key).cloned().unwrap_or_default()),
        })
    }

    /// The unexpired rules under `key` (a [`rules_key`]), oldest first.
    ///
    /// # Errors
    /// A shared store could not be read.
    pub(super) async fn rules_under(&self, key: &str) -> Result<Vec<Rule>, StoreError> {
        let now = now_ms();
        let mut rules = self.kept_rules(key).await?;
        rules.retain(|rule| rule.expires_ms > now);
        oldest_first(&mut rules);
        Ok(rules)
    }

    /// For an approval of `calls` asked in `session` with the key `key_id`: the rule that
    /// approves each call, by the scopes the gateway allows. Rules that cannot be read cover
    /// nothing: the request is asked.
    pub(super) async fn rules_covering(
        &self,
        session: &SessionId,
        key_id: &str,
        calls: &[Call],
        answerers: Option<&[String]>,
    ) -> Vec<Option<Rule>> {
        let mut rules = Vec::new();
        for scope in &self.limits.approval_rules {
            match self
                .rules_under(&rules_key(*scope, session.as_str(), key_id))
                .await
            {
                Ok(found) => rules.extend(found),
                Err(error) => {
                    tracing::warn!(%session, %error, "remembered approvals could not be read; the request is asked");
                    return vec![None; calls.len()];
                }
            }
        }
        // A rule acts as its maker: only where they may answer now (the ask's answerers, the
        // groups as the operator has them today).
        rules.retain(|rule| {
            let maker = Person::named(&rule.user, Via::PersonalLink);
            self.people.may_answer(&maker, answerers).is_ok()
        });
        askgate_protocol::approval::rules::covered(&rules, calls, now_ms())
            .into_iter()
            .map(|rule: Option<&Rule>| rule.cloned())
            .collect()
    }

    /// The store changes that keep the rules an approval asked for, each with a `rule_made`
    /// entry in its session's trail, and with them the forgetting of the expired and of the
    /// oldest beyond the most a scope holds. They ride in the commit of the ending that asked
    /// for them, after it: an ending that does not win makes none (a shared store stops a
    /// commit at an ending that lost), and the rules are kept before the agent hears its
    /// outcome, so that its next identical ask finds them.
    pub(super) async fn rule_changes(&self, made: RulesToMake) -> RuleChanges {
        let RulesToMake {
            session,
            id,
            user,
            rules,
        } = made;
        let mut changes = RuleChanges::default();
        for rule in rules {
            let key = rules_key(rule.scope, &rule.session, &rule.key);
            let existing = match self.kept_rules(&key).await {
                Ok(existing) => existing,
                Err(error) => {
                    tracing::error!(%session, request = %id, %error, "a remembered approval could not be made");
                    continue;
                }
            };
            let now = now_ms();
            let (mut live, expired): (Vec<Rule>, Vec<Rule>) =
                existing.into_iter().partition(|rule| rule.expires_ms > now);
            live.sort_by_key(|rule| rule.created_ms);
            let overflow = (live.len() + 1).saturating_sub(MAX_RULES_PER_SCOPE);
            let forgotten: Vec<String> = expired
                .iter()
                .chain(live.iter().take(overflow))
                .map(|rule| rule.id.clone())
                .collect();
            for old in &forgotten {
                changes.ops.push(StoreOp::Keep {
                    table: KeptTable::Rules,
                    key: key.clone(),
                    field: old.clone(),
                    value: None,
                });
            }
            changes.ops.push(StoreOp::Keep {
                table: KeptTable::Rules,
                key: key.clone(),
                field: rule.id.clone(),
                value: Some(serde_json::to_string(&rule).unwrap_or_default()),
            });
            changes.ops.push(StoreOp::Note(Note {
                session: session.clone(),
                id: Some(id.clone()),
                at_ms: rule.created_ms,
                event: Event::RuleMade {
                    who: Who {
                        user: Some(user.clone()),
                        tab: None,
                        via: None,
                    },
                    rule: serde_json::to_value(&rule).unwrap_or_default(),
                },
            }));
            changes.book.push((key, forgotten, rule));
        }
        changes
    }

    /// Once the commit carrying `book` is kept: a local store's rules held here take it (a
    /// shared store's are read from it).
    pub(super) fn rules_kept(&self, book: Vec<(String, Vec<String>, Rule)>) {
        if self.store.shared().is_some() {
            return;
        }
        self.rule_book.with(|held| {
            for (key, forgotten, rule) in book {
                let rules = held.entry(key).or_default();
                rules.retain(|kept| !forgotten.contains(&kept.id));
                rules.push(rule);
            }
        });
    }

    /// The rules of `session` (made `for the rest of this session`), unexpired, oldest first.
    ///
    /// # Errors
    /// The store could not be read.
    pub async fn session_rules(&self, session: &SessionId) -> Result<Vec<Rule>, StoreError> {
        self.rules_under(&rules_key(RuleScope::Session, session.as_str(), ""))
            .await
    }

    /// The rules of each agent key of `key_ids` (made `always, for this agent key`),
    /// unexpired, oldest first.
    ///
    /// # Errors
    /// The store could not be read.
    pub async fn key_rules(&self, key_ids: &[String]) -> Result<Vec<Rule>, StoreError> {
        let mut rules = Vec::new();
        for key_id in key_ids {
            rules.extend(
                self.rules_under(&rules_key(RuleScope::Key, "", key_id))
                    .await?,
            );
        }
        oldest_first(&mut rules);
        Ok(rules)
    }

    /// Revokes rule `rule_id` among `among` (as [`session_rules`](Self::session_rules) or
    /// [`key_rules`](Self::key_rules) list them), with a `rule_revoked` entry in the trail of
    /// the session it was made in: it matches no call from now on, on every node. `None` if
    /// there is no such rule.
    ///
    /// # Errors
    /// The store could not keep the revocation.
    pub async fn revoke_rule(
        &self,
        among: Vec<Rule>,
        rule_id: &str,
        by: Revoker<'_>,
    ) -> Result<Option<Rule>, StoreError> {
        let Some(rule) = among.into_iter().find(|rule| rule.id == rule_id) else {
            return Ok(None);
        };
        let key = rules_key(rule.scope, &rule.session, &rule.key);
        let Ok(session) = SessionId::parse(&rule.session) else {
            return Ok(None);
        };
        let (user, via) = match by {
            Revoker::Agent => (None, Via::Agent),
            // By name when a trusted proxy named the operator (an operator key has none).
            Revoker::Operator => (super::acting::acting_operator(), Via::Operator),
            Revoker::Person(user, via) => (Some(user.to_owned()), via),
        };
        let ops = vec![
            StoreOp::Keep {
                table: KeptTable::Rules,
                key: key.clone(),
                field: rule.id.clone(),
                value: None,
            },
            StoreOp::Note(Note {
                session,
                id: None,
                at_ms: now_ms(),
                event: Event::RuleRevoked {
                    who: Who {
                        user,
                        tab: None,
                        via: Some(via),
                    },
                    rule: rule.id.clone(),
                },
            }),
        ];
        self.store_commit(ops).await?;
        if self.store.shared().is_none() {
            self.rule_book.with(|book| {
                if let Some(rules) = book.get_mut(&key) {
                    rules.retain(|kept| kept.id != rule.id);
                }
            });
        }
        if let Ok(session) = SessionId::parse(&rule.session) {
            self.tell_rules(&session).await;
        }
        Ok(Some(rule))
    }
}

impl TabHandle {
    /// A tab's `rules`: the session's remembered approvals, or why they cannot be read.
    pub async fn rules(&self) -> Frame {
        match self.hub.rules_shown(&self.session).await {
            Ok(rules) => Frame::encode(&ToTab::Rules { rules }),
            Err(error) => tab_error(
                ReplyCode::Unavailable,
                format!("the rules could not be read ({error}); try again"),
            ),
        }
    }

    /// A tab's `revoke_rule`: `None` once revoked (every tab of the session is sent its
    /// rules); else the error frame for this tab. Only a named person who may answer here.
    pub async fn revoke_rule(&self, rule_id: &str) -> Option<Frame> {
        let Some(user) = self.person.name() else {
            return Some(tab_error(
                ReplyCode::Forbidden,
                "only a named person can revoke a remembered approval: open a personal link, or \
                 sign in through the gateway's proxy"
                    .to_owned(),
            ));
        };
        if let Err(why) = self.hub.people.may_answer(&self.person, None) {
            return Some(tab_error(ReplyCode::Forbidden, why.message()));
        }
        let among = match self.hub.rules_shown(&self.session).await {
            Ok(rules) => rules,
            Err(error) => {
                return Some(tab_error(
                    ReplyCode::Unavailable,
                    format!("the rules could not be read ({error}); try again"),
                ));
            }
        };
        let by = Revoker::Person(user, self.person.via);
        match self.hub.revoke_rule(among, rule_id, by).await {
            Ok(Some(_)) => None,
            Ok(None) => Some(tab_error(
                ReplyCode::NotFound,
                format!("no remembered approval {rule_id:?} in this session (expired, or revoked)"),
            )),
            Err(error) => Some(tab_error(
                ReplyCode::StoreFailed,
                format!(
                    "the gateway could not keep the revocation ({error}); the rule stands; try again"
                ),
            )),
        }
    }
}

fn tab_error(code: ReplyCode, message: String) -> Frame {
    Frame::encode(&ToTab::Error {
        code: code.as_str().to_owned(),
        message,
    })
}

/// How a call a rule approved is shown, for each of `covering`.
pub(super) fn ruled_calls(covering: &[Option<Rule>]) -> Vec<Option<RuledCall>> {
    covering
        .iter()
        .map(|rule| rule.as_ref().map(RuledCall::of))
        .collect()
}

/// The rules `person`'s `response` to `entry` (an approval of `session`) asks to have made;
/// `None` when it asks none. Calls a rule already approved make none.
///
/// # Errors
/// A `remember` the request does not allow (rules are off, the ask said `rules: false`, it
/// needs a quorum, or the gateway does not allow that scope), or from a person the gateway
/// does not know: at the decision's path; the request stays open.
pub(super) fn rules_asked(
    session: &SessionId,
    entry: &Entry,
    person: &Person,
    response: &Value,
    settings: (&[RuleScope], u64),
) -> Result<Option<RulesToMake>, Refusal> {
    // What the request allowed when asked, and the gateway still allows.
    let (allowed_now, ttl_ms) = settings;
    let allowed: Vec<RuleScope> = entry
        .remember
        .iter()
        .copied()
        .filter(|scope| allowed_now.contains(scope))
        .collect();
    let calls = entry.questions.approval_calls();
    if calls.is_empty() {
        return Ok(None);
    }
    let now = now_ms();
    let mut rules = Vec::new();
    let mut errors = Vec::new();
    for (index, remember) in remembered(response).into_iter().enumerate() {
        let (Some(remember), Some(call)) = (remember, calls.get(index)) else {
            continue;
        };
        if entry
            .ruled
            .as_ref()
            .is_some_and(|ruled| ruled.get(index).is_some_and(Option::is_some))
        {
            continue;
        }
        let path = format!("response.decisions[{index}].remember");
        let refuse = |message: String| FieldError::new(&path, ErrorCode::InvalidValue, message);
        if !allowed.contains(&remember.scope) {
            errors.push(refuse(if allowed.is_empty() {
                "this request's approvals cannot be remembered (the gateway keeps no rules, \
                 the ask said `rules: false`, or it needs a quorum)"
                    .to_owned()
            } else {
                format!(
                    "this gateway remembers approvals only {} (--approval-rules)",
                    allowed
                        .iter()
                        .map(|scope| match scope {
                            RuleScope::Session => "for the session",
                            RuleScope::Key => "for the agent key",
                        })
                        .collect::<Vec<_>>()
                        .join(" or ")
                )
            }));
            continue;
        }
        let args_bytes = serde_json::to_string(&call.args).map_or(0, |text| text.len());
        if remember.args == RuleArgs::Same && args_bytes > MAX_RULE_ARGS_BYTES {
            errors.push(FieldError::new(
                format!("response.decisions[{index}].args"),
                ErrorCode::InvalidValue,
                format!(
                    "this call's arguments are {args_bytes} bytes, more than a rule keeps \
                     ({MAX_RULE_ARGS_BYTES}): remember any arguments to this tool, or none"
                ),
            ));
            continue;
        }
        let Some(user) = person.name() else {
            errors.push(refuse(
                "only a person the gateway knows (a personal link, the sign-in proxy) may have \
                 an approval remembered"
                    .to_owned(),
            ));
            continue;
        };
        let made = Made {
            user,
            session: session.as_str(),
            key: entry.asked_by.as_deref().unwrap_or(LOCAL_KEY_ID),
            now_ms: now,
            ttl_ms,
        };
        rules.push(Rule::of(new_rule_id(), call, remember, made));
    }
    if let Some(errors) = ValidationErrors::from_vec(errors) {
        return Err(Refusal::DoesNotFit(errors));
    }
    Ok(person
        .name()
        .filter(|_| !rules.is_empty())
        .map(|user| RulesToMake {
            session: session.clone(),
            id: entry.id.clone(),
            user: user.to_owned(),
            rules,
        }))
}

/// `response` with the decision on each call a rule approved made an approval: what a tab
/// sends for those calls is not the person's to decide.
pub(super) fn with_ruled_approved(response: &Value, ruled: &[Option<RuledCall>]) -> Value {
    let mut response = response.clone();
    if let Some(decisions) = response.get_mut("decisions").and_then(Value::as_array_mut) {
        for (decision, rule) in decisions.iter_mut().zip(ruled) {
            if rule.is_some() {
                *decision = json!({"type": "approve"});
            }
        }
    }
    response
}

/// The answer rules give an approval of `calls` calls: every one approved.
pub(super) fn approved_by_rules(calls: usize) -> Value {
    json!({"decisions": vec![json!({"type": "approve"}); calls]})
}
