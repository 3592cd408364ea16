// Input of #[derive(Versioned)]:

#[diesel(table_name = notes)]
#[occ(track)]
struct Note {
    id: i32,
    title: String,
    tag: Option<String>,
    #[occ(version)]
    version: i64,
}

// Expansion:

const _: () = {
    use ::diesel_occ::__private as __occ;
    use ::diesel_occ::__private::diesel::prelude::{
        BoolExpressionMethods as _, ExpressionMethods as _, QueryDsl as _,
    };
    #[allow(dead_code)]
    fn __occ_refuse_diesel_changeset() {
        <Note as __occ::versioned_entities_are_written_with_save_checked_not_AsChangeset<
            _,
        >>::check();
        <&'static Note as __occ::versioned_entities_are_written_with_save_checked_not_AsChangeset<
            _,
        >>::check();
    }
    const _: fn() = || {
        __occ::check_column::<i32, notes::id>();
        __occ::check_column::<i64, notes::version>();
        __occ::check_column::<String, notes::title>();
        __occ::check_column::<String, notes::tag>();
    };
    #[automatically_derived]
    impl __occ::VersionedParts for Note {
        type TokenColumn = notes::version;
        type Guarded = __occ::KeyGuarded<Self>;
        type TokenAssignment = __occ::diesel::dsl::Eq<
            notes::version,
            __occ::Bound<notes::version, i64>,
        >;
        type Changes = (
            __occ::diesel::dsl::Eq<notes::title, __occ::Bound<notes::title, String>>,
            ::std::option::Option<
                __occ::diesel::dsl::Eq<notes::tag, __occ::Bound<notes::tag, String>>,
            >,
            <Self as __occ::VersionedParts>::TokenAssignment,
        );
        type KeyColumns = notes::id;
        const GENERATED_TOKEN: bool = false;
        #[inline]
        fn guarded(&self) -> Self::Guarded {
            <Self as __occ::Versioned>::find_query(<Self as __occ::Versioned>::key(self))
                .filter(
                    __occ::TokenEq::new(
                        notes::version,
                        ::std::clone::Clone::clone(&self.version),
                        <Self as __occ::Versioned>::token_text_forms,
                    ),
                )
        }
        #[inline]
        fn token_assignment(fresh: &Self::Token) -> Self::TokenAssignment {
            notes::version
                .eq(
                    <__occ::Bound<
                        notes::version,
                        i64,
                    >>::new(::std::clone::Clone::clone(fresh)),
                )
        }
        #[inline]
        fn changes(&self, fresh: &Self::Token) -> Self::Changes {
            (
                notes::title
                    .eq(
                        <__occ::Bound<
                            notes::title,
                            String,
                        >>::new(::std::clone::Clone::clone(&self.title)),
                    ),
                ::std::clone::Clone::clone(&self.tag)
                    .map(|value| {
                        notes::tag.eq(<__occ::Bound<notes::tag, String>>::new(value))
                    }),
                <Self as __occ::VersionedParts>::token_assignment(fresh),
            )
        }
    }
    #[automatically_derived]
    impl __occ::AssignedToken for Note {}
    #[automatically_derived]
    impl __occ::Tracking for Note {
        const FIELDS: &'static [&'static str] = &["title", "tag"];
        type FieldsUpdateStatement = __occ::CachedUpdate<
            <Self as __occ::VersionedParts>::Guarded,
            (
                ::std::option::Option<
                    __occ::diesel::dsl::Eq<
                        notes::title,
                        __occ::Bound<notes::title, String>,
                    >,
                >,
                ::std::option::Option<
                    __occ::diesel::dsl::Eq<
                        notes::tag,
                        __occ::Bound<notes::tag, Option<String>>,
                    >,
                >,
                <Self as __occ::VersionedParts>::TokenAssignment,
            ),
        >;
        #[allow(unused_mut)]
        #[inline]
        fn changed_from(&self, original: &Self) -> __occ::Fields<Self> {
            let _ = original;
            let mut changed = __occ::Fields::<Self>::none();
            if !<String as ::std::cmp::PartialEq>::eq(&self.title, &original.title) {
                changed = changed.with_index(0usize).unwrap_or(changed);
            }
            if !<Option<String> as ::std::cmp::PartialEq>::eq(&self.tag, &original.tag) {
                changed = changed.with_index(1usize).unwrap_or(changed);
            }
            changed
        }
        #[inline]
        fn copy_fields(&mut self, from: &Self, fields: __occ::Fields<Self>) {
            let _ = (from, fields);
            if fields.contains_index(0usize) {
                self.title = ::std::clone::Clone::clone(&from.title);
            }
            if fields.contains_index(1usize) {
                self.tag = ::std::clone::Clone::clone(&from.tag);
            }
        }
        #[inline]
        fn fields_update_statement(
            &self,
            original: &Self,
            fields: __occ::Fields<Self>,
            fresh: &Self::Token,
        ) -> Self::FieldsUpdateStatement {
            let _ = (original, fields);
            __occ::CachedUpdate::new(
                    __occ::VersionedParts::guarded(self),
                    (
                        fields
                            .contains_index(0usize)
                            .then(|| {
                                notes::title
                                    .eq(
                                        <__occ::Bound<
                                            notes::title,
                                            String,
                                        >>::new(::std::clone::Clone::clone(&self.title)),
                                    )
                            }),
                        fields
                            .contains_index(1usize)
                            .then(|| {
                                notes::tag
                                    .eq(
                                        <__occ::Bound<
                                            notes::tag,
                                            Option<String>,
                                        >>::new(::std::clone::Clone::clone(&self.tag)),
                                    )
                            }),
                        <Self as __occ::VersionedParts>::token_assignment(fresh),
                    ),
                )
                .cached_if(fields == __occ::Fields::all())
        }
    }
    #[automatically_derived]
    impl __occ::Versioned for Note {
        type Table = notes::table;
        type Token = i64;
        type Key = i32;
        type UpdateStatement = __occ::CachedUpdate<
            <Self as __occ::VersionedParts>::Guarded,
            <Self as __occ::VersionedParts>::Changes,
        >;
        type DeleteStatement = __occ::diesel::dsl::delete<
            <Self as __occ::VersionedParts>::Guarded,
        >;
        type TokenQuery = __occ::diesel::dsl::Select<Self::FindQuery, notes::version>;
        type FindQuery = __occ::diesel::dsl::Filter<
            notes::table,
            __occ::diesel::dsl::Eq<notes::id, __occ::Bound<notes::id, i32>>,
        >;
        type ValuesRow = (
            (__occ::Bound<notes::id, i32>,),
            (__occ::Bound<notes::title, String>, __occ::SkippableOf<notes::tag, String>),
            __occ::Bound<notes::version, i64>,
            __occ::Bound<notes::version, i64>,
        );
        const VALUES_COLUMNS: ::std::option::Option<__occ::ValuesColumns> = {
            const KEYS: &[&str] = &[<notes::id as __occ::diesel::Column>::NAME];
            const WRITTEN: &[__occ::WrittenColumn] = &[
                __occ::WrittenColumn::always(
                    <notes::title as __occ::diesel::Column>::NAME,
                ),
                __occ::WrittenColumn::unless_none(
                    <notes::tag as __occ::diesel::Column>::NAME,
                ),
            ];
            ::std::option::Option::Some(
                __occ::ValuesColumns::new(
                    KEYS,
                    WRITTEN,
                    <notes::version as __occ::diesel::Column>::NAME,
                ),
            )
        };
        #[inline]
        fn values_row(
            &self,
            fresh: &Self::Token,
        ) -> ::std::option::Option<Self::ValuesRow> {
            ::std::option::Option::Some((
                (
                    <__occ::Bound<
                        notes::id,
                        i32,
                    >>::new(::std::clone::Clone::clone(&self.id)),
                ),
                (
                    <__occ::Bound<
                        notes::title,
                        String,
                    >>::new(::std::clone::Clone::clone(&self.title)),
                    <__occ::SkippableOf<
                        notes::tag,
                        String,
                    >>::new(::std::clone::Clone::clone(&self.tag)),
                ),
                <__occ::Bound<
                    notes::version,
                    i64,
                >>::new(::std::clone::Clone::clone(&self.version)),
                <__occ::Bound<
                    notes::version,
                    i64,
                >>::new(::std::clone::Clone::clone(fresh)),
            ))
        }
        const TABLE_NAME: &'static str = "notes";
        const TOKEN_COLUMN: &'static str = <notes::version as __occ::diesel::Column>::NAME;
        const KEY_COLUMNS: &'static [&'static str] = &[
            <notes::id as __occ::diesel::Column>::NAME,
        ];
        #[inline]
        fn sql_table_name() -> &'static str {
            __occ::sql_table_name::<notes::table>(<Self as __occ::Versioned>::TABLE_NAME)
        }
        #[inline]
        fn token(&self) -> &Self::Token {
            &self.version
        }
        #[inline]
        fn set_token(&mut self, token: Self::Token) {
            self.version = token;
        }
        #[inline]
        fn key(&self) -> Self::Key {
            ::std::clone::Clone::clone(&self.id)
        }
        #[inline]
        fn key_values(key: &Self::Key) -> ::std::vec::Vec<::std::string::String> {
            __occ::key_values(&[key])
        }
        #[inline]
        fn update_statement(&self, fresh: &Self::Token) -> Self::UpdateStatement {
            __occ::CachedUpdate::new(
                    __occ::VersionedParts::guarded(self),
                    __occ::VersionedParts::changes(self, fresh),
                )
                .cached_if({
                    let present = [::std::option::Option::is_some(&self.tag)];
                    present.iter().all(|p| *p) || !present.iter().any(|p| *p)
                })
        }
        #[inline]
        fn delete_statement(&self) -> Self::DeleteStatement {
            __occ::diesel::delete(__occ::VersionedParts::guarded(self))
        }
        #[inline]
        fn token_query(key: Self::Key) -> Self::TokenQuery {
            Self::find_query(key).select(notes::version)
        }
        #[inline]
        fn find_query(key: Self::Key) -> Self::FindQuery {
            notes::table.filter(notes::id.eq(<__occ::Bound<notes::id, i32>>::new(key)))
        }
    }
};
