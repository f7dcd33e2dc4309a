//! `--groups FILE`: named groups of people, so an ask may let `group:NAME` answer.
//!
//! The file is JSON, an object from group name to its members' names:
//! `{"reviewers": ["alice@example.com", "bob@example.com"]}`. It is read once at start; every
//! node of a deployment should be given the same file.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use askgate_protocol::people::check_user_name;
use serde_json::Value;

/// Longest group name, in characters.
pub const MAX_GROUP_NAME_CHARS: usize = 64;

/// The groups, by name.
#[derive(Clone, Debug, Default)]
pub struct Groups {
    members: HashMap<String, HashSet<String>>,
}

impl Groups {
    /// Reads `path`.
    ///
    /// # Errors
    /// It cannot be read, or is not a groups file (the message names the path in it).
    pub fn load(path: &Path) -> Result<Groups, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("reading the groups file {}: {e}", path.display()))?;
        Groups::parse(&text).map_err(|e| format!("the groups file {}: {e}", path.display()))
    }

    /// Reads a groups file's text.
    ///
    /// # Errors
    /// What is wrong, and where (`reviewers[1]: must not be empty`).
    pub fn parse(text: &str) -> Result<Groups, String> {
        let value: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        let Value::Object(groups) = value else {
            return Err(
                "must be a JSON object from group name to a list of members' names".to_owned(),
            );
        };
        let mut members = HashMap::with_capacity(groups.len());
        for (name, list) in groups {
            check_group_name(&name).map_err(|e| format!("{name:?}: {e}"))?;
            let Value::Array(list) = list else {
                return Err(format!("{name}: must be a list of names"));
            };
            let mut names = HashSet::with_capacity(list.len());
            for (index, member) in list.iter().enumerate() {
                let Value::String(member) = member else {
                    return Err(format!("{name}[{index}]: must be a string"));
                };
                check_user_name(member).map_err(|e| format!("{name}[{index}]: {e}"))?;
                names.insert(member.clone());
            }
            members.insert(name, names);
        }
        Ok(Groups { members })
    }

    /// Adds the group `name` (from the notify file).
    ///
    /// # Errors
    /// A group of that name exists already.
    pub fn add_group(&mut self, name: &str, members: Vec<String>) -> Result<(), String> {
        if self.members.contains_key(name) {
            return Err(format!(
                "group {name:?} is defined twice (also in the --groups file, or above)"
            ));
        }
        self.members
            .insert(name.to_owned(), members.into_iter().collect());
        Ok(())
    }

    /// The members of the group `name`, sorted (none if there is no such group).
    pub fn members_of(&self, name: &str) -> Vec<String> {
        let mut members: Vec<String> = self
            .members
            .get(name)
            .map(|m| m.iter().cloned().collect())
            .unwrap_or_default();
        members.sort();
        members
    }

    /// Whether there is a group `name`.
    pub fn has_group(&self, name: &str) -> bool {
        self.members.contains_key(name)
    }

    /// Whether `user` is a member of the group `name`.
    pub fn has_member(&self, name: &str, user: &str) -> bool {
        self.members.get(name).is_some_and(|m| m.contains(user))
    }

    /// The groups `user` is a member of, by name.
    pub fn groups_of(&self, user: &str) -> Vec<String> {
        let mut names: Vec<String> = self
            .members
            .iter()
            .filter(|(_, members)| members.contains(user))
            .map(|(name, _)| name.clone())
            .collect();
        names.sort();
        names
    }
}

pub(crate) fn check_group_name(name: &str) -> Result<(), String> {
    let fits = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    if name.is_empty() || name.chars().count() > MAX_GROUP_NAME_CHARS || !name.chars().all(fits) {
        return Err(format!(
            "a group name is 1 to {MAX_GROUP_NAME_CHARS} letters, digits, `.`, `_` or `-`"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_groups_file_is_read_and_its_errors_name_their_place() {
        let groups = Groups::parse(r#"{"ops": ["a@x", "b@x"], "empty": []}"#).unwrap();
        assert!(groups.has_member("ops", "b@x"));
        assert!(!groups.has_member("ops", "c@x"));
        assert!(groups.has_group("empty"));
        assert!(!groups.has_group("nope"));
        assert_eq!(
            Groups::parse(r#"{"ops": ["a@x", ""]}"#).unwrap_err(),
            "ops[1]: must not be empty"
        );
        assert_eq!(
            Groups::parse(r#"{"ops": ["a@x", 3]}"#).unwrap_err(),
            "ops[1]: must be a string"
        );
        assert!(
            Groups::parse(r#"{"a b": []}"#)
                .unwrap_err()
                .contains("a group name")
        );
        assert!(Groups::parse("[]").is_err());
    }
}
