//! `--notify FILE`: how people are reached, the groups they form, and the webhooks that exist.
//!
//! The file is TOML (`docs/NOTIFY.md` shows one whole). It is read once at start, and every
//! fault is refused then, with the file, the line and what is wrong: an unknown key, a bad
//! URL, a secret that does not decode, a person's webhook that is not defined, a group
//! defined twice (here and in `--groups`). Every node of a deployment should be given the
//! same file.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;

use askgate_protocol::people::check_user_name;
use base64::Engine as _;
use serde::Deserialize;
use toml::Spanned;
use url::Url;

use crate::people::Groups;
use crate::people::groups::check_group_name;

/// The most webhooks a file may define.
pub const MAX_WEBHOOKS: usize = 64;
/// Fewest bytes a webhook secret decodes to, and most (the Standard Webhooks specification's
/// range: shorter is guessable, longer buys nothing over HMAC-SHA256's block).
pub const WEBHOOK_SECRET_BYTES: std::ops::RangeInclusive<usize> = 24..=64;
/// The most people the file's `operators` may list.
pub const MAX_OPERATORS: usize = 1_000;
/// The longest wait a policy may set, in seconds: a year.
pub const MAX_WAIT_S: f64 = 365.0 * 86_400.0;
/// Longest `sessions` prefix, in bytes (a session id's own limit).
pub const MAX_SESSION_PREFIX_BYTES: usize = 128;

/// What a notification says happened to a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EventKind {
    /// It was asked.
    Opened,
    /// It is still open after its `remind_after_s`: the same people, told again.
    Reminded,
    /// It is still open after its `escalate.after_s`: more people, added and told.
    Escalated,
    /// It ended (answered, declined, timed out, withdrawn).
    Resolved,
}

impl EventKind {
    /// Every kind, in the order of [`EventKind::index`].
    pub const ALL: [EventKind; 4] = [
        EventKind::Opened,
        EventKind::Reminded,
        EventKind::Escalated,
        EventKind::Resolved,
    ];

    /// The name on the wire (a webhook body's `type`).
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Opened => "request.opened",
            EventKind::Reminded => "request.reminded",
            EventKind::Escalated => "request.escalated",
            EventKind::Resolved => "request.resolved",
        }
    }

    /// The kind named `name` on the wire.
    pub fn parse(name: &str) -> Option<EventKind> {
        EventKind::ALL
            .into_iter()
            .find(|kind| kind.as_str() == name)
    }

    /// Its place in [`EventKind::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// A set of [`EventKind`]s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Events([bool; 4]);

impl Events {
    /// Every kind.
    pub const ALL: Events = Events([true; 4]);

    /// Whether `kind` is in the set.
    pub fn has(self, kind: EventKind) -> bool {
        self.0[kind.index()]
    }
}

/// A webhook the file defines.
#[derive(Clone)]
pub struct Webhook {
    /// Its name in the file (`[webhooks.NAME]`).
    pub name: String,
    /// Where its bodies are POSTed.
    pub url: Url,
    /// The secrets it is signed with, decoded: `secret`, then `previous_secret` while keys
    /// rotate. Every one signs each body.
    pub secrets: Vec<Vec<u8>>,
    /// The events it gets.
    pub events: Events,
    /// Only sessions whose id starts with this (empty: every session).
    pub sessions: String,
    /// The line of its `url` key, for errors found after reading (its address).
    pub line: usize,
}

/// Everything but the secrets, which are only counted.
impl std::fmt::Debug for Webhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Webhook")
            .field("name", &self.name)
            .field("url", &self.url.as_str())
            .field(
                "secrets",
                &format_args!("{} (not shown)", self.secrets.len()),
            )
            .field("events", &self.events)
            .field("sessions", &self.sessions)
            .finish_non_exhaustive()
    }
}

impl Webhook {
    /// Whether it gets `kind` events of `session` whoever the request is for.
    pub fn watches(&self, session: &str, kind: EventKind) -> bool {
        self.events.has(kind) && session.starts_with(&self.sessions)
    }
}

