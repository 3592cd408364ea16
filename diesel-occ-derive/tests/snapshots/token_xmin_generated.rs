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
        ::diesel_occ::__private::check_column::<i32, stock::id>();
        ::diesel_occ::__private::check_column::<
            diesel_occ::xmin::XminToken,
            stock::xmin,
        >();
        ::diesel_occ::__private::check_column::<i32, stock::available>();
    };
    #[automatically_derived]
    impl ::diesel_occ::__private::VersionedParts for Stock {
        type TokenColumn = stock::xmin;
        type Guarded = ::diesel_occ::__private::KeyGuarded<Self>;
        type TokenAssignment = ::diesel_occ::__private::NotAssigned;
        type Changes = ::diesel_occ::__private::NotAssigned;
        type KeyColumns = stock::id;
        const GENERATED_TOKEN: bool = true;
        fn guarded(&self) -> Self::Guarded {
            <Self as ::diesel_occ::__private::Versioned>::find_query(
                    <Self as ::diesel_occ::__private::Versioned>::key(self),
                )
                .filter(
                    ::diesel_occ::__private::TokenEq::new(
                        stock::xmin,
                        ::std::clone::Clone::clone(&self.xmin),
                        <Self as ::diesel_occ::__private::Versioned>::token_text_forms,
                    ),
                )
        }
        fn token_assignment(fresh: &Self::Token) -> Self::TokenAssignment {
            {
                let _ = fresh;
                ::diesel_occ::__private::NotAssigned
            }
        }
        fn changes(&self, fresh: &Self::Token) -> Self::Changes {
            {
                let _ = fresh;
                ::diesel_occ::__private::NotAssigned
            }
        }
    }
    #[automatically_derived]
    impl ::diesel_occ::__private::ReturningStatement<::diesel_occ::__private::AllFields>
    for Stock {
        type Statement = ::diesel_occ::__private::diesel::dsl::Returning<
            ::diesel_occ::__private::diesel::dsl::Update<
                <Self as ::diesel_occ::__private::VersionedParts>::Guarded,
                (
                    ::diesel_occ::__private::diesel::dsl::Eq<
                        stock::available,
                        ::diesel_occ::__private::Bound<stock::available, i32>,
                    >,
                ),
            >,
            stock::xmin,
        >;
    }
    #[automatically_derived]
    impl ::diesel_occ::__private::Versioned for Stock {
        type Table = stock::table;
        type Token = diesel_occ::xmin::XminToken;
        type Key = i32;
        type UpdateStatement = ::diesel_occ::__private::ReturningUpdate<Stock>;
        type DeleteStatement = ::diesel_occ::__private::diesel::dsl::delete<
            <Self as ::diesel_occ::__private::VersionedParts>::Guarded,
        >;
        type TokenQuery = ::diesel_occ::__private::diesel::dsl::Select<
            Self::FindQuery,
            stock::xmin,
        >;
        type FindQuery = ::diesel_occ::__private::diesel::dsl::Filter<
            stock::table,
            ::diesel_occ::__private::diesel::dsl::Eq<
                stock::id,
                ::diesel_occ::__private::Bound<stock::id, i32>,
            >,
        >;
        type ValuesRow = ();
        const TABLE_NAME: &'static str = "stock";
        const TOKEN_COLUMN: &'static str = <stock::xmin as ::diesel_occ::__private::diesel::Column>::NAME;
        const KEY_COLUMNS: &'static [&'static str] = &[
            <stock::id as ::diesel_occ::__private::diesel::Column>::NAME,
        ];
        fn sql_table_name() -> &'static str {
            ::diesel_occ::__private::sql_table_name::<
                stock::table,
            >(<Self as ::diesel_occ::Versioned>::TABLE_NAME)
        }
        fn token(&self) -> &Self::Token {
            &self.xmin
        }
        fn set_token(&mut self, token: Self::Token) {
            self.xmin = token;
        }
        fn key(&self) -> Self::Key {
            ::std::clone::Clone::clone(&self.id)
        }
        fn key_values(key: &Self::Key) -> ::std::vec::Vec<::std::string::String> {
            ::diesel_occ::__private::key_values(&[key])
        }
        fn update_statement(&self, fresh: &Self::Token) -> Self::UpdateStatement {
            let _ = fresh;
            ::diesel_occ::__private::ReturningUpdate::new(
                ::diesel_occ::__private::diesel::update(
                        ::diesel_occ::__private::VersionedParts::guarded(self),
                    )
                    .set((
                        stock::available
                            .eq(
                                <::diesel_occ::__private::Bound<
                                    stock::available,
                                    i32,
                                >>::new(::std::clone::Clone::clone(&self.available)),
                            ),
                    ))
                    .returning(stock::xmin),
            )
        }
        fn delete_statement(&self) -> Self::DeleteStatement {
            ::diesel_occ::__private::diesel::delete(
                ::diesel_occ::__private::VersionedParts::guarded(self),
            )
        }
        fn token_query(key: Self::Key) -> Self::TokenQuery {
            Self::find_query(key).select(stock::xmin)
        }
        fn find_query(key: Self::Key) -> Self::FindQuery {
            stock::table
                .filter(
                    stock::id
                        .eq(<::diesel_occ::__private::Bound<stock::id, i32>>::new(key)),
                )
        }
    }
};
