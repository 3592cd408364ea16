// Input of #[derive(Versioned)]:

#[diesel(table_name = stock)]
struct Stock {
    id: i32,
    available: i32,
    #[occ(version, generated)]
    xmin: diesel_occ::xmin::XminToken,
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
        __occ::check_column::<i32, stock::id>();
        __occ::check_column::<diesel_occ::xmin::XminToken, stock::xmin>();
        __occ::check_column::<i32, stock::available>();
    };
    #[automatically_derived]
    impl __occ::VersionedParts for Stock {
        type TokenColumn = stock::xmin;
        type Guarded = __occ::KeyGuarded<Self>;
        type TokenAssignment = __occ::NotAssigned;
        type Changes = __occ::NotAssigned;
        type KeyColumns = stock::id;
        const GENERATED_TOKEN: bool = true;
        #[inline]
        fn guarded(&self) -> Self::Guarded {
            <Self as __occ::Versioned>::find_query(<Self as __occ::Versioned>::key(self))
                .filter(
                    __occ::TokenEq::new(
                        stock::xmin,
                        ::std::clone::Clone::clone(&self.xmin),
                        <Self as __occ::Versioned>::token_text_forms,
                    ),
                )
        }
        #[inline]
        fn token_assignment(fresh: &Self::Token) -> Self::TokenAssignment {
            {
                let _ = fresh;
                __occ::NotAssigned
            }
        }
        #[inline]
        fn changes(&self, fresh: &Self::Token) -> Self::Changes {
            {
                let _ = fresh;
                __occ::NotAssigned
            }
        }
    }
    #[automatically_derived]
    impl __occ::ReturningStatement<__occ::AllFields> for Stock {
        type Statement = __occ::diesel::dsl::Returning<
            __occ::diesel::dsl::Update<
                <Self as __occ::VersionedParts>::Guarded,
                (
                    __occ::diesel::dsl::Eq<
                        stock::available,
                        __occ::Bound<stock::available, i32>,
                    >,
                ),
            >,
            stock::xmin,
        >;
    }
    #[automatically_derived]
    impl __occ::Versioned for Stock {
        type Table = stock::table;
        type Token = diesel_occ::xmin::XminToken;
        type Key = i32;
        type UpdateStatement = __occ::ReturningUpdate<Stock>;
        type DeleteStatement = __occ::diesel::dsl::delete<
            <Self as __occ::VersionedParts>::Guarded,
        >;
        type TokenQuery = __occ::diesel::dsl::Select<Self::FindQuery, stock::xmin>;
        type FindQuery = __occ::diesel::dsl::Filter<
            stock::table,
            __occ::diesel::dsl::Eq<stock::id, __occ::Bound<stock::id, i32>>,
        >;
        type ValuesRow = ();
        const TABLE_NAME: &'static str = "stock";
        const TOKEN_COLUMN: &'static str = <stock::xmin as __occ::diesel::Column>::NAME;
        const KEY_COLUMNS: &'static [&'static str] = &[
            <stock::id as __occ::diesel::Column>::NAME,
        ];
        #[inline]
        fn sql_table_name() -> &'static str {
            __occ::sql_table_name::<stock::table>(<Self as __occ::Versioned>::TABLE_NAME)
        }
        #[inline]
        fn token(&self) -> &Self::Token {
            &self.xmin
        }
        #[inline]
        fn set_token(&mut self, token: Self::Token) {
            self.xmin = token;
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
            let _ = fresh;
            __occ::ReturningUpdate::new(
                __occ::diesel::update(__occ::VersionedParts::guarded(self))
                    .set((
                        stock::available
                            .eq(
                                <__occ::Bound<
                                    stock::available,
                                    i32,
                                >>::new(::std::clone::Clone::clone(&self.available)),
                            ),
                    ))
                    .returning(stock::xmin),
            )
        }
        #[inline]
        fn delete_statement(&self) -> Self::DeleteStatement {
            __occ::diesel::delete(__occ::VersionedParts::guarded(self))
        }
        #[inline]
        fn token_query(key: Self::Key) -> Self::TokenQuery {
            Self::find_query(key).select(stock::xmin)
        }
        #[inline]
        fn find_query(key: Self::Key) -> Self::FindQuery {
            stock::table.filter(stock::id.eq(<__occ::Bound<stock::id, i32>>::new(key)))
        }
    }
};