/// How a person is reached.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Contact {
    /// Where their mail goes.
    pub email: Option<String>,
    /// Their Slack user id (`U…`): the Slack app's direct messages go to them, and their
    /// clicks on its buttons answer as them.
    pub slack: Option<String>,
    /// Webhooks (by name) that also get the requests addressed to them.
    pub webhooks: Vec<String>,
}

/// How mail is sent: `[email]`.
#[derive(Clone)]
pub struct EmailSettings {
    /// `smtp://` (STARTTLS when the server offers it) or `smtps://` (TLS from the start),
    /// with credentials in it if the server wants them.
    pub smtp_url: Url,
    /// The sender, `address` or `Name <address>`.
    pub from: String,
}

/// The server's URL without its password.
impl std::fmt::Debug for EmailSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut shown = self.smtp_url.clone();
        if shown.password().is_some() {
            let _ = shown.set_password(Some("hidden"));
        }
        f.debug_struct("EmailSettings")
            .field("smtp_url", &shown.as_str())
            .field("from", &self.from)
            .finish()
    }
}

/// How the Slack app is reached: `[slack]`.
#[derive(Clone)]
pub struct SlackSettings {
    /// The bot token the Web API is called with (`xoxb-…`).
    pub bot_token: String,
    /// The app's signing secret, which interactions are signed with.
    pub signing_secret: String,
    /// The Web API's base URL, ending in `/` (method names are appended).
    pub api_url: Url,
    /// The line of `[slack]`, for errors found after reading.
    pub line: usize,
}

/// The URL; the token and the secret only said to be there.
impl std::fmt::Debug for SlackSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SlackSettings")
            .field("bot_token", &"(not shown)")
            .field("signing_secret", &"(not shown)")
            .field("api_url", &self.api_url.as_str())
            .finish_non_exhaustive()
    }
}

/// How pushes are signed: `[push]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PushSettings {
    /// The contact push services are given (`mailto:` or `https:`), the VAPID `sub`.
    pub subject: String,
}

/// Slack's Web API, where `api_url` points unless the file says otherwise.
pub const SLACK_API_URL: &str = "https://slack.com/api/";

/// Settings the environment may give instead of the file, so that secrets can stay out of
/// it: each stands for its key in the file.
#[derive(Clone, Default)]
pub struct FromEnv {
    /// `ASKGATE_SMTP_URL`: `email.smtp_url`.
    pub smtp_url: Option<String>,
    /// `ASKGATE_SLACK_BOT_TOKEN`: `slack.bot_token`.
    pub slack_bot_token: Option<String>,
    /// `ASKGATE_SLACK_SIGNING_SECRET`: `slack.signing_secret`.
    pub slack_signing_secret: Option<String>,
}

/// Whether each is set; never what it holds (a token, a secret, credentials in a URL).
impl std::fmt::Debug for FromEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let set = |value: &Option<String>| {
            if value.is_some() {
                "(set)"
            } else {
                "(not set)"
            }
        };
        f.debug_struct("FromEnv")
            .field("smtp_url", &set(&self.smtp_url))
            .field("slack_bot_token", &set(&self.slack_bot_token))
            .field("slack_signing_secret", &set(&self.slack_signing_secret))
            .finish()
    }
}

impl FromEnv {
    /// What this process's environment gives.
    pub fn read() -> FromEnv {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        FromEnv {
            smtp_url: var("ASKGATE_SMTP_URL"),
            slack_bot_token: var("ASKGATE_SLACK_BOT_TOKEN"),
            slack_signing_secret: var("ASKGATE_SLACK_SIGNING_SECRET"),
        }
    }
}

/// `[[policies]]`: reminders and escalation for the sessions under a prefix, when an ask says
/// nothing of them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Sessions whose id starts with this (empty: every session).
    pub sessions: String,
    /// Milliseconds after the ask to remind.
    pub remind_after_ms: Option<u64>,
    /// Milliseconds after the ask to escalate, and to whom.
    pub escalate: Option<(u64, Vec<String>)>,
}

