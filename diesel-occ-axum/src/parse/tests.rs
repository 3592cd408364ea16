use proptest::prelude::*;

use super::{SyntaxError, TagList, parse};
use crate::etag::ETag;
use crate::extract::IfMatch;

fn one(line: &str) -> Result<Option<TagList>, SyntaxError> {
    parse([line.as_bytes()])
}

fn strong(opaque: &str) -> ETag {
    ETag::from_parts(false, opaque.as_bytes().to_vec())
}

fn weak(opaque: &str) -> ETag {
    ETag::from_parts(true, opaque.as_bytes().to_vec())
}

#[test]
fn parses_tags_lists_and_star() {
    assert_eq!(one(" * "), Ok(Some(TagList::Any)));
    assert_eq!(
        one(r#""a", W/"b" ,"c""#),
        Ok(Some(TagList::Tags(vec![
            strong("a"),
            weak("b"),
            strong("c")
        ])))
    );
    assert_eq!(
        one(r#", "a",,"#),
        Ok(Some(TagList::Tags(vec![strong("a")])))
    );
    // An empty opaque-tag is well formed.
    assert_eq!(one(r#""""#), Ok(Some(TagList::Tags(vec![strong("")]))));
    // obs-text is etagc.
    assert_eq!(
        parse([&b"\"\xff\x80\""[..]]),
        Ok(Some(TagList::Tags(vec![ETag::from_parts(
            false,
            vec![0xff, 0x80]
        )])))
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
        "*, \"a\"",
    ] {
        assert_eq!(one(bad), Err(SyntaxError), "{bad:?}");
    }
    // A control byte is not etagc.
    assert_eq!(parse([&b"\"a\x01\""[..]]), Err(SyntaxError));
}

#[test]
fn several_lines_are_one_list() {
    let lines: [&[u8]; 2] = [b"\"a\"", b"W/\"b\", \"c\""];
    assert_eq!(
        parse(lines),
        Ok(Some(TagList::Tags(vec![
            strong("a"),
            weak("b"),
            strong("c")
        ])))
    );
    // `*` is the whole value, never a list element.
    let star_and_tag: [&[u8]; 2] = [b"*", b"\"a\""];
    assert_eq!(parse(star_and_tag), Err(SyntaxError));
    let tag_and_star: [&[u8]; 2] = [b"\"a\"", b"*"];
    assert_eq!(parse(tag_and_star), Err(SyntaxError));
    let stars: [&[u8]; 2] = [b"*", b"*"];
    assert_eq!(parse(stars), Err(SyntaxError));
    // An empty line beside a tag is an empty list element.
    let with_empty: [&[u8]; 2] = [b"\"a\"", b""];
    assert_eq!(
        parse(with_empty),
        Ok(Some(TagList::Tags(vec![strong("a")])))
    );
    assert_eq!(parse(Vec::<&[u8]>::new()), Ok(None));
}

/// `etagc` text: `!`, `#` to `~` (no `"`, no space) and some obs-text characters.
fn opaque() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop_oneof![Just(b'!'), 0x23u8..=0x7e, 0x80u8..=0xff], 0..20)
}

fn render(tags: &[(bool, Vec<u8>)], separator: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, (weak, opaque)) in tags.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(separator.as_bytes());
        }
        if *weak {
            out.extend_from_slice(b"W/");
        }
        out.push(b'"');
        out.extend_from_slice(opaque);
        out.push(b'"');
    }
    out
}

proptest! {
    /// Any bytes: no panic, and what parses is made of tags found, quoted, in the input.
    #[test]
    fn arbitrary_bytes_parse_or_are_refused(
        lines in prop::collection::vec(
            prop_oneof![
                prop::collection::vec(any::<u8>(), 0..60),
                "[\"W/, *a-f0-9-]{0,40}".prop_map(String::into_bytes),
            ],
            0..3,
        ),
    ) {
        match parse(lines.iter().map(Vec::as_slice)) {
            Err(SyntaxError) => {}
            Ok(None) => prop_assert!(lines.is_empty()),
            Ok(Some(TagList::Any)) => {
                prop_assert_eq!(lines.len(), 1);
                prop_assert_eq!(super::trim(&lines[0]), b"*");
            }
            Ok(Some(TagList::Tags(tags))) => {
                prop_assert!(!tags.is_empty());
                for tag in tags {
                    prop_assert!(tag.opaque().iter().copied().all(crate::etag::is_etagc));
                    let quoted = [&b"\""[..], tag.opaque(), b"\""].concat();
                    prop_assert!(lines.iter().any(|l| l.windows(quoted.len()).any(|w| w == quoted)));
                }
            }
        }
    }

    /// Well-formed lists, with any spacing and empty elements, parse back to their tags.
    #[test]
    fn entity_tag_lists_round_trip(
        tags in prop::collection::vec((any::<bool>(), opaque()), 1..6),
        separator in "[ \t]{0,2},[ \t]{0,2}(,[ \t]{0,2}){0,2}",
        padding in "[ \t]{0,3}",
    ) {
        let line = [padding.as_bytes(), &render(&tags, &separator), padding.as_bytes()].concat();
        let expected: Vec<ETag> = tags
            .iter()
            .map(|(weak, opaque)| ETag::from_parts(*weak, opaque.clone()))
            .collect();
        prop_assert_eq!(parse([line.as_slice()]), Ok(Some(TagList::Tags(expected))));
    }

    /// A token's ETag, alone or among others, names exactly that token; its weak copy
    /// never matches under If-Match.
    #[test]
    fn a_tokens_etag_reads_back_as_the_token(token: i64, others in prop::collection::vec(any::<i64>(), 0..4)) {
        let tag = ETag::from_token(&token);
        let header = tag.to_header_value();
        let alone = IfMatch::from_header_lines([header.as_bytes()]).unwrap();
        prop_assert_eq!(alone.token::<i64>(), Some(token));
        prop_assert!(alone.matches(&token));
        let mut all: Vec<String> = others.iter().map(|t| ETag::from_token(t).to_string()).collect();
        all.push(tag.to_string());
        let list = all.join(", ");
        let listed = IfMatch::from_header_lines([list.as_bytes()]).unwrap();
        prop_assert!(listed.matches(&token));
        let weak = tag.into_weak().to_string();
        let weak_only = IfMatch::from_header_lines([weak.as_bytes()]).unwrap();
        prop_assert!(!weak_only.matches(&token));
        prop_assert_eq!(weak_only.token::<i64>(), None);
    }
}
