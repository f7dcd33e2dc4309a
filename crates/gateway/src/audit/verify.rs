//! Walking a session's chain: each entry must be shaped as sealed, name its session, come
//! next in number, point at the hash before it, and hash to its own `hash`. The first entry
//! that does not is named, with what is wrong with it.

use serde_json::Value;

use super::chain::{ChainKey, GENESIS, read_line};

/// The first broken entry of a chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Broken {
    /// The session whose chain it is.
    pub session: String,
    /// The entry's place in the trail as kept (1 for the first line).
    pub position: u64,
    /// Its `seq`, when it could be read.
    pub seq: Option<u64>,
    /// What is wrong.
    pub why: String,
}

impl std::fmt::Display for Broken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.seq {
            Some(seq) => write!(
                f,
                "session {}: entry seq {seq} (line {} of its trail): {}",
                self.session, self.position, self.why
            ),
            None => write!(
                f,
                "session {}: line {} of its trail: {}",
                self.session, self.position, self.why
            ),
        }
    }
}

/// Checks one session's chain, an entry at a time, oldest first.
#[derive(Debug)]
pub struct ChainCheck {
    session: String,
    position: u64,
    prev: String,
    /// How hashes are recomputed; `None`: they are not (a keyed chain checked without its
    /// key: shape, numbering and links only).
    key: Option<ChainKey>,
}

impl ChainCheck {
    /// A check of `session`'s unkeyed chain, from its first entry.
    pub fn new(session: &str) -> ChainCheck {
        ChainCheck::with_key(session, Some(ChainKey::Unkeyed))
    }

    /// A check of `session`'s chain hashed as `key` says (`None`: hashes not recomputed).
    pub fn with_key(session: &str, key: Option<ChainKey>) -> ChainCheck {
        ChainCheck {
            session: session.to_owned(),
            position: 0,
            prev: GENESIS.to_owned(),
            key,
        }
    }

    /// The next entry.
    ///
    /// # Errors
    /// It breaks the chain, and how.
    pub fn next(&mut self, line: &str) -> Result<(), Broken> {
        self.position += 1;
        let broken = |seq, why: String| Broken {
            session: self.session.clone(),
            position: self.position,
            seq,
            why,
        };
        let read = read_line(line).map_err(|why| broken(None, why.to_owned()))?;
        let seq = Some(read.seq);
        let value: Value = serde_json::from_str(line)
            .map_err(|e| broken(seq, format!("not JSON ({e}): the entry was changed")))?;
        if value.get("session").and_then(Value::as_str) != Some(self.session.as_str()) {
            return Err(broken(
                seq,
                "it names another session: the entry was changed or moved".to_owned(),
            ));
        }
        if read.seq != self.position {
            return Err(broken(
                seq,
                format!(
                    "expected seq {} here: an entry before it is missing, or entries were reordered",
                    self.position
                ),
            ));
        }
        if read.prev != self.prev {
            return Err(broken(
                seq,
                "its prev is not the hash of the entry before it: that entry was changed or removed"
                    .to_owned(),
            ));
        }
        if self
            .key
            .as_ref()
            .is_some_and(|key| !read.hash_holds_with(key))
        {
            return Err(broken(
                seq,
                "its hash does not match its contents: the entry was changed".to_owned(),
            ));
        }
        read.hash.clone_into(&mut self.prev);
        Ok(())
    }

    /// How many entries held.
    pub fn checked(&self) -> u64 {
        self.position
    }

    /// The hash of the last entry that held (the genesis before any).
    pub fn last_hash(&self) -> &str {
        &self.prev
    }
}

#[cfg(test)]
mod tests {
    use super::super::chain::seal;
    use super::*;

    fn tail(event: &str) -> String {
        format!(r#""session":"s","id":"r","event":"{event}","user":null,"tab":null"#)
    }

    fn trail() -> Vec<String> {
        let mut prev = GENESIS.to_owned();
        let mut lines = Vec::new();
        for (seq, event) in (1..).zip(["asked", "timed_out", "acked"]) {
            let sealed = seal(&prev, seq, 1_000 + seq, &tail(event));
            prev = sealed.hash;
            lines.push(sealed.line);
        }
        lines
    }

    fn first_broken(lines: &[String]) -> Option<Broken> {
        let mut check = ChainCheck::new("s");
        lines.iter().find_map(|line| check.next(line).err())
    }

    #[test]
    fn a_whole_chain_holds() {
        assert_eq!(first_broken(&trail()), None);
    }

    #[test]
    fn an_edit_a_removal_or_a_swap_is_named() {
        let mut edited = trail();
        edited[1] = edited[1].replace("timed_out", "answered");
        let broken = first_broken(&edited).unwrap();
        assert_eq!((broken.seq, broken.position), (Some(2), 2));
        assert!(
            broken.why.contains("does not match its contents"),
            "{broken}"
        );

        let mut removed = trail();
        removed.remove(1);
        let broken = first_broken(&removed).unwrap();
        assert_eq!((broken.seq, broken.position), (Some(3), 2));

        let mut swapped = trail();
        swapped.swap(0, 1);
        assert_eq!(first_broken(&swapped).unwrap().position, 1);

        let mut moved = trail();
        moved[2] = moved[2].replace(r#""session":"s""#, r#""session":"t""#);
        assert!(
            first_broken(&moved)
                .unwrap()
                .why
                .contains("another session")
        );
    }
}
