//! The grammar of `If-Match` and `If-None-Match` (RFC 9110, sections 8.8.3, 13.1.1 and
//! 13.1.2): `"*"` or a comma-separated list of entity-tags.
//!
//! ```text
//! If-Match      = "*" / #entity-tag
//! entity-tag    = [ weak ] opaque-tag
//! weak          = %s"W/"
//! opaque-tag    = DQUOTE *etagc DQUOTE
//! etagc         = %x21 / %x23-7E / obs-text      ; no space, no DQUOTE
//! ```
//!
//! A request may carry the header on several lines; they form one list (RFC 9110,
//! section 5.3), so `*` must be the whole value. Empty list elements (`"a", , "b"`) are
//! accepted, as section 5.6.1 asks of recipients; a list with no tag at all is not.

use crate::etag::{ETag, is_etagc};

/// A parsed `If-Match` or `If-None-Match` value.
///
/// ```
/// use diesel_occ_axum::ETag;
/// use diesel_occ_axum::parse::{TagList, parse};
///
/// assert_eq!(parse([&b"*"[..]]), Ok(Some(TagList::Any)));
/// assert_eq!(
///     parse([&b"\"7\", W/\"8\""[..]]),
///     Ok(Some(TagList::Tags(vec![ETag::from_token(&7_i64), ETag::from_token(&8_i64).into_weak()])))
/// );
/// assert_eq!(parse(Vec::<&[u8]>::new()), Ok(None)); // no header
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TagList {
    /// `*`: any current representation.
    Any,
    /// One or more entity-tags, in the order they came.
    Tags(Vec<ETag>),
}

/// The header is neither `*` nor a list of entity-tags.
///
/// ```
/// use diesel_occ_axum::parse::{SyntaxError, parse};
///
/// assert_eq!(parse([&b"abc"[..]]), Err(SyntaxError));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyntaxError;

impl std::fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("not \"*\" nor a list of entity-tags")
    }
}

impl std::error::Error for SyntaxError {}

/// Parses every line of one header (`If-Match` or `If-None-Match`) into one value:
/// `Ok(None)` when there is no line.
///
/// ```
/// use diesel_occ_axum::ETag;
/// use diesel_occ_axum::parse::{TagList, parse};
///
/// // Two header lines are one list.
/// let lines: [&[u8]; 2] = [b"\"1\"", b" \"2\" , "];
/// let one = |n: i64| ETag::from_token(&n);
/// assert_eq!(parse(lines), Ok(Some(TagList::Tags(vec![one(1), one(2)]))));
/// ```
pub fn parse<'a>(
    lines: impl IntoIterator<Item = &'a [u8]>,
) -> Result<Option<TagList>, SyntaxError> {
    let mut seen = false;
    let mut any = false;
    let mut tags = Vec::new();
    for line in lines {
        let line = trim(line);
        // `*` alone is the whole value; with anything else (another line too) it is not
        // a list element.
        if line == b"*" {
            if seen {
                return Err(SyntaxError);
            }
            any = true;
        } else if any {
            return Err(SyntaxError);
        } else {
            push_tags(line, &mut tags)?;
        }
        seen = true;
    }
    match (seen, any) {
        (false, _) => Ok(None),
        (true, true) => Ok(Some(TagList::Any)),
        (true, false) if tags.is_empty() => Err(SyntaxError),
        (true, false) => Ok(Some(TagList::Tags(tags))),
    }
}

/// Appends the entity-tags of one line (`#entity-tag`, empty elements allowed).
fn push_tags(line: &[u8], tags: &mut Vec<ETag>) -> Result<(), SyntaxError> {
    let mut rest = line;
    loop {
        rest = trim_start(rest);
        match rest.first() {
            None => return Ok(()),
            Some(b',') => {
                rest = &rest[1..];
                continue;
            }
            Some(_) => {}
        }
        let (weak, quoted) = match rest.strip_prefix(b"W/") {
            Some(after) => (true, after),
            None => (false, rest),
        };
        let body = quoted.strip_prefix(b"\"").ok_or(SyntaxError)?;
        let end = body.iter().position(|b| *b == b'"').ok_or(SyntaxError)?;
        let opaque = &body[..end];
        if !opaque.iter().copied().all(is_etagc) {
            return Err(SyntaxError);
        }
        tags.push(ETag::from_parts(weak, opaque.to_vec()));
        rest = trim_start(&body[end + 1..]);
        match rest.first() {
            None => return Ok(()),
            Some(b',') => rest = &rest[1..],
            Some(_) => return Err(SyntaxError),
        }
    }
}

fn is_ows(byte: &u8) -> bool {
    *byte == b' ' || *byte == b'\t'
}

fn trim_start(bytes: &[u8]) -> &[u8] {
    let start = bytes.iter().position(|b| !is_ows(b)).unwrap_or(bytes.len());
    &bytes[start..]
}

fn trim(bytes: &[u8]) -> &[u8] {
    let bytes = trim_start(bytes);
    let end = bytes.iter().rposition(|b| !is_ows(b)).map_or(0, |i| i + 1);
    &bytes[..end]
}

#[cfg(test)]
mod tests;
