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
        __occ::check_column::<i32, notes::version>();
        __occ::check_column::<String, notes::title>();
        __occ::check_column::<String, notes::body>();
    };
    #[automatically_derived]
    impl __occ::VersionedParts for Note {
        type TokenColumn = notes::version;
        type Guarded = __occ::KeyGuarded<Self>;
        type TokenAssignment = __occ::diesel::dsl::Eq<
            notes::version,
            __occ::Bound<notes::version, i32>,
        >;
        type Changes = (
            ::std::option::Option<
                __occ::diesel::dsl::Eq<notes::title, __occ::Bound<notes::title, String>>,
            >,
            ::std::option::Option<
                __occ::diesel::dsl::Eq<notes::body, __occ::Bound<notes::body, String>>,
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
                        i32,
                    >>::new(::std::clone::Clone::clone(fresh)),
                )
        }
        #[inline]
        fn changes(&self, fresh: &Self::Token) -> Self::Changes {
            (
                ::std::clone::Clone::clone(&self.title)
                    .map(|value| {
                        notes::title.eq(<__occ::Bound<notes::title, String>>::new(value))
                    }),
                ::std::clone::Clone::clone(&self.body)
                    .map(|value| {
                        notes::body.eq(<__occ::Bound<notes::body, String>>::new(value))
                    }),
                <Self as __occ::VersionedParts>::token_assignment(fresh),
            )
        }
    }
    #[automatically_derived]
    impl __occ::AssignedToken for Note {}
    #[automatically_derived]
    impl __occ::Versioned for Note {
        type Table = notes::table;
        type Token = i32;
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
            (
                __occ::SkippableOf<notes::title, String>,
                __occ::SkippableOf<notes::body, String>,
            ),
            __occ::Bound<notes::version, i32>,
            __occ::Bound<notes::version, i32>,
        );
        const VALUES_COLUMNS: ::std::option::Option<__occ::ValuesColumns> = {
            const KEYS: &[&str] = &[<notes::id as __occ::diesel::Column>::NAME];
            const WRITTEN: &[__occ::WrittenColumn] = &[
                __occ::WrittenColumn::unless_none(
                    <notes::title as __occ::diesel::Column>::NAME,
                ),
                __occ::WrittenColumn::unless_none(
                    <notes::body as __occ::diesel::Column>::NAME,
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
                    <__occ::SkippableOf<
                        notes::title,
                        String,
                    >>::new(::std::clone::Clone::clone(&self.title)),
                    <__occ::SkippableOf<
                        notes::body,
                        String,
                    >>::new(::std::clone::Clone::clone(&self.body)),
                ),
                <__occ::Bound<
                    notes::version,
                    i32,
                >>::new(::std::clone::Clone::clone(&self.version)),
                <__occ::Bound<
                    notes::version,
                    i32,
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
                    let present = [
                        ::std::option::Option::is_some(&self.title),
                        ::std::option::Option::is_some(&self.body),
                    ];
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
