//! A config file's text read against `serve`'s settings: each key matched to its flag, each
//! value checked by that flag's own value parser (so a range or a set of choices is defined
//! once, on the flag), and every fault named with the file, its line and its key.

use askgate_protocol::people::check_user_name;
use clap::Command;
use clap::error::ErrorKind;
use toml::de::{DeTable, DeValue};

use super::keys::{GROUPS_KEY, Kind, Setting, section_names, suggestion};
use crate::people::groups::check_group_name;

/// What a file sets.
#[derive(Debug, Default)]
pub(super) struct Read {
    /// Each setting it gives, in the file's order.
    pub values: Vec<FileValue>,
    /// The groups of its `[groups]` table, if it has one.
    pub groups: Option<InlineGroups>,
}

/// One setting a file gives.
#[derive(Clone, Debug)]
pub(super) struct FileValue {
    /// Which flag.
    pub setting: Setting,
    /// The line of its key.
    pub line: usize,
    /// Its values as the flag takes them on the command line (one unless repeatable); for a
    /// switch, `true` or `false`.
    pub values: Vec<String>,
}

impl FileValue {
    /// The command-line words that give this setting: `--listen=A --listen=B`; a switch's
    /// flag alone when it is true, nothing when false.
    pub(super) fn words(&self) -> Vec<String> {
        let long = &self.setting.long;
        if self.setting.kind == Kind::Switch {
            return self
                .values
                .iter()
                .filter(|value| *value == "true")
                .map(|_| format!("--{long}"))
                .collect();
        }
        // `--flag=value`, so a value starting with `-` is not taken for a flag.
        self.values
            .iter()
            .map(|value| format!("--{long}={value}"))
            .collect()
    }
}

/// The groups given in the file itself, `[groups]`: each name with its members.
#[derive(Clone, Debug, Default)]
pub(super) struct InlineGroups {
    /// The line of the `groups` key (the `[groups]` header).
    pub line: usize,
    /// Each group, by name.
    pub groups: Vec<(String, Vec<String>)>,
}

