//! `askgate serve`'s flags: each bad value refused, naming its flag, before anything is created.

use std::time::Duration;

use clap::Parser;

use super::*;

use crate::config::Limits;
use crate::scope::SessionScope;

#[derive(Debug, Parser)]
struct Serve {
    #[command(flatten)]
    args: ServeArgs,
}

fn parse(flags: &[&str]) -> ServeArgs {
    let argv = std::iter::once("serve").chain(flags.iter().copied());
    Serve::try_parse_from(argv)
        .unwrap_or_else(|e| panic!("{flags:?} should parse: {e}"))
        .args
}

/// Asserts that clap refuses each of `bad` as the value of `flag`, naming the flag.
fn assert_parse_refuses(flag: &str, bad: &[&str]) {
    for value in bad {
        let given = format!("{flag}={value}");
        let said = match Serve::try_parse_from(["serve", given.as_str()]) {
            Ok(parsed) => panic!("{flag} {value} should be refused, got {parsed:?}"),
            Err(e) => e.to_string(),
        };
        assert!(said.contains(flag), "{value}: {said}");
    }
}

fn refusal(flags: &[&str]) -> String {
    match parse(flags).limits.to_limits() {
        Ok(limits) => panic!("{flags:?} should be refused, got {limits:?}"),
        Err(e) => format!("{e:#}"),
    }
}

#[test]
fn the_defaults_pass_and_are_configs_defaults() {
    let limits = parse(&[])
        .limits
        .to_limits()
        .expect("the defaults are valid");
    assert_eq!(format!("{limits:?}"), format!("{:?}", Limits::default()));
}

#[test]
fn each_count_below_one_is_refused_naming_the_flag() {
    for flag in [
        "read-buffer-bytes",
        "write-buffer-bytes",
        "tab-queue",
        "agent-queue",
        "tab-frames-per-second",
        "agent-frames-per-second",
        "tabs-per-session",
        "open-requests-per-session",
        "kept-outcomes-per-session",
        "max-sessions",
    ] {
        let message = refusal(&[&format!("--{flag}=0")]);
        assert_eq!(message, format!("--{flag} must be at least 1, got 0"));
    }
}

#[test]
fn a_frame_limit_too_small_for_a_hello_is_refused_saying_why() {
    for given in ["0", "1023"] {
        let message = refusal(&[&format!("--max-frame-bytes={given}")]);
        assert_eq!(
            message,
            format!(
                "--max-frame-bytes must be at least 1024, got {given}: \
                 a smaller frame cannot carry a tab's hello"
            )
        );
    }
    let limits = parse(&["--max-frame-bytes=1024"]).limits.to_limits();
    assert_eq!(limits.expect("1024 is enough").max_frame_bytes, 1024);
}

#[test]
fn a_max_timeout_that_is_not_finite_and_positive_is_refused() {
    for (given, shown) in [("NaN", "NaN"), ("inf", "inf"), ("0", "0"), ("-1", "-1")] {
        let message = refusal(&[&format!("--max-timeout-s={given}")]);
        assert_eq!(
            message,
            format!("--max-timeout-s must be a positive number of seconds, got {shown}")
        );
    }
}

#[test]
fn a_bad_retention_is_reported_in_the_hours_given() {
    for given in ["-1", "0", "NaN", "inf"] {
        let message = refusal(&[&format!("--retention-hours={given}")]);
        assert!(
            message.starts_with("--retention-hours must be a positive number of hours, got "),
            "{message}"
        );
        assert!(!message.contains("seconds"), "{message}");
    }
    assert!(refusal(&["--retention-hours=-1"]).ends_with("got -1"));
    let limits = parse(&["--retention-hours=1.5"]).limits.to_limits();
    assert_eq!(limits.expect("valid").retention, Duration::from_secs(5400));
}

#[test]
fn waits_must_be_positive_and_at_most_a_day() {
    for flag in ["ping-interval-s", "shutdown-grace-s"] {
        for given in ["0", "-5", "NaN", "inf"] {
            let message = refusal(&[&format!("--{flag}={given}")]);
            assert!(
                message.starts_with(&format!(
                    "--{flag} must be a positive number of seconds, got "
                )),
                "{message}"
            );
        }
        // Used to pass, then panic every socket adding it to an Instant.
        let message = refusal(&[&format!("--{flag}=1e19")]);
        assert_eq!(
            message,
            format!("--{flag} must be at most 86400 seconds (one day), got 10000000000000000000")
        );
        assert!(refusal(&[&format!("--{flag}=86400.5")]).contains("at most 86400"));
        assert!(
            parse(&[&format!("--{flag}=86400")])
                .limits
                .to_limits()
                .is_ok()
        );
    }
}