/// What a notify file says.
#[derive(Clone, Debug, Default)]
pub struct NotifySettings {
    /// How each person is reached, by name.
    pub people: BTreeMap<String, Contact>,
    /// The webhooks, by name.
    pub webhooks: BTreeMap<String, Webhook>,
    /// How mail is sent, if it is.
    pub email: Option<EmailSettings>,
    /// How the Slack app is reached, if it is.
    pub slack: Option<SlackSettings>,
    /// How pushes are signed, if the gateway sends them.
    pub push: Option<PushSettings>,
    /// The Slack channel (`C…`) of each group that has one: a request for the group is
    /// posted there once, rather than to each member.
    pub slack_channels: BTreeMap<String, String>,
    /// Reminder and escalation defaults, in the file's order (the first that matches a
    /// session applies).
    pub policies: Vec<Policy>,
    /// The people (by name) whom a trusted proxy's identity header admits to the operator
    /// endpoints (`operators = [...]`, at most [`MAX_OPERATORS`]).
    pub operators: Vec<String>,
    /// The file it was read from, for later errors.
    pub source: String,
}

impl NotifySettings {
    /// Reads `path`, adding its groups to `groups`; what `env` gives stands for its key in
    /// the file.
    ///
    /// # Errors
    /// It cannot be read, or something in it is wrong: `FILE:LINE: PATH: what`.
    pub fn load(path: &Path, groups: &mut Groups, env: &FromEnv) -> Result<NotifySettings, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("reading the notify file {}: {e}", path.display()))?;
        NotifySettings::parse(&text, &path.display().to_string(), groups, env)
    }

    /// Reads a notify file's `text`, which came from `source` (named in errors).
    ///
    /// # Errors
    /// As [`NotifySettings::load`]'s.
    pub fn parse(
        text: &str,
        source: &str,
        groups: &mut Groups,
        env: &FromEnv,
    ) -> Result<NotifySettings, String> {
        let at = |span: Range<usize>, message: String| {
            format!("{source}:{}: {message}", line_of(text, span.start))
        };
        let file: File = toml::from_str(text).map_err(|e| match e.span() {
            Some(span) => at(span, first_line(e.message())),
            None => format!("{source}: {}", first_line(e.message())),
        })?;
        if file.webhooks.len() > MAX_WEBHOOKS {
            return Err(format!(
                "{source}: at most {MAX_WEBHOOKS} webhooks, got {}",
                file.webhooks.len()
            ));
        }
        let mut webhooks = BTreeMap::new();
        for (name, entry) in file.webhooks {
            let path = format!("webhooks.{}", name.get_ref());
            check_group_name(name.get_ref()).map_err(|e| {
                at(
                    name.span(),
                    format!("{path}: {}", e.replace("group", "webhook")),
                )
            })?;
            let webhook = entry
                .into_webhook(name.get_ref(), text)
                .map_err(|(span, e)| at(span, format!("{path}.{e}")))?;
            webhooks.insert(name.into_inner(), webhook);
        }
        let mut people = BTreeMap::new();
        for (name, entry) in file.people {
            let path = format!("people.{:?}", name.get_ref());
            check_user_name(name.get_ref()).map_err(|e| at(name.span(), format!("{path}: {e}")))?;
            let mut contact = Contact::default();
            if let Some(email) = entry.email {
                check_address(email.get_ref())
                    .map_err(|e| at(email.span(), format!("{path}.email: {e}")))?;
                contact.email = Some(email.into_inner());
            }
            if let Some(slack) = entry.slack {
                check_slack_id(slack.get_ref(), &['U', 'W'], "a Slack user id (U…)")
                    .map_err(|e| at(slack.span(), format!("{path}.slack: {e}")))?;
                contact.slack = Some(slack.into_inner());
            }
            for (index, hook) in entry.webhooks.into_iter().enumerate() {
                if !webhooks.contains_key(hook.get_ref()) {
                    let defined = webhooks.keys().cloned().collect::<Vec<_>>().join(", ");
                    let defined = if defined.is_empty() {
                        "none".to_owned()
                    } else {
                        defined
                    };
                    return Err(at(
                        hook.span(),
                        format!(
                            "{path}.webhooks[{index}]: no webhook {:?} is defined (defined: {defined})",
                            hook.get_ref()
                        ),
                    ));
                }
                if !contact.webhooks.contains(hook.get_ref()) {
                    contact.webhooks.push(hook.into_inner());
                }
            }
            people.insert(name.into_inner(), contact);
        }
        let mut slack_channels = BTreeMap::new();
        for (name, entry) in file.groups {
            let path = format!("groups.{}", name.get_ref());
            check_group_name(name.get_ref())
                .map_err(|e| at(name.span(), format!("{path}: {e}")))?;
            if let Some(channel) = entry.slack_channel {
                check_slack_id(channel.get_ref(), &['C', 'G'], "a Slack channel id (C…)")
                    .map_err(|e| at(channel.span(), format!("{path}.slack_channel: {e}")))?;
                slack_channels.insert(name.get_ref().clone(), channel.into_inner());
            }
            let mut members = Vec::with_capacity(entry.members.len());
            for (index, member) in entry.members.into_iter().enumerate() {
                check_user_name(member.get_ref())
                    .map_err(|e| at(member.span(), format!("{path}.members[{index}]: {e}")))?;
                members.push(member.into_inner());
            }
            groups
                .add_group(name.get_ref(), members)
                .map_err(|e| at(name.span(), format!("{path}: {e}")))?;
        }
        let email = match file.email {
            None => None,
            Some(entry) => {
                let url = match (env.smtp_url.as_deref(), entry.smtp_url) {
                    (Some(text), _) => {
                        parse_smtp_url(text).map_err(|e| format!("ASKGATE_SMTP_URL: {e}"))?
                    }
                    (None, Some(text)) => parse_smtp_url(text.get_ref())
                        .map_err(|e| at(text.span(), format!("email.smtp_url: {e}")))?,
                    (None, None) => {
                        return Err(format!(
                            "{source}: email.smtp_url: missing (give it here or in ASKGATE_SMTP_URL)"
                        ));
                    }
                };
                check_sender(entry.from.get_ref())
                    .map_err(|e| at(entry.from.span(), format!("email.from: {e}")))?;
                Some(EmailSettings {
                    smtp_url: url,
                    from: entry.from.into_inner(),
                })
            }
        };
        let slack = match file.slack {
            None => None,
            Some(entry) => Some(read_slack(entry, env, text, &at, source)?),
        };
        if slack.is_none() {
            let slack_people = people.iter().find(|(_, c)| c.slack.is_some());
            if let Some((name, _)) = slack_people {
                return Err(format!(
                    "{source}: people.{name:?}.slack: given, but the file has no [slack] to reach them with"
                ));
            }
            if let Some(group) = slack_channels.keys().next() {
                return Err(format!(
                    "{source}: groups.{group}.slack_channel: given, but the file has no [slack] to post with"
                ));
            }
        }
        let push = match file.push {
            None => None,
            Some(entry) => {
                let subject = entry.subject.get_ref();
                let fits = (subject.starts_with("mailto:") && subject.len() > 7)
                    || Url::parse(subject).is_ok_and(|url| url.scheme() == "https");
                if !fits || subject.len() > 256 {
                    return Err(at(
                        entry.subject.span(),
                        format!(
                            "push.subject: {subject:?} is not a mailto: address or an https:// URL (at most 256 bytes): push services contact the operator there"
                        ),
                    ));
                }
                Some(PushSettings {
                    subject: entry.subject.into_inner(),
                })
            }
        };
        let mut policies = Vec::with_capacity(file.policies.len());
        for (index, entry) in file.policies.into_iter().enumerate() {
            let path = format!("policies[{index}]");
            let wait = |seconds: &Spanned<f64>, key: &str| {
                let value = *seconds.get_ref();
                if value.is_finite() && value > 0.0 && value <= MAX_WAIT_S {
                    Ok((value * 1000.0).ceil() as u64)
                } else {
                    Err(at(
                        seconds.span(),
                        format!(
                            "{path}.{key}: must be positive seconds, at most {MAX_WAIT_S}, got {value}"
                        ),
                    ))
                }
            };
            let remind_after_ms = entry
                .remind_after_s
                .as_ref()
                .map(|s| wait(s, "remind_after_s"))
                .transpose()?;
            let escalate = match entry.escalate {
                None => None,
                Some(escalate) => {
                    let after = wait(&escalate.after_s, "escalate.after_s")?;
                    if escalate.to.is_empty() {
                        return Err(at(
                            escalate.after_s.span(),
                            format!("{path}.escalate.to: must name at least one person or group"),
                        ));
                    }
                    let mut to = Vec::with_capacity(escalate.to.len());
                    for (i, name) in escalate.to.into_iter().enumerate() {
                        let key = format!("{path}.escalate.to[{i}]");
                        check_user_name(name.get_ref())
                            .map_err(|e| at(name.span(), format!("{key}: {e}")))?;
                        if let Some(group) = name.get_ref().strip_prefix("group:")
                            && !groups.has_group(group)
                        {
                            return Err(at(
                                name.span(),
                                format!("{key}: no group {group:?} is defined"),
                            ));
                        }
                        to.push(name.into_inner());
                    }
                    Some((after, to))
                }
            };
            policies.push(Policy {
                sessions: entry.sessions.into_inner(),
                remind_after_ms,
                escalate,
            });
        }
        if file.operators.len() > MAX_OPERATORS {
            return Err(format!(
                "{source}: operators: at most {MAX_OPERATORS} people, got {}",
                file.operators.len()
            ));
        }
        let mut operators = Vec::with_capacity(file.operators.len());
        for (index, person) in file.operators.into_iter().enumerate() {
            check_user_name(person.get_ref())
                .map_err(|e| at(person.span(), format!("operators[{index}]: {e}")))?;
            operators.push(person.into_inner());
        }
        Ok(NotifySettings {
            people,
            webhooks,
            email,
            slack,
            push,
            slack_channels,
            policies,
            operators,
            source: source.to_owned(),
        })
    }

    /// Whether it sends anything at all (a webhook, mail, Slack messages, pushes).
    pub fn sends(&self) -> bool {
        !self.webhooks.is_empty()
            || self.email.is_some()
            || self.slack.is_some()
            || self.push.is_some()
    }
}

