//! [`Settings`]: how the extractors read what RFC 9110 leaves to the service.

/// How [`IfMatch`](crate::IfMatch) and [`Preconditions`](crate::Preconditions) treat
/// `If-Match: *` and weak entity-tags.
///
/// By default `*` is read as RFC 9110 says: it matches any current representation, so
/// the write goes ahead on whatever version the resource holds, and fails with 412 when
/// the resource does not exist. [`require_tag(true)`](Self::require_tag) refuses `*`
/// with 428 instead, for services where every write must name the version it was made
/// from. The extractors read the settings from the request's extensions; without them
/// they use [`Settings::default()`]:
///
/// ```
/// use axum::{Extension, Router, routing::put};
/// use diesel_occ_axum::{IfMatch, Settings};
///
/// async fn replace(if_match: IfMatch) -> &'static str {
///     if if_match.is_any() { "any" } else { "tags" }
/// }
///
/// let app: Router = Router::new()
///     .route("/articles/{id}", put(replace))
///     .layer(Extension(Settings::default().require_tag(true)));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Settings {
    require_tag: bool,
    weak_if_match: bool,
}

impl Settings {
    /// With `true`, `If-Match: *` gets 428 Precondition Required: a write must name the
    /// version it was made from.
    ///
    /// ```
    /// use diesel_occ_axum::Settings;
    ///
    /// assert!(Settings::default().require_tag(true).requires_tag());
    /// assert!(!Settings::default().requires_tag());
    /// ```
    pub fn require_tag(self, require: bool) -> Settings {
        Settings {
            require_tag: require,
            ..self
        }
    }

    /// True when `If-Match: *` is refused with 428.
    ///
    /// ```
    /// use diesel_occ_axum::Settings;
    ///
    /// assert!(!Settings::default().requires_tag());
    /// ```
    pub fn requires_tag(&self) -> bool {
        self.require_tag
    }

    /// With `true`, `If-Match` compares weakly: `W/"7"` matches the version whose ETag
    /// is `"7"`. Off by default, as RFC 9110 (section 13.1.1) asks for strong
    /// comparison.
    ///
    /// Turn it on when a proxy in front of the service (nginx's `gzip`, Cloudflare,
    /// Varnish) weakens the ETags of the responses it compresses, so clients only ever
    /// see `W/"..."` and every `If-Match` they send would be 412. The trade-off: a weak
    /// tag promises only that two representations are equivalent, not byte-identical,
    /// so a server whose weak tags could name several versions must not accept them.
    /// This crate's tags are version tokens: `W/"7"` still names exactly one version of
    /// the row, so accepting it never lets a stale writer through. The alternative,
    /// keeping the tag strong, is to turn off the proxy's compression of these
    /// responses, or have the proxy pass the ETag through (nginx: `gzip off` for the
    /// API's location, or compress in the service with `tower-http`).
    ///
    /// ```
    /// use diesel_occ_axum::Settings;
    ///
    /// assert!(Settings::default().weak_if_match(true).accepts_weak_if_match());
    /// assert!(!Settings::default().accepts_weak_if_match());
    /// ```
    pub fn weak_if_match(self, accept: bool) -> Settings {
        Settings {
            weak_if_match: accept,
            ..self
        }
    }

    /// True when `If-Match` accepts weak tags.
    ///
    /// ```
    /// use diesel_occ_axum::Settings;
    ///
    /// assert!(!Settings::default().accepts_weak_if_match());
    /// ```
    pub fn accepts_weak_if_match(&self) -> bool {
        self.weak_if_match
    }
}
