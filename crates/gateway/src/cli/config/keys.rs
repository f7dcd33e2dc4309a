//! Where each `serve` flag sits in a config file, read off the flags' own clap definitions so
//! that a flag added later has its key without anyone listing it.
//!
//! A flag's key is its long name with `-` turned into `_`. The flags of a flattened group with
//! a section of its own (`StoreFlags`: `[store]`, `NotifyArgs`: `[notify]`) sit in that
//! section, without the section's name in front (`--notify-retry-for-s`: `[notify]
//! retry_for_s`); the flag named like the section takes the section's `own_key`
//! (`--store`: `[store] url`, `--notify`: `[notify] file`). Every other flag is a top-level
//! key. `[groups]` is not a flag's section: it is `groups` as a table, the groups themselves
//! instead of `--groups FILE`.

use std::any::TypeId;

use clap::{Arg, ArgAction, Command};

/// The id of `--config` itself, the one `serve` flag a config file cannot set.
pub(super) const CONFIG_ARG: &str = "config";

/// The key that, as a table, holds the groups themselves (`[groups]`), and as a string is
/// `--groups FILE`.
pub(super) const GROUPS_KEY: &str = "groups";

/// A flattened group of flags that has a section of its own in the file.
struct Section {
    /// The clap group the derive makes for the flattened struct (its type's name).
    group: &'static str,
    /// The section's name in the file.
    name: &'static str,
    /// The key of the flag whose long name is the section's name.
    own_key: &'static str,
}

/// The sections. Any other flattened group (the limits, the people flags) stays at the top,
/// where the examples put them (`max_connections_per_address = 256`).
const SECTIONS: [Section; 2] = [
    Section {
        group: "StoreFlags",
        name: "store",
        own_key: "url",
    },
    Section {
        group: "NotifyArgs",
        name: "notify",
        own_key: "file",
    },
];

/// What a setting's value must be in TOML.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// `true` or `false` (a switch).
    Switch,
    /// A TOML integer.
    Integer,
    /// A TOML integer or float.
    Number,
    /// A TOML string.
    Text,
}

impl Kind {
    /// What a value of this kind is called in an error: `expected {name}`.
    pub(super) fn name(self) -> &'static str {
        match self {
            Kind::Switch => "true or false",
            Kind::Integer => "an integer",
            Kind::Number => "a number",
            Kind::Text => "a string",
        }
    }
}

/// One `serve` flag as a config file has it.
#[derive(Clone, Debug)]
pub(super) struct Setting {
    /// The clap argument's id.
    pub id: String,
    /// Its long name, without the dashes (`max-connections-per-address`).
    pub long: String,
    /// Its section, if it is not at the top.
    pub section: Option<&'static str>,
    /// Its key within the section (or at the top).
    pub key: String,
    /// What its value must be.
    pub kind: Kind,
    /// Whether it is repeatable (a list in the file).
    pub many: bool,
}

impl Setting {
    /// Its place in the file, as errors name it: `store.url`, `max_sessions`.
    pub(super) fn path(&self) -> String {
        match self.section {
            Some(section) => format!("{section}.{}", self.key),
            None => self.key.clone(),
        }
    }
}

/// `serve`'s clap command, from the whole command line's definitions.
pub(super) fn serve_command() -> Command {
    let cli = <super::super::Cli as clap::CommandFactory>::command();
    cli.find_subcommand("serve")
        .cloned()
        .unwrap_or_else(|| Command::new("serve"))
}

/// Every setting of `command` (`serve`, or `demo`, which has serve's flags), in the order
/// `--help` lists them. Left out: `--config`, `--help`, and hidden flags (which are kept for
/// development and not offered to operators).
pub(super) fn settings(command: &Command) -> Vec<Setting> {
    command
        .get_arguments()
        .filter(|arg| arg.get_id() != CONFIG_ARG && !arg.is_hide_set())
        .filter(|arg| !matches!(arg.get_action(), ArgAction::Help | ArgAction::HelpLong))
        .filter_map(|arg| {
            let long = arg.get_long()?.to_owned();
            let name = long.replace('-', "_");
            let section = SECTIONS
                .iter()
                .find(|section| in_group(command, arg, section.group));
            let key = match section {
                Some(section) if name == section.name => section.own_key.to_owned(),
                Some(section) => name
                    .strip_prefix(section.name)
                    .and_then(|rest| rest.strip_prefix('_'))
                    .unwrap_or(&name)
                    .to_owned(),
                None => name,
            };
            Some(Setting {
                id: arg.get_id().to_string(),
                long,
                section: section.map(|section| section.name),
                key,
                kind: kind(arg),
                many: matches!(arg.get_action(), ArgAction::Append),
            })
        })
        .collect()
}

/// The section names, for the suggestions of an unknown key.
pub(super) fn section_names() -> impl Iterator<Item = &'static str> {
    SECTIONS.iter().map(|section| section.name)
}

/// Whether `arg` belongs to the clap group `group`.
fn in_group(command: &Command, arg: &Arg, group: &str) -> bool {
    command
        .get_groups()
        .filter(|found| found.get_id() == group)
        .any(|found| found.get_args().any(|id| id == arg.get_id()))
}

/// What `arg`'s value must be, from its action and the type its value parser yields.
fn kind(arg: &Arg) -> Kind {
    if matches!(arg.get_action(), ArgAction::SetTrue | ArgAction::SetFalse) {
        return Kind::Switch;
    }
    let yields = arg.get_value_parser().type_id();
    let integers = [
        TypeId::of::<u8>(),
        TypeId::of::<u16>(),
        TypeId::of::<u32>(),
        TypeId::of::<u64>(),
        TypeId::of::<usize>(),
        TypeId::of::<i8>(),
        TypeId::of::<i16>(),
        TypeId::of::<i32>(),
        TypeId::of::<i64>(),
        TypeId::of::<isize>(),
    ];
    if integers.iter().any(|integer| yields == *integer) {
        Kind::Integer
    } else if yields == TypeId::of::<f64>() || yields == TypeId::of::<f32>() {
        Kind::Number
    } else {
        Kind::Text
    }
}

/// The nearest known key to the unknown `key` found at `scope` (`None`: the top; else a
/// section), as a path to suggest: a setting's key or a section's name a few typing slips
/// away, or the same setting written where it does not go (`data_dir` at the top is
/// `store.data_dir`; `notify_retry_for_s` is `notify.retry_for_s`).
pub(super) fn suggestion(settings: &[Setting], scope: Option<&str>, key: &str) -> Option<String> {
    if let Some(elsewhere) = settings.iter().find(|setting| {
        (setting.section != scope && setting.key == key) || setting.long.replace('-', "_") == key
    }) {
        return Some(elsewhere.path());
    }
    let here = settings
        .iter()
        .filter(|setting| setting.section == scope)
        .map(|setting| (setting.key.as_str(), setting.path()));
    let sections = scope
        .is_none()
        .then(|| {
            section_names()
                .chain([GROUPS_KEY])
                .map(|name| (name, name.to_owned()))
        })
        .into_iter()
        .flatten();
    // A third of the key's length, at least 1 and at most 4 edits: close enough to be a slip,
    // not a different word.
    let reach = (key.chars().count() / 3).clamp(1, 4);
    here.chain(sections)
        .map(|(candidate, path)| (edit_distance(key, candidate), path))
        .filter(|(distance, _)| *distance <= reach)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, path)| path)
}

/// Levenshtein distance: insertions, deletions and substitutions, one character each.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (diagonal + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(above + 1);
            diagonal = above;
        }
    }
    row[b.len()]
}
