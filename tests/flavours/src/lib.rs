//! The two flavours of the integration tests' scenarios, from one source.
//!
//! A scenario is written once, in async form (`async fn`, `.await`, `#[tokio::test]`),
//! with `#[flavour]` on each item that awaits. The scenario file is compiled twice: in
//! the `asynchronous` module, where `flavour` is [`macro@asynchronous`] and leaves the
//! item as written, and in the `blocking` module, where `flavour` is [`macro@blocking`]
//! and strips the async from it. The names that differ between the flavours (the
//! connection type, `RunQueryDsl`, diesel-occ's prelude, the test database) come from
//! each module's scope, not from here.
//!
//! ```text
//! #[flavour]
//! #[tokio::test]
//! async fn saves() {
//!     let db = db!();
//!     let mut conn = db.conn().await;
//!     entity.save_checked(&mut conn).await.expect("saves");
//! }
//! ```
//!
//! is, for `blocking`:
//!
//! ```text
//! #[test]
//! fn saves() {
//!     let db = db!();
//!     let mut conn = db.conn();
//!     entity.save_checked(&mut conn).expect("saves");
//! }
//! ```
//!
//! A test in both flavours says so once: `#[flavour(test)]` is `#[flavour]` with
//! `#[tokio::test]`, and `#[flavour(test(flavor = "multi_thread"))]` passes its arguments
//! to `#[tokio::test(..)]` (the blocking flavour's `#[test]` takes none).
//!
//! An item written for one flavour alone says so: `#[flavour(blocking)]`,
//! `#[flavour(asynchronous)]`; the other flavour drops it. A test written for one
//! flavour alone is `#[flavour(blocking, test)]` or `#[flavour(asynchronous, test(..))]`.
//!
//! The rewrite works on tokens, keeping each one's span, so errors point into the
//! scenario file, and it reaches into macro invocations and `macro_rules!` bodies inside
//! the item.

use proc_macro::{Delimiter, Group, Ident, Punct, Spacing, Span, TokenStream, TokenTree};

/// The async flavour: the item as written, under `#[tokio::test(..)]` for
/// `#[flavour(test(..))]`. `#[flavour(blocking)]` drops the item (it is the blocking
/// flavour's alone); `#[flavour(asynchronous)]` keeps it.
#[proc_macro_attribute]
pub fn asynchronous(args: TokenStream, item: TokenStream) -> TokenStream {
    let (only, test) = match parse(args) {
        Ok(Args { only, test }) => (only, test),
        Err(error) => return error,
    };
    match (only, test) {
        (Some(Flavour::Blocking), _) => TokenStream::new(),
        (_, None) => item,
        (_, Some(args)) => test_attribute(&["tokio", "test"], args)
            .chain(item)
            .collect(),
    }
}

/// The blocking flavour: the item without `.await`, without `async` on its functions,
/// blocks and closures (`async move { .. }` becomes `{ .. }`), with `Fn`, `FnMut` and
/// `FnOnce` for `AsyncFn`, `AsyncFnMut` and `AsyncFnOnce`, with `T` for
/// `impl Future<Output = T>` and `impl Future<Output = T> + Send` (a trait's method
/// whose future must be `Send`, which `async fn` cannot say, returns the value), and
/// with `#[test]` for `#[tokio::test]` (and its arguments) or `#[flavour(test(..))]`.
/// `#[flavour(asynchronous)]` drops the item (it is the async flavour's alone);
/// `#[flavour(blocking)]` keeps it as written.
#[proc_macro_attribute]
pub fn blocking(args: TokenStream, item: TokenStream) -> TokenStream {
    let (only, test) = match parse(args) {
        Ok(Args { only, test }) => (only, test.is_some()),
        Err(error) => return error,
    };
    let item = match only {
        Some(Flavour::Asynchronous) => return TokenStream::new(),
        Some(Flavour::Blocking) => item,
        None => strip_async(item),
    };
    if !test {
        return item;
    }
    test_attribute(&["test"], None).chain(item).collect()
}

enum Flavour {
    Blocking,
    Asynchronous,
}

