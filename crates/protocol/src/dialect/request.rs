//! Where a dialect's request sits: which fields of an ask hold it, and how it is shown again
//! under the same names in the view tabs receive.
//!
//! A dialect of one field (`questions`, `calls`) is held as that field's value, as the store
//! has always kept it; a dialect of several (a form's `message`, `schema`, `mode`...) as an
//! object of the fields that were sent.

use serde_json::{Map, Value};

use super::Dialect;

impl Dialect {
    /// The request an ask carries for this dialect, read with `field` (which gives a field
    /// of the ask by name, or `None` when it is absent).
    pub fn gather<'a>(self, field: impl Fn(&str) -> Option<&'a Value>) -> Value {
        self.gather_owned(|name| field(name).cloned())
    }

    /// [`gather`](Self::gather), with `field` giving each field's value to keep (an ask taken
    /// apart moves its fields in rather than copying them).
    pub fn gather_owned(self, mut field: impl FnMut(&str) -> Option<Value>) -> Value {
        match self.face().fields() {
            [only] => field(only).unwrap_or(Value::Null),
            fields => Value::Object(
                fields
                    .iter()
                    .filter_map(|name| {
                        let value = field(name).filter(|v| !v.is_null())?;
                        Some(((*name).to_owned(), value))
                    })
                    .collect(),
            ),
        }
    }

    /// The fields of `request` (as [`gather`](Self::gather) made it, or normalised), each
    /// with its name, in the dialect's order.
    pub fn spread(self, request: &Value) -> Vec<(&'static str, &Value)> {
        match self.face().fields() {
            [only] => vec![(*only, request)],
            fields => fields
                .iter()
                .filter_map(|name| Some((*name, request.get(*name)?)))
                .collect(),
        }
    }

    /// [`spread`](Self::spread), into an object.
    pub fn spread_into(self, request: &Value, into: &mut Map<String, Value>) {
        for (name, value) in self.spread(request) {
            into.insert(name.to_owned(), value.clone());
        }
    }

    /// Whether `name` is the main field of some other dialect (its first: `questions`,
    /// `calls`, a form's `schema`): sent with this dialect, it is a request in the wrong
    /// dialect, not to be ignored. Other names an ask does not use are ignored, as they
    /// always were, so a client's own extra keys (a `message`, a `url`) keep working.
    pub fn is_foreign_field(self, name: &str) -> bool {
        !self.face().fields().contains(&name)
            && Dialect::all().any(|other| other.face().fields().first() == Some(&name))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn one_field_is_its_value_and_several_are_an_object() {
        let harness = Dialect::HARNESS;
        let ask = json!({"questions": [1], "calls": [2]});
        assert_eq!(harness.gather(|name| ask.get(name)), json!([1]));
        assert_eq!(harness.spread(&json!([1])), [("questions", &json!([1]))]);
        let approval = Dialect::parse("approval").unwrap();
        assert!(approval.is_foreign_field("questions"));
        assert!(!approval.is_foreign_field("calls"));
        assert!(!approval.is_foreign_field("something_else"));
        assert!(harness.is_foreign_field("schema"), "a form's main field");
        assert!(
            !harness.is_foreign_field("message"),
            "a form's other fields are common words"
        );
    }
}
