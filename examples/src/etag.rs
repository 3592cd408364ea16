//! ETags and `If-Match` (RFC 9110, sections 8.8.3 and 13.1.1) for concurrency tokens.
//!
//! A row's token is sent as a strong ETag, `"<token>"`. A write must carry it back in
//! `If-Match`; [`precondition`] turns the header into the tokens the write may match:
//!
//! | `If-Match` | outcome |
//! |---|---|
//! | absent | [`Precondition::Missing`]: 428 Precondition Required |
//! | `*` | [`Precondition::Missing`] too: `*` names no version, and a write without a token would be unconditional |
//! | not a list of entity-tags | [`Precondition::Malformed`]: 400 |
//! | a strong tag that is not a token this service issues | [`Precondition::Malformed`]: 400 |
//! | only weak tags (`W/"..."`) | [`Precondition::NeverMatches`]: 412, since `If-Match` uses the strong comparison and a weak tag never matches |
//! | strong tags (weak ones among them are ignored) | [`Precondition::Tokens`]: the write matches if the row holds one of them |

use diesel_occ::{InvalidToken, VersionToken};

/// The strong ETag for a token: the token's client form in double quotes.
pub fn etag<T: VersionToken>(token: &T) -> String {
    format!("\"{}\"", token.encode())
}

/// One entity-tag of a header value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntityTag<'a> {
    /// `W/` was present.
    pub weak: bool,
    /// What is between the quotes.
    pub opaque: &'a str,
}

/// A parsed `If-Match` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IfMatch<'a> {
    /// `*`.
    Any,
    /// A comma-separated list of entity-tags.
    Tags(Vec<EntityTag<'a>>),
}

/// The header is not `*` nor a list of entity-tags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyntaxError;

/// Parses an `If-Match` field value: `"*"` or `1#entity-tag`, where
/// `entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE` and `etagc` is `!` or `#-~` or obs-text.
/// Empty list elements (`"a", , "b"`) are allowed, as RFC 9110 section 5.6.1 asks.
pub fn parse_if_match(value: &str) -> Result<IfMatch<'_>, SyntaxError> {
    let value = value.trim_matches([' ', '\t']);
    if value == "*" {
        return Ok(IfMatch::Any);
    }
    let mut tags = Vec::new();
    let mut rest = value;
    loop {
        rest = rest.trim_start_matches([' ', '\t']);
        if let Some(after) = rest.strip_prefix(',') {
            rest = after;
            continue;
        }
        if rest.is_empty() {
            break;
        }
        let (weak, quoted) = match rest.strip_prefix("W/") {
            Some(after) => (true, after),
            None => (false, rest),
        };
        let body = quoted.strip_prefix('"').ok_or(SyntaxError)?;
        let end = body.find('"').ok_or(SyntaxError)?;
        let opaque = &body[..end];
        if !opaque.bytes().all(is_etagc) {
            return Err(SyntaxError);
        }
        tags.push(EntityTag { weak, opaque });
        rest = body[end + 1..].trim_start_matches([' ', '\t']);
        match rest.strip_prefix(',') {
            Some(after) => rest = after,
            None if rest.is_empty() => break,
            None => return Err(SyntaxError),
        }
    }
    if tags.is_empty() {
        return Err(SyntaxError);
    }
    Ok(IfMatch::Tags(tags))
}

fn is_etagc(byte: u8) -> bool {
    byte == 0x21 || (0x23..=0x7e).contains(&byte) || byte >= 0x80
}

/// What a write may do, given its `If-Match` header values.
#[derive(Debug, Clone, PartialEq)]
pub enum Precondition<T> {
    /// No usable precondition: no header, or `*` (428).
    Missing,
    /// The header cannot be read, or a strong tag is not a valid token (400).
    Malformed(Option<InvalidToken>),
    /// Only weak tags: the strong comparison can never succeed (412).
    NeverMatches,
    /// The write matches if the row holds one of these tokens.
    Tokens(Vec<T>),
}

