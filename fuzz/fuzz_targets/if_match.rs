//! Fuzzes diesel-occ-axum's `If-Match` / `If-None-Match` parser
//! (`diesel-occ-axum/src/parse.rs`) and the typed reading of its tags as concurrency
//! tokens.
//!
//! ```text
//! cargo install cargo-fuzz
//! RUSTC_BOOTSTRAP=1 cargo fuzz run if_match -- -max_total_time=60   # or: cargo +nightly fuzz run if_match
//! ```
//!
//! The input is split on `\n` into header lines (a request may carry several lines of
//! one header, read as one list). Beyond "no panic", it asserts what the parser
//! promises: `*` is only a lone `*`, tags hold only `etagc` bytes and render back to
//! themselves, the extractors agree with the parser, and every token a header names
//! is valid (never nil), matches that header, and its own ETag names exactly it.
#![no_main]

use diesel_occ::{UuidToken, VersionToken};
use diesel_occ_axum::parse::{TagList, parse};
use diesel_occ_axum::{ETag, IfMatch, IfNoneMatch};
use libfuzzer_sys::fuzz_target;

fn is_etagc(byte: u8) -> bool {
    byte == 0x21 || (0x23..=0x7e).contains(&byte) || byte >= 0x80
}

fn check_tokens<T: VersionToken>(if_match: &IfMatch) {
    let Some(token) = if_match.token::<T>() else {
        return;
    };
    assert!(token.validate().is_ok(), "accepted an invalid token {token:?}");
    assert!(if_match.matches(&token), "{if_match:?} does not match its own {token:?}");
    let own = ETag::from_token(&token).to_header_value();
    let again = IfMatch::from_header_lines([own.as_bytes()]).expect("a token's ETag parses");
    assert_eq!(again.token::<T>(), Some(token));
}

fuzz_target!(|data: &[u8]| {
    let lines: Vec<&[u8]> = data.split(|b| *b == b'\n').collect();
    let parsed = parse(lines.iter().copied());
    let if_match = IfMatch::from_header_lines(lines.iter().copied());
    let if_none_match = IfNoneMatch::from_header_lines(lines.iter().copied());
    match parsed {
        Err(_) => {
            assert_eq!(if_match.map_err(|p| p.status().as_u16()), Err(400));
            assert_eq!(if_none_match.map_err(|p| p.status().as_u16()), Err(400));
        }
        Ok(None) => unreachable!("splitting yields at least one line"),
        Ok(Some(TagList::Any)) => {
            assert_eq!(lines.len(), 1);
            let trimmed: Vec<u8> = lines[0].iter().copied().filter(|b| *b != b' ' && *b != b'\t').collect();
            assert_eq!(trimmed, b"*");
            assert!(if_match.expect("* is a precondition").is_any());
        }
        Ok(Some(TagList::Tags(tags))) => {
            assert!(!tags.is_empty());
            for tag in &tags {
                assert!(tag.opaque().iter().copied().all(is_etagc), "{tag:?}");
                let rendered = tag.to_header_value();
                assert_eq!(parse([rendered.as_bytes()]), Ok(Some(TagList::Tags(vec![tag.clone()]))));
                assert!(if_none_match.as_ref().expect("parsed").matches(tag));
            }
            let if_match = if_match.expect("a list is a precondition");
            assert_eq!(if_match.tags(), tags.as_slice());
            check_tokens::<UuidToken>(&if_match);
            check_tokens::<i64>(&if_match);
            check_tokens::<i16>(&if_match);
        }
    }
});