/// What `#[flavour(..)]` says of its item: `[blocking | asynchronous][, ][test[(..)]]`.
struct Args {
    /// `blocking` or `asynchronous`: one flavour's item, written in its form; else the
    /// item in both flavours, written async.
    only: Option<Flavour>,
    /// `test` or `test(..)`: a test, with the arguments of `#[tokio::test(..)]`.
    test: Option<Option<Group>>,
}

fn parse(args: TokenStream) -> Result<Args, TokenStream> {
    let mut args = args.into_iter().peekable();
    let mut parsed = Args {
        only: None,
        test: None,
    };
    if let Some(TokenTree::Ident(name)) = args.peek() {
        parsed.only = match name.to_string().as_str() {
            "blocking" => Some(Flavour::Blocking),
            "asynchronous" => Some(Flavour::Asynchronous),
            _ => None,
        };
        if parsed.only.is_some() {
            args.next();
            if is_punct(args.peek(), ',') {
                args.next();
            }
        }
    }
    match args.next() {
        None => return Ok(parsed),
        Some(TokenTree::Ident(name)) if name.to_string() == "test" => {
            parsed.test = Some(match args.next() {
                None => None,
                Some(TokenTree::Group(group)) if group.delimiter() == Delimiter::Parenthesis => {
                    Some(group)
                }
                Some(other) => return Err(expected_a_flavour(other)),
            });
        }
        Some(other) => return Err(expected_a_flavour(other)),
    }
    match args.next() {
        None => Ok(parsed),
        Some(extra) => Err(expected_a_flavour(extra)),
    }
}

fn expected_a_flavour(at: TokenTree) -> TokenStream {
    compile_error(
        "expected `#[flavour]` or `#[flavour(blocking)]` or `#[flavour(asynchronous)]`, \
         each with `test` or `test(..)` if the item is a test",
        at,
    )
}

/// The attribute `#[a::b]` or `#[a::b(args)]` for `path` `["a", "b"]`, at the call site.
fn test_attribute(path: &[&str], args: Option<Group>) -> proc_macro::token_stream::IntoIter {
    let span = Span::call_site();
    let mut inside: Vec<TokenTree> = Vec::new();
    for (i, segment) in path.iter().enumerate() {
        if i > 0 {
            inside.push(spanned(Punct::new(':', Spacing::Joint), span));
            inside.push(spanned(Punct::new(':', Spacing::Alone), span));
        }
        inside.push(Ident::new(segment, span).into());
    }
    inside.extend(args.map(TokenTree::from));
    let brackets = Group::new(Delimiter::Bracket, inside.into_iter().collect());
    let pound = spanned(Punct::new('#', Spacing::Alone), span);
    TokenStream::from_iter([pound, brackets.into()]).into_iter()
}

fn strip_async(stream: TokenStream) -> TokenStream {
    let mut out = Vec::new();
    let mut tokens = stream.into_iter().peekable();
    while let Some(token) = tokens.next() {
        match token {
            TokenTree::Punct(dot) if dot.as_char() == '.' && is_ident(tokens.peek(), "await") => {
                tokens.next();
            }
            TokenTree::Ident(ident) => match ident.to_string().as_str() {
                "async" => {
                    // `async move { .. }` is a block, which takes no `move`; an
                    // `async move |..|` closure keeps it.
                    if is_ident(tokens.peek(), "move") {
                        let capture = tokens.next().expect("peeked");
                        if !is_brace_group(tokens.peek()) {
                            out.push(capture);
                        }
                    }
                }
                "impl" if is_ident(tokens.peek(), "Future") => {
                    out.extend(future_output(ident, &mut tokens));
                }
                "AsyncFn" => out.push(Ident::new("Fn", ident.span()).into()),
                "AsyncFnMut" => out.push(Ident::new("FnMut", ident.span()).into()),
                "AsyncFnOnce" => out.push(Ident::new("FnOnce", ident.span()).into()),
                _ => out.push(ident.into()),
            },
            TokenTree::Punct(pound) if pound.as_char() == '#' => {
                let attribute = match tokens.peek() {
                    Some(TokenTree::Group(attribute)) if is_tokio_test(attribute) => {
                        Some(attribute.span())
                    }
                    _ => None,
                };
                out.push(TokenTree::Punct(pound));
                if let Some(span) = attribute {
                    tokens.next();
                    let test = TokenTree::Ident(Ident::new("test", span));
                    let mut group = Group::new(Delimiter::Bracket, test.into());
                    group.set_span(span);
                    out.push(group.into());
                }
            }
            TokenTree::Group(group) => {
                let mut stripped = Group::new(group.delimiter(), strip_async(group.stream()));
                stripped.set_span(group.span());
                out.push(stripped.into());
            }
            other => out.push(other),
        }
    }
    out.into_iter().collect()
}

