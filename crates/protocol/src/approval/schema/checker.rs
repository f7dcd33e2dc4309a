//! Judging an edit against an [`EditSchema`]: every problem found, each at its path, within a
//! budget of steps that bounds the work one check may do.

use std::collections::HashMap;
use std::rc::Rc;

use serde_json::{Map, Value};

use super::MAX_CHECK_STEPS;
use super::canonical;
use super::compiled::{Additional, EditSchema, Node, Rules};
use crate::error::{ErrorCode, FieldError, json_kind};
use crate::field_paths::{index_path, key_path};

/// What one check found, and the steps it took.
#[derive(Debug)]
pub struct Checked {
    /// Every problem found; empty when the value fits.
    pub errors: Vec<FieldError>,
    /// Schema nodes visited, plus values read to compare with an `enum` or a `const` (each
    /// value read once, however many compare it).
    pub steps: u32,
}

impl EditSchema {
    /// Checks `value` (at `path`), and lists every problem found.
    pub fn check(&self, value: &Value, path: &str) -> Vec<FieldError> {
        self.check_counting(value, path).errors
    }

    /// [`check`](Self::check), saying how many steps it took.
    pub fn check_counting(&self, value: &Value, path: &str) -> Checked {
        let mut checker = Checker {
            steps_left: MAX_CHECK_STEPS,
            errors: Vec::new(),
            keys: HashMap::new(),
            probing: 0,
            probe_failed: false,
        };
        checker.check(&self.root, value, path);
        let steps = MAX_CHECK_STEPS - checker.steps_left;
        if checker.steps_left == 0 {
            // Past the budget nothing checked can be trusted, so no error found is reported.
            let error = FieldError::new(
                path,
                ErrorCode::InvalidValue,
                format!(
                    "too much to check: the schema and the value take more than \
                     {MAX_CHECK_STEPS} steps"
                ),
            );
            return Checked {
                errors: vec![error],
                steps,
            };
        }
        Checked {
            errors: checker.errors,
            steps,
        }
    }
}

struct Checker {
    /// Steps left; at 0 every check fails.
    steps_left: u32,
    errors: Vec<FieldError>,
    /// The keys of the values compared so far, by the value's address: the branches of an
    /// `anyOf` each compare the same value, which is read once. Addresses are stable and
    /// distinct while the checked value is borrowed, which it is for the whole check.
    keys: HashMap<usize, Rc<str>>,
    /// How many `anyOf` / `oneOf` branches are being tried, one inside another: a branch
    /// only needs to know whether the value fits, so its first problem ends its check and
    /// no error is kept.
    probing: u32,
    /// Whether the branch being tried has found a problem.
    probe_failed: bool,
}

impl Checker {
    fn fail(&mut self, path: &str, code: ErrorCode, message: impl Into<String>) {
        self.fail_with(path, code, || message.into());
    }

    /// [`fail`](Self::fail) with a message written only if it is kept: a branch being tried
    /// keeps none.
    fn fail_with(&mut self, path: &str, code: ErrorCode, message: impl FnOnce() -> String) {
        if self.probing > 0 {
            self.probe_failed = true;
        } else {
            self.errors.push(FieldError::new(path, code, message()));
        }
    }

    /// Whether `value` fits `node`, stopping at the first problem and keeping no error.
    fn fits(&mut self, node: &Node, value: &Value, path: &str) -> bool {
        let outer_failed = std::mem::replace(&mut self.probe_failed, false);
        self.probing += 1;
        self.check(node, value, path);
        self.probing -= 1;
        let fits = !self.probe_failed && self.steps_left > 0;
        self.probe_failed = outer_failed;
        fits
    }

    /// The key `enum` and `const` compare, charged to the budget the first time; `None` once
    /// the budget has run out.
    fn key(&mut self, value: &Value) -> Option<Rc<str>> {
        let address = std::ptr::from_ref(value) as usize;
        if let Some(key) = self.keys.get(&address) {
            return Some(Rc::clone(key));
        }
        let key: Rc<str> = canonical::key(value, &mut self.steps_left)?.into();
        self.keys.insert(address, Rc::clone(&key));
        Some(key)
    }

