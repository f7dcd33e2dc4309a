//! A form request as the ask carries it: `message`, `mode`, and the schema (form mode) or the
//! URL (URL mode), with the server that asks.

use serde::Serialize;
use serde_json::{Map, Value};

use super::fields::Field;
use super::schema::read_schema;
use super::{MAX_MESSAGE_CHARS, MAX_SERVER_CHARS, MAX_URL_BYTES};
use crate::error::{ErrorCode, FieldError, ValidationErrors, json_kind};
use crate::field_paths::{at_most_chars, optional_text};

/// Form or URL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Fields to fill in.
    Form,
    /// A URL to open (a sign-in, a payment) out of band.
    Url,
}

/// A validated form request, as tabs receive it (its fields beside the ask's others).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Form {
    /// What the server says to the person.
    pub message: String,
    /// Form or URL.
    pub mode: Mode,
    /// Which MCP server asks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// The `requestedSchema` as sent (form mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    /// The schema's fields, in order (form mode).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<Field>,
    /// The URL to open (URL mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The URL's host, for the page to show apart (URL mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The server's id for a URL elicitation, handed back untouched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elicitation_id: Option<String>,
}

/// The ask's fields a form is made of.
pub const FIELDS: [&str; 8] = [
    // The main field first: sent with another dialect, it is refused as a form's.
    "schema",
    "message",
    "mode",
    "server",
    "url",
    "elicitation_id",
    // Worked out by askgate (read past, so that a normalised form validates as itself).
    "fields",
    "host",
];

/// Which rules a URL-mode form's `url` is held to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UrlRules {
    /// An ask's: a URL whose host a person would misread is refused (see `url_host`).
    Ask,
    /// A stored request's, read back: any http or https URL with a host a browser opens is
    /// accepted (an older askgate stored URLs the ask now refuses, and their agents wait on
    /// them), its `host` worked out again as the browser's, which is what the page shows.
    Stored,
}

/// Validates a form request (an object of the ask's form fields), its `url` held to `rules`.
///
/// # Errors
/// Every problem found, each at its path.
pub fn validate_form(request: &Value, rules: UrlRules) -> Result<Form, ValidationErrors> {
    let empty = Map::new();
    let fields = request.as_object().unwrap_or(&empty);
    let mut errors = Vec::new();
    let text =
        |key: &str, max: usize, required: bool, errors: &mut Vec<FieldError>| -> Option<String> {
            let checked = optional_text(fields.get(key), key).and_then(|text| match text {
                None if required => Err(FieldError::new(
                    key,
                    ErrorCode::MissingField,
                    "required: a string",
                )),
                None => Ok(None),
                Some(text) if text.trim().is_empty() => {
                    Err(FieldError::new(key, ErrorCode::Blank, "must not be blank"))
                }
                Some(text) => at_most_chars(text, max, key).map(|()| Some(text.clone())),
            });
            checked.map_err(|e| errors.push(e)).ok().flatten()
        };
    let message = text("message", MAX_MESSAGE_CHARS, true, &mut errors);
    let server = text("server", MAX_SERVER_CHARS, false, &mut errors);
    if let Some(c) = server
        .as_deref()
        .and_then(|s| s.chars().find(|c| c.is_control()))
    {
        errors.push(FieldError::new(
            "server",
            ErrorCode::ForbiddenCharacter,
            format!(
                "must not contain control characters, found U+{:04X}",
                c as u32
            ),
        ));
    }
    let elicitation_id = text("elicitation_id", 256, false, &mut errors);
    let mode = match fields.get("mode") {
        None | Some(Value::Null) => Mode::Form,
        Some(Value::String(mode)) if mode == "form" => Mode::Form,
        Some(Value::String(mode)) if mode == "url" => Mode::Url,
        Some(other) => {
            errors.push(FieldError::new(
                "mode",
                ErrorCode::InvalidValue,
                format!("must be \"form\" or \"url\", got {other}"),
            ));
            Mode::Form
        }
    };
    let misplaced = |key: &str, errors: &mut Vec<FieldError>, mode_name: &str| {
        if fields.get(key).is_some_and(|v| !v.is_null()) {
            errors.push(FieldError::new(
                key,
                ErrorCode::UnknownField,
                format!("not used in {mode_name} mode"),
            ));
        }
    };
    let mut form = Form {
        message: message.unwrap_or_default(),
        mode,
        server,
        schema: None,
        fields: Vec::new(),
        url: None,
        host: None,
        elicitation_id,
    };
    match mode {
        Mode::Form => {
            misplaced("url", &mut errors, "form");
            misplaced("elicitation_id", &mut errors, "form");
            match fields.get("schema").filter(|s| !s.is_null()) {
                None => errors.push(FieldError::new("schema", ErrorCode::MissingField, 
                    "required in form mode: the requested schema, {\"type\": \"object\", \"properties\": {...}}")),
                Some(schema) => match read_schema(schema, "schema") {
                    Ok(read) => {
                        form.schema = Some(schema.clone());
                        form.fields = read;
                    }
                    Err(mut found) => errors.append(&mut found),
                },
            }
        }
        Mode::Url => {
            misplaced("schema", &mut errors, "URL");
            match fields.get("url") {
                Some(Value::String(url)) => match match rules {
                    UrlRules::Ask => url_host(url),
                    UrlRules::Stored => browser_host(url),
                } {
                    Ok(host) => {
                        form.host = Some(host);
                        form.url = Some(url.clone());
                    }
                    Err(message) => {
                        errors.push(FieldError::new("url", ErrorCode::InvalidValue, message));
                    }
                },
                None | Some(Value::Null) => errors.push(FieldError::new(
                    "url",
                    ErrorCode::MissingField,
                    "required in URL mode",
                )),
                Some(other) => errors.push(FieldError::new(
                    "url",
                    ErrorCode::WrongType,
                    format!("must be a string, got {}", json_kind(other)),
                )),
            }
        }
    }
    match ValidationErrors::from_vec(errors) {
        Some(errors) => Err(errors),
        None => Ok(form),
    }
}

