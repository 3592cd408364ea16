// Input of #[derive(Versioned)]:

#[diesel(table_name = stock)]
struct Stock {
    id: i32,
    #[occ(version)]
    available: i32,
    #[occ(version)]
    version: i32,
}

// Expansion:

::core::compile_error! {
    "only one field can be the concurrency token\nhelp: remove `#[occ(version)]` from all fields but one"
}
const _: () = {
    use self::__occ_derive_failed as __OccInvalid;
    #[automatically_derived]
    impl ::diesel_occ::__private::Versioned for Stock {
        type Table = __OccInvalid;
        type Token = __OccInvalid;
        type Key = __OccInvalid;
        type UpdateStatement = __OccInvalid;
        type DeleteStatement = __OccInvalid;
        type TokenQuery = __OccInvalid;
        type FindQuery = __OccInvalid;
        type ValuesRow = __OccInvalid;
        const TABLE_NAME: &'static str = "";
        const TOKEN_COLUMN: &'static str = "";
        const KEY_COLUMNS: &'static [&'static str] = &[];
        fn token(&self) -> &Self::Token {
            ::std::unreachable!()
        }
        fn set_token(&mut self, _: Self::Token) {
            ::std::unreachable!()
        }
        fn key(&self) -> Self::Key {
            ::std::unreachable!()
        }
        fn key_values(_: &Self::Key) -> ::std::vec::Vec<::std::string::String> {
            ::std::unreachable!()
        }
        fn update_statement(&self, _: &Self::Token) -> Self::UpdateStatement {
            ::std::unreachable!()
        }
        fn delete_statement(&self) -> Self::DeleteStatement {
            ::std::unreachable!()
        }
        fn token_query(_: Self::Key) -> Self::TokenQuery {
            ::std::unreachable!()
        }
        fn find_query(_: Self::Key) -> Self::FindQuery {
            ::std::unreachable!()
        }
    }
    #[automatically_derived]
    impl ::diesel_occ::__private::VersionedParts for Stock {
        type TokenColumn = __OccInvalid;
        type Guarded = __OccInvalid;
        type TokenAssignment = __OccInvalid;
        type Changes = __OccInvalid;
        type KeyColumns = __OccInvalid;
        const GENERATED_TOKEN: bool = false;
        fn guarded(&self) -> Self::Guarded {
            ::std::unreachable!()
        }
        fn token_assignment(_: &Self::Token) -> Self::TokenAssignment {
            ::std::unreachable!()
        }
        fn changes(&self, _: &Self::Token) -> Self::Changes {
            ::std::unreachable!()
        }
    }
    #[automatically_derived]
    impl ::diesel_occ::__private::Tracking for Stock {
        const FIELDS: &'static [&'static str] = &[];
        type FieldsUpdateStatement = __OccInvalid;
        fn changed_from(&self, _: &Self) -> ::diesel_occ::__private::Fields<Self> {
            ::std::unreachable!()
        }
        fn copy_fields(&mut self, _: &Self, _: ::diesel_occ::__private::Fields<Self>) {
            ::std::unreachable!()
        }
        fn fields_update_statement(
            &self,
            _: &Self,
            _: ::diesel_occ::__private::Fields<Self>,
            _: &Self::Token,
        ) -> Self::FieldsUpdateStatement {
            ::std::unreachable!()
        }
    }
    #[automatically_derived]
    impl<__OccWhich> ::diesel_occ::__private::ReturningStatement<__OccWhich> for Stock {
        type Statement = __OccInvalid;
    }
};
