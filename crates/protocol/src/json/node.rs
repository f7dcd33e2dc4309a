//! A JSON tree that borrows its strings from the text, and [`JsonView`], the read-only face
//! the validators take of it or of a `serde_json::Value`.
//!
//! Building a `Value` costs a hash map per object and a string per field; most of that work is
//! wasted on arguments that are judged once and dropped. A [`Node`] holds the same data as the
//! `Value` serde_json would build from the same text: a repeated key keeps its first place and
//! its last value, and numbers are serde_json's own.

use serde_json::{Number, Value};

use crate::json::scan::Scanner;

/// Deepest nesting built; serde_json refuses 128, and past this the caller uses serde_json.
const MAX_DEPTH: usize = 100;

/// Most keys per object; past this the caller uses serde_json, whose map finds a repeated key
/// in constant time.
const MAX_KEYS: usize = 32;

/// A JSON value whose strings borrow from the text where they were written without escapes.
#[derive(Debug, PartialEq)]
pub enum Node<'a> {
    /// `null`
    Null,
    /// `true` or `false`
    Bool(bool),
    /// A number, as serde_json reads it.
    Number(Number),
    /// A string.
    String(std::borrow::Cow<'a, str>),
    /// A list.
    Array(Vec<Node<'a>>),
    /// An object's fields in the order a `serde_json::Map` keeps them.
    Object(Vec<(&'a str, Node<'a>)>),
}

impl<'a> Node<'a> {
    /// The value `text` holds, or `None` where serde_json must read it (not JSON, keys with
    /// escapes, nesting or objects larger than this reader takes).
    pub fn parse(text: &'a str) -> Option<Node<'a>> {
        let mut scanner = Scanner::new(text);
        let node = read(&mut scanner, 0)?;
        scanner.end()?;
        Some(node)
    }

    /// The value where `scanner` stands, inside a larger text; `None` as for [`Node::parse`],
    /// the scanner then left anywhere.
    pub fn read_at(scanner: &mut Scanner<'a>) -> Option<Node<'a>> {
        read(scanner, 0)
    }
}

fn read<'a>(scanner: &mut Scanner<'a>, depth: usize) -> Option<Node<'a>> {
    if depth == MAX_DEPTH {
        return None;
    }
    Some(match scanner.peek()? {
        b'{' => {
            let mut fields: Vec<(&'a str, Node<'a>)> = Vec::new();
            scanner.object(|scanner, key| {
                let value = read(scanner, depth + 1)?;
                // As `Map::insert`: a repeated key keeps its place and takes the new value.
                if let Some(field) = fields.iter_mut().find(|(k, _)| *k == key) {
                    field.1 = value;
                } else if fields.len() < MAX_KEYS {
                    fields.push((key, value));
                } else {
                    return None;
                }
                Some(())
            })?;
            Node::Object(fields)
        }
        b'[' => {
            let mut items = Vec::new();
            scanner.array(|scanner| {
                items.push(read(scanner, depth + 1)?);
                Some(())
            })?;
            Node::Array(items)
        }
        b'"' => Node::String(scanner.string()?),
        b't' | b'f' => Node::Bool(scanner.boolean()?),
        b'n' => scanner.null().then_some(Node::Null)?,
        // serde_json's own reading, so a number it cannot hold gives up here too.
        _ => Node::Number(serde_json::from_str(scanner.value_span()?).ok()?),
    })
}

/// What the validators read of a JSON value, whichever tree holds it.
pub(crate) trait JsonView: Sized {
    /// The text of a string.
    fn as_str(&self) -> Option<&str>;
    /// The items of a list.
    fn as_array(&self) -> Option<&[Self]>;
    /// Whether it is an object.
    fn is_object(&self) -> bool;
    /// Whether it is `null`.
    fn is_null(&self) -> bool;
    /// An object's field.
    fn get(&self, key: &str) -> Option<&Self>;
    /// An object's keys, in order; nothing for other values.
    fn keys(&self) -> impl Iterator<Item = &str>;
    /// A scalar (null, boolean, number, string) as a `Value`; `None` for lists and objects.
    fn scalar(&self) -> Option<Value>;
    /// What kind of value it is, in words: "a list", "an object"...
    fn kind(&self) -> &'static str;
}

impl JsonView for Value {
    fn as_str(&self) -> Option<&str> {
        Value::as_str(self)
    }
    fn as_array(&self) -> Option<&[Self]> {
        Value::as_array(self).map(Vec::as_slice)
    }
    fn is_object(&self) -> bool {
        Value::is_object(self)
    }
    fn is_null(&self) -> bool {
        Value::is_null(self)
    }
    fn get(&self, key: &str) -> Option<&Self> {
        self.as_object()?.get(key)
    }
    fn keys(&self) -> impl Iterator<Item = &str> {
        self.as_object()
            .into_iter()
            .flat_map(|object| object.keys().map(String::as_str))
    }
    fn scalar(&self) -> Option<Value> {
        (!self.is_array() && !self.is_object()).then(|| self.clone())
    }
    fn kind(&self) -> &'static str {
        crate::error::json_kind(self)
    }
}

