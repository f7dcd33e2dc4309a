//! Random pydantic models for MCP elicitation forms, and contents for them, valid or broken
//! in one way, for the differential test against the MCP Python SDK's server side
//! (`tests/oracle/mcp_oracle.py`, which builds each model with `pydantic.create_model`).
//!
//! A model is 1 to 4 fields of the kinds the SDK renders as a spec-valid form: `str` with
//! lengths, `EmailStr`, `AnyUrl`, `date`, `datetime`, `int` / `float` with `ge` / `le`,
//! `bool`, `Literal[...]` (one option renders as `const`), and `list[Literal[...]]` with
//! `min_length` / `max_length` (items). Each is required, has a default, or is
//! `T | None = None`. Every content is labelled with what was done to it ([`Broken`]), which
//! the test uses to tell a documented departure from a bug.

use rand::rngs::StdRng;
use rand::seq::{IndexedRandom, SliceRandom};
use rand::{Rng, SeedableRng};
use serde_json::{Map, Value, json};

/// What was done to a content.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Broken {
    /// Nothing: every field holds a value of its kind.
    Not,
    /// Nothing, and only the required fields are there.
    Minimal,
    /// One field holds a value of another JSON type.
    WrongType,
    /// One number is outside its bounds.
    OutOfBounds,
    /// One text is too short.
    TooShort,
    /// One text is too long.
    TooLong,
    /// One choice, or one item of a multiple choice, is not an option.
    NotAnOption,
    /// A multiple choice has too many items.
    TooManyItems,
    /// A multiple choice has too few items.
    TooFewItems,
    /// A multiple choice picks one option twice (neither side asks for distinct items).
    DuplicateItems,
    /// A required field is left out.
    MissingRequired,
    /// A key that is no field.
    UnknownKey,
    /// An optional field (`T | None = None`) holds null.
    NullForOptional,
    /// A field of a format (e-mail, URI, date, date-time) holds a string near the format's
    /// edges, which may or may not fit it.
    Format,
}

/// One content for a model.
#[derive(Clone, Debug)]
pub struct Content {
    /// What was done to it.
    pub broken: Broken,
    /// The field (or unknown key) it was done to.
    pub field: Option<String>,
    /// `{NAME: value...}`.
    pub value: Value,
}

/// One model and its contents.
#[derive(Clone, Debug)]
pub struct Case {
    /// The oracle's description of the model: `[{"name", "kind", ...}]`.
    pub fields: Vec<Value>,
    /// The contents to judge.
    pub contents: Vec<Content>,
}

impl Case {
    /// The oracle's input line.
    pub fn oracle_line(&self) -> String {
        let contents: Vec<&Value> = self.contents.iter().map(|c| &c.value).collect();
        json!({"fields": self.fields, "contents": contents}).to_string()
    }
}

/// `count` cases from `seed`.
pub fn cases(seed: u64, count: usize) -> Vec<Case> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..count).map(|_| case(&mut rng)).collect()
}

const NAMES: [&str; 16] = [
    "name", "age", "email", "website", "birthday", "meeting", "count", "ratio", "agree", "color",
    "toppings", "note", "größe", "x1", "plan", "budget",
];

const TEXT_CHARS: [char; 10] = ['a', 'Z', ' ', 'é', '🎉', '\u{301}', '7', '-', '中', '\''];