    fn check(&mut self, node: &Node, value: &Value, path: &str) {
        if self.steps_left == 0 || self.probe_failed {
            return;
        }
        self.steps_left -= 1;
        let rules = match node {
            Node::Anything => return,
            Node::Nothing => {
                return self.fail(path, ErrorCode::InvalidValue, "no value is allowed here");
            }
            Node::Rules(rules) => rules,
        };
        if let Some(types) = &rules.types
            && !type_fits(types, value)
        {
            return self.fail_with(path, ErrorCode::WrongType, || {
                format!("expected {}, got {}", type_words(types), json_kind(value))
            });
        }
        if rules.allowed.is_some() || rules.constant.is_some() {
            let Some(key) = self.key(value) else { return };
            if let Some(allowed) = &rules.allowed
                && !allowed.keys.contains(&*key)
            {
                self.fail_with(path, ErrorCode::InvalidValue, || {
                    format!("must be one of {}", allowed.listed)
                });
            }
            if let Some(constant) = &rules.constant
                && *constant.key != *key
            {
                self.fail_with(path, ErrorCode::InvalidValue, || {
                    format!("must be {}", constant.value)
                });
            }
        }
        if self.probe_failed {
            return;
        }
        match value {
            Value::Object(object) => self.check_object(rules, object, path),
            Value::Array(items) => {
                if let Some(item_node) = &rules.items {
                    for (i, item) in items.iter().enumerate() {
                        if self.steps_left == 0 || self.probe_failed {
                            return;
                        }
                        self.check(item_node, item, &index_path(path, i));
                    }
                }
            }
            Value::String(text) => self.check_length(rules, text, path),
            Value::Number(number) => self.check_range(rules, number.as_f64(), path),
            _ => {}
        }
        self.check_choices(rules, value, path);
    }

    fn check_object(&mut self, rules: &Rules, object: &Map<String, Value>, path: &str) {
        for name in &rules.required {
            if !object.contains_key(name) {
                self.fail(&key_path(path, name), ErrorCode::MissingField, "required");
            }
        }
        if rules.properties.is_empty() && matches!(rules.additional, Additional::Unchecked) {
            return;
        }
        for (name, item) in object {
            if self.steps_left == 0 || self.probe_failed {
                return;
            }
            match (rules.properties.get(name), &rules.additional) {
                (Some(property), _) => self.check(property, item, &key_path(path, name)),
                (None, Additional::Refused) => self.fail(
                    &key_path(path, name),
                    ErrorCode::UnknownField,
                    "not allowed: the tool takes no argument of this name",
                ),
                (None, Additional::Checked(extra)) => {
                    self.check(extra, item, &key_path(path, name));
                }
                (None, Additional::Unchecked) => {}
            }
        }
    }

    fn check_length(&mut self, rules: &Rules, text: &str, path: &str) {
        if rules.min_length.is_none() && rules.max_length.is_none() {
            return;
        }
        let chars = text.chars().count() as u64;
        if let Some(min) = rules.min_length
            && chars < min
        {
            let code = if chars == 0 {
                ErrorCode::Blank
            } else {
                ErrorCode::InvalidValue
            };
            self.fail(
                path,
                code,
                format!("at least {min} characters, got {chars}"),
            );
        }
        if let Some(max) = rules.max_length
            && chars > max
        {
            self.fail(
                path,
                ErrorCode::TooLong,
                format!("at most {max} characters, got {chars}"),
            );
        }
    }

    fn check_range(&mut self, rules: &Rules, number: Option<f64>, path: &str) {
        let Some(number) = number else { return };
        if let Some(min) = rules.minimum
            && number < min
        {
            self.fail(
                path,
                ErrorCode::InvalidValue,
                format!("at least {min}, got {number}"),
            );
        }
        if let Some(max) = rules.maximum
            && number > max
        {
            self.fail(
                path,
                ErrorCode::InvalidValue,
                format!("at most {max}, got {number}"),
            );
        }
    }

    fn check_choices(&mut self, rules: &Rules, value: &Value, path: &str) {
        if let Some(choices) = &rules.any_of
            && !choices.iter().any(|choice| self.fits(choice, value, path))
        {
            self.fail_with(path, ErrorCode::InvalidValue, || {
                format!("fits none of the {} allowed forms (anyOf)", choices.len())
            });
        }
        if let Some(choices) = &rules.one_of {
            let fitting = choices
                .iter()
                .filter(|choice| self.fits(choice, value, path))
                .count();
            match fitting {
                1 => {}
                0 => self.fail(
                    path,
                    ErrorCode::InvalidValue,
                    format!("fits none of the {} allowed forms (oneOf)", choices.len()),
                ),
                n => self.fail(
                    path,
                    ErrorCode::InvalidValue,
                    format!("fits {n} of the allowed forms, and must fit exactly one (oneOf)"),
                ),
            }
        }
    }
}

fn type_fits(types: &Value, value: &Value) -> bool {
    let fits = |name: &str| match name {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => value.as_f64().is_some_and(|n| n.fract() == 0.0),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        _ => true,
    };
    match types {
        Value::String(name) => fits(name),
        Value::Array(names) => names.iter().filter_map(Value::as_str).any(fits),
        _ => true,
    }
}

fn type_words(types: &Value) -> String {
    let word = |name: &str| match name {
        "object" => "an object",
        "array" => "a list",
        "string" => "a string",
        "number" => "a number",
        "integer" => "a whole number",
        "boolean" => "true or false",
        "null" => "null",
        _ => "something else",
    };
    match types {
        Value::String(name) => word(name).to_owned(),
        Value::Array(names) => names
            .iter()
            .filter_map(Value::as_str)
            .map(word)
            .collect::<Vec<_>>()
            .join(" or "),
        _ => "a value".to_owned(),
    }
}
