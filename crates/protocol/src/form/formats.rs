//! The formats a form's text fields may ask for, checked as the MCP SDK's pydantic types take
//! them (`EmailStr`, `AnyUrl`, `date`, `datetime`): e-mail addresses, URIs, dates, dates and
//! times.

/// `local@domain.tld`, no looser than the MCP SDK's `EmailStr` (email-validator): a dot-atom
/// local part (no leading, trailing or doubled dot, no quoting, no spaces or punctuation
/// outside `!#$%&'*+-/=?^_`{|}~`), and a domain name of at least two labels of letters,
/// digits and inner hyphens, its last label not all digits, not an IP address and not a
/// special-use name (`.arpa`, `.invalid`, `.local`, `.localhost`, `.onion`, `.test`).
pub(super) fn is_email(text: &str) -> bool {
    const SPECIAL_USE: [&str; 6] = ["arpa", "invalid", "local", "localhost", "onion", "test"];
    let Some((local, domain)) = text.rsplit_once('@') else {
        return false;
    };
    let atom = |c: char| {
        c.is_ascii_alphanumeric()
            || "!#$%&'*+-/=?^_`{|}~".contains(c)
            || (!c.is_ascii() && c.is_alphanumeric())
    };
    let local_fits = !local.is_empty()
        && local
            .split('.')
            .all(|part| !part.is_empty() && part.chars().all(atom));
    let labels: Vec<&str> = domain.split('.').collect();
    let label_fits = |label: &&str| {
        !label.is_empty()
            && label.chars().count() <= 63
            && !label.starts_with('-')
            && !label.ends_with('-')
            && label.chars().all(|c| {
                c.is_ascii_alphanumeric() || c == '-' || (!c.is_ascii() && c.is_alphanumeric())
            })
    };
    let lower = domain.to_lowercase();
    local_fits
        && labels.len() >= 2
        && domain.chars().count() <= 253
        && labels.iter().all(label_fits)
        && !labels
            .last()
            .is_some_and(|tld| tld.bytes().all(|b| b.is_ascii_digit()))
        && !SPECIAL_USE
            .iter()
            .any(|name| lower == *name || lower.ends_with(&format!(".{name}")))
}

/// `scheme:rest`, the scheme a letter and then letters, digits, `+`, `-` or `.`; no looser
/// than the MCP SDK's `AnyUrl` (WHATWG URL parsing) where an authority follows (`//`): the
/// host is not empty (but for `file:` and schemes that are not web ones), an IPv6 address in
/// brackets is whole, a dotted-number host is an IPv4 address, the port is at most 65535,
/// and the host has none of the characters WHATWG forbids in one.
pub(super) fn is_uri(text: &str) -> bool {
    let Some((scheme, rest)) = text.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        && !rest.is_empty()
        && !text.chars().any(|c| c.is_whitespace() || c.is_control())
        && authority_fits(&scheme.to_ascii_lowercase(), rest)
}

/// The authority after `scheme:`, when there is one (`//host[:port]`).
fn authority_fits(scheme: &str, rest: &str) -> bool {
    let special = matches!(scheme, "http" | "https" | "ws" | "wss" | "ftp");
    let Some(after) = rest.strip_prefix("//") else {
        // `https:x.y` reads as `https://x.y/`; other schemes have no authority here.
        return !special || authority_fits(scheme, &format!("//{rest}"));
    };
    let end = after.find(['/', '?', '#', '\\']).unwrap_or(after.len());
    let authority = &after[..end];
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let (host, port) = if let Some(inner) = host_port.strip_prefix('[') {
        let Some((address, tail)) = inner.split_once(']') else {
            return false;
        };
        if address.parse::<std::net::Ipv6Addr>().is_err() {
            return false;
        }
        match tail {
            "" => ("[v6]", None),
            _ => match tail.strip_prefix(':') {
                Some(port) => ("[v6]", Some(port)),
                None => return false,
            },
        }
    } else {
        match host_port.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (host_port, None),
        }
    };
    if let Some(port) = port
        && !(port.is_empty()
            || (port.bytes().all(|b| b.is_ascii_digit())
                && port.parse::<u32>().is_ok_and(|p| p <= 65_535)))
    {
        return false;
    }
    if host.is_empty() {
        return !special;
    }
    if host == "[v6]" {
        return true;
    }
    if host.chars().any(|c| "#/:<>?@[\\]^|%".contains(c)) {
        return false;
    }
    let last = host.trim_end_matches('.').rsplit('.').next().unwrap_or("");
    let numeric =
        !last.is_empty() && (last.bytes().all(|b| b.is_ascii_digit()) || last.starts_with("0x"));
    !(special && numeric)
        || host
            .trim_end_matches('.')
            .parse::<std::net::Ipv4Addr>()
            .is_ok()
}

fn digits(text: &str, n: usize) -> Option<u32> {
    (text.len() == n && text.bytes().all(|b| b.is_ascii_digit()))
        .then(|| text.parse().ok())
        .flatten()
}

