//! `askgate config example`: a config file with every `serve` setting, written from the
//! flags' own definitions (help, default, environment variable), so that it cannot drift from
//! them and a flag added later is in it.

use std::fmt::Write as _;

use clap::{Arg, Command};

use super::keys::{self, Kind, Setting};

/// The width comments are wrapped to, `# ` included.
const WIDTH: usize = 96;

/// The example for `command` (`serve`): every setting, top-level ones first, then each
/// section's; a setting with a default set to it, one without commented out as `#key = ...`
/// (no space after the `#`, unlike the prose) with a placeholder of its type.
pub(super) fn render(command: &Command) -> String {
    let settings = keys::settings(command);
    let mut out = String::new();
    for line in [
        "askgate serve's settings, for `askgate serve --config FILE` (or ASKGATE_CONFIG=FILE).",
        "Written by `askgate config example` from serve's own flags: each key is its flag's long",
        "name with `-` as `_` (in [store] and [notify] without the section's name in front).",
        "A flag on the command line, or its environment variable, overrides a setting here; a",
        "setting here overrides the default. Settings without a default are commented out",
        "(`#key = ...`, a placeholder of the right type): remove the `#` and give the value.",
        "Relative paths are taken from the working directory, as on the command line.",
        "Check a file with `askgate config check FILE`.",
    ] {
        let _ = writeln!(out, "# {line}");
    }
    let sections = std::iter::once(None).chain(keys::section_names().map(Some));
    for section in sections {
        if let Some(name) = section {
            let _ = write!(out, "\n[{name}]\n");
        }
        for setting in settings.iter().filter(|setting| setting.section == section) {
            let Some(arg) = command
                .get_arguments()
                .find(|arg| arg.get_id() == setting.id.as_str())
            else {
                continue;
            };
            out.push('\n');
            write_setting(&mut out, setting, arg);
        }
    }
    out.push('\n');
    for line in [
        "[groups]: the groups an ask may let answer (`group:NAME`), each a list of people's",
        "names, given here instead of in the `groups` file (not both; `--groups` then refuses).",
        "",
        "[groups]",
        "reviewers = [\"alice@example.com\", \"bob@example.com\"]",
    ] {
        let _ = writeln!(out, "{}", format!("# {line}").trim_end());
    }
    out
}

/// One setting: its help as comments, its flag and variable, then `key = default`.
fn write_setting(out: &mut String, setting: &Setting, arg: &Arg) {
    let help = arg
        .get_long_help()
        .or_else(|| arg.get_help())
        .map(ToString::to_string)
        .unwrap_or_default();
    // Clap keeps a one-paragraph help without its final full stop (for `--help`'s columns);
    // a comment is prose again.
    let help = match help.trim_end().chars().last() {
        Some('.' | '!' | '?' | ':') | None => help.trim_end().to_owned(),
        Some(_) => format!("{}.", help.trim_end()),
    };
    for (index, paragraph) in help.split("\n\n").enumerate() {
        if index > 0 {
            out.push_str("#\n");
        }
        wrap(out, paragraph);
    }
    let env = arg
        .get_env()
        .map(|name| format!(", environment {}", name.to_string_lossy()))
        .unwrap_or_default();
    let _ = writeln!(out, "# Flag --{}{env}.", setting.long);
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|value| value.to_string_lossy().into_owned())
        .collect();
    let (commented, values) = match (setting.kind, defaults.is_empty()) {
        (Kind::Switch, _) => (
            false,
            vec![defaults.first().map_or("false".into(), Clone::clone)],
        ),
        (_, false) => (false, defaults),
        (_, true) => (true, vec![placeholder(setting.kind, arg)]),
    };
    let rendered: Vec<String> = values
        .iter()
        .map(|value| match setting.kind {
            Kind::Text => quoted(value),
            Kind::Switch | Kind::Integer | Kind::Number => value.clone(),
        })
        .collect();
    let value = if setting.many {
        format!("[{}]", rendered.join(", "))
    } else {
        rendered.join(", ")
    };
    let mark = if commented { "#" } else { "" };
    let _ = writeln!(out, "{mark}{} = {value}", setting.key);
}

/// A value of `kind` for a setting without a default: its first choice, or its value name
/// (`FILE`, `HOST:PORT`).
fn placeholder(kind: Kind, arg: &Arg) -> String {
    match kind {
        Kind::Switch => "false".to_owned(),
        Kind::Integer => "1".to_owned(),
        Kind::Number => "1.0".to_owned(),
        Kind::Text => arg
            .get_possible_values()
            .first()
            .map(|choice| choice.get_name().to_owned())
            .or_else(|| {
                arg.get_value_names()
                    .and_then(|names| names.first())
                    .map(ToString::to_string)
            })
            .unwrap_or_else(|| arg.get_id().as_str().to_uppercase()),
    }
}

/// `text` as a TOML basic string.
fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `paragraph` as `# ` comment lines of at most [`WIDTH`] characters (a longer word alone).
fn wrap(out: &mut String, paragraph: &str) {
    let mut line = String::from("#");
    for word in paragraph.split_whitespace() {
        if line.len() > 1 && line.len() + 1 + word.len() > WIDTH {
            out.push_str(&line);
            out.push('\n');
            line = String::from("#");
        }
        line.push(' ');
        line.push_str(word);
    }
    if line.len() > 1 {
        out.push_str(&line);
        out.push('\n');
    }
}
