//! The config file: each key found at its place, each fault named with its line and key,
//! the precedence flag > environment > file > default, and the example read back.

use std::path::PathBuf;

use clap::{Command, FromArgMatches as _};

use super::example;
use super::file::{self, Read};
use super::keys::{self, Kind, Setting};
use super::merge;
use crate::cli::ServeArgs;

fn serve() -> Command {
    keys::serve_command()
}

fn setting(path: &str) -> Setting {
    keys::settings(&serve())
        .into_iter()
        .find(|setting| setting.path() == path)
        .unwrap_or_else(|| panic!("no setting {path}"))
}

fn read(text: &str) -> Result<Read, Vec<String>> {
    let command = serve();
    file::read(text, "askgate.toml", &command, &keys::settings(&command))
}

/// The one fault `text` has.
fn fault(text: &str) -> String {
    match read(text) {
        Ok(read) => panic!("{text:?} should be refused, got {read:?}"),
        Err(faults) => {
            assert_eq!(faults.len(), 1, "{faults:?}");
            faults[0].clone()
        }
    }
}

/// A scratch file holding `text`, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str, text: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!(
            "askgate-config-{name}-{}-{}",
            std::process::id(),
            rand::random::<u32>()
        ));
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        let path = dir.join("askgate.toml");
        std::fs::write(&path, text).expect("the file is written");
        Scratch(path)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if let Some(dir) = self.0.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

#[test]
fn each_flag_has_its_key_and_the_grouped_ones_their_section() {
    let listen = setting("listen");
    assert_eq!((listen.kind, listen.many), (Kind::Text, true));
    assert_eq!(setting("strict_durability").kind, Kind::Switch);
    assert_eq!(setting("max_connections_per_address").kind, Kind::Integer);
    assert_eq!(setting("retention_hours").kind, Kind::Number);
    assert_eq!(setting("store.url").long, "store");
    assert_eq!(setting("store.data_dir").long, "data-dir");
    assert_eq!(setting("store.redis_prefix").long, "redis-prefix");
    assert_eq!(setting("notify.file").long, "notify");
    assert_eq!(setting("notify.retry_for_s").long, "notify-retry-for-s");
    assert_eq!(setting("notify.allow_private").long, "notify-allow-private");
    assert_eq!(setting("notify.callback_hosts").long, "callback-hosts");
    assert_eq!(setting("groups").long, "groups");
    // Every flag but --config and --help, whoever adds it.
    let settings = keys::settings(&serve());
    for arg in serve().get_arguments() {
        let Some(long) = arg.get_long() else { continue };
        let expected = !matches!(long, "config" | "help") && !arg.is_hide_set();
        let found = settings.iter().any(|setting| setting.long == long);
        assert_eq!(found, expected, "--{long}");
    }
}

#[test]
fn a_file_gives_each_value_as_its_flag_would() {
    let read = read(
        "listen = [\"127.0.0.1:1\", \"[::1]:2\"]\nstrict_durability = true\n\
         max_connections_per_address = 0x100\nretention_hours = 1.5\n\
         [store]\nurl = \"memory\"\n[notify]\nallow_private = false\n",
    )
    .expect("a good file");
    let words: Vec<String> = read
        .values
        .iter()
        .flat_map(file::FileValue::words)
        .collect();
    assert_eq!(
        words,
        [
            "--listen=127.0.0.1:1",
            "--listen=[::1]:2",
            "--strict-durability",
            "--max-connections-per-address=256",
            "--retention-hours=1.5",
            "--store=memory",
        ]
    );
    assert_eq!(read.values[0].line, 1);
    assert_eq!(read.values[4].line, 6);
}

