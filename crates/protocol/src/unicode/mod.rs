//! Text rules the dialects depend on, frozen at the Unicode version of their reference Python.
//!
//! pydantic-ai-harness on CPython 3.11 judges text by Unicode 14.0; Rust's own tables are
//! newer. A code point assigned after 14.0 is unassigned to the reference, so the harness
//! rejects it, and so must askgate: otherwise it could hand back text a Python host refuses.
//! The tables in [`tables`](self) are generated from CPython 3.11 by a committed script.
//!
//! - [`tables`]: Unicode 14.0 character classes as CPython 3.11 sees them (generated).
//! - [`bitmap`]: one bit per code point over planes 0–2, built once from the tables.
//! - [`classes`]: Python's `isprintable`/`isspace` and the harness's printable rule.
//! - [`fold`]: when two headers or labels count as the same.
//! - [`repr`]: Python's `repr(str)`, for error texts that read as the harness's.

mod bitmap;
mod classes;
mod fold;
mod repr;
mod tables;

pub use classes::{
    CharClass, TextMeasure, UNICODE_VERSION, classify, first_forbidden, harness_allows,
    is_plain_ascii, is_py_printable, is_py_whitespace, is_space_separator, measure_text,
    py_is_blank,
};
pub use fold::uniqueness_key;
pub(crate) use repr::push_repr;
pub use repr::{py_list_repr, py_repr};
