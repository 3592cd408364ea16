// Input of #[derive(Versioned)]:

#[diesel(table_name = stock, primary_key(sku))]
struct Stock {
    sku: String,
    available: i32,
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
        <Stock as ::diesel_occ::__private::versioned_entities_are_written_with_save_checked_not_AsChangeset<
            _,
        >>::check();
        <&'static Stock as ::diesel_occ::__private::versioned_entities_are_written_with_save_checked_not_AsChangeset<
            _,
        >>::check();
    }
    const _: fn() = || {
        ::diesel_occ::__private::check_column::<String, stock::sku>();
        ::diesel_occ::__private::check_column::<i32, stock::version>();
        ::diesel_occ::__private::check_column::<i32, stock::available>();
    };
    #[automatically_derived]
    impl ::diesel_occ::__private::VersionedParts for Stock {
        type TokenColumn = stock::version;
        type Guarded = ::diesel_occ::__private::KeyGuarded<Self>;
        type TokenAssignment = ::diesel_occ::__private::diesel::dsl::Eq<
            stock::version,
            ::diesel_occ::__private::Bound<stock::version, i32>,
        >;
        type Changes = (
            ::diesel_occ::__private::diesel::dsl::Eq<
                stock::available,
                ::diesel_occ::__private::Bound<stock::available, i32>,
            >,
            <Self as ::diesel_occ::__private::VersionedParts>::TokenAssignment,
        );
        type KeyColumns = stock::sku;
        const GENERATED_TOKEN: bool = false;
        fn guarded(&self) -> Self::Guarded {
            <Self as ::diesel_occ::__private::Versioned>::find_query(
                    <Self as ::diesel_occ::__private::Versioned>::key(self),
                )
                .filter(
                    ::diesel_occ::__private::TokenEq::new(
                        stock::version,
                        ::std::clone::Clone::clone(&self.version),
                        <Self as ::diesel_occ::__private::Versioned>::token_text_forms,
                    ),
                )
        }
        fn token_assignment(fresh: &Self::Token) -> Self::TokenAssignment {
            stock::version
                .eq(
                    <::diesel_occ::__private::Bound<
                        stock::version,
                        i32,
                    >>::new(::std::clone::Clone::clone(fresh)),
                )
        }
        fn changes(&self, fresh: &Self::Token) -> Self::Changes {
            (
                stock::available
                    .eq(
                        <::diesel_occ::__private::Bound<
                            stock::available,
                            i32,
                        >>::new(::std::clone::Clone::clone(&self.available)),
                    ),
                <Self as ::diesel_occ::__private::VersionedParts>::token_assignment(
                    fresh,
                ),
            )
        }
    }
    #[automatically_derived]
    impl ::diesel_occ::__private::Versioned for Stock {
        type Table = stock::table;
        type Token = i32;
        type Key = String;
        type UpdateStatement = ::diesel_occ::__private::CachedUpdate<
            <Self as ::diesel_occ::__private::VersionedParts>::Guarded,
            <Self as ::diesel_occ::__private::VersionedParts>::Changes,
        >;
        type DeleteStatement = ::diesel_occ::__private::diesel::dsl::delete<
            <Self as ::diesel_occ::__private::VersionedParts>::Guarded,
        >;
        type TokenQuery = ::diesel_occ::__private::diesel::dsl::Select<
            Self::FindQuery,
            stock::version,
        >;
        type FindQuery = ::diesel_occ::__private::diesel::dsl::Filter<
            stock::table,
            ::diesel_occ::__private::diesel::dsl::Eq<
                stock::sku,
                ::diesel_occ::__private::Bound<stock::sku, String>,
            >,
        >;
        type ValuesRow = (
            (::diesel_occ::__private::Bound<stock::sku, String>,),
            (::diesel_occ::__private::Bound<stock::available, i32>,),
            ::diesel_occ::__private::Bound<stock::version, i32>,
            ::diesel_occ::__private::Bound<stock::version, i32>,
        );
        const VALUES_COLUMNS: ::std::option::Option<
            ::diesel_occ::__private::ValuesColumns,
        > = {
            const KEYS: &[&str] = &[
                <stock::sku as ::diesel_occ::__private::diesel::Column>::NAME,
            ];
            const WRITTEN: &[::diesel_occ::__private::WrittenColumn] = &[
                ::diesel_occ::__private::WrittenColumn::always(
                    <stock::available as ::diesel_occ::__private::diesel::Column>::NAME,
                ),
            ];
            ::std::option::Option::Some(
                ::diesel_occ::__private::ValuesColumns::new(
                    KEYS,
                    WRITTEN,
                    <stock::version as ::diesel_occ::__private::diesel::Column>::NAME,
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
                        stock::sku,
                        String,
                    >>::new(::std::clone::Clone::clone(&self.sku)),
                ),
                (
                    <::diesel_occ::__private::Bound<
                        stock::available,
                        i32,
                    >>::new(::std::clone::Clone::clone(&self.available)),
                ),
                <::diesel_occ::__private::Bound<
                    stock::version,
                    i32,
                >>::new(::std::clone::Clone::clone(&self.version)),
                <::diesel_occ::__private::Bound<
                    stock::version,
                    i32,
                >>::new(::std::clone::Clone::clone(fresh)),
            ))
        }
        const TABLE_NAME: &'static str = "stock";
        const TOKEN_COLUMN: &'static str = <stock::version as ::diesel_occ::__private::diesel::Column>::NAME;
        const KEY_COLUMNS: &'static [&'static str] = &[
            <stock::sku as ::diesel_occ::__private::diesel::Column>::NAME,
        ];
        fn sql_table_name() -> &'static str {
            ::diesel_occ::__private::sql_table_name::<
                stock::table,
            >(<Self as ::diesel_occ::Versioned>::TABLE_NAME)
        }
        fn token(&self) -> &Self::Token {
            &self.version
        }
        fn set_token(&mut self, token: Self::Token) {
            self.version = token;
        }
        fn key(&self) -> Self::Key {
            ::std::clone::Clone::clone(&self.sku)
        }
        fn key_values(key: &Self::Key) -> ::std::vec::Vec<::std::string::String> {
            ::diesel_occ::__private::key_values(&[key])
        }
        fn update_statement(&self, fresh: &Self::Token) -> Self::UpdateStatement {
            ::diesel_occ::__private::CachedUpdate::new(
                ::diesel_occ::__private::VersionedParts::guarded(self),
                ::diesel_occ::__private::VersionedParts::changes(self, fresh),
            )
        }
        fn delete_statement(&self) -> Self::DeleteStatement {
            ::diesel_occ::__private::diesel::delete(
                ::diesel_occ::__private::VersionedParts::guarded(self),
            )
        }
        fn token_query(key: Self::Key) -> Self::TokenQuery {
            Self::find_query(key).select(stock::version)
        }
        fn find_query(key: Self::Key) -> Self::FindQuery {
            stock::table
                .filter(
                    stock::sku
                        .eq(
                            <::diesel_occ::__private::Bound<
                                stock::sku,
                                String,
                            >>::new(key),
                        ),
                )
        }
    }
};