/// Good e-mail addresses, as the SDK takes them.
pub const EMAILS: [&str; 6] = [
    "a@b.co",
    "first.last+tag@example.com",
    "é@x.co",
    "a@x.c",
    "user@sub.example.org",
    "a!#$&'*/=?^`{|}~@x.co",
];
/// Edge e-mail addresses (some good, most not), as the SDK takes them.
pub const EMAIL_EDGES: [&str; 30] = [
    "a@b",
    "A <a@b.co>",
    "a..b@x.co",
    "a@-x.co",
    "a@x.123",
    "\"a b\"@x.co",
    "a@localhost",
    " a@b.co",
    "a@b.co ",
    "a@[1.2.3.4]",
    "a.@x.co",
    ".a@x.co",
    "a@x..co",
    "a@x_y.co",
    "a@x.invalid",
    "a@x.test",
    "a@x.local",
    "a@x.onion",
    "a@x.arpa",
    "a@x.co.",
    "a@.x.co",
    "a@x-.co",
    "a@1.2.3.4",
    "a(b)@x.co",
    "a,b@x.co",
    "a@x@y.co",
    "a\u{200b}@x.co",
    "@x.co",
    "a@",
    "a b@x.co",
];
/// Good URIs, as the SDK takes them.
pub const URLS: [&str; 6] = [
    "https://example.com",
    "https://x.y/a?b=c#d",
    "mailto:a@b.c",
    "urn:isbn:1",
    "file:///etc/hosts",
    "http://127.0.0.1:8080/",
];
/// Edge URIs (some good, most not), as the SDK takes them.
pub const URL_EDGES: [&str; 24] = [
    "https://x",
    "example.com",
    "http://",
    "https://",
    "foo:bar",
    " https://x.y",
    "https://x.y/a b",
    "http://[::1",
    "http://[::1]/",
    "http://x:99999",
    "http://x:65535",
    "a:b",
    "a:",
    "1http://x",
    "HTTPS://X.Y",
    "http://exa mple.com",
    "https:x.y",
    "x+y.z-w:q",
    "https://x.y/é",
    "http://ü.com",
    "https://a_b.com",
    "http://1.2.3.256",
    "http://x.y/%zz",
    "//x.y/z",
];
const DATES: [&str; 4] = ["2024-02-29", "0001-01-01", "9999-12-31", "2026-12-02"];
const DATE_EDGES: [&str; 12] = [
    "2023-02-29",
    "2024-13-01",
    "24-01-01",
    "2024-1-2",
    "0000-01-01",
    "2024-01-02T00:00:00",
    "2024-01-02T01:00:00",
    "20240102",
    "2024-01-02 ",
    "2024-02-30",
    "2024-04-31",
    "2024-01-02Z",
];
const DATE_TIMES: [&str; 6] = [
    "2026-12-02T10:30",
    "2026-12-02T10:30:59",
    "2026-12-02T10:30:59.123Z",
    "2026-12-02 10:30+01:00",
    "0001-01-01T00:00:00Z",
    "2024-02-29T23:59:59-23:59",
];
const DATE_TIME_EDGES: [&str; 22] = [
    "2026-12-02",
    "2026-12-02T25:00",
    "2026-12-02T10:30.5",
    "2026-12-02T10:30+1",
    "2026-12-02T10:30+01",
    "2026-12-02T10:30+0100",
    "2026-12-02t10:30",
    "2026-12-02_10:30",
    "2026-12-02T10",
    "2026-12-02T10:30:60",
    "2026-12-02T24:00",
    "2026-12-02T10:30z",
    "2026-12-02T10:30+24:00",
    "2026-12-02T10:30:05,5",
    "2026-12-02T10:30:05.",
    "2026-12-02T10:30:05.1234567890123Z",
    "2026-12-02T10:30-00:00",
    "1700000000",
    "0000-01-01T00:00",
    "2023-02-29T10:00",
    "2026-12-02T10:30Z ",
    "2026-12-02T1:30",
];
const OPTIONS: [&str; 10] = [
    "red", "green", "Blue", "1", "2", "a b", "ü", "", "true", "x-y",
];

#[derive(Clone, Debug)]
enum Kind {
    Str {
        min: Option<u64>,
        max: Option<u64>,
    },
    Email,
    Url,
    Date,
    DateTime,
    Int {
        ge: Option<i64>,
        le: Option<i64>,
    },
    Float {
        ge: Option<f64>,
        le: Option<f64>,
    },
    Bool,
    Literal(Vec<String>),
    Multi {
        options: Vec<String>,
        min: Option<u64>,
        max: Option<u64>,
    },
}

#[derive(Clone, Debug)]
enum Absence {
    Required,
    Default(Value),
    Optional,
}

#[derive(Clone, Debug)]
struct Spec {
    name: String,
    kind: Kind,
    absence: Absence,
}

fn maybe<T>(rng: &mut StdRng, value: impl FnOnce(&mut StdRng) -> T) -> Option<T> {
    if rng.random_bool(0.6) {
        Some(value(rng))
    } else {
        None
    }
}

fn text_of(rng: &mut StdRng, chars: u64) -> String {
    (0..chars)
        .map(|_| *TEXT_CHARS.choose(rng).unwrap_or(&'a'))
        .collect()
}

fn pick(rng: &mut StdRng, pool: &[&str]) -> Value {
    Value::from(*pool.choose(rng).unwrap_or(&""))
}

/// A quarter, so that bounds and values are exact in binary.
fn quarter(rng: &mut StdRng, low: i64, high: i64) -> f64 {
    rng.random_range(low * 4..=high * 4) as f64 / 4.0
}

