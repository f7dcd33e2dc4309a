//! A small, strict JSON reader over borrowed text, for hot paths that must not build a
//! `serde_json::Value`.
//!
//! Its one promise: whatever it reads, serde_json reads the same way. Where serde_json would
//! refuse the text, or where this reader would need to know more than it does (a key written
//! with escapes, nesting deeper than [`MAX_DEPTH`]), it gives up with `None` and the caller
//! takes its general path. So a `None` says nothing about the input; a `Some` can be trusted.

use std::borrow::Cow;

mod bytes;

pub(crate) use bytes::first_special;
use bytes::{skip_literal_at, skip_value_at, skip_whitespace, special_byte, unicode_escape_at};

/// Deepest nesting read; serde_json refuses text nested 128 deep, this stops well before.
pub const MAX_DEPTH: usize = 100;

/// A position in JSON text.
#[derive(Clone)]
pub struct Scanner<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Scanner<'a> {
    /// A scanner at the start of `text`.
    pub fn new(text: &'a str) -> Self {
        Scanner { text, at: 0 }
    }

    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    /// The next byte after whitespace, not consumed.
    pub fn peek(&mut self) -> Option<u8> {
        self.at = skip_whitespace(self.bytes(), self.at);
        self.bytes().get(self.at).copied()
    }

    /// Consumes `byte` (after whitespace) if it is next.
    pub fn eat_if(&mut self, byte: u8) -> bool {
        let next = self.peek() == Some(byte);
        if next {
            self.at += 1;
        }
        next
    }

    /// Consumes `byte` (after whitespace), or gives up.
    pub fn eat(&mut self, byte: u8) -> Option<()> {
        self.eat_if(byte).then_some(())
    }

    /// Where the next value starts (after whitespace), to take its text later with
    /// [`Scanner::text_from`].
    pub fn mark(&mut self) -> usize {
        self.peek();
        self.at
    }

    /// The text from `mark` to where the scanner stands.
    pub fn text_from(&self, mark: usize) -> &'a str {
        self.text.get(mark..self.at).unwrap_or_default()
    }

    /// Succeeds when only whitespace is left.
    pub fn end(&mut self) -> Option<()> {
        self.peek().is_none().then_some(())
    }

    /// Reads an object, calling `each` with every key (after its `:`); `each` reads the value.
    /// Keys written with escapes are not compared, so they give up.
    pub fn object(&mut self, mut each: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<()> {
        self.eat(b'{')?;
        if self.eat_if(b'}') {
            return Some(());
        }
        loop {
            let key = self.plain_key()?;
            self.eat(b':')?;
            each(self, key)?;
            if !self.eat_if(b',') {
                return self.eat(b'}');
            }
        }
    }

    /// Reads a key written without escapes.
    fn plain_key(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let start = self.at;
        let stop = special_byte(self.bytes(), start)?;
        (self.bytes()[stop] == b'"').then_some(())?;
        self.at = stop + 1;
        Some(&self.text[start..stop])
    }

    /// Reads an array, calling `each` to read every item.
    pub fn array(&mut self, mut each: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.eat(b'[')?;
        if self.eat_if(b']') {
            return Some(());
        }
        loop {
            each(self)?;
            if !self.eat_if(b',') {
                return self.eat(b']');
            }
        }
    }

    /// Reads `true` or `false`.
    pub fn boolean(&mut self) -> Option<bool> {
        match self.peek()? {
            b't' => self.literal("true").map(|()| true),
            b'f' => self.literal("false").map(|()| false),
            _ => None,
        }
    }

    /// Reads `null` if it is next.
    pub fn null(&mut self) -> bool {
        self.peek() == Some(b'n') && self.literal("null").is_some()
    }

    fn literal(&mut self, word: &str) -> Option<()> {
        self.at = skip_literal_at(self.bytes(), self.at, word.as_bytes())?;
        Some(())
    }

    /// Reads a string: borrowed when written without escapes.
    pub fn string(&mut self) -> Option<Cow<'a, str>> {
        self.eat(b'"')?;
        let bytes = self.bytes();
        let start = self.at;
        let stop = special_byte(bytes, start)?;
        self.at = stop + 1;
        if bytes[stop] == b'"' {
            return Some(Cow::Borrowed(&self.text[start..stop]));
        }
        // Decoded as the text is searched, in one pass: the decoded string grows as it must
        // (its growth copies less than searching the text twice to learn its size would).
        let mut decoded = String::with_capacity(stop - start + 64);
        decoded.push_str(&self.text[start..stop]);
        self.at = stop;
        loop {
            // At a backslash: decode one escape, then copy up to the next quote or backslash.
            self.at += 1;
            let escape = *bytes.get(self.at)?;
            self.at += 1;
            match escape {
                b'"' => decoded.push('"'),
                b'\\' => decoded.push('\\'),
                b'/' => decoded.push('/'),
                b'b' => decoded.push('\u{8}'),
                b'f' => decoded.push('\u{c}'),
                b'n' => decoded.push('\n'),
                b'r' => decoded.push('\r'),
                b't' => decoded.push('\t'),
                b'u' => decoded.push(self.unicode_escape()?),
                _ => return None,
            }
            // Escapes often follow one another (text written ASCII-only): no search between.
            if bytes.get(self.at) == Some(&b'\\') {
                continue;
            }
            let from = self.at;
            let stop = special_byte(bytes, from)?;
            decoded.push_str(&self.text[from..stop]);
            self.at = stop;
            if bytes[stop] == b'"' {
                self.at += 1;
                return Some(Cow::Owned(decoded));
            }
        }
    }

    /// The character of a `\uXXXX` escape (the `\u` read), joining a surrogate pair.
    fn unicode_escape(&mut self) -> Option<char> {
        let (c, after) = unicode_escape_at(self.bytes(), self.at)?;
        self.at = after;
        Some(c)
    }

    /// Reads any value, checking it is JSON serde_json reads, and returns its text.
    pub fn value_span(&mut self) -> Option<&'a str> {
        self.peek()?;
        let start = self.at;
        self.skip_value()?;
        Some(&self.text[start..self.at])
    }

    /// Skips one value, checking its grammar.
    fn skip_value(&mut self) -> Option<()> {
        self.at = skip_value_at(self.bytes(), self.at)?;
        Some(())
    }
}

#[cfg(test)]
mod tests;