#[test]
fn an_unknown_key_is_named_at_its_line_with_the_nearest_one() {
    assert_eq!(
        fault("listen = [\"127.0.0.1:1\"]\n\nmax_conections_per_address = 3\n"),
        "askgate.toml:3: max_conections_per_address: unknown setting \
         (did you mean max_connections_per_address?)"
    );
    // Written in the wrong place: where it goes.
    assert_eq!(
        fault("data_dir = \"x\"\n"),
        "askgate.toml:1: data_dir: unknown setting (did you mean store.data_dir?)"
    );
    assert_eq!(
        fault("[notify]\nnotify_retry_for_s = 5\n"),
        "askgate.toml:2: notify.notify_retry_for_s: unknown setting (did you mean \
         notify.retry_for_s?)"
    );
    assert_eq!(
        fault("[stor]\nurl = \"memory\"\n"),
        "askgate.toml:1: stor: unknown setting (did you mean store?)"
    );
    assert_eq!(
        fault("colour = \"blue\"\n"),
        "askgate.toml:1: colour: unknown setting (`askgate config example` lists every one)"
    );
}

#[test]
fn a_value_of_the_wrong_type_is_named_with_what_was_expected() {
    assert_eq!(
        fault("# a comment\n\n[store]\n\n\n\nurl = 5\n"),
        "askgate.toml:7: store.url: expected a string"
    );
    assert_eq!(
        fault("max_sessions = \"10\"\n"),
        "askgate.toml:1: max_sessions: expected an integer"
    );
    assert_eq!(
        fault("max_sessions = 1.5\n"),
        "askgate.toml:1: max_sessions: expected an integer"
    );
    assert_eq!(
        fault("strict_durability = \"yes\"\n"),
        "askgate.toml:1: strict_durability: expected true or false"
    );
    assert_eq!(
        fault("listen = [\n  \"127.0.0.1:1\",\n  2,\n]\n"),
        "askgate.toml:3: listen[1]: expected a string"
    );
    assert_eq!(
        fault("store = \"memory\"\n"),
        "askgate.toml:1: store: expected a table (the [store] section)"
    );
    assert!(fault("listen = \n").starts_with("askgate.toml:1: "));
}

#[test]
fn a_value_out_of_its_flags_range_is_refused_by_the_flags_own_parser() {
    let said = fault("\npresence_ttl_s = 2\n");
    assert!(
        said.starts_with("askgate.toml:2: presence_ttl_s: invalid value '2'"),
        "{said}"
    );
    assert!(said.contains("2 is not in 4..=3600"), "{said}");
    let said = fault("worker_threads = -1\n");
    assert!(
        said.starts_with("askgate.toml:1: worker_threads: "),
        "{said}"
    );
    let said = fault("log_format = \"xml\"\n");
    assert!(said.contains("json") && said.contains("text"), "{said}");
    let said = fault("[notify]\nretry_for_s = 0\n");
    assert!(
        said.starts_with("askgate.toml:2: notify.retry_for_s: "),
        "{said}"
    );
}

#[test]
fn every_fault_is_told_in_the_files_order() {
    let faults = read("max_sessions = \"x\"\nnope = 1\n[store]\nurl = 1\n").unwrap_err();
    assert_eq!(faults.len(), 3, "{faults:?}");
    assert!(faults[0].starts_with("askgate.toml:1:"));
    assert!(faults[1].starts_with("askgate.toml:2:"));
    assert!(faults[2].starts_with("askgate.toml:4:"));
}

#[test]
fn groups_in_the_file_are_judged_as_a_groups_files_are() {
    let read = read("[groups]\nreviewers = [\"alice@example.com\", \"bob@example.com\"]\n")
        .expect("good groups");
    let groups = read.groups.expect("the groups");
    assert_eq!(groups.groups[0].0, "reviewers");
    assert_eq!(groups.groups[0].1.len(), 2);
    assert_eq!(
        fault("[groups]\nreviewers = [\"alice@example.com\", 3]\n"),
        "askgate.toml:2: groups.reviewers[1]: expected a string"
    );
    assert!(
        fault("[groups]\n\"a b\" = []\n").starts_with("askgate.toml:2: groups.a b: a group name")
    );
    assert_eq!(
        fault("[groups]\nreviewers = \"alice@example.com\"\n"),
        "askgate.toml:2: groups.reviewers: expected a list of people's names"
    );
    // A string is --groups FILE.
    let read = file::read(
        "groups = \"groups.json\"\n",
        "askgate.toml",
        &serve(),
        &keys::settings(&serve()),
    )
    .expect("a file name");
    assert_eq!(read.values[0].words(), ["--groups=groups.json"]);
}