#[test]
fn a_wait_below_a_nanosecond_is_not_zero() {
    // tokio's interval panics on a zero period.
    let limits = parse(&["--ping-interval-s=1e-12"]).limits.to_limits();
    assert_eq!(
        limits.expect("positive").ping_interval,
        Duration::from_nanos(1)
    );
}

#[test]
fn agent_keys_are_trimmed_and_empty_ones_dropped() {
    // Same splitting as ASKGATE_AGENT_KEYS="k1, k2".
    let unscoped = [AgentKey::unscoped("k1"), AgentKey::unscoped("k2")];
    let args = parse(&["--agent-key", "k1, k2"]);
    assert_eq!(agent_keys(&args.agent_keys).unwrap(), unscoped);
    let args = parse(&["--agent-key", " , k1,,", "--agent-key", "\tk2 "]);
    assert_eq!(agent_keys(&args.agent_keys).unwrap(), unscoped);
    assert!(
        agent_keys(&parse(&["--agent-key", " ,"]).agent_keys)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn an_agent_key_with_whitespace_inside_is_refused_without_echoing_it() {
    let args = parse(&["--agent-key", "k1,secret key"]);
    let message = format!("{:#}", agent_keys(&args.agent_keys).unwrap_err());
    assert!(
        message.starts_with("--agent-key number 2 contains whitespace"),
        "{message}"
    );
    assert!(!message.contains("secret"), "{message}");
}

#[test]
fn a_bad_flag_is_refused_before_the_data_directory_is_created() {
    let data_dir = std::env::temp_dir().join(format!(
        "askgate-serve-flags-{}-{}",
        std::process::id(),
        rand::random::<u64>()
    ));
    let data_dir_flag = format!("--data-dir={}", data_dir.display());
    for bad in ["--tab-queue=0", "--agent-key=a b"] {
        let error = parse(&[&data_dir_flag, bad]).to_config().unwrap_err();
        let exists = data_dir.exists();
        let _ = std::fs::remove_dir_all(&data_dir);
        assert!(
            !exists,
            "{bad} was refused ({error:#}) only after creating the data dir"
        );
    }
}

fn scoped(key: &str, prefix: &str) -> AgentKey {
    AgentKey::scoped(key, SessionScope::prefix(prefix).expect("a valid prefix"))
}

/// `KEY:PREFIX` splits at the first `:`, in flags and in ASKGATE_AGENT_KEYS's comma list
/// alike; a key without `:` acts on every session, as before scopes.
#[test]
fn agent_keys_take_a_session_prefix_after_the_first_colon() {
    // What clap makes of ASKGATE_AGENT_KEYS="ka:team-a-, kb:b:1., kc": the same as the flag.
    let args = parse(&[
        "--agent-key",
        "ka:team-a-, kb:b:1., kc",
        "--agent-key",
        "kd:d",
    ]);
    assert_eq!(
        agent_keys(&args.agent_keys).unwrap(),
        [
            scoped("ka", "team-a-"),
            scoped("kb", "b:1."),
            AgentKey::unscoped("kc"),
            scoped("kd", "d"),
        ]
    );
    // The same key twice with the same scope is harmless, as repeated keys always were.
    let args = parse(&["--agent-key", "ka:a-,ka:a-,kc,kc"]);
    assert_eq!(agent_keys(&args.agent_keys).unwrap().len(), 4);
}

/// Each malformed scope is refused naming the key's position and what is wrong, never the
/// key (a secret) nor the prefix (with the key's own `:` in it, part of a secret).
#[test]
fn a_malformed_scope_is_refused_by_position_without_echoing_it() {
    let too_long = format!("ksecret:{}", "p".repeat(crate::scope::MAX_PREFIX_CHARS + 1));
    for (flag, expected) in [
        (
            "k1,ksecret:",
            "--agent-key number 2: the session prefix after `:` is empty",
        ),
        (
            ":psecret",
            "--agent-key number 1: the key before `:` is empty",
        ),
        (
            "k1,k2,ksecret:psecret/x",
            "--agent-key number 3: the session prefix after `:` may hold only the characters of \
             a session id",
        ),
        (
            &too_long,
            "--agent-key number 1: the session prefix after `:` has 110 characters, more than \
             the 109",
        ),
        (
            "ksecret:a-,ksecret:b-",
            "--agent-key number 2 is the key of number 1 again, with another session prefix",
        ),
        (
            "ksecret,ksecret:b-",
            "--agent-key number 2 is the key of number 1 again, with another session prefix",
        ),
    ] {
        let args = parse(&["--agent-key", flag]);
        let message = format!("{:#}", agent_keys(&args.agent_keys).unwrap_err());
        assert!(message.starts_with(expected), "{flag:?}: {message}");
        assert!(!message.contains("secret"), "{flag:?}: {message}");
    }
}

fn people_refusal(flags: &[&str]) -> String {
    match parse(flags).people.to_settings() {
        Ok(settings) => panic!("{flags:?} should be refused, got {settings:?}"),
        Err(e) => format!("{e:#}"),
    }
}

#[test]
fn the_people_flags_come_together_or_are_refused() {
    let settings = parse(&[
        "--user-header",
        "X-Forwarded-Email",
        "--trusted-proxy",
        "10.0.0.0/8",
        "--trusted-proxy",
        "::1",
        "--require-identity",
    ])
    .people
    .to_settings()
    .expect("valid people flags");
    assert_eq!(
        settings
            .user_header
            .as_ref()
            .map(axum::http::HeaderName::as_str),
        Some("x-forwarded-email")
    );
    assert_eq!(settings.trusted_proxies.len(), 2);
    assert!(settings.require_identity);
    assert!(
        people_refusal(&["--user-header", "X-Email"])
            .contains("needs at least one --trusted-proxy")
    );
    assert!(people_refusal(&["--trusted-proxy", "10.0.0.1"]).contains("without --user-header"));
    assert!(
        people_refusal(&["--user-header", "X-Email", "--trusted-proxy", "10.0.0.0/40"])
            .contains("--trusted-proxy")
    );
    assert!(
        people_refusal(&["--user-header", "bad header", "--trusted-proxy", "::1"])
            .contains("not an HTTP header name")
    );
    let groups = std::env::temp_dir().join(format!("askgate-groups-{}.json", std::process::id()));
    std::fs::write(&groups, r#"{"ops": ["a@x", ""]}"#).unwrap();
    let said = people_refusal(&["--groups", groups.to_str().unwrap()]);
    assert!(said.contains("ops[1]: must not be empty"), "{said}");
    std::fs::write(&groups, r#"{"ops": ["a@x"]}"#).unwrap();
    let settings = parse(&["--groups", groups.to_str().unwrap()])
        .people
        .to_settings()
        .unwrap();
    assert!(settings.groups.has_member("ops", "a@x"));
    let _ = std::fs::remove_file(groups);
}

#[test]
fn the_audit_retention_is_a_positive_number_of_days() {
    let limits = parse(&["--audit-retention-days", "1.5"])
        .limits
        .to_limits()
        .unwrap();
    assert_eq!(limits.audit_retention, Duration::from_secs(36 * 3600));
    assert!(refusal(&["--audit-retention-days", "0"]).contains("--audit-retention-days"));
    assert_eq!(
        Limits::default().audit_retention,
        Duration::from_secs(90 * 24 * 3600)
    );
}

#[test]
fn the_worker_threads_are_one_by_default_and_at_least_one() {
    assert_eq!(parse(&[]).worker_threads, 1);
    assert_eq!(parse(&["--worker-threads", "4"]).worker_threads, 4);
    assert_parse_refuses("--worker-threads", &["0", "1025", "-1", "two"]);
}

#[test]
fn the_presence_lifetime_is_twenty_seconds_by_default_and_four_to_an_hour() {
    assert_eq!(parse(&[]).presence_ttl_s, 20);
    assert_eq!(
        DEFAULT_PRESENCE_TTL,
        Duration::from_secs(parse(&[]).presence_ttl_s)
    );
    assert_eq!(MIN_PRESENCE_TTL, Duration::from_secs(4));
    assert_eq!(parse(&["--presence-ttl-s", "4"]).presence_ttl_s, 4);
    assert_parse_refuses("--presence-ttl-s", &["3", "0", "3601", "-1", "ten"]);
}

#[test]
fn the_probe_silence_is_three_seconds_by_default_and_one_to_five_minutes() {
    assert_eq!(parse(&[]).probe_silence_s, 3);
    assert_eq!(
        DEFAULT_PROBE_SILENCE,
        Duration::from_secs(parse(&[]).probe_silence_s)
    );
    assert_eq!(parse(&["--probe-silence-s", "1"]).probe_silence_s, 1);
    assert_eq!(parse(&["--probe-silence-s", "300"]).probe_silence_s, 300);
    assert_parse_refuses("--probe-silence-s", &["0", "301", "-1", "three"]);
}

/// `--agent-grace-s` is 1 s to a day (60 by default); `--orphan-withdraw-after-s` at most a
/// year (a day by default), 0 keeping orphaned requests.
#[test]
fn the_agent_grace_and_the_orphans_withdrawal_are_bounded() {
    let limits = parse(&[]).limits.to_limits().unwrap();
    assert_eq!(limits.agent_grace, Duration::from_secs(60));
    assert_eq!(
        limits.orphan_withdraw_after,
        Some(Duration::from_secs(86_400))
    );
    let kept = parse(&["--orphan-withdraw-after-s", "0"])
        .limits
        .to_limits();
    assert_eq!(kept.unwrap().orphan_withdraw_after, None);
    for bad in ["0", "86401"] {
        assert!(
            refusal(&["--agent-grace-s", bad]).contains("--agent-grace-s"),
            "{bad}"
        );
    }
    assert!(
        refusal(&["--orphan-withdraw-after-s", "31536001"]).contains("--orphan-withdraw-after-s")
    );
    assert_parse_refuses("--agent-grace-s", &["-1", "soon"]);
}

/// An operator key is one word, and no agent's.
#[test]
fn an_operator_key_is_one_word_and_not_an_agent_key() {
    let config = |flags: &[&str]| parse(flags).to_config().map_err(|e| format!("{e:#}"));
    let dir = std::env::temp_dir().join(format!("askgate-operator-{}", std::process::id()));
    let data = dir.to_string_lossy().into_owned();
    let taken = config(&["--data-dir", &data, "--operator-key", "op1,op2"]).unwrap();
    let secrets: Vec<&str> = taken.operator_keys.iter().map(AgentKey::secret).collect();
    assert_eq!(secrets, ["op1", "op2"]);
    assert!(
        !format!("{taken:?}").contains("op1"),
        "a configuration's Debug shows no key"
    );
    let refused = config(&[
        "--data-dir",
        &data,
        "--agent-key",
        "same",
        "--operator-key",
        "same",
    ]);
    assert!(
        refused
            .unwrap_err()
            .contains("--operator-key number 1 is also an agent key")
    );
    let spaced = config(&["--data-dir", &data, "--operator-key", "two words"]);
    assert!(
        spaced
            .unwrap_err()
            .contains("--operator-key number 1 contains whitespace")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--approval-rules` is `session,key` by default, either alone, or `off`;
/// `--approval-rule-ttl-s` is 1 s to a year (30 days by default).
#[test]
fn approval_rules_take_their_scopes_and_a_bounded_lifetime() {
    use askgate_protocol::approval::rules::RuleScope;
    let limits = parse(&[]).limits.to_limits().unwrap();
    assert_eq!(limits.approval_rules, [RuleScope::Session, RuleScope::Key]);
    assert_eq!(limits.approval_rule_ttl, Duration::from_secs(30 * 86_400));
    let scopes = |value: &str| {
        parse(&["--approval-rules", value])
            .limits
            .to_limits()
            .unwrap()
            .approval_rules
    };
    assert_eq!(scopes("off"), []);
    assert_eq!(scopes("key"), [RuleScope::Key]);
    assert_eq!(scopes("key, session"), [RuleScope::Key, RuleScope::Session]);
    assert!(refusal(&["--approval-rules", "forever"]).contains("\"forever\""));
    for bad in ["0", "31536001"] {
        assert!(refusal(&["--approval-rule-ttl-s", bad]).contains("--approval-rule-ttl-s"));
    }
}

#[test]
fn log_format_takes_json_or_text() {
    assert_eq!(
        parse(&["--log-format", "json"]).log_format,
        Some(LogFormat::Json)
    );
    assert_eq!(
        parse(&["--log-format", "text"]).log_format,
        Some(LogFormat::Text)
    );
    assert_parse_refuses("--log-format", &["xml", ""]);
}