/// `YYYY-MM-DD`, a day that exists.
pub(super) fn is_date(text: &str) -> bool {
    let mut parts = text.split('-');
    let (Some(y), Some(m), Some(d), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let (Some(y), Some(m), Some(d)) = (digits(y, 4), digits(m, 2), digits(d, 2)) else {
        return false;
    };
    if y == 0 {
        // Year 0 is no date in Python's calendar (the SDK's `date`), nor in ISO 8601's basic one.
        return false;
    }
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

/// `YYYY-MM-DDTHH:MM[:SS[.fraction]][Z|±HH:MM]` (`T` or a space between).
pub(super) fn is_date_time(text: &str) -> bool {
    let Some((date, time)) = text.split_once(['T', 't', ' ']) else {
        return false;
    };
    if !is_date(date) {
        return false;
    }
    let (clock, zone) = match time.find(['Z', 'z', '+', '-']) {
        Some(at) => time.split_at(at),
        None => (time, ""),
    };
    let zone_fits = match zone {
        "" | "Z" | "z" => true,
        offset => {
            let hhmm = &offset[1..];
            matches!(hhmm.split_once(':'), Some((h, m)) if digits(h, 2).is_some_and(|h| h < 24) && digits(m, 2).is_some_and(|m| m < 60))
        }
    };
    let (hms, fraction) = match clock.split_once('.') {
        Some((hms, fraction)) => (hms, Some(fraction)),
        None => (clock, None),
    };
    let mut parts = hms.split(':');
    let (Some(h), Some(m), seconds, None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let clock_fits = digits(h, 2).is_some_and(|h| h < 24)
        && digits(m, 2).is_some_and(|m| m < 60)
        && seconds.is_none_or(|s| digits(s, 2).is_some_and(|s| s < 60))
        && fraction.is_none_or(|f| {
            seconds.is_some() && !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit())
        });
    zone_fits && clock_fits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert!(
            is_email("a.b+c@example.co.uk")
                && !is_email("a@b")
                && !is_email("a b@c.d")
                && !is_email("@c.d")
        );
        assert!(
            is_uri("https://x.y/z")
                && is_uri("mailto:a@b.c")
                && !is_uri("example.com")
                && !is_uri("1http://x")
        );
        // No looser than the MCP SDK's EmailStr (email-validator) and AnyUrl (WHATWG URLs).
        for ok in [
            "a!#$&'*/=?^`{|}~@x.co",
            "é@x.co",
            "a@x.é",
            "a@x.c",
            "a@xn--tda.com",
            "a-b@x-y.co",
        ] {
            assert!(is_email(ok), "{ok}");
        }
        for bad in [
            "a..b@x.co",
            ".a@x.co",
            "a.@x.co",
            "a@x..co",
            "a@.x.co",
            "a@x.co.",
            "a@-x.co",
            "a@x-.co",
            "a@x_y.co",
            "a@x.123",
            "a@1.2.3.4",
            "a@[1.2.3.4]",
            "a(b)@x.co",
            "a,b@x.co",
            "\"a b\"@x.co",
            "a\u{200b}@x.co",
            "a@x.onion",
            "a@x.arpa",
            "a@x.invalid",
            "a@x.local",
            "a@localhost",
            "a@x.test",
            "a@X.Test",
        ] {
            assert!(!is_email(bad), "{bad}");
        }
        for ok in [
            "https://x",
            "https:x.y",
            "http://[::1]/",
            "http://x:65535",
            "http://x:/",
            "file:///etc",
            "foo:bar",
            "urn:isbn:1",
            "http://127.0.0.1:8080/",
            "https://a_b.com",
            "http://ü.com",
        ] {
            assert!(is_uri(ok), "{ok}");
        }
        for bad in [
            "http://",
            "https://",
            "https:",
            "http://[::1",
            "http://[::g]/",
            "http://x:99999",
            "http://x:8a",
            "http://1.2.3.256",
            "http://1.2.3.4.5",
            "ws://a<b/",
            "http://u@/",
        ] {
            assert!(!is_uri(bad), "{bad}");
        }
        assert!(
            is_date("2024-02-29")
                && !is_date("2023-02-29")
                && !is_date("2024-13-01")
                && !is_date("24-01-01")
                && !is_date("0000-01-01")
                && is_date("0001-01-01")
        );
        for ok in [
            "2026-12-02T10:30",
            "2026-12-02T10:30:59",
            "2026-12-02T10:30:59.123Z",
            "2026-12-02 10:30+01:00",
        ] {
            assert!(is_date_time(ok), "{ok}");
        }
        for bad in [
            "2026-12-02",
            "2026-12-02T25:00",
            "2026-12-02T10:30.5",
            "2026-12-02T10:30+1",
            "2026-12-02T10:30:05.",
            "0000-01-01T00:00",
        ] {
            assert!(!is_date_time(bad), "{bad}");
        }
    }
}
