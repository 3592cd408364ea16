//! [`Settings`]: how the extractors read what RFC 9110 leaves to the service.

/// How [`IfMatch`](crate::IfMatch) treats `If-Match: *`.
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
}
