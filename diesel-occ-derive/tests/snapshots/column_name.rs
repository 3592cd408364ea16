// Input of #[derive(Versioned)]:

#[diesel(table_name = stock, primary_key(stock_id))]
struct Stock {
    #[diesel(column_name = stock_id)]
    id: i32,
    #[diesel(column_name = qty)]
    available: i32,
    #[occ(version)]
    #[diesel(column_name = rev)]
    revision: i32,
}

// Expansion:

const _: () = {
    use ::diesel_occ::__private as __occ;
    use ::diesel_occ::__private::diesel::prelude::{
        BoolExpressionMethods as _, ExpressionMethods as _, QueryDsl as _,
    };
    #[allow(dead_code)]
    fn __occ_refuse_diesel_changeset() {
        <Stock as __occ::versioned_entities_are_written_with_save_checked_not_AsChangeset<
            _,
        >>::check();
        <&'static Stock as __occ::versioned_entities_are_written_with_save_checked_not_AsChangeset<
            _,
        >>::check();
    }
    const _: fn() = || {
        __occ::check_column::<i32, stock::stock_id>();
        __occ::check_column::<i32, stock::rev>();
        __occ::check_column::<i32, stock::qty>();
    };
    #[automatically_derived]
    impl __occ::VersionedParts for Stock {
        type TokenColumn = stock::rev;
        type Guarded = __occ::KeyGuarded<Self>;
        type TokenAssignment = __occ::diesel::dsl::Eq<
            stock::rev,
            __occ::Bound<stock::rev, i32>,
        >;
        type Changes = (
            __occ::diesel::dsl::Eq<stock::qty, __occ::Bound<stock::qty, i32>>,
            <Self as __occ::VersionedParts>::TokenAssignment,
        );
        type KeyColumns = stock::stock_id;
        const GENERATED_TOKEN: bool = false;
        #[inline]
        fn guarded(&self) -> Self::Guarded {
            <Self as __occ::Versioned>::find_query(<Self as __occ::Versioned>::key(self))
                .filter(
                    __occ::TokenEq::new(
                        stock::rev,
                        ::std::clone::Clone::clone(&self.revision),
                        <Self as __occ::Versioned>::token_text_forms,
                    ),
                )
        }
        #[inline]
        fn token_assignment(fresh: &Self::Token) -> Self::TokenAssignment {
            stock::rev
                .eq(
                    <__occ::Bound<
                        stock::rev,
                        i32,
                    >>::new(::std::clone::Clone::clone(fresh)),
                )
        }
        #[inline]
        fn changes(&self, fresh: &Self::Token) -> Self::Changes {
            (
                stock::qty
                    .eq(
                        <__occ::Bound<
                            stock::qty,
                            i32,
                        >>::new(::std::clone::Clone::clone(&self.available)),
                    ),
                <Self as __occ::VersionedParts>::token_assignment(fresh),
            )
        }
    }
    #[automatically_derived]
    impl __occ::AssignedToken for Stock {}
    #[automatically_derived]
    impl __occ::Versioned for Stock {
        type Table = stock::table;
        type Token = i32;
        type Key = i32;
        type UpdateStatement = __occ::CachedUpdate<
            <Self as __occ::VersionedParts>::Guarded,
            <Self as __occ::VersionedParts>::Changes,
        >;
        type DeleteStatement = __occ::diesel::dsl::delete<
            <Self as __occ::VersionedParts>::Guarded,
        >;
        type TokenQuery = __occ::diesel::dsl::Select<Self::FindQuery, stock::rev>;
        type FindQuery = __occ::diesel::dsl::Filter<
            stock::table,
            __occ::diesel::dsl::Eq<stock::stock_id, __occ::Bound<stock::stock_id, i32>>,
        >;
        type ValuesRow = (
            (__occ::Bound<stock::stock_id, i32>,),
            (__occ::Bound<stock::qty, i32>,),
            __occ::Bound<stock::rev, i32>,
            __occ::Bound<stock::rev, i32>,
        );
        const VALUES_COLUMNS: ::std::option::Option<__occ::ValuesColumns> = {
            const KEYS: &[&str] = &[<stock::stock_id as __occ::diesel::Column>::NAME];
            const WRITTEN: &[__occ::WrittenColumn] = &[
                __occ::WrittenColumn::always(<stock::qty as __occ::diesel::Column>::NAME),
            ];
            ::std::option::Option::Some(
                __occ::ValuesColumns::new(
                    KEYS,
                    WRITTEN,
                    <stock::rev as __occ::diesel::Column>::NAME,
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
                        stock::stock_id,
                        i32,
                    >>::new(::std::clone::Clone::clone(&self.id)),
                ),
                (
                    <__occ::Bound<
                        stock::qty,
                        i32,
                    >>::new(::std::clone::Clone::clone(&self.available)),
                ),
                <__occ::Bound<
                    stock::rev,
                    i32,
                >>::new(::std::clone::Clone::clone(&self.revision)),
                <__occ::Bound<stock::rev, i32>>::new(::std::clone::Clone::clone(fresh)),
            ))
        }
        const TABLE_NAME: &'static str = "stock";
        const TOKEN_COLUMN: &'static str = <stock::rev as __occ::diesel::Column>::NAME;
        const KEY_COLUMNS: &'static [&'static str] = &[
            <stock::stock_id as __occ::diesel::Column>::NAME,
        ];
        #[inline]
        fn sql_table_name() -> &'static str {
            __occ::sql_table_name::<stock::table>(<Self as __occ::Versioned>::TABLE_NAME)
        }
        #[inline]
        fn token(&self) -> &Self::Token {
            &self.revision
        }
        #[inline]
        fn set_token(&mut self, token: Self::Token) {
            self.revision = token;
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
        }
        #[inline]
        fn delete_statement(&self) -> Self::DeleteStatement {
            __occ::diesel::delete(__occ::VersionedParts::guarded(self))
        }
        #[inline]
        fn token_query(key: Self::Key) -> Self::TokenQuery {
            Self::find_query(key).select(stock::rev)
        }
        #[inline]
        fn find_query(key: Self::Key) -> Self::FindQuery {
            stock::table
                .filter(
                    stock::stock_id.eq(<__occ::Bound<stock::stock_id, i32>>::new(key)),
                )
        }
    }
};