/// `serve` as the command line `flags` and the file `text` give it, with `--redis-prefix`'s
/// variable being one cargo sets for every test process (`CARGO_PKG_NAME`, `askgate`), as a
/// stand-in for an environment variable that is set.
fn merged(flags: &[&str], text: &str) -> Result<ServeArgs, Vec<String>> {
    let scratch = Scratch::new("merge", text);
    let command = serve()
        .mut_args(|arg| arg.env(None::<&'static str>))
        .mut_arg("redis_prefix", |arg| arg.env("CARGO_PKG_NAME"));
    let argv: Vec<&str> = std::iter::once("serve")
        .chain(flags.iter().copied())
        .collect();
    let given = command
        .clone()
        .try_get_matches_from(&argv)
        .expect("the flags parse");
    let (words, from_file) = merge::file_words(&scratch.0, &command, &given)?;
    let all = argv.iter().map(|word| (*word).to_owned()).chain(words);
    let matches = command
        .try_get_matches_from(all)
        .expect("the merged command line parses");
    let mut args = ServeArgs::from_arg_matches(&matches).expect("serve's arguments");
    args.from_file = from_file;
    Ok(args)
}

#[test]
fn a_flag_beats_its_variable_which_beats_the_file_which_beats_the_default() {
    let file = "listen = [\"127.0.0.1:7001\"]\nmax_sessions = 7\n\
                [store]\nredis_prefix = \"from-file\"\nurl = \"memory\"\n";
    assert_eq!(
        std::env::var("CARGO_PKG_NAME").as_deref(),
        Ok("askgate"),
        "the stand-in variable is set"
    );
    let args = merged(&["--listen", "127.0.0.1:7002", "--max-sessions=8"], file).unwrap();
    assert_eq!(args.listen, ["127.0.0.1:7002"], "the flag over the file");
    assert_eq!(args.limits.max_sessions, 8, "the flag over the file");
    assert_eq!(
        args.stored.redis_prefix, "askgate",
        "the variable over the file"
    );
    assert_eq!(
        args.stored.store,
        crate::config::StoreKind::Memory,
        "the file over the default"
    );
    assert_eq!(
        args.limits.tab_queue,
        crate::config::DEFAULT_TAB_QUEUE,
        "the default where nothing is given"
    );
    let args = merged(&["--redis-prefix=from-flag"], file).unwrap();
    assert_eq!(
        args.stored.redis_prefix, "from-flag",
        "the flag over the variable"
    );
    assert_eq!(
        args.listen,
        ["127.0.0.1:7001"],
        "the file where no flag is given"
    );
    assert_eq!(args.limits.max_sessions, 7);
    // A repeatable flag's file values are replaced, not added to.
    let args = merged(&[], "listen = [\"127.0.0.1:1\", \"127.0.0.1:2\"]\n").unwrap();
    assert_eq!(args.listen, ["127.0.0.1:1", "127.0.0.1:2"]);
}

#[test]
fn groups_in_the_file_and_a_groups_flag_are_refused_together() {
    let file = "[groups]\nreviewers = [\"alice@example.com\"]\n";
    let faults = merged(&["--groups", "g.json"], file).unwrap_err();
    assert!(faults[0].ends_with("askgate.toml:1: groups: the file's [groups] and --groups FILE (or ASKGATE_GROUPS) both give groups; give them in one place"), "{faults:?}");
    let data = Scratch::new("data", "");
    let data_dir = data
        .0
        .parent()
        .expect("its directory")
        .display()
        .to_string();
    let args = merged(&["--store=memory", "--data-dir", &data_dir], file).unwrap();
    let people = args.to_config().expect("the groups are taken").people;
    assert!(people.groups.has_member("reviewers", "alice@example.com"));
}

#[test]
fn a_value_serve_refuses_later_is_named_at_its_line() {
    let args = merged(&[], "\n\nmax_frame_bytes = 10\n").unwrap();
    let error = args.to_config().expect_err("too small a frame");
    assert!(error.is::<merge::Invalid>(), "{error:#}");
    assert!(
        format!("{error:#}")
            .contains("askgate.toml:3: max_frame_bytes: --max-frame-bytes must be at least 1024"),
        "{error:#}"
    );
    // Given as a flag, it stays the flag's fault.
    let args = merged(&["--max-frame-bytes=10"], "\n\nmax_frame_bytes = 4096\n").unwrap();
    let error = args.to_config().expect_err("too small a frame");
    assert!(!error.is::<merge::Invalid>(), "{error:#}");
}

/// The example with every `#key = ...` line uncommented.
fn uncommented(example: &str) -> String {
    example
        .lines()
        .map(|line| match line.strip_prefix('#') {
            Some(rest) if rest.starts_with(|c: char| c.is_ascii_lowercase()) => rest,
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_example_has_every_setting_and_reads_back_uncommented() {
    let command = serve();
    let example = example::render(&command);
    let settings = keys::settings(&command);
    let whole = uncommented(&example);
    assert_ne!(whole, example, "something was commented out");
    let read = file::read(&whole, "example.toml", &command, &settings)
        .unwrap_or_else(|faults| panic!("{faults:#?}\n{whole}"));
    for setting in &settings {
        assert!(
            read.values
                .iter()
                .any(|value| value.setting.id == setting.id),
            "{} is not in the example",
            setting.path()
        );
        assert!(example.contains(&format!("# Flag --{}", setting.long)));
    }
    // Read back, every value is what the flags take, together too.
    let words: Vec<String> = read
        .values
        .iter()
        .flat_map(file::FileValue::words)
        .collect();
    let bare = command.mut_args(|arg| arg.env(None::<&'static str>));
    bare.try_get_matches_from(std::iter::once("serve".to_owned()).chain(words))
        .expect("the merged command line parses");
}

#[test]
fn the_example_as_printed_passes_the_whole_check() {
    let scratch = Scratch::new("example", &example::render(&serve()));
    super::command::check(&scratch.0).unwrap_or_else(|faults| panic!("{faults:#?}"));
}

#[test]
fn the_check_judges_the_settings_together() {
    let scratch = Scratch::new("check", "listen = [\"0.0.0.0:0\"]\n");
    let faults = super::command::check(&scratch.0).unwrap_err();
    assert!(
        faults[0].contains("askgate.toml:1: listen: --listen 0.0.0.0:0: refusing to listen"),
        "{faults:?}"
    );
    let scratch = Scratch::new("check", "user_header = \"X-Email\"\n");
    let faults = super::command::check(&scratch.0).unwrap_err();
    assert!(
        faults[0].contains("askgate.toml:1: user_header: --user-header needs"),
        "{faults:?}"
    );
    let scratch = Scratch::new("check", "[store]\nurl = \"redis://127.0.0.1:1\"\n");
    let faults = super::command::check(&scratch.0).unwrap_err();
    assert!(faults[0].contains("needs --audit-key-file"), "{faults:?}");
}

/// `askgate serve --config FILE --`: the file's settings go in before the `--`, where they are
/// still flags.
#[test]
fn a_command_line_ending_with_a_double_dash_still_takes_the_file() {
    let scratch = Scratch::new("dashes", "max_sessions = 7\n");
    let path = scratch.0.display().to_string();
    let argv = ["askgate", "serve", "--config", &path, "--"];
    let cli = match merge::parse(argv.iter().map(Into::into).collect()) {
        Ok(cli) => cli,
        Err(merge::Refused::Clap(error)) => panic!("{error}"),
        Err(merge::Refused::File(faults)) => panic!("{faults:?}"),
    };
    let crate::cli::Command::Serve(args) = cli.command else {
        panic!("not serve");
    };
    assert_eq!(args.limits.max_sessions, 7);
}