/// After `impl`, a future's type, `Future<Output = T>` or `Future<Output = T> + Send`:
/// `T`, stripped in turn. `impl Future` in any other form is left as written.
fn future_output(
    impl_: Ident,
    tokens: &mut std::iter::Peekable<proc_macro::token_stream::IntoIter>,
) -> TokenStream {
    let mut written: Vec<TokenTree> = vec![impl_.into(), tokens.next().expect("peeked")];
    for expected in ["<", "Output", "="] {
        match tokens.peek() {
            Some(token) if token.to_string() == expected => {
                written.push(tokens.next().expect("peeked"));
            }
            _ => return written.into_iter().collect(),
        }
    }
    // `T` ends at the `>` that closes `Future<`: count the angle brackets within it (a
    // `>` after `-` is an arrow's).
    let mut output = Vec::new();
    let (mut depth, mut after_minus) = (0_usize, false);
    for token in tokens.by_ref() {
        if let TokenTree::Punct(punct) = &token {
            match punct.as_char() {
                '>' if after_minus => {}
                '>' if depth == 0 => break,
                '>' => depth -= 1,
                '<' => depth += 1,
                _ => {}
            }
            after_minus = punct.as_char() == '-';
        } else {
            after_minus = false;
        }
        output.push(token);
    }
    if is_punct(tokens.peek(), '+') {
        let plus = tokens.next().expect("peeked");
        if is_ident(tokens.peek(), "Send") {
            tokens.next();
        } else {
            // Another bound: it stays, for the compiler to report.
            output.push(plus);
        }
    }
    strip_async(output.into_iter().collect())
}

fn is_punct(token: Option<&TokenTree>, char: char) -> bool {
    matches!(token, Some(TokenTree::Punct(punct)) if punct.as_char() == char)
}

fn is_brace_group(token: Option<&TokenTree>) -> bool {
    matches!(token, Some(TokenTree::Group(group)) if group.delimiter() == Delimiter::Brace)
}

fn is_ident(token: Option<&TokenTree>, name: &str) -> bool {
    matches!(token, Some(TokenTree::Ident(ident)) if ident.to_string() == name)
}

/// `[tokio::test]` or `[tokio::test(..)]`, the brackets of an attribute.
fn is_tokio_test(attribute: &Group) -> bool {
    if attribute.delimiter() != Delimiter::Bracket {
        return false;
    }
    let path: Vec<String> = attribute
        .stream()
        .into_iter()
        .take_while(|token| !matches!(token, TokenTree::Group(_)))
        .map(|token| token.to_string())
        .collect();
    path == ["tokio", ":", ":", "test"]
}

/// `compile_error!("message")`, spanned on `at`.
fn compile_error(message: &str, at: TokenTree) -> TokenStream {
    let span = at.span();
    let mut tokens: Vec<TokenTree> = vec![
        Ident::new("compile_error", span).into(),
        spanned(Punct::new('!', Spacing::Alone), span),
    ];
    let mut literal = proc_macro::Literal::string(message);
    literal.set_span(span);
    let mut args = Group::new(Delimiter::Parenthesis, TokenTree::from(literal).into());
    args.set_span(span);
    tokens.push(args.into());
    tokens.push(spanned(Punct::new(';', Spacing::Alone), span));
    tokens.into_iter().collect()
}

fn spanned(mut punct: Punct, span: Span) -> TokenTree {
    punct.set_span(span);
    punct.into()
}
