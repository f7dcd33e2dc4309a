//! Text from agents as the gateway itself shows it, outside the answer page: in mail and on
//! the pages of mail links. It is shown the way the page's `showText` shows it (`web/js/
//! page.js`): as text, never markup, and with each explicit direction control replaced by a
//! visible mark, because an override inside the text would still reverse what it covers
//! ("\u{202E}fdp.exe" reads "exe.pdf") however the text is isolated from its surroundings.

use std::fmt::Write as _;

/// The explicit direction controls, with the short name and the description the page uses.
const DIRECTION_CONTROLS: [(char, &str, &str); 12] = [
    ('\u{202A}', "LRE", "left-to-right embedding"),
    ('\u{202B}', "RLE", "right-to-left embedding"),
    ('\u{202C}', "PDF", "pop directional formatting"),
    ('\u{202D}', "LRO", "left-to-right override"),
    ('\u{202E}', "RLO", "right-to-left override"),
    ('\u{2066}', "LRI", "left-to-right isolate"),
    ('\u{2067}', "RLI", "right-to-left isolate"),
    ('\u{2068}', "FSI", "first strong isolate"),
    ('\u{2069}', "PDI", "pop directional isolate"),
    ('\u{200E}', "LRM", "left-to-right mark"),
    ('\u{200F}', "RLM", "right-to-left mark"),
    ('\u{061C}', "ALM", "Arabic letter mark"),
];

fn direction_control(c: char) -> Option<(&'static str, &'static str)> {
    DIRECTION_CONTROLS
        .iter()
        .find(|(control, ..)| *control == c)
        .map(|(_, name, what)| (*name, *what))
}

/// `text` escaped for HTML text or a quoted attribute value.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        push_escaped(&mut out, c);
    }
    out
}

fn push_escaped(out: &mut String, c: char) {
    match c {
        '&' => out.push_str("&amp;"),
        '<' => out.push_str("&lt;"),
        '>' => out.push_str("&gt;"),
        '"' => out.push_str("&quot;"),
        '\'' => out.push_str("&#39;"),
        c => out.push(c),
    }
}

/// `text` as HTML: escaped, each direction control a `bidi-mark` span as the page makes it
/// (its name in a dashed box, read aloud as what it is, never applied).
pub fn html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match direction_control(c) {
            Some((name, what)) => {
                let code = format!("U+{:04X}", u32::from(c));
                let _ = write!(
                    out,
                    "<span class=\"bidi-mark\" dir=\"ltr\" role=\"img\" \
                     aria-label=\"{what} ({code}), not applied\" \
                     title=\"{code} {what}: shown here, not applied\">{name}</span>"
                );
            }
            None => push_escaped(&mut out, c),
        }
    }
    out
}

/// `text` for plain text (a mail's text part, its subject): each direction control named in
/// brackets, as the page's `plainText` does for notifications.
pub fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match direction_control(c) {
            Some((name, _)) => {
                out.push('[');
                out.push_str(name);
                out.push(']');
            }
            None => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_from_an_agent_stays_text() {
        assert_eq!(
            escape(r#"<img src=x onerror="alert('1')">&"#),
            "&lt;img src=x onerror=&quot;alert(&#39;1&#39;)&quot;&gt;&amp;"
        );
        assert_eq!(html("<b>"), "&lt;b&gt;");
    }

    #[test]
    fn direction_controls_are_shown_not_applied() {
        let shown = html("\u{202E}fdp.exe");
        assert!(!shown.contains('\u{202E}'), "{shown}");
        assert!(
            shown.starts_with(
                "<span class=\"bidi-mark\" dir=\"ltr\" role=\"img\" \
                 aria-label=\"right-to-left override (U+202E), not applied\""
            ),
            "{shown}"
        );
        assert!(shown.ends_with(">RLO</span>fdp.exe"), "{shown}");
        assert_eq!(plain("a\u{2066}b\u{061C}c\u{200F}"), "a[LRI]b[ALM]c[RLM]");
        // Every control the page marks, and nothing else.
        for (control, name, _) in DIRECTION_CONTROLS {
            assert_eq!(plain(&control.to_string()), format!("[{name}]"));
            assert!(!html(&control.to_string()).contains(control));
        }
        assert_eq!(plain("שלום \u{200D}"), "שלום \u{200D}");
    }
}
