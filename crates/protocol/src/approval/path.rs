//! Error paths into JSON the agent or a tab wrote.

/// `path.key`, or `path["key"]` when the key is not a plain name (so a key holding a dot or
/// a bracket cannot pass for a deeper path).
pub(super) fn key_path(path: &str, key: &str) -> String {
    let plain = key
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    match (plain, path.is_empty()) {
        (true, true) => key.to_owned(),
        (true, false) => format!("{path}.{key}"),
        (false, _) => format!("{path}[{}]", serde_json::Value::from(key)),
    }
}

/// `path[i]`.
pub(super) fn index_path(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_keys_are_dotted_and_others_quoted() {
        assert_eq!(key_path("args", "query"), "args.query");
        assert_eq!(key_path("", "query"), "query");
        assert_eq!(key_path("args", "a.b"), "args[\"a.b\"]");
        assert_eq!(key_path("args", "x\"]"), "args[\"x\\\"]\"]");
        assert_eq!(key_path("args", ""), "args[\"\"]");
        assert_eq!(index_path("calls", 3), "calls[3]");
    }
}