impl JsonView for Node<'_> {
    fn as_str(&self) -> Option<&str> {
        match self {
            Node::String(text) => Some(text),
            _ => None,
        }
    }
    fn as_array(&self) -> Option<&[Self]> {
        match self {
            Node::Array(items) => Some(items),
            _ => None,
        }
    }
    fn is_object(&self) -> bool {
        matches!(self, Node::Object(_))
    }
    fn is_null(&self) -> bool {
        matches!(self, Node::Null)
    }
    fn get(&self, key: &str) -> Option<&Self> {
        match self {
            Node::Object(fields) => fields.iter().find(|(k, _)| *k == key).map(|(_, v)| v),
            _ => None,
        }
    }
    fn keys(&self) -> impl Iterator<Item = &str> {
        let fields = match self {
            Node::Object(fields) => fields.as_slice(),
            _ => &[],
        };
        fields.iter().map(|(k, _)| *k)
    }
    fn scalar(&self) -> Option<Value> {
        match self {
            Node::Null => Some(Value::Null),
            Node::Bool(b) => Some(Value::Bool(*b)),
            Node::Number(n) => Some(Value::Number(n.clone())),
            Node::String(text) => Some(Value::String(text.to_string())),
            Node::Array(_) | Node::Object(_) => None,
        }
    }
    fn kind(&self) -> &'static str {
        match self {
            Node::Null => "null",
            Node::Bool(_) => "a boolean",
            Node::Number(_) => "a number",
            Node::String(_) => "a string",
            Node::Array(_) => "a list",
            Node::Object(_) => "an object",
        }
    }
}

impl Node<'_> {
    /// The `Value` serde_json builds from the same text.
    pub fn to_value(&self) -> Value {
        match self {
            Node::Array(items) => Value::Array(items.iter().map(Node::to_value).collect()),
            Node::Object(fields) => Value::Object(
                fields
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), v.to_value()))
                    .collect(),
            ),
            scalar => scalar.scalar().unwrap_or(Value::Null),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_what_serde_json_holds() {
        for text in [
            r#"{"a": 1, "b": [true, null, "x\n"], "a": {"c": -0.0, "d": 1e5, "e": 12345678901234567890123}}"#,
            r#"[1, "é", {"z": 1, "y": 2, "z": 3}]"#,
            r#""just a string""#,
            "[]",
            "{}",
        ] {
            let node = Node::parse(text).unwrap();
            let value: Value = serde_json::from_str(text).unwrap();
            assert_eq!(node.to_value(), value, "{text}");
            assert_eq!(node.kind(), JsonView::kind(&value));
            assert_eq!(
                node.keys().collect::<Vec<_>>(),
                JsonView::keys(&value).collect::<Vec<_>>()
            );
        }
    }

    #[test]
    fn gives_up_where_serde_json_must_decide() {
        let wide = format!(
            "{{{}}}",
            (0..=MAX_KEYS)
                .map(|i| format!("\"k{i}\":{i}"))
                .collect::<Vec<_>>()
                .join(",")
        );
        for text in [r#"{"a\u0062": 1}"#, "1e400", "[1,]", &wide, "{} x"] {
            assert!(Node::parse(text).is_none(), "{text}");
        }
    }
}