/// The host a browser opens for an `http` or `https` URL, in its ASCII form (punycode for a
/// name that is not all ASCII), as the WHATWG URL Standard parses it: what `new URL(url)
/// .hostname` gives in the page. A URL whose parsed host is not the one a person reading it
/// would take it for is refused, with the reason: the only difference allowed between the
/// host as written and as parsed is a non-ASCII label becoming its `xn--` form.
fn url_host(url: &str) -> Result<String, String> {
    if url.len() > MAX_URL_BYTES {
        return Err(format!("at most {MAX_URL_BYTES} bytes, got {}", url.len()));
    }
    if let Some(c) = url.chars().find(|c| c.is_control() || c.is_whitespace()) {
        return Err(format!(
            "must not contain spaces or control characters, found U+{:04X}",
            c as u32
        ));
    }
    if let Some(c) = url.chars().find(|c| is_invisible_format(*c)) {
        return Err(format!(
            "must not contain invisible characters that reorder or hide text (bidirectional \
             controls, zero-width characters), found U+{:04X}: the address would display as \
             another",
            c as u32
        ));
    }
    let lower = url.to_ascii_lowercase();
    let rest = lower
        .strip_prefix("https://")
        .or_else(|| lower.strip_prefix("http://"))
        .ok_or("must be an http:// or https:// URL")?;
    // How a person reads the address: the authority ends at the first `/`, `?` or `#`, and
    // the host is what follows any `user@` and precedes any `:port`.
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let (user_info, host_port) = match authority.rsplit_once('@') {
        Some((user_info, host)) => (Some(user_info), host),
        None => (None, authority),
    };
    let written = match host_port.strip_prefix('[') {
        Some(v6) => v6
            .split_once(']')
            .map(|(h, _)| format!("[{h}]"))
            .unwrap_or_default(),
        None => host_port.split(':').next().unwrap_or("").to_owned(),
    };
    if written.is_empty() || written == "[]" {
        return Err("has no host".into());
    }
    let parsed = url::Url::parse(url)
        .map_err(|e| format!("is not an address a browser can open: {e}"))
        .and_then(|parsed| match parsed.host_str() {
            Some(host) if matches!(parsed.scheme(), "http" | "https") => Ok(host.to_owned()),
            _ => Err("has no host".to_owned()),
        });
    // Which host the browser goes to instead, when it can be worked out.
    let opens = |parsed: &Result<String, String>| match parsed {
        Ok(host) if *host != written => {
            format!(": a browser would open `{host}`, not `{written}`")
        }
        _ => String::new(),
    };
    if url.contains('\\') {
        return Err(format!(
            "holds a backslash (\\), which a browser reads as `/`{}",
            opens(&parsed)
        ));
    }
    if let Some(user_info) = user_info {
        let opened = match &parsed {
            Ok(host) => format!(": a browser would open `{host}`"),
            Err(_) => String::new(),
        };
        return Err(format!(
            "has user info before `@` ({}), which reads like a site but is not one{opened}",
            // As written (the lowercased copy has the same byte offsets).
            shortened(&url[url.len() - rest.len()..][..user_info.len()]),
        ));
    }
    if written.contains('%') {
        return Err(format!(
            "has a percent-escape in its host ({}), which a browser decodes{}",
            shortened(&written),
            opens(&parsed)
        ));
    }
    let parsed = parsed?;
    if !written_as_parsed(&written, &parsed) {
        return Err(format!(
            "has a host written {} that a browser reads as `{parsed}` (an IP address written \
             an unusual way, or characters a browser rewrites): write the host as it is opened",
            shortened(&written)
        ));
    }
    Ok(parsed)
}

