//! The one escaping of text that came from input (a profile or family name, an event id, a
//! `--set` value) wherever output is written: to a terminal ([`control`]: a control character
//! shows as `\u{1b}` instead of acting on the terminal) and into XML, SVG and HTML ([`xml`]:
//! markup escaped, and control characters, which XML 1.0 forbids even as references, shown the
//! same visible way). `report/` and `cli/` use it; `crate::error` escapes its one-line messages
//! the same way.

use std::borrow::Cow;

/// Whether `c` is a control character that must not reach output raw (a line break and a tab
/// are text).
fn hidden(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}

/// `text` with each control character but line breaks and tabs escaped (`\r`, `\u{1b}`, `\u{7}`).
pub fn control(text: &str) -> Cow<'_, str> {
    if !text.chars().any(hidden) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if hidden(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `text` as XML character data or an attribute value: `& < > " '` as entities, control
/// characters as in [`control`].
pub fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in control(text).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_show_and_text_stays() {
        assert_eq!(control("a\u{1b}[31mb\u{7}\r"), "a\\u{1b}[31mb\\u{7}\\r");
        assert_eq!(control("line\n\ttab é ×"), "line\n\ttab é ×");
        assert_eq!(xml("<a & \"b\"\u{0}>"), "&lt;a &amp; &quot;b&quot;\\u{0}&gt;");
    }
}
