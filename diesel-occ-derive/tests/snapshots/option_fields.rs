// Input of #[derive(Versioned)]:

#[diesel(table_name = notes)]
struct Note {
    id: i32,
    title: Option<String>,
    body: Option<String>,
    #[occ(version)]
    version: i32,
}

// Expansion:

const _: () = {
    use ::diesel_occ::__private::diesel::prelude::{
        BoolExpressionMethods as _, ExpressionMethods as _, QueryDsl as _,
    };
    #[allow(dead_code)]
    fn __occ_refuse_diesel_changeset() {
        <Note as ::diesel_occ::__private::versioned_entities_are_written_with_save_checked_not_AsChangeset<
            _,
        >>::check();
        <&'static Note as ::diesel_occ::__private::versioned_entities_are_written_with_save_checked_not_AsChangeset<
            _,
        >>::check();
    }
    const _: fn() = || {
        ::diesel_occ::__private::check_column::<i32, notes::id>();
        ::diesel_occ::__private::check_column::<i32, notes::version>();
        ::diesel_occ::__private::check_column::<String, notes::title>();
        ::diesel_occ::__private::check_column::<String, notes::body>();
    };
    #[automatically_derived]
    impl ::diesel_occ::__private::VersionedParts for Note {
        type TokenColumn = notes::version;
        type Guarded = ::diesel_occ::__private::KeyGuarded<Self>;
        type TokenAssignment = ::diesel_occ::__private::diesel::dsl::Eq<
            notes::version,
            ::diesel_occ::__private::Bound<notes::version, i32>,
        >;
        type Changes = (
            ::std::option::Option<
                ::diesel_occ::__private::diesel::dsl::Eq<
                    notes::title,
                    ::diesel_occ::__private::Bound<notes::title, String>,
                >,
            >,
            ::std::option::Option<
                ::diesel_occ::__private::diesel::dsl::Eq<
                    notes::body,
                    ::diesel_occ::__private::Bound<notes::body, String>,
                >,
            >,
            <Self as ::diesel_occ::__private::VersionedParts>::TokenAssignment,
        );
        type KeyColumns = notes::id;
        const GENERATED_TOKEN: bool = false;
        fn guarded(&self) -> Self::Guarded {
            <Self as ::diesel_occ::__private::Versioned>::find_query(
                    <Self as ::diesel_occ::__private::Versioned>::key(self),
                )
                .filter(
                    ::diesel_occ::__private::TokenEq::new(
                        notes::version,
                        ::std::clone::Clone::clone(&self.version),
                        <Self as ::diesel_occ::__private::Versioned>::token_text_forms,
                    ),
                )
        }
        fn token_assignment(fresh: &Self::Token) -> Self::TokenAssignment {
            notes::version
                .eq(
                    <::diesel_occ::__private::Bound<
                        notes::version,
                        i32,
                    >>::new(::std::clone::Clone::clone(fresh)),
                )
        }
        fn changes(&self, fresh: &Self::Token) -> Self::Changes {
            (
                ::std::clone::Clone::clone(&self.title)
                    .map(|value| {
                        notes::title
                            .eq(
                                <::diesel_occ::__private::Bound<
                                    notes::title,
                                    String,
                                >>::new(value),
                            )
                    }),
                ::std::clone::Clone::clone(&self.body)
                    .map(|value| {
                        notes::body
                            .eq(
                                <::diesel_occ::__private::Bound<
                                    notes::body,
                                    String,
                                >>::new(value),
                            )
                    }),
                <Self as ::diesel_occ::__private::VersionedParts>::token_assignment(
                    fresh,
                ),
            )
        }
    }
    #[automatically_derived]
    impl ::diesel_occ::__private::Versioned for Note {
        type Table = notes::table;
        type Token = i32;
        type Key = i32;
        type UpdateStatement = ::diesel_occ::__private::CachedUpdate<
            <Self as ::diesel_occ::__private::VersionedParts>::Guarded,
            <Self as ::diesel_occ::__private::VersionedParts>::Changes,
        >;
        type DeleteStatement = ::diesel_occ::__private::diesel::dsl::delete<
            <Self as ::diesel_occ::__private::VersionedParts>::Guarded,
        >;
        type TokenQuery = ::diesel_occ::__private::diesel::dsl::Select<
            Self::FindQuery,
            notes::version,
        >;
        type FindQuery = ::diesel_occ::__private::diesel::dsl::Filter<
            notes::table,
            ::diesel_occ::__private::diesel::dsl::Eq<
                notes::id,
                ::diesel_occ::__private::Bound<notes::id, i32>,
            >,
        >;
        type ValuesRow = (
            (::diesel_occ::__private::Bound<notes::id, i32>,),
            (
                ::diesel_occ::__private::SkippableOf<notes::title, String>,
                ::diesel_occ::__private::SkippableOf<notes::body, String>,
            ),
            ::diesel_occ::__private::Bound<notes::version, i32>,
            ::diesel_occ::__private::Bound<notes::version, i32>,
        );
        const VALUES_COLUMNS: ::std::option::Option<
            ::diesel_occ::__private::ValuesColumns,
        > = {
            const KEYS: &[&str] = &[
                <notes::id as ::diesel_occ::__private::diesel::Column>::NAME,
            ];
            const WRITTEN: &[::diesel_occ::__private::WrittenColumn] = &[
                ::diesel_occ::__private::WrittenColumn::unless_none(
                    <notes::title as ::diesel_occ::__private::diesel::Column>::NAME,
                ),
                ::diesel_occ::__private::WrittenColumn::unless_none(
                    <notes::body as ::diesel_occ::__private::diesel::Column>::NAME,
                ),
            ];
            ::std::option::Option::Some(
                ::diesel_occ::__private::ValuesColumns::new(
                    KEYS,
                    WRITTEN,
                    <notes::version as ::diesel_occ::__private::diesel::Column>::NAME,
                ),
            )
        };
        fn values_row(
            &self,
            fresh: &Self::Token,
        ) -> ::std::option::Option<Self::ValuesRow> {
            ::std::option::Option::Some((
                (
                    <::diesel_occ::__private::Bound<
                        notes::id,
                        i32,
                    >>::new(::std::clone::Clone::clone(&self.id)),
                ),
                (
                    <::diesel_occ::__private::SkippableOf<
                        notes::title,
                        String,
                    >>::new(::std::clone::Clone::clone(&self.title)),
                    <::diesel_occ::__private::SkippableOf<
                        notes::body,
                        String,
                    >>::new(::std::clone::Clone::clone(&self.body)),
                ),
                <::diesel_occ::__private::Bound<
                    notes::version,
                    i32,
                >>::new(::std::clone::Clone::clone(&self.version)),
                <::diesel_occ::__private::Bound<
                    notes::version,
                    i32,
                >>::new(::std::clone::Clone::clone(fresh)),
            ))
        }
        const TABLE_NAME: &'static str = "notes";
        const TOKEN_COLUMN: &'static str = <notes::version as ::diesel_occ::__private::diesel::Column>::NAME;
        const KEY_COLUMNS: &'static [&'static str] = &[
            <notes::id as ::diesel_occ::__private::diesel::Column>::NAME,
        ];
        fn sql_table_name() -> &'static str {
            ::diesel_occ::__private::sql_table_name::<
                notes::table,
            >(<Self as ::diesel_occ::Versioned>::TABLE_NAME)
        }
        fn token(&self) -> &Self::Token {
            &self.version
        }
        fn set_token(&mut self, token: Self::Token) {
            self.version = token;
        }
        fn key(&self) -> Self::Key {
            ::std::clone::Clone::clone(&self.id)
        }
        fn key_values(key: &Self::Key) -> ::std::vec::Vec<::std::string::String> {
            ::diesel_occ::__private::key_values(&[key])
        }
        fn update_statement(&self, fresh: &Self::Token) -> Self::UpdateStatement {
            ::diesel_occ::__private::CachedUpdate::new(
                    ::diesel_occ::__private::VersionedParts::guarded(self),
                    ::diesel_occ::__private::VersionedParts::changes(self, fresh),
                )
                .cached_if({
                    let present = [
                        ::std::option::Option::is_some(&self.title),
                        ::std::option::Option::is_some(&self.body),
                    ];
                    present.iter().all(|p| *p) || !present.iter().any(|p| *p)
                })
        }
        fn delete_statement(&self) -> Self::DeleteStatement {
            ::diesel_occ::__private::diesel::delete(
                ::diesel_occ::__private::VersionedParts::guarded(self),
            )
        }
        fn token_query(key: Self::Key) -> Self::TokenQuery {
            Self::find_query(key).select(notes::version)
        }
        fn find_query(key: Self::Key) -> Self::FindQuery {
            notes::table
                .filter(
                    notes::id
                        .eq(<::diesel_occ::__private::Bound<notes::id, i32>>::new(key)),
                )
        }
    }
};