/// Reads `text`, which came from `source` (errors start with it), against `command`'s
/// `settings`.
///
/// # Errors
/// Every fault found, one line each, in the file's order: `source:LINE: KEY: what is wrong`.
pub(super) fn read(
    text: &str,
    source: &str,
    command: &Command,
    settings: &[Setting],
) -> Result<Read, Vec<String>> {
    let document = DeTable::parse(text).map_err(|e| {
        let line = e.span().map_or(1, |span| line_of(text, span.start));
        let message = e.message().lines().next().unwrap_or("not TOML").to_owned();
        vec![format!("{source}:{line}: {message}")]
    })?;
    let mut reader = Reader {
        text,
        source,
        settings,
        bare: command
            .clone()
            .mut_args(|arg| arg.env(None::<&'static str>)),
        read: Read::default(),
        faults: Vec::new(),
    };
    for (key, value) in document.get_ref() {
        let name = key.get_ref().as_ref();
        let line = line_of(text, key.span().start);
        match value.get_ref() {
            DeValue::Table(groups) if name == GROUPS_KEY => reader.groups(line, groups),
            DeValue::Table(table) if section_names().any(|section| section == name) => {
                for (key, value) in table {
                    let line = line_of(text, key.span().start);
                    reader.setting(Some(name), key.get_ref(), line, value.get_ref());
                }
            }
            _ if section_names().any(|section| section == name) => {
                reader.fault(
                    line,
                    name,
                    &format!("expected a table (the [{name}] section)"),
                );
            }
            value => reader.setting(None, name, line, value),
        }
    }
    if reader.faults.is_empty() {
        // The parser's tables are sorted by key; the file's order reads better.
        reader.read.values.sort_by_key(|value| value.line);
        Ok(reader.read)
    } else {
        reader.faults.sort_by_key(|(line, _)| *line);
        Err(reader.faults.into_iter().map(|(_, fault)| fault).collect())
    }
}

/// The walk over one file.
struct Reader<'a> {
    text: &'a str,
    source: &'a str,
    settings: &'a [Setting],
    /// `command` without its environment variables, to try values on.
    bare: Command,
    read: Read,
    /// Each fault with its line, to be sorted.
    faults: Vec<(usize, String)>,
}

impl Reader<'_> {
    fn fault(&mut self, line: usize, path: &str, message: &str) {
        self.faults
            .push((line, format!("{}:{line}: {path}: {message}", self.source)));
    }

    /// The key `key` in `section` (`None`: at the top), with its value.
    fn setting(&mut self, section: Option<&str>, key: &str, line: usize, value: &DeValue<'_>) {
        let path = match section {
            Some(section) => format!("{section}.{key}"),
            None => key.to_owned(),
        };
        let Some(setting) = self
            .settings
            .iter()
            .find(|setting| setting.section == section && setting.key == key)
        else {
            let message = match suggestion(self.settings, section, key) {
                Some(near) => format!("unknown setting (did you mean {near}?)"),
                None => "unknown setting (`askgate config example` lists every one)".to_owned(),
            };
            return self.fault(line, &path, &message);
        };
        let values = match (value, setting.many) {
            (DeValue::Array(items), true) => {
                let mut values = Vec::with_capacity(items.len());
                for (index, item) in items.iter().enumerate() {
                    let item_line = line_of(self.text, item.span().start);
                    match scalar(setting.kind, item.get_ref()) {
                        Some(value) => values.push(value),
                        None => {
                            let expected = format!("expected {}", setting.kind.name());
                            self.fault(item_line, &format!("{path}[{index}]"), &expected);
                        }
                    }
                }
                values
            }
            (value, many) => match scalar(setting.kind, value) {
                Some(value) => vec![value],
                None => {
                    let list = if many { " or a list of them" } else { "" };
                    let expected = format!("expected {}{list}", setting.kind.name());
                    return self.fault(line, &path, &expected);
                }
            },
        };
        if setting.kind != Kind::Switch {
            for value in &values {
                if let Err(why) = self.parses(setting, value) {
                    self.fault(line, &path, &why);
                }
            }
        }
        self.read.values.push(FileValue {
            setting: setting.clone(),
            line,
            values,
        });
    }

    /// Whether the flag's own value parser takes `value`; else what it said. (Through a
    /// command line of that one flag, on `serve` without its environment variables: clap
    /// keeps a parser's direct call to itself.)
    fn parses(&self, setting: &Setting, value: &str) -> Result<(), String> {
        let argv = [
            self.bare.get_name().to_owned(),
            format!("--{}={value}", setting.long),
        ];
        match self.bare.clone().try_get_matches_from(argv) {
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::InvalidValue | ErrorKind::ValueValidation
                ) =>
            {
                Err(clap_reason(&e))
            }
            // Any other refusal (one flag needing another) is the merged command line's.
            _ => Ok(()),
        }
    }

    /// The `[groups]` table: each key a group name, each value a list of people's names,
    /// judged as `--groups FILE`'s are.
    fn groups(&mut self, line: usize, table: &DeTable<'_>) {
        let mut groups = Vec::with_capacity(table.len());
        for (name, members) in table {
            let name_line = line_of(self.text, name.span().start);
            let name = name.get_ref().as_ref();
            let path = format!("{GROUPS_KEY}.{name}");
            if let Err(e) = check_group_name(name) {
                self.fault(name_line, &path, &e);
                continue;
            }
            let DeValue::Array(items) = members.get_ref() else {
                self.fault(name_line, &path, "expected a list of people's names");
                continue;
            };
            let mut names = Vec::with_capacity(items.len());
            for (index, item) in items.iter().enumerate() {
                let item_line = line_of(self.text, item.span().start);
                let item_path = format!("{path}[{index}]");
                match item.get_ref() {
                    DeValue::String(member) => match check_user_name(member) {
                        Ok(()) => names.push(member.to_string()),
                        Err(e) => self.fault(item_line, &item_path, &e.to_string()),
                    },
                    _ => self.fault(item_line, &item_path, "expected a string"),
                }
            }
            groups.push((name.to_owned(), names));
        }
        self.read.groups = Some(InlineGroups { line, groups });
    }
}

/// `value` as the command line would give it, if it is of `kind`.
fn scalar(kind: Kind, value: &DeValue<'_>) -> Option<String> {
    match (kind, value) {
        (Kind::Switch, DeValue::Boolean(on)) => Some(on.to_string()),
        (Kind::Text, DeValue::String(text)) => Some(text.to_string()),
        (Kind::Integer | Kind::Number, DeValue::Integer(integer)) => {
            let digits = integer.as_str().replace('_', "");
            // Hexadecimal, octal and binary integers are written in decimal for the parser;
            // one too large even for i128 goes as written, for the parser to refuse.
            Some(
                i128::from_str_radix(&digits, integer.radix())
                    .map_or(digits, |number| number.to_string()),
            )
        }
        (Kind::Number, DeValue::Float(float)) => Some(float.as_str().replace('_', "")),
        _ => None,
    }
}

/// What a clap error says about a value, on one line, without clap's advice to try `--help`.
pub(super) fn clap_reason(error: &clap::Error) -> String {
    let said = error.to_string();
    let lines: Vec<&str> = said
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with("For more information"))
        .collect();
    let joined = lines.join(" ");
    joined
        .strip_prefix("error: ")
        .map_or(joined.clone(), str::to_owned)
}

/// The line (from 1) that byte `offset` of `text` is on.
pub(super) fn line_of(text: &str, offset: usize) -> usize {
    let before = text.get(..offset).unwrap_or(text);
    before.matches('\n').count() + 1
}
