//! [`EditSchema`]: a schema [`inspect`](super::inspect) accepted, read once into a form an
//! edit is checked against: keywords looked up once rather than at every visit, and each
//! `enum` indexed, so that checking a value costs the value's size, not the list's length.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::canonical;

/// A schema ready to check edits; built when the agent asks, kept with the request.
#[derive(Debug)]
pub struct EditSchema {
    pub(super) root: Node,
}

/// Every `EditSchema` is read from its call's `args_schema`, which a call's equality
/// compares already.
impl PartialEq for EditSchema {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl EditSchema {
    /// Reads a schema that [`inspect`](super::inspect) found
    /// [`Support::Checked`](super::Support::Checked).
    pub fn new(schema: &Value) -> EditSchema {
        EditSchema {
            root: Node::new(schema),
        }
    }
}

#[derive(Debug)]
pub(super) enum Node {
    /// `true`, or a keyword-free object.
    Anything,
    /// `false`.
    Nothing,
    Rules(Box<Rules>),
}

#[derive(Debug, Default)]
pub(super) struct Rules {
    /// The `type` keyword's value, as sent (a name or a list of names).
    pub types: Option<Value>,
    pub allowed: Option<Allowed>,
    pub constant: Option<Constant>,
    pub properties: HashMap<String, Node>,
    pub required: Vec<String>,
    pub items: Option<Node>,
    pub additional: Additional,
    pub min_length: Option<u64>,
    pub max_length: Option<u64>,
    pub minimum: Option<f64>,
    pub maximum: Option<f64>,
    pub any_of: Option<Vec<Node>>,
    pub one_of: Option<Vec<Node>>,
}

/// An `enum`: the keys of its values, and how a refusal lists them.
#[derive(Debug)]
pub(super) struct Allowed {
    pub keys: HashSet<String>,
    pub listed: String,
}

/// A `const`: its key, and the value for the refusal's message.
#[derive(Debug)]
pub(super) struct Constant {
    pub key: String,
    pub value: Value,
}

/// What `additionalProperties` says of a property `properties` does not name.
#[derive(Debug, Default)]
pub(super) enum Additional {
    /// Absent: anything goes, unchecked.
    #[default]
    Unchecked,
    /// `false`: the tool takes no such argument.
    Refused,
    Checked(Node),
}

impl Node {
    fn new(schema: &Value) -> Node {
        let object = match schema {
            Value::Bool(false) => return Node::Nothing,
            Value::Object(object) => object,
            _ => return Node::Anything,
        };
        let rules = Rules::new(object);
        if rules.is_empty() {
            Node::Anything
        } else {
            Node::Rules(Box::new(rules))
        }
    }
}

impl Rules {
    fn new(schema: &Map<String, Value>) -> Rules {
        let nodes = |value: &Value| -> Option<Vec<Node>> {
            value
                .as_array()
                .map(|schemas| schemas.iter().map(Node::new).collect())
        };
        Rules {
            types: schema.get("type").cloned(),
            allowed: schema
                .get("enum")
                .and_then(Value::as_array)
                .map(|values| Allowed {
                    keys: values.iter().map(key_of).collect(),
                    listed: listed(values),
                }),
            constant: schema.get("const").map(|value| Constant {
                key: key_of(value),
                value: value.clone(),
            }),
            properties: schema
                .get("properties")
                .and_then(Value::as_object)
                .map(|properties| {
                    properties
                        .iter()
                        .map(|(name, schema)| (name.clone(), Node::new(schema)))
                        .collect()
                })
                .unwrap_or_default(),
            required: schema
                .get("required")
                .and_then(Value::as_array)
                .map(|names| {
                    names
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default(),
            items: schema.get("items").map(Node::new),
            additional: match schema.get("additionalProperties") {
                None => Additional::Unchecked,
                Some(Value::Bool(false)) => Additional::Refused,
                Some(extra) => Additional::Checked(Node::new(extra)),
            },
            min_length: schema.get("minLength").and_then(Value::as_u64),
            max_length: schema.get("maxLength").and_then(Value::as_u64),
            minimum: schema.get("minimum").and_then(Value::as_f64),
            maximum: schema.get("maximum").and_then(Value::as_f64),
            any_of: schema.get("anyOf").and_then(nodes),
            one_of: schema.get("oneOf").and_then(nodes),
        }
    }

    /// Whether these rules check nothing at all.
    fn is_empty(&self) -> bool {
        self.types.is_none()
            && self.allowed.is_none()
            && self.constant.is_none()
            && self.properties.is_empty()
            && self.required.is_empty()
            && self.items.is_none()
            && matches!(self.additional, Additional::Unchecked)
            && self.min_length.is_none()
            && self.max_length.is_none()
            && self.minimum.is_none()
            && self.maximum.is_none()
            && self.any_of.is_none()
            && self.one_of.is_none()
    }
}

/// The schema's own values: [`inspect`](super::inspect) has bounded their size, so no step
/// budget applies.
fn key_of(value: &Value) -> String {
    let mut unbounded = u32::MAX;
    canonical::key(value, &mut unbounded).unwrap_or_default()
}

/// At most ten values, written as JSON.
fn listed(values: &[Value]) -> String {
    let mut words: Vec<String> = values.iter().take(10).map(Value::to_string).collect();
    if values.len() > 10 {
        words.push(format!("… ({} in all)", values.len()));
    }
    words.join(", ")
}