/// `[slack]`, with what the environment gives standing for its keys.
fn read_slack(
    entry: Spanned<SlackEntry>,
    env: &FromEnv,
    text: &str,
    at: &impl Fn(Range<usize>, String) -> String,
    source: &str,
) -> Result<SlackSettings, String> {
    let secret = |from_env: &Option<String>,
                  in_file: Option<Spanned<String>>,
                  key: &str,
                  var: &str|
     -> Result<String, String> {
        let (value, place) = match (from_env, in_file) {
            (Some(value), _) => (value.clone(), var.to_owned()),
            (None, Some(value)) => {
                let place = at(value.span(), format!("slack.{key}"));
                (value.into_inner(), place)
            }
            (None, None) => {
                return Err(format!(
                    "{source}: slack.{key}: missing (give it here or in {var})"
                ));
            }
        };
        let fits =
            !value.is_empty() && value.len() <= 256 && value.chars().all(|c| c.is_ascii_graphic());
        if fits {
            Ok(value)
        } else {
            Err(format!(
                "{place}: must be 1 to 256 printable ASCII characters, without spaces"
            ))
        }
    };
    let line = line_of(text, entry.span().start);
    let entry = entry.into_inner();
    let bot_token = secret(
        &env.slack_bot_token,
        entry.bot_token,
        "bot_token",
        "ASKGATE_SLACK_BOT_TOKEN",
    )?;
    let signing_secret = secret(
        &env.slack_signing_secret,
        entry.signing_secret,
        "signing_secret",
        "ASKGATE_SLACK_SIGNING_SECRET",
    )?;
    let api_url = match entry.api_url {
        None => Url::parse(SLACK_API_URL).map_err(|e| format!("{SLACK_API_URL}: {e}"))?,
        Some(text_url) => {
            let mut url = parse_target_url(text_url.get_ref())
                .map_err(|e| at(text_url.span(), format!("slack.api_url: {e}")))?;
            if !url.path().ends_with('/') {
                let path = format!("{}/", url.path());
                url.set_path(&path);
            }
            url
        }
    };
    Ok(SlackSettings {
        bot_token,
        signing_secret,
        api_url,
        line,
    })
}

