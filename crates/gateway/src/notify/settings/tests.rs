use super::*;

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

fn parse(text: &str) -> Result<NotifySettings, String> {
    NotifySettings::parse(
        text,
        "notify.toml",
        &mut Groups::default(),
        &FromEnv::default(),
    )
}

fn whole() -> String {
    format!(
        r#"
[people."alice@example.com"]
email = "alice@example.com"
webhooks = ["ops"]

[groups.oncall]
members = ["alice@example.com", "bob@example.com"]

[webhooks.ops]
url = "https://ops.example.com/askgate"
secret = "{SECRET}"
previous_secret = "whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0"
events = ["request.opened", "request.resolved"]
sessions = "billing-"

[email]
smtp_url = "smtp://127.0.0.1:2525"
from = "askgate <askgate@example.com>"
"#
    )
}

#[test]
fn the_whole_example_is_read() {
    let mut groups = Groups::default();
    let settings = NotifySettings::parse(&whole(), "notify.toml", &mut groups, &FromEnv::default())
        .expect("reads");
    let alice = &settings.people["alice@example.com"];
    assert_eq!(alice.email.as_deref(), Some("alice@example.com"));
    assert_eq!(alice.webhooks, ["ops"]);
    assert_eq!(
        groups.members_of("oncall"),
        ["alice@example.com", "bob@example.com"]
    );
    let ops = &settings.webhooks["ops"];
    assert_eq!(ops.url.as_str(), "https://ops.example.com/askgate");
    assert_eq!(ops.secrets.len(), 2);
    assert_eq!(ops.secrets[0].len(), 24);
    assert!(ops.watches("billing-7", EventKind::Opened));
    assert!(!ops.watches("billing-7", EventKind::Reminded));
    assert!(!ops.watches("sales-7", EventKind::Opened));
    assert_eq!(ops.line, 10);
    let shown = format!("{ops:?}");
    assert!(shown.contains("secrets: 2 (not shown)"), "{shown}");
    assert!(!shown.contains("49, 242"), "no secret byte in {shown}");
    let email = settings.email.expect("has [email]");
    assert_eq!(email.smtp_url.as_str(), "smtp://127.0.0.1:2525");
    assert_eq!(email.from, "askgate <askgate@example.com>");
    assert!(
        parse("")
            .expect("an empty file is no fault")
            .webhooks
            .is_empty()
    );
}

#[test]
fn each_fault_is_refused_with_its_file_line_and_path() {
    let cases: &[(&str, &str)] = &[
        (
            "[people.\"a@x\"]\nemail = \"a@x\"\ncolour = \"red\"\n",
            "notify.toml:3: unknown field `colour`",
        ),
        (
            "[webhooks.ops]\nsecret = \"SECRET\"\nurl = \"not a url\"\n",
            "notify.toml:3: webhooks.ops.url: \"not a url\" is not a URL",
        ),
        (
            "[webhooks.ops]\nurl = \"ftp://x.example/\"\nsecret = \"SECRET\"\n",
            "notify.toml:2: webhooks.ops.url: \"ftp://x.example/\": must be http:// or https://",
        ),
        (
            "[webhooks.ops]\nurl = \"https://u:p@x.example/\"\nsecret = \"SECRET\"\n",
            "must not carry credentials",
        ),
        (
            "[webhooks.ops]\nurl = \"https://x.example/\"\n\nsecret = \"whsec_%%%\"\n",
            "notify.toml:4: webhooks.ops.secret: does not decode as base64",
        ),
        (
            "[webhooks.ops]\nurl = \"https://x.example/\"\nsecret = \"whsec_c2hvcnQ=\"\n",
            "notify.toml:3: webhooks.ops.secret: decodes to 5 bytes",
        ),
        (
            "[webhooks.ops]\nurl = \"https://x.example/\"\nsecret = \"SECRET\"\nevents = [\"request.opened\", \"request.done\"]\n",
            "notify.toml:4: webhooks.ops.events[1]: \"request.done\" is not one of",
        ),
        (
            "[webhooks.ops]\nurl = \"https://x.example/\"\n",
            "notify.toml:1: missing field `secret`",
        ),
        (
            "[webhooks.ops]\nurl = \"https://x.example/\"\nsecret = \"SECRET\"\n\n[people.\"a@x\"]\nwebhooks = [\"ops\", \"pager\"]\n",
            "notify.toml:6: people.\"a@x\".webhooks[1]: no webhook \"pager\" is defined (defined: ops)",
        ),
        (
            "[people.\"a@x\"]\nemail = \"not mail\"\n",
            "notify.toml:2: people.\"a@x\".email: \"not mail\" is not an e-mail address",
        ),
        (
            "[groups.oncall]\nmembers = [\"a@x\", \"\"]\n",
            "notify.toml:2: groups.oncall.members[1]: must not be empty",
        ),
        (
            "[groups.\"on call\"]\nmembers = []\n",
            "notify.toml:1: groups.on call: a group name is",
        ),
        (
            "[email]\nfrom = \"a@x\"\n",
            "notify.toml: email.smtp_url: missing",
        ),
        (
            "[email]\nsmtp_url = \"http://mail.example\"\nfrom = \"a@x\"\n",
            "notify.toml:2: email.smtp_url: \"http://mail.example/\": must be smtp://",
        ),
        (
            "[email]\nsmtp_url = \"smtp://mail.example\"\nfrom = \"askgate <nobody>\"\n",
            "notify.toml:3: email.from: the address: \"nobody\" is not an e-mail address",
        ),
        ("webhooks = 3\n", "notify.toml:1: invalid type"),
        ("[webhooks.ops\n", "notify.toml:1:"),
    ];
    for (text, expected) in cases {
        let text = text.replace("SECRET", SECRET);
        let error = parse(&text).expect_err(&text);
        assert!(
            error.starts_with(expected) || error.contains(expected),
            "for\n{text}\nexpected {expected:?}, got {error:?}"
        );
    }
}