/// Reads every `If-Match` header value of a request (several header lines form one
/// list) into the tokens a write may match.
pub fn precondition<'a, T: VersionToken>(
    values: impl IntoIterator<Item = &'a str>,
) -> Precondition<T> {
    let mut tokens = Vec::new();
    let mut weak_only = false;
    let mut present = false;
    for value in values {
        present = true;
        match parse_if_match(value) {
            Err(SyntaxError) => return Precondition::Malformed(None),
            Ok(IfMatch::Any) => return Precondition::Missing,
            Ok(IfMatch::Tags(tags)) => {
                for tag in tags {
                    if tag.weak {
                        weak_only = tokens.is_empty();
                        continue;
                    }
                    match T::decode(tag.opaque) {
                        Ok(token) => {
                            weak_only = false;
                            tokens.push(token);
                        }
                        Err(invalid) => return Precondition::Malformed(Some(invalid)),
                    }
                }
            }
        }
    }
    match (present, tokens.is_empty()) {
        (false, _) => Precondition::Missing,
        (true, true) if weak_only => Precondition::NeverMatches,
        (true, true) => Precondition::Malformed(None),
        (true, false) => Precondition::Tokens(tokens),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use diesel_occ::{InvalidTokenReason, UuidToken};

    const A: &str = "6f1c2a4e-1f7e-4a53-9a57-2d1b1f0c3e11";
    const B: &str = "0a3c5e7f-9b1d-4f2a-8c6e-4b2d0f1e3a55";

    fn tokens(values: &[&str]) -> Precondition<UuidToken> {
        precondition(values.iter().copied())
    }

    fn token(text: &str) -> UuidToken {
        UuidToken::decode(text).unwrap()
    }

    #[test]
    fn etag_is_the_quoted_token_and_round_trips() {
        let t = token(A);
        assert_eq!(etag(&t), format!("\"{A}\""));
        assert_eq!(tokens(&[&etag(&t)]), Precondition::Tokens(vec![t]));
        assert_eq!(etag(&7_i64), "\"7\"");
    }

    #[test]
    fn parses_tags_lists_and_star() {
        assert_eq!(parse_if_match(" * "), Ok(IfMatch::Any));
        assert_eq!(
            parse_if_match(r#""a", W/"b" ,"c""#),
            Ok(IfMatch::Tags(vec![
                EntityTag {
                    weak: false,
                    opaque: "a"
                },
                EntityTag {
                    weak: true,
                    opaque: "b"
                },
                EntityTag {
                    weak: false,
                    opaque: "c"
                },
            ]))
        );
        assert_eq!(
            parse_if_match(r#", "a",,"#),
            Ok(IfMatch::Tags(vec![EntityTag {
                weak: false,
                opaque: "a"
            }]))
        );
        // An empty opaque-tag is syntactically valid.
        assert_eq!(
            parse_if_match(r#""""#),
            Ok(IfMatch::Tags(vec![EntityTag {
                weak: false,
                opaque: ""
            }]))
        );
    }

    #[test]
    fn rejects_what_is_not_an_entity_tag_list() {
        for bad in [
            "",
            " , ",
            "abc",
            "\"unterminated",
            "\"a\" \"b\"",
            "w/\"a\"",
            "W/ \"a\"",
            "\"a\"b",
            "\"a b\"",
            "**",
            "\"a\", *",
        ] {
            assert_eq!(parse_if_match(bad), Err(SyntaxError), "{bad:?}");
        }
    }

    #[test]
    fn missing_header_and_star_require_a_real_precondition() {
        assert_eq!(tokens(&[]), Precondition::Missing);
        assert_eq!(tokens(&["*"]), Precondition::Missing);
    }

    #[test]
    fn weak_tags_never_match_under_strong_comparison() {
        assert_eq!(tokens(&[&format!("W/\"{A}\"")]), Precondition::NeverMatches);
        // Among strong tags a weak one is ignored, in any position.
        assert_eq!(
            tokens(&[&format!("W/\"{A}\", \"{B}\"")]),
            Precondition::Tokens(vec![token(B)])
        );
        assert_eq!(
            tokens(&[&format!("\"{B}\", W/\"{A}\"")]),
            Precondition::Tokens(vec![token(B)])
        );
    }

    #[test]
    fn lists_and_repeated_headers_are_one_list() {
        assert_eq!(
            tokens(&[&format!("\"{A}\""), &format!("\"{B}\"")]),
            Precondition::Tokens(vec![token(A), token(B)])
        );
        assert_eq!(
            tokens(&[&format!("\"{A}\" , \"{B}\"")]),
            Precondition::Tokens(vec![token(A), token(B)])
        );
    }

    #[test]
    fn tags_that_are_not_our_tokens_are_malformed() {
        let reason = |p: Precondition<UuidToken>| match p {
            Precondition::Malformed(Some(invalid)) => Some(invalid.reason),
            Precondition::Malformed(None) => None,
            other => panic!("expected Malformed, got {other:?}"),
        };
        assert_eq!(
            reason(tokens(&["\"not-a-uuid\""])),
            Some(InvalidTokenReason::Malformed)
        );
        assert_eq!(
            reason(tokens(&["\"00000000-0000-0000-0000-000000000000\""])),
            Some(InvalidTokenReason::Nil)
        );
        assert_eq!(reason(tokens(&["\"\""])), Some(InvalidTokenReason::Empty));
        assert_eq!(reason(tokens(&[A])), None, "unquoted");
        assert_eq!(reason(tokens(&[&format!("\"{A}\""), "garbage"])), None);
    }
}