/// A Slack id: a letter of `first`, then 2 to 20 capital letters and digits.
fn check_slack_id(text: &str, first: &[char], what: &str) -> Result<(), String> {
    let mut chars = text.chars();
    let fits = chars.next().is_some_and(|c| first.contains(&c))
        && (3..=21).contains(&text.len())
        && chars.all(|c| c.is_ascii_uppercase() || c.is_ascii_digit());
    if fits {
        Ok(())
    } else {
        Err(format!("{text:?} is not {what}"))
    }
}

/// The file as TOML gives it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    people: BTreeMap<Spanned<String>, PersonEntry>,
    #[serde(default)]
    groups: BTreeMap<Spanned<String>, GroupEntry>,
    #[serde(default)]
    webhooks: BTreeMap<Spanned<String>, WebhookEntry>,
    email: Option<EmailEntry>,
    slack: Option<Spanned<SlackEntry>>,
    push: Option<PushEntry>,
    #[serde(default)]
    policies: Vec<PolicyEntry>,
    #[serde(default)]
    operators: Vec<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PushEntry {
    subject: Spanned<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SlackEntry {
    bot_token: Option<Spanned<String>>,
    signing_secret: Option<Spanned<String>>,
    api_url: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyEntry {
    sessions: Spanned<String>,
    remind_after_s: Option<Spanned<f64>>,
    escalate: Option<EscalateEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EscalateEntry {
    after_s: Spanned<f64>,
    to: Vec<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EmailEntry {
    smtp_url: Option<Spanned<String>>,
    from: Spanned<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PersonEntry {
    email: Option<Spanned<String>>,
    slack: Option<Spanned<String>>,
    #[serde(default)]
    webhooks: Vec<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GroupEntry {
    members: Vec<Spanned<String>>,
    slack_channel: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WebhookEntry {
    url: Spanned<String>,
    secret: Spanned<String>,
    previous_secret: Option<Spanned<String>>,
    events: Option<Vec<Spanned<String>>>,
    sessions: Option<Spanned<String>>,
}

impl WebhookEntry {
    /// The webhook, or the span and the `key: what` of what is wrong.
    fn into_webhook(self, name: &str, text: &str) -> Result<Webhook, (Range<usize>, String)> {
        let url = parse_target_url(self.url.get_ref())
            .map_err(|e| (self.url.span(), format!("url: {e}")))?;
        let mut secrets = vec![
            decode_secret(self.secret.get_ref())
                .map_err(|e| (self.secret.span(), format!("secret: {e}")))?,
        ];
        if let Some(previous) = &self.previous_secret {
            secrets.push(
                decode_secret(previous.get_ref())
                    .map_err(|e| (previous.span(), format!("previous_secret: {e}")))?,
            );
        }
        let events = match self.events {
            None => Events::ALL,
            Some(names) => {
                let mut set = [false; 4];
                for (index, event) in names.iter().enumerate() {
                    let kind = EventKind::parse(event.get_ref()).ok_or_else(|| {
                        let known = EventKind::ALL.map(EventKind::as_str).join(", ");
                        (
                            event.span(),
                            format!(
                                "events[{index}]: {:?} is not one of {known}",
                                event.get_ref()
                            ),
                        )
                    })?;
                    set[kind.index()] = true;
                }
                Events(set)
            }
        };
        let sessions = match self.sessions {
            None => String::new(),
            Some(prefix) => {
                if prefix.get_ref().len() > MAX_SESSION_PREFIX_BYTES {
                    return Err((
                        prefix.span(),
                        format!("sessions: at most {MAX_SESSION_PREFIX_BYTES} bytes"),
                    ));
                }
                prefix.into_inner()
            }
        };
        Ok(Webhook {
            name: name.to_owned(),
            line: line_of(text, self.url.span().start),
            url,
            secrets,
            events,
            sessions,
        })
    }
}

/// An `http(s)://` URL with a host and no credentials, for something the gateway calls.
///
/// # Errors
/// What is wrong with it.
pub fn parse_target_url(text: &str) -> Result<Url, String> {
    let url = Url::parse(text).map_err(|e| format!("{text:?} is not a URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "{text:?}: must be http:// or https://, not {}://",
            url.scheme()
        ));
    }
    if url.host().is_none() {
        return Err(format!("{text:?}: has no host"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(format!(
            "{text:?}: must not carry credentials (the body is signed with the secret instead)"
        ));
    }
    Ok(url)
}

/// An `smtp://` or `smtps://` URL with a host. What is wrong is said without its password.
fn parse_smtp_url(text: &str) -> Result<Url, String> {
    let url = Url::parse(text).map_err(|e| format!("not a URL: {e}"))?;
    let mut shown = url.clone();
    let _ = shown.set_password(None);
    if !matches!(url.scheme(), "smtp" | "smtps") {
        return Err(format!(
            "{:?}: must be smtp:// (STARTTLS when offered) or smtps:// (TLS), not {}://",
            shown.as_str(),
            url.scheme()
        ));
    }
    if url.host().is_none() {
        return Err(format!("{:?}: has no host", shown.as_str()));
    }
    Ok(url)
}

/// A sender: `address` or `Name <address>`.
fn check_sender(text: &str) -> Result<(), String> {
    let address = match text.rsplit_once('<') {
        Some((name, rest)) => {
            let Some(address) = rest.strip_suffix('>') else {
                return Err(format!("{text:?}: `<` without a closing `>`"));
            };
            if name
                .chars()
                .any(|c| c.is_control() || c == '"' || c == '<' || c == '>')
            {
                return Err(format!(
                    "{text:?}: the name must not hold quotes, `<`, `>` or control characters"
                ));
            }
            address
        }
        None => text,
    };
    check_address(address).map_err(|e| format!("the address: {e}"))
}

/// A Standard Webhooks secret: base64, after an optional `whsec_`.
fn decode_secret(text: &str) -> Result<Vec<u8>, String> {
    let encoded = text.strip_prefix("whsec_").unwrap_or(text);
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|e| format!("does not decode as base64 after `whsec_`: {e}"))?;
    if !WEBHOOK_SECRET_BYTES.contains(&bytes.len()) {
        return Err(format!(
            "decodes to {} bytes; a Standard Webhooks secret is {} to {} bytes",
            bytes.len(),
            WEBHOOK_SECRET_BYTES.start(),
            WEBHOOK_SECRET_BYTES.end()
        ));
    }
    Ok(bytes)
}

/// An address mail can go to: `local@domain`, nothing a header could be split on.
fn check_address(text: &str) -> Result<(), String> {
    let fits = !text.is_empty()
        && text.len() <= 254
        && !text
            .chars()
            .any(|c| c.is_control() || c.is_whitespace() || "<>,;\"".contains(c))
        && text.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty() && !domain.is_empty() && !domain.contains('@')
        });
    if fits {
        Ok(())
    } else {
        Err(format!("{text:?} is not an e-mail address (local@domain)"))
    }
}

/// The 1-based line holding byte `offset` of `text`.
fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

fn first_line(message: &str) -> String {
    message.lines().next().unwrap_or(message).trim().to_owned()
}

#[cfg(test)]
mod tests;
