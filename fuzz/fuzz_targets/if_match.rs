//! Fuzzes the HTTP example's `If-Match` parser (`examples/src/http/etag.rs`) and the
//! typed reading of its tags as concurrency tokens.
//!
//! ```text
//! cargo install cargo-fuzz
//! RUSTC_BOOTSTRAP=1 cargo fuzz run if_match -- -max_total_time=60   # or: cargo +nightly fuzz run if_match
//! ```
//!
//! The input is split on `\n` into header lines (a request may carry several `If-Match`
//! lines, read as one list). Beyond "no panic", it asserts what the parser promises:
//! tags hold only `etagc` bytes, `*` is only `*`, every accepted token is valid (never
//! nil) and its own ETag reads back as exactly that token.
#![no_main]

use diesel_occ::{UuidToken, VersionToken};
use libfuzzer_sys::fuzz_target;

// The parser's own source file, compiled here: the example crate would bring its
// database drivers and HTTP stack into the instrumented build.
#[path = "../../examples/src/http/etag.rs"]
#[allow(dead_code)]
mod etag;

use etag::{IfMatch, Precondition, etag, parse_if_match, precondition};

fn is_etagc(byte: u8) -> bool {
    byte == 0x21 || (0x23..=0x7e).contains(&byte) || byte >= 0x80
}

fn check_tokens<T: VersionToken + std::fmt::Debug>(lines: &[&str]) {
    if let Precondition::Tokens(tokens) = precondition::<T>(lines.iter().copied()) {
        assert!(!tokens.is_empty());
        for token in tokens {
            assert!(
                token.validate().is_ok(),
                "accepted an invalid token {token:?}"
            );
            match precondition::<T>([etag(&token).as_str()]) {
                Precondition::Tokens(again) => assert_eq!(again, vec![token]),
                other => panic!("the ETag of {token:?} reads back as {other:?}"),
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let lines: Vec<&str> = text.split('\n').collect();
    for line in &lines {
        match parse_if_match(line) {
            Err(_) => {}
            Ok(IfMatch::Any) => assert_eq!(line.trim_matches([' ', '\t']), "*"),
            Ok(IfMatch::Tags(tags)) => {
                assert!(!tags.is_empty());
                for tag in tags {
                    assert!(tag.opaque.bytes().all(is_etagc), "{:?}", tag.opaque);
                }
            }
        }
    }
    check_tokens::<UuidToken>(&lines);
    check_tokens::<i64>(&lines);
    check_tokens::<i16>(&lines);
});