fn kind(rng: &mut StdRng) -> Kind {
    match rng.random_range(0..10) {
        0 => {
            let min = maybe(rng, |r| r.random_range(0..4));
            let max = maybe(rng, |r| min.unwrap_or(0) + r.random_range(0..8));
            Kind::Str { min, max }
        }
        1 => Kind::Email,
        2 => Kind::Url,
        3 => Kind::Date,
        4 => Kind::DateTime,
        5 => {
            let ge = maybe(rng, |r| r.random_range(-100..50));
            let le = maybe(rng, |r| ge.unwrap_or(-50) + r.random_range(0..100));
            Kind::Int { ge, le }
        }
        6 => {
            let ge = maybe(rng, |r| quarter(r, -50, 20));
            let le = maybe(rng, |r| ge.unwrap_or(-20.0) + quarter(r, 0, 40));
            Kind::Float { ge, le }
        }
        7 => Kind::Bool,
        8 => Kind::Literal(options(rng, 1)),
        _ => {
            let options = options(rng, 2);
            let n = options.len() as u64;
            let min = maybe(rng, |r| r.random_range(0..=n));
            let max = maybe(rng, |r| r.random_range(min.unwrap_or(0).max(1)..=n + 1));
            Kind::Multi { options, min, max }
        }
    }
}

fn options(rng: &mut StdRng, fewest: usize) -> Vec<String> {
    let mut all: Vec<&str> = OPTIONS.to_vec();
    all.shuffle(rng);
    let n = rng.random_range(fewest..=5);
    all[..n].iter().map(|s| (*s).to_owned()).collect()
}

impl Spec {
    /// The oracle's description.
    fn describe(&self, rng: &mut StdRng) -> Value {
        let mut d = Map::new();
        d.insert("name".into(), self.name.clone().into());
        let mut put = |k: &str, v: Option<Value>| {
            if let Some(v) = v {
                d.insert(k.into(), v);
            }
        };
        match &self.kind {
            Kind::Str { min, max } => {
                put("kind", Some("str".into()));
                put("min_length", min.map(Value::from));
                put("max_length", max.map(Value::from));
            }
            Kind::Email => put("kind", Some("email".into())),
            Kind::Url => put("kind", Some("url".into())),
            Kind::Date => put("kind", Some("date".into())),
            Kind::DateTime => put("kind", Some("datetime".into())),
            Kind::Int { ge, le } => {
                put("kind", Some("int".into()));
                put("ge", ge.map(Value::from));
                put("le", le.map(Value::from));
            }
            Kind::Float { ge, le } => {
                put("kind", Some("float".into()));
                put("ge", ge.map(Value::from));
                put("le", le.map(Value::from));
            }
            Kind::Bool => put("kind", Some("bool".into())),
            Kind::Literal(options) => {
                put("kind", Some("literal".into()));
                put("options", Some(json!(options)));
            }
            Kind::Multi { options, min, max } => {
                put("kind", Some("multi".into()));
                put("options", Some(json!(options)));
                put("min_items", min.map(Value::from));
                put("max_items", max.map(Value::from));
            }
        }
        match &self.absence {
            Absence::Required => put("required", Some(true.into())),
            Absence::Default(v) => put("default", Some(v.clone())),
            Absence::Optional => put("optional", Some(true.into())),
        }
        if rng.random_bool(0.3) {
            put("title", Some("Your answer".into()));
        }
        if rng.random_bool(0.3) {
            put("description", Some("As you like it".into()));
        }
        Value::Object(d)
    }

