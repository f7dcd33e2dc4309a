//! Every dialect askgate serves, and [`Dialect`], a handle on one by name.
//!
//! Adding a dialect is its folder and one line in [`DIALECTS`].

use std::fmt;
use std::hash::{Hash, Hasher};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::DialectFace;

/// Every dialect, in the order they are listed to people.
static DIALECTS: [&dyn DialectFace; 5] = [
    &crate::harness::HarnessFace,
    &crate::deepagents::DeepagentsFace,
    &crate::approval::ApprovalFace,
    &crate::form::FormFace,
    &crate::claude::ClaudeFace,
];

/// One of the dialects askgate serves; compared, hashed and written by its name.
#[derive(Clone, Copy)]
pub struct Dialect(&'static dyn DialectFace);

impl Dialect {
    /// pydantic-ai-harness `ask_user_question`: what an ask without `dialect` means.
    pub const HARNESS: Dialect = Dialect(&crate::harness::HarnessFace);

    /// Every dialect.
    pub fn all() -> impl Iterator<Item = Dialect> {
        DIALECTS.iter().map(|face| Dialect(*face))
    }

    /// The names of every dialect, quoted and joined, for messages.
    pub fn names() -> String {
        Dialect::all()
            .map(|d| Value::from(d.as_str()).to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Finds a dialect by its wire name.
    ///
    /// # Errors
    /// An unknown name, in words that list the known ones.
    pub fn parse(name: &str) -> Result<Self, String> {
        Dialect::all().find(|d| d.as_str() == name).ok_or_else(|| {
            format!(
                "unknown dialect {}; expected one of {}",
                Value::from(name),
                Dialect::names()
            )
        })
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        self.0.name()
    }

    /// The dialect's face.
    pub fn face(self) -> &'static dyn DialectFace {
        self.0
    }
}

impl Default for Dialect {
    fn default() -> Self {
        Dialect::HARNESS
    }
}

impl PartialEq for Dialect {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Dialect {}

impl Hash for Dialect {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl fmt::Debug for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Dialect {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Dialect {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        Dialect::parse(&name).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_round_trip() {
        let names: Vec<_> = Dialect::all().map(Dialect::as_str).collect();
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        for dialect in Dialect::all() {
            assert_eq!(Dialect::parse(dialect.as_str()), Ok(dialect));
            let written = serde_json::to_string(&dialect).unwrap();
            assert_eq!(serde_json::from_str::<Dialect>(&written).unwrap(), dialect);
        }
    }

    #[test]
    fn an_unknown_name_lists_the_known_ones() {
        let message = Dialect::parse("klingon").unwrap_err();
        assert!(message.starts_with("unknown dialect \"klingon\"; expected one of \"harness\""));
        assert!(message.contains("\"approval\""), "{message}");
        assert!(serde_json::from_str::<Dialect>("\"klingon\"").is_err());
    }
}
