//! What the dialect rule tests share: a dialect by name, errors as `(path, code)` pairs, and
//! the property tests' configuration.

use askgate_protocol::{Dialect, ErrorCode, QuestionSet, ValidationErrors};
use proptest::test_runner::{Config, FileFailurePersistence};
use serde_json::Value;

/// A registered dialect.
pub(crate) fn dialect(name: &str) -> Dialect {
    Dialect::parse(name).unwrap_or_else(|e| panic!("{e}"))
}

/// Each error's path and code, in order.
pub(crate) fn paths_and_codes(errors: ValidationErrors) -> Vec<(String, ErrorCode)> {
    errors
        .into_vec()
        .into_iter()
        .map(|e| (e.path, e.code))
        .collect()
}

/// One error at `path` with `code`.
pub(crate) fn one(path: &str, code: ErrorCode) -> Vec<(String, ErrorCode)> {
    vec![(path.to_owned(), code)]
}

/// The errors of a request the dialect must refuse.
pub(crate) fn request_errors(dialect: Dialect, request: &Value) -> Vec<(String, ErrorCode)> {
    paths_and_codes(QuestionSet::validate(dialect, request).expect_err(&request.to_string()))
}

/// The errors of an answer `set` must refuse.
pub(crate) fn answer_errors(set: &QuestionSet, response: &Value) -> Vec<(String, ErrorCode)> {
    paths_and_codes(
        set.settle_answer(response)
            .expect_err(&response.to_string()),
    )
}

/// proptest's configuration for a property: `cases` of them unless `PROPTEST_CASES` asks for
/// another number (`bench/soak.sh` asks for many more), a seed from `PROPTEST_RNG_SEED` when
/// set, and failing cases saved beside the module's source as `<module>.proptest-regressions`
/// and run again first. proptest's default would look for them under a
/// `tests/proptest-regressions/` folder, since this folder has a `main.rs`.
pub(crate) fn proptest_config(cases: u32) -> Config {
    let defaults = Config::default();
    Config {
        cases: if std::env::var_os("PROPTEST_CASES").is_some() {
            defaults.cases
        } else {
            cases
        },
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..defaults
    }
}
