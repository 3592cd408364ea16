// Input of #[derive(Versioned)]:

#[diesel(table_name = shelves)]
struct Shelf {
    id: i32,
    #[occ(check)]
    label: Option<String>,
    #[occ(check)]
    qty: i32,
    note: String,
}

// Expansion:

const _: () = {
    use ::diesel_occ::__private::diesel::prelude::{
        BoolExpressionMethods as _, ExpressionMethods as _, QueryDsl as _,
    };
    #[allow(dead_code)]
    fn __occ_refuse_diesel_changeset() {
        <Shelf as ::diesel_occ::__private::versioned_entities_are_written_with_save_checked_not_AsChangeset<
            _,
        >>::check();
        <&'static Shelf as ::diesel_occ::__private::versioned_entities_are_written_with_save_checked_not_AsChangeset<
            _,
        >>::check();
    }
    const _: fn() = || {
        ::diesel_occ::__private::check_column::<i32, shelves::id>();
        ::diesel_occ::__private::check_column::<Option<String>, shelves::label>();
        ::diesel_occ::__private::check_column::<i32, shelves::qty>();
        ::diesel_occ::__private::check_column::<Option<String>, shelves::label>();
        ::diesel_occ::__private::check_column::<i32, shelves::qty>();
        ::diesel_occ::__private::check_column::<String, shelves::note>();
    };
    fn __occ_key_filter(
        key: i32,
    ) -> ::diesel_occ::__private::diesel::dsl::Eq<
        shelves::id,
        ::diesel_occ::__private::Bound<shelves::id, i32>,
    > {
        shelves::id.eq(<::diesel_occ::__private::Bound<shelves::id, i32>>::new(key))
    }
    /// `c1 IS NOT DISTINCT FROM <value> AND ...`, the values taken from `values`.
    fn __occ_check_filter(
        values: &Shelf,
    ) -> ::diesel_occ::__private::diesel::dsl::And<
        ::diesel_occ::__private::NullSafeEq<
            shelves::label,
            ::diesel_occ::__private::Bound<shelves::label, Option<String>>,
        >,
        ::diesel_occ::__private::NullSafeEq<
            shelves::qty,
            ::diesel_occ::__private::Bound<shelves::qty, i32>,
        >,
    > {
        ::diesel_occ::__private::NullSafeEq::new(
                shelves::label,
                <::diesel_occ::__private::Bound<
                    shelves::label,
                    Option<String>,
                >>::new(::std::clone::Clone::clone(&values.label)),
            )
            .and(
                ::diesel_occ::__private::NullSafeEq::new(
                    shelves::qty,
                    <::diesel_occ::__private::Bound<
                        shelves::qty,
                        i32,
                    >>::new(::std::clone::Clone::clone(&values.qty)),
                ),
            )
    }
    type __OccGuarded = ::diesel_occ::__private::diesel::dsl::Filter<
        ::diesel_occ::__private::diesel::dsl::Filter<
            shelves::table,
            ::diesel_occ::__private::diesel::dsl::Eq<
                shelves::id,
                ::diesel_occ::__private::Bound<shelves::id, i32>,
            >,
        >,
        ::diesel_occ::__private::diesel::dsl::And<
            ::diesel_occ::__private::NullSafeEq<
                shelves::label,
                ::diesel_occ::__private::Bound<shelves::label, Option<String>>,
            >,
            ::diesel_occ::__private::NullSafeEq<
                shelves::qty,
                ::diesel_occ::__private::Bound<shelves::qty, i32>,
            >,
        >,
    >;
    /// The row with `values`' key, if it still holds `values`' check columns.
    fn __occ_guarded(values: &Shelf) -> __OccGuarded {
        shelves::table
            .filter(
                __occ_key_filter(
                    <Shelf as ::diesel_occ::__private::Versioned>::key(values),
                ),
            )
            .filter(__occ_check_filter(values))
    }
    /// The check columns' values, standing for the token: `None` for "the
    /// entity's own fields", which the entity cannot lend by reference.
    #[doc(hidden)]
    #[derive(Clone, PartialEq, Debug)]
    pub struct __OccCheckValues(::std::option::Option<(Option<String>, i32)>);
    #[automatically_derived]
    impl ::diesel_occ::__private::VersionToken for __OccCheckValues {
        const KIND: ::diesel_occ::__private::TokenKind = ::diesel_occ::__private::TokenKind::Columns;
        fn initial() -> Self {
            __OccCheckValues(::std::option::Option::None)
        }
        fn next_token(&self) -> Self {
            __OccCheckValues(::std::option::Option::None)
        }
        fn to_value(&self) -> ::diesel_occ::__private::TokenValue {
            ::diesel_occ::__private::TokenValue::Columns(
                match &self.0 {
                    ::std::option::Option::Some((__occ_value_0, __occ_value_1)) => {
                        ::diesel_occ::__private::CheckValues::new(
                            ::std::vec![
                                (< shelves::label as ::diesel_occ::__private::diesel::Column
                                > ::NAME, ::std::format!("{:?}", __occ_value_0),), (<
                                shelves::qty as ::diesel_occ::__private::diesel::Column >
                                ::NAME, ::std::format!("{:?}", __occ_value_1),)
                            ],
                        )
                    }
                    ::std::option::Option::None => {
                        ::diesel_occ::__private::CheckValues::as_read()
                    }
                },
            )
        }
        fn from_value(
            _: &::diesel_occ::__private::TokenValue,
        ) -> ::std::option::Option<Self> {
            ::std::option::Option::None
        }
        fn validate(
            &self,
        ) -> ::std::result::Result<(), ::diesel_occ::__private::InvalidToken> {
            ::std::result::Result::Err(::diesel_occ::__private::no_client_token())
        }
        /// Nothing a client could send back: there is no ETag.
        fn encode(&self) -> ::std::string::String {
            ::std::string::String::new()
        }
        fn decode(
            _: &str,
        ) -> ::std::result::Result<Self, ::diesel_occ::__private::InvalidToken> {
            ::std::result::Result::Err(::diesel_occ::__private::no_client_token())
        }
    }
    /// Loaded from the check columns when a write conflicts.
    #[automatically_derived]
    impl<
        __DB,
    > ::diesel_occ::__private::diesel::deserialize::Queryable<
        (
            <shelves::label as ::diesel_occ::__private::diesel::Expression>::SqlType,
            <shelves::qty as ::diesel_occ::__private::diesel::Expression>::SqlType,
        ),
        __DB,
    > for __OccCheckValues
    where
        __DB: ::diesel_occ::__private::diesel::backend::Backend,
        (
            Option<String>,
            i32,
        ): ::diesel_occ::__private::diesel::deserialize::FromStaticSqlRow<
            (
                <shelves::label as ::diesel_occ::__private::diesel::Expression>::SqlType,
                <shelves::qty as ::diesel_occ::__private::diesel::Expression>::SqlType,
            ),
            __DB,
        >,
    {
        type Row = (Option<String>, i32);
        fn build(
            row: Self::Row,
        ) -> ::diesel_occ::__private::diesel::deserialize::Result<Self> {
            ::std::result::Result::Ok(__OccCheckValues(::std::option::Option::Some(row)))
        }
    }
    #[automatically_derived]
    impl ::diesel_occ::__private::VersionedParts for Shelf {
        type TokenColumn = shelves::label;
        type Guarded = __OccGuarded;
        type TokenAssignment = ::diesel_occ::__private::NotAssigned;
        type Changes = ::diesel_occ::__private::NotAssigned;
        type KeyColumns = shelves::id;
        const GENERATED_TOKEN: bool = false;
        fn guarded(&self) -> Self::Guarded {
            __occ_guarded(self)
        }
        fn token_assignment(_: &Self::Token) -> Self::TokenAssignment {
            ::diesel_occ::__private::NotAssigned
        }
        fn changes(&self, _: &Self::Token) -> Self::Changes {
            ::diesel_occ::__private::NotAssigned
        }
    }
    #[automatically_derived]
    impl ::diesel_occ::__private::Tracking for Shelf {
        const FIELDS: &'static [&'static str] = &["label", "qty", "note"];
        type FieldsUpdateStatement = ::diesel_occ::__private::CachedUpdate<
            __OccGuarded,
            (
                ::std::option::Option<
                    ::diesel_occ::__private::diesel::dsl::Eq<
                        shelves::label,
                        ::diesel_occ::__private::Bound<shelves::label, Option<String>>,
                    >,
                >,
                ::std::option::Option<
                    ::diesel_occ::__private::diesel::dsl::Eq<
                        shelves::qty,
                        ::diesel_occ::__private::Bound<shelves::qty, i32>,
                    >,
                >,
                ::std::option::Option<
                    ::diesel_occ::__private::diesel::dsl::Eq<
                        shelves::note,
                        ::diesel_occ::__private::Bound<shelves::note, String>,
                    >,
                >,
            ),
        >;
        #[allow(unused_mut)]
        fn changed_from(
            &self,
            original: &Self,
        ) -> ::diesel_occ::__private::Fields<Self> {
            let _ = original;
            let mut changed = ::diesel_occ::__private::Fields::<Self>::none();
            if !<Option<
                String,
            > as ::std::cmp::PartialEq>::eq(&self.label, &original.label) {
                changed = changed.with_index(0usize).unwrap_or(changed);
            }
            if !<i32 as ::std::cmp::PartialEq>::eq(&self.qty, &original.qty) {
                changed = changed.with_index(1usize).unwrap_or(changed);
            }
            if !<String as ::std::cmp::PartialEq>::eq(&self.note, &original.note) {
                changed = changed.with_index(2usize).unwrap_or(changed);
            }
            changed
        }
        fn copy_fields(
            &mut self,
            from: &Self,
            fields: ::diesel_occ::__private::Fields<Self>,
        ) {
            let _ = (from, fields);
            if fields.contains_index(0usize) {
                self.label = ::std::clone::Clone::clone(&from.label);
            }
            if fields.contains_index(1usize) {
                self.qty = ::std::clone::Clone::clone(&from.qty);
            }
            if fields.contains_index(2usize) {
                self.note = ::std::clone::Clone::clone(&from.note);
            }
        }
        fn fields_update_statement(
            &self,
            original: &Self,
            fields: ::diesel_occ::__private::Fields<Self>,
            fresh: &Self::Token,
        ) -> Self::FieldsUpdateStatement {
            let _ = fresh;
            ::diesel_occ::__private::CachedUpdate::new(
                    __occ_guarded(original),
                    (
                        fields
                            .contains_index(0usize)
                            .then(|| {
                                shelves::label
                                    .eq(
                                        <::diesel_occ::__private::Bound<
                                            shelves::label,
                                            Option<String>,
                                        >>::new(::std::clone::Clone::clone(&self.label)),
                                    )
                            }),
                        fields
                            .contains_index(1usize)
                            .then(|| {
                                shelves::qty
                                    .eq(
                                        <::diesel_occ::__private::Bound<
                                            shelves::qty,
                                            i32,
                                        >>::new(::std::clone::Clone::clone(&self.qty)),
                                    )
                            }),
                        fields
                            .contains_index(2usize)
                            .then(|| {
                                shelves::note
                                    .eq(
                                        <::diesel_occ::__private::Bound<
                                            shelves::note,
                                            String,
                                        >>::new(::std::clone::Clone::clone(&self.note)),
                                    )
                            }),
                    ),
                )
                .cached_if(fields == ::diesel_occ::__private::Fields::all())
        }
        fn expected_token(&self) -> Self::Token {
            __OccCheckValues(
                ::std::option::Option::Some((
                    ::std::clone::Clone::clone(&self.label),
                    ::std::clone::Clone::clone(&self.qty),
                )),
            )
        }
    }
    #[automatically_derived]
    impl ::diesel_occ::__private::Versioned for Shelf {
        type Table = shelves::table;
        type Token = __OccCheckValues;
        type Key = i32;
        type UpdateStatement = ::diesel_occ::__private::SaveThroughTracked;
        type DeleteStatement = ::diesel_occ::__private::diesel::dsl::delete<
            __OccGuarded,
        >;
        type TokenQuery = ::diesel_occ::__private::diesel::dsl::Select<
            ::diesel_occ::__private::diesel::dsl::Filter<
                shelves::table,
                ::diesel_occ::__private::diesel::dsl::Eq<
                    shelves::id,
                    ::diesel_occ::__private::Bound<shelves::id, i32>,
                >,
            >,
            (shelves::label, shelves::qty),
        >;
        type FindQuery = ::diesel_occ::__private::diesel::dsl::Filter<
            shelves::table,
            ::diesel_occ::__private::diesel::dsl::Eq<
                shelves::id,
                ::diesel_occ::__private::Bound<shelves::id, i32>,
            >,
        >;
        type ValuesRow = ();
        const TABLE_NAME: &'static str = "shelves";
        const TOKEN_COLUMN: &'static str = <shelves::label as ::diesel_occ::__private::diesel::Column>::NAME;
        const KEY_COLUMNS: &'static [&'static str] = &[
            <shelves::id as ::diesel_occ::__private::diesel::Column>::NAME,
        ];
        fn sql_table_name() -> &'static str {
            ::diesel_occ::__private::sql_table_name::<
                shelves::table,
            >(<Self as ::diesel_occ::Versioned>::TABLE_NAME)
        }
        fn token(&self) -> &Self::Token {
            static AS_READ: __OccCheckValues = __OccCheckValues(
                ::std::option::Option::None,
            );
            &AS_READ
        }
        fn set_token(&mut self, _: Self::Token) {}
        fn key(&self) -> Self::Key {
            ::std::clone::Clone::clone(&self.id)
        }
        fn key_values(key: &Self::Key) -> ::std::vec::Vec<::std::string::String> {
            ::diesel_occ::__private::key_values(&[key])
        }
        fn update_statement(&self, _: &Self::Token) -> Self::UpdateStatement {
            ::diesel_occ::__private::SaveThroughTracked
        }
        fn delete_statement(&self) -> Self::DeleteStatement {
            ::diesel_occ::__private::diesel::delete(__occ_guarded(self))
        }
        fn token_query(key: Self::Key) -> Self::TokenQuery {
            shelves::table
                .filter(__occ_key_filter(key))
                .select((shelves::label, shelves::qty))
        }
        fn find_query(key: Self::Key) -> Self::FindQuery {
            shelves::table.filter(__occ_key_filter(key))
        }
    }
};