/// The host a browser opens for `url`, in its ASCII form, with none of the ask's checks of
/// how a person would read it (see [`UrlRules::Stored`]).
fn browser_host(url: &str) -> Result<String, String> {
    let parsed =
        url::Url::parse(url).map_err(|e| format!("is not an address a browser can open: {e}"))?;
    match parsed.host_str() {
        Some(host) if matches!(parsed.scheme(), "http" | "https") => Ok(host.to_owned()),
        _ => Err("must be an http:// or https:// URL with a host".to_owned()),
    }
}

/// Whether `c` is a format character that draws nothing yet changes how the text around it
/// shows: the Unicode bidirectional controls (which can show `moc.elgoog//:sptth` as
/// `https://google.com`), zero-width spaces and joiners, the word joiner and invisible
/// operators, the soft hyphen and the byte order mark.
fn is_invisible_format(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{061C}'
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{2069}'
            | '\u{FEFF}'
    )
}

/// Whether the host as written (lowercased) is the parsed one, but for its non-ASCII labels
/// (and only those) becoming punycode: the same labels, in the same places.
fn written_as_parsed(written: &str, parsed: &str) -> bool {
    written.split('.').count() == parsed.split('.').count()
        && written
            .split('.')
            .zip(parsed.split('.'))
            .all(|(written, parsed)| {
                if written.is_ascii() {
                    written == parsed
                } else {
                    parsed.starts_with("xn--")
                }
            })
}