    fn valid(&self, rng: &mut StdRng) -> Value {
        match &self.kind {
            Kind::Str { min, max } => {
                let low = min.unwrap_or(0);
                let high = max.unwrap_or(low + 6);
                {
                    let n = rng.random_range(low..=high);
                    text_of(rng, n).into()
                }
            }
            Kind::Email => pick(rng, &EMAILS),
            Kind::Url => pick(rng, &URLS),
            Kind::Date => pick(rng, &DATES),
            Kind::DateTime => pick(rng, &DATE_TIMES),
            Kind::Int { ge, le } => {
                let low = ge.unwrap_or(le.map_or(-1000, |l| l - 1000));
                let high = le.unwrap_or(low + 1000);
                let n = match rng.random_range(0..4) {
                    0 => low,
                    1 => high,
                    _ => rng.random_range(low..=high),
                };
                if rng.random_bool(0.15) {
                    json!(n as f64)
                } else {
                    json!(n)
                }
            }
            Kind::Float { ge, le } => {
                let low = ge.unwrap_or(le.map_or(-1000.0, |l| l - 1000.0));
                let high = le.unwrap_or(low + 1000.0);
                let x = match rng.random_range(0..4) {
                    0 => low,
                    1 => high,
                    _ => low + (rng.random_range(0..=((high - low) * 4.0) as i64) as f64) / 4.0,
                };
                if x.fract() == 0.0 && rng.random_bool(0.5) {
                    json!(x as i64)
                } else {
                    json!(x)
                }
            }
            Kind::Bool => rng.random_bool(0.5).into(),
            Kind::Literal(options) => options.choose(rng).cloned().unwrap_or_default().into(),
            Kind::Multi { options, min, max } => {
                let low = min.unwrap_or(0) as usize;
                let high = (max.unwrap_or(options.len() as u64) as usize).min(options.len());
                let n = rng.random_range(low..=high.max(low));
                let mut picked: Vec<&String> = options.iter().collect();
                picked.shuffle(rng);
                json!(picked[..n.min(picked.len())])
            }
        }
    }

    /// Ways this field's value can be broken: (what, the broken value).
    fn broken(&self, rng: &mut StdRng) -> Vec<(Broken, Value)> {
        let mut out = Vec::new();
        let valid = self.valid(rng);
        let others: Vec<Value> = match &self.kind {
            Kind::Str { .. } | Kind::Email | Kind::Url => {
                vec![
                    json!(7),
                    json!(1.5),
                    json!(true),
                    json!(null),
                    json!(["a"]),
                    json!({"k": "v"}),
                ]
            }
            Kind::Date => vec![
                json!(0),
                json!(86400),
                json!(1_700_000_000),
                json!(86400.0),
                json!(true),
                json!(null),
            ],
            Kind::DateTime => vec![
                json!(0),
                json!(1_700_000_000),
                json!(1.5),
                json!(false),
                json!(null),
                json!(["2026-12-02"]),
            ],
            Kind::Int { .. } => {
                let n = valid.as_f64().unwrap_or(0.0) as i64;
                vec![
                    json!(n.to_string()),
                    json!(format!(" {n} ")),
                    json!(format!("{n}.0")),
                    json!(true),
                    json!(false),
                    json!(n as f64 + 0.5),
                    json!(null),
                    json!("abc"),
                    json!([n]),
                ]
            }
            Kind::Float { .. } => {
                let x = valid.as_f64().unwrap_or(0.0);
                vec![
                    json!(x.to_string()),
                    json!(true),
                    json!(false),
                    json!(null),
                    json!("x"),
                    json!([x]),
                ]
            }
            Kind::Bool => vec![
                json!(1),
                json!(0),
                json!(1.0),
                json!(0.0),
                json!(2),
                json!("true"),
                json!("yes"),
                json!("off"),
                json!("n"),
                json!("maybe"),
                json!(null),
                json!([true]),
            ],
            Kind::Literal(options) => {
                let first = options.first().cloned().unwrap_or_default();
                let mut v = vec![json!(null), json!([first]), json!(true), json!(5)];
                if let Ok(n) = first.parse::<i64>() {
                    v.push(json!(n));
                }
                v
            }
            Kind::Multi { options, .. } => {
                let first = options.first().cloned().unwrap_or_default();
                vec![
                    json!(first),
                    json!([1]),
                    json!(null),
                    json!({first: true}),
                    json!([null]),
                ]
            }
        };
        if let Some(v) = others.choose(rng) {
            out.push((Broken::WrongType, v.clone()));
        }
        match &self.kind {
            Kind::Str { min, max } => {
                if let Some(min) = min.filter(|&m| m > 0) {
                    out.push((Broken::TooShort, text_of(rng, min - 1).into()));
                }
                if let Some(max) = max {
                    out.push((Broken::TooLong, {
                        let n = max + 1 + rng.random_range(0..2);
                        text_of(rng, n).into()
                    }));
                }
            }
            Kind::Email => out.push((Broken::Format, pick(rng, &EMAIL_EDGES))),
            Kind::Url => out.push((Broken::Format, pick(rng, &URL_EDGES))),
            Kind::Date => out.push((Broken::Format, pick(rng, &DATE_EDGES))),
            Kind::DateTime => out.push((Broken::Format, pick(rng, &DATE_TIME_EDGES))),
            Kind::Int { ge, le } => {
                if let Some(ge) = ge {
                    out.push((Broken::OutOfBounds, json!(ge - 1)));
                }
                if let Some(le) = le {
                    out.push((Broken::OutOfBounds, json!(le + 1)));
                }
            }
            Kind::Float { ge, le } => {
                if let Some(ge) = ge {
                    out.push((Broken::OutOfBounds, json!(ge - 0.25)));
                }
                if let Some(le) = le {
                    out.push((Broken::OutOfBounds, json!(le + 0.001)));
                }
            }
            Kind::Bool => {}
            Kind::Literal(options) => {
                let first = options.first().cloned().unwrap_or_default();
                let not = [
                    first.to_uppercase(),
                    format!("{first} "),
                    "purple".to_owned(),
                ]
                .into_iter()
                .filter(|o| !options.contains(o))
                .collect::<Vec<_>>();
                if let Some(o) = not.choose(rng) {
                    out.push((Broken::NotAnOption, o.clone().into()));
                }
            }
            Kind::Multi { options, min, max } => {
                let mut list = valid.as_array().cloned().unwrap_or_default();
                list.push("purple".into());
                out.push((Broken::NotAnOption, Value::Array(list)));
                if let Some(max) = max {
                    // Distinct while the options last, then repeats.
                    let list: Vec<&String> =
                        options.iter().cycle().take(*max as usize + 1).collect();
                    out.push((Broken::TooManyItems, json!(list)));
                }
                if let Some(min) = min.filter(|&m| m > 0) {
                    out.push((Broken::TooFewItems, json!(options[..min as usize - 1])));
                }
                if options.len() >= 2 {
                    out.push((Broken::DuplicateItems, json!([options[0], options[0]])));
                }
            }
        }
        out
    }
}