#[test]
fn a_group_defined_in_both_files_is_refused() {
    let mut groups = Groups::parse(r#"{"oncall": ["a@x"]}"#).expect("groups");
    let error = NotifySettings::parse(
        "\n[groups.oncall]\nmembers = [\"b@x\"]\n",
        "notify.toml",
        &mut groups,
        &FromEnv::default(),
    )
    .expect_err("defined twice");
    assert!(
        error.starts_with("notify.toml:2: groups.oncall: group \"oncall\" is defined twice"),
        "{error}"
    );
}

#[test]
fn the_smtp_url_may_come_from_the_environment_and_its_password_is_never_shown() {
    let text = "[email]\nfrom = \"a@x\"\n";
    let settings = NotifySettings::parse(
        text,
        "notify.toml",
        &mut Groups::default(),
        &FromEnv {
            smtp_url: Some("smtps://user:hunter2@mail.example:465".into()),
            ..FromEnv::default()
        },
    )
    .expect("the environment's URL stands in");
    let email = settings.email.expect("mail");
    assert!(!format!("{email:?}").contains("hunter2"), "{email:?}");
    let url = email.smtp_url;
    assert_eq!(url.password(), Some("hunter2"));
    let error = NotifySettings::parse(
        text,
        "notify.toml",
        &mut Groups::default(),
        &FromEnv {
            smtp_url: Some("imap://user:hunter2@mail.example".into()),
            ..FromEnv::default()
        },
    )
    .expect_err("not smtp");
    assert!(error.starts_with("ASKGATE_SMTP_URL: "), "{error}");
    assert!(!error.contains("hunter2"), "{error}");
}

const SLACK: &str = r#"
[people."alice@example.com"]
slack = "U01ALICE"

[groups.ops]
members = ["alice@example.com"]
slack_channel = "C01OPS"

[slack]
bot_token = "xoxb-1-2-3"
signing_secret = "8f742231b10e8888abcd99yyyzzz85a5"
api_url = "http://127.0.0.1:9999/api"
"#;

#[test]
fn slack_people_channels_and_the_app_are_read() {
    let settings = parse(SLACK).expect("reads");
    assert_eq!(
        settings.people["alice@example.com"].slack.as_deref(),
        Some("U01ALICE")
    );
    assert_eq!(settings.slack_channels["ops"], "C01OPS");
    let slack = settings.slack.as_ref().expect("has [slack]");
    assert_eq!(slack.api_url.as_str(), "http://127.0.0.1:9999/api/");
    assert_eq!(slack.line, 9);
    let shown = format!("{slack:?}");
    assert!(
        !shown.contains("xoxb") && !shown.contains("8f74"),
        "{shown}"
    );
    assert!(settings.sends());
    let default = parse("[slack]\nbot_token = \"xoxb-1\"\nsigning_secret = \"s\"\n").unwrap();
    assert_eq!(default.slack.unwrap().api_url.as_str(), SLACK_API_URL);
}

#[test]
fn slack_mistakes_are_named_with_their_line() {
    let cases = [
        (
            SLACK.replace("\"U01ALICE\"", "\"alice\""),
            "notify.toml:3: people.\"alice@example.com\".slack: \"alice\" is not a Slack user id",
        ),
        (
            SLACK.replace("\"C01OPS\"", "\"#ops\""),
            "notify.toml:7: groups.ops.slack_channel: \"#ops\" is not a Slack channel id",
        ),
        (
            SLACK.replace("bot_token = \"xoxb-1-2-3\"\n", ""),
            "notify.toml: slack.bot_token: missing (give it here or in ASKGATE_SLACK_BOT_TOKEN)",
        ),
        (
            SLACK.replace("\"xoxb-1-2-3\"", "\"xoxb 1\""),
            "notify.toml:10: slack.bot_token: must be 1 to 256 printable ASCII characters",
        ),
        (
            SLACK.replace("\"http://127.0.0.1:9999/api\"", "\"ftp://x\""),
            "notify.toml:12: slack.api_url: \"ftp://x\": must be http:// or https://",
        ),
        (SLACK.replace("[slack]", "[nothing]"), "notify.toml:"),
        (
            SLACK[..SLACK.find("[slack]").unwrap()].to_owned(),
            "notify.toml: people.\"alice@example.com\".slack: given, but the file has no [slack]",
        ),
    ];
    for (text, expected) in cases {
        let error = parse(&text).expect_err(expected);
        assert!(error.starts_with(expected), "{error}\nexpected: {expected}");
    }
}

#[test]
fn the_environment_stands_for_slacks_secrets() {
    let text = "[slack]\n";
    let env = FromEnv {
        slack_bot_token: Some("xoxb-env".into()),
        slack_signing_secret: Some("from-env".into()),
        ..FromEnv::default()
    };
    let settings =
        NotifySettings::parse(text, "notify.toml", &mut Groups::default(), &env).unwrap();
    let slack = settings.slack.unwrap();
    assert_eq!(slack.bot_token, "xoxb-env");
    assert_eq!(slack.signing_secret, "from-env");
}

#[test]
fn push_takes_a_mailto_or_https_subject() {
    let settings = parse("[push]\nsubject = \"mailto:ops@example.com\"\n").unwrap();
    assert_eq!(settings.push.unwrap().subject, "mailto:ops@example.com");
    assert!(parse("[push]\nsubject = \"https://askgate.example/contact\"\n").is_ok());
    for bad in ["ops@example.com", "http://askgate.example", "mailto:"] {
        let error = parse(&format!("[push]\nsubject = \"{bad}\"\n")).unwrap_err();
        assert!(
            error.starts_with(&format!(
                "notify.toml:2: push.subject: {bad:?} is not a mailto:"
            )),
            "{error}"
        );
    }
    let error = parse("[push]\n").unwrap_err();
    assert!(error.contains("missing field `subject`"), "{error}");
}

#[test]
fn operators_are_people_listed_at_the_top() {
    let settings = parse(
        "operators = [\"alice@example.com\", \"bob\"]\n[people.bob]\nemail = \"bob@example.com\"\n",
    )
    .unwrap();
    assert_eq!(settings.operators, vec!["alice@example.com", "bob"]);
    assert!(parse("").unwrap().operators.is_empty());
    let error = parse("operators = [\"alice\", \"\"]\n").unwrap_err();
    assert!(
        error.starts_with("notify.toml:1: operators[1]: "),
        "{error}"
    );
    let error = parse("operators = \"alice\"\n").unwrap_err();
    assert!(error.starts_with("notify.toml:1: "), "{error}");
    let many = format!("operators = {:?}\n", vec!["p"; MAX_OPERATORS + 1]);
    let error = parse(&many).unwrap_err();
    assert!(
        error.starts_with("notify.toml: operators: at most 1000"),
        "{error}"
    );
}