/// `text` for an error message: whole if short, else its start and an ellipsis.
fn shortened(text: &str) -> String {
    const MOST: usize = 64;
    match text.char_indices().nth(MOST) {
        Some((cut, _)) => format!("`{}…`", &text[..cut]),
        None => format!("`{text}`"),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn hosts_are_what_the_link_reaches() {
        assert_eq!(
            url_host("https://Example.com/a?b#c").unwrap(),
            "example.com"
        );
        assert_eq!(url_host("http://[::1]:80/").unwrap(), "[::1]");
        assert_eq!(
            url_host("https://example.com.:8443/x").unwrap(),
            "example.com."
        );
        assert_eq!(url_host("http://127.0.0.1:80/").unwrap(), "127.0.0.1");
        for bad in [
            "javascript:alert(1)",
            "ftp://x",
            "https://",
            "https://a b",
            "https:///x",
            "https:example.com",
            "https://exa mple.com",
            "https://example.com:port/",
            "https://xn--/",
        ] {
            assert!(url_host(bad).is_err(), "{bad}");
        }
    }

    /// The refusal of `url`, which must say each of `says`.
    fn refused(url: &str, says: &[&str]) {
        let error = url_host(url).expect_err(url);
        for part in says {
            assert!(error.contains(part), "{url}: {error}");
        }
    }

    #[test]
    fn bidirectional_controls_and_invisible_characters_are_refused_anywhere() {
        refused(
            "https://evil.example/?\u{202E}moc.elgoog.stnuocca//:sptth",
            &["U+202E", "reorder or hide"],
        );
        for c in [
            '\u{061C}', '\u{200B}', '\u{200D}', '\u{200E}', '\u{200F}', '\u{202A}', '\u{2066}',
            '\u{2069}', '\u{2060}', '\u{FEFF}', '\u{00AD}',
        ] {
            for url in [
                format!("https://example.com/a{c}b"),
                format!("https://exa{c}mple.com/"),
                format!("https://example.com/#{c}"),
            ] {
                refused(&url, &[&format!("U+{:04X}", c as u32)]);
            }
        }
        assert!(url_host("https://example.com/caf\u{e9}").is_ok());
    }

    #[test]
    fn a_stored_url_the_ask_now_refuses_reads_back_with_the_browser_s_host() {
        let stored = json!({"message": "Sign in", "mode": "url",
            "url": "https://accounts.example@evil.example/login", "host": "accounts.example"});
        assert!(validate_form(&stored, UrlRules::Ask).is_err());
        let form = validate_form(&stored, UrlRules::Stored).unwrap();
        assert_eq!(form.host.as_deref(), Some("evil.example"));
        let unopenable = json!({"message": "m", "mode": "url", "url": "javascript:alert(1)"});
        assert!(validate_form(&unopenable, UrlRules::Stored).is_err());
    }

    #[test]
    fn a_backslash_is_refused_naming_the_host_a_browser_opens() {
        refused(
            "https://evil.example\\@accounts.google.com/",
            &[
                "backslash",
                "would open `evil.example`, not `accounts.google.com`",
            ],
        );
        refused("https://example.com\\path", &["backslash"]);
        refused("https://example.com/a\\b", &["backslash"]);
    }

    #[test]
    fn user_info_is_refused_naming_the_host_a_browser_opens() {
        refused(
            "https://Bank.com@evil.example:8443/x",
            &[
                "user info before `@` (`Bank.com`)",
                "would open `evil.example`",
            ],
        );
        refused(
            "https://user:pass@example.com/",
            &["user info", "`user:pass`"],
        );
        refused("https://@example.com/", &["user info"]);
        let long = format!("https://{}@example.com/", "a".repeat(500));
        let error = url_host(&long).unwrap_err();
        assert!(error.len() < 300, "{error}");
    }

    #[test]
    fn a_non_ascii_host_is_given_in_punycode() {
        // A Cyrillic `а` in front of Latin `pple`: accepted, and shown as the browser's ASCII
        // form, where it cannot pass for apple.com.
        assert_eq!(
            url_host("https://\u{0430}pple.com/").unwrap(),
            "xn--pple-43d.com"
        );
        assert_eq!(
            url_host("https://B\u{fc}cher.example/").unwrap(),
            "xn--bcher-kva.example"
        );
        assert_eq!(
            url_host("https://xn--bcher-kva.example/").unwrap(),
            "xn--bcher-kva.example"
        );
    }

    #[test]
    fn a_host_a_browser_rewrites_is_refused() {
        refused(
            "http://0x7f.1/",
            &["written `0x7f.1`", "reads as `127.0.0.1`"],
        );
        refused("http://127.1/", &["reads as `127.0.0.1`"]);
        refused("http://0177.0.0.1/", &["reads as `127.0.0.1`"]);
        refused("http://2130706433/", &["reads as `127.0.0.1`"]);
        refused(
            "https://example%2ecom/",
            &["percent-escape in its host (`example%2ecom`)"],
        );
        refused("https://%65xample.com/", &["percent-escape"]);
        // Full-width letters and an ideographic full stop, which a browser maps to ASCII.
        refused("https://\u{ff47}oogle.com/", &["reads as `google.com`"]);
        refused("https://evil\u{3002}example/", &["reads as `evil.example`"]);
        refused(
            "http://[::FFFF:127.0.0.1]/",
            &["reads as `[::ffff:7f00:1]`"],
        );
    }
}