fn case(rng: &mut StdRng) -> Case {
    let n = rng.random_range(1..=4);
    let mut names: Vec<&str> = NAMES.to_vec();
    names.shuffle(rng);
    let mut specs = Vec::with_capacity(n);
    for name in &names[..n] {
        let kind = kind(rng);
        let mut spec = Spec {
            name: (*name).to_owned(),
            kind,
            absence: Absence::Required,
        };
        spec.absence = match rng.random_range(0..3) {
            0 => Absence::Required,
            1 => {
                let mut d = spec.valid(rng);
                if matches!(spec.kind, Kind::Url) {
                    d = "https://example.com/".into();
                }
                Absence::Default(d)
            }
            _ => Absence::Optional,
        };
        specs.push(spec);
    }
    let fields = specs.iter().map(|s| s.describe(rng)).collect();
    let full = |rng: &mut StdRng| -> Map<String, Value> {
        specs
            .iter()
            .map(|s| (s.name.clone(), s.valid(rng)))
            .collect()
    };
    let mut contents = vec![
        Content {
            broken: Broken::Not,
            field: None,
            value: Value::Object(full(rng)),
        },
        Content {
            broken: Broken::Minimal,
            field: None,
            value: Value::Object(
                specs
                    .iter()
                    .filter(|s| matches!(s.absence, Absence::Required))
                    .map(|s| (s.name.clone(), s.valid(rng)))
                    .collect(),
            ),
        },
    ];
    for spec in &specs {
        for (broken, value) in spec.broken(rng) {
            let mut content = full(rng);
            content.insert(spec.name.clone(), value);
            contents.push(Content {
                broken,
                field: Some(spec.name.clone()),
                value: Value::Object(content),
            });
        }
        match spec.absence {
            Absence::Required => {
                let mut content = full(rng);
                content.remove(&spec.name);
                contents.push(Content {
                    broken: Broken::MissingRequired,
                    field: Some(spec.name.clone()),
                    value: Value::Object(content),
                });
            }
            Absence::Optional => {
                let mut content = full(rng);
                content.insert(spec.name.clone(), Value::Null);
                contents.push(Content {
                    broken: Broken::NullForOptional,
                    field: Some(spec.name.clone()),
                    value: Value::Object(content),
                });
            }
            Absence::Default(_) => {}
        }
    }
    let key = ["extra", "Name", "name ", "_meta"]
        .choose(rng)
        .copied()
        .unwrap_or("extra");
    if !specs.iter().any(|s| s.name == key) {
        let mut content = full(rng);
        let value = [json!("x"), json!(1), json!(true), json!(null)]
            .choose(rng)
            .cloned()
            .unwrap_or_default();
        content.insert(key.to_owned(), value);
        contents.push(Content {
            broken: Broken::UnknownKey,
            field: Some(key.to_owned()),
            value: Value::Object(content),
        });
    }
    Case { fields, contents }
}
