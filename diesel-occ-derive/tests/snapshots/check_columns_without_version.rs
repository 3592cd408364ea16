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
    use ::diesel_occ::__private as __occ;
    use ::diesel_occ::__private::diesel::prelude::{
        BoolExpressionMethods as _, ExpressionMethods as _, QueryDsl as _,
    };
    #[allow(dead_code)]
    fn __occ_refuse_diesel_changeset() {
        <Shelf as __occ::versioned_entities_are_written_with_save_checked_not_AsChangeset<
            _,
        >>::check();
        <&'static Shelf as __occ::versioned_entities_are_written_with_save_checked_not_AsChangeset<
            _,
        >>::check();
    }
    const _: fn() = || {
        __occ::check_column::<i32, shelves::id>();
        __occ::check_column::<Option<String>, shelves::label>();
        __occ::check_column::<i32, shelves::qty>();
        __occ::check_column::<Option<String>, shelves::label>();
        __occ::check_column::<i32, shelves::qty>();
        __occ::check_column::<String, shelves::note>();
    };
    #[inline]
    fn __occ_key_filter(
        key: i32,
    ) -> __occ::diesel::dsl::Eq<shelves::id, __occ::Bound<shelves::id, i32>> {
        shelves::id.eq(<__occ::Bound<shelves::id, i32>>::new(key))
    }
    /// `c1 IS NOT DISTINCT FROM <value> AND ...`, the values taken from `values`.
    #[inline]
    fn __occ_check_filter(
        values: &Shelf,
    ) -> __occ::diesel::dsl::And<
        __occ::TokenEq<shelves::label, Option<String>>,
        __occ::TokenEq<shelves::qty, i32>,
    > {
        __occ::TokenEq::null_safe(
                shelves::label,
                ::std::clone::Clone::clone(&values.label),
                __occ::check_text_forms::<Option<String>>,
            )
            .and(
                __occ::TokenEq::null_safe(
                    shelves::qty,
                    ::std::clone::Clone::clone(&values.qty),
                    __occ::check_text_forms::<i32>,
                ),
            )
    }
    type __OccGuarded = __occ::diesel::dsl::Filter<
        __occ::diesel::dsl::Filter<
            shelves::table,
            __occ::diesel::dsl::Eq<shelves::id, __occ::Bound<shelves::id, i32>>,
        >,
        __occ::diesel::dsl::And<
            __occ::TokenEq<shelves::label, Option<String>>,
            __occ::TokenEq<shelves::qty, i32>,
        >,
    >;
    /// The row with `values`' key, if it still holds `values`' check columns.
    #[inline]
    fn __occ_guarded(values: &Shelf) -> __OccGuarded {
        shelves::table
            .filter(__occ_key_filter(<Shelf as __occ::Versioned>::key(values)))
            .filter(__occ_check_filter(values))
    }
    /// The check columns' values, standing for the token: `None` for "the
    /// entity's own fields", which the entity cannot lend by reference.
    #[doc(hidden)]
    #[derive(Clone, PartialEq, Debug)]
    pub struct __OccCheckValues(::std::option::Option<(Option<String>, i32)>);
    #[automatically_derived]
    impl __occ::VersionToken for __OccCheckValues {
        const KIND: __occ::TokenKind = __occ::TokenKind::Columns;
        #[inline]
        fn initial() -> Self {
            __OccCheckValues(::std::option::Option::None)
        }
        #[inline]
        fn next_token(&self) -> Self {
            __OccCheckValues(::std::option::Option::None)
        }
        #[inline]
        fn to_value(&self) -> __occ::TokenValue {
            __occ::TokenValue::Columns(
                match &self.0 {
                    ::std::option::Option::Some((__occ_value_0, __occ_value_1)) => {
                        __occ::CheckValues::new(
                            ::std::vec![
                                (< shelves::label as __occ::diesel::Column > ::NAME,
                                ::std::format!("{:?}", __occ_value_0),), (< shelves::qty as
                                __occ::diesel::Column > ::NAME, ::std::format!("{:?}",
                                __occ_value_1),)
                            ],
                        )
                    }
                    ::std::option::Option::None => __occ::CheckValues::as_read(),
                },
            )
        }
        #[inline]
        fn from_value(_: &__occ::TokenValue) -> ::std::option::Option<Self> {
            ::std::option::Option::None
        }
        #[inline]
        fn validate(&self) -> ::std::result::Result<(), __occ::InvalidToken> {
            ::std::result::Result::Err(__occ::no_client_token())
        }
        /// Nothing a client could send back: there is no ETag.
        #[inline]
        fn encode(&self) -> ::std::string::String {
            ::std::string::String::new()
        }
        #[inline]
        fn decode(_: &str) -> ::std::result::Result<Self, __occ::InvalidToken> {
            ::std::result::Result::Err(__occ::no_client_token())
        }
    }
    /// Loaded from the check columns when a write conflicts.
    #[automatically_derived]
    impl<
        __DB,
    > __occ::diesel::deserialize::Queryable<
        (
            <shelves::label as __occ::diesel::Expression>::SqlType,
            <shelves::qty as __occ::diesel::Expression>::SqlType,
        ),
        __DB,
    > for __OccCheckValues
    where
        __DB: __occ::diesel::backend::Backend,
        (
            Option<String>,
            i32,
        ): __occ::diesel::deserialize::FromStaticSqlRow<
            (
                <shelves::label as __occ::diesel::Expression>::SqlType,
                <shelves::qty as __occ::diesel::Expression>::SqlType,
            ),
            __DB,
        >,
    {
        type Row = (Option<String>, i32);
        #[inline]
        fn build(row: Self::Row) -> __occ::diesel::deserialize::Result<Self> {
            ::std::result::Result::Ok(__OccCheckValues(::std::option::Option::Some(row)))
        }
    }
    #[automatically_derived]
    impl __occ::VersionedParts for Shelf {
        type TokenColumn = shelves::label;
        type Guarded = __OccGuarded;
        type TokenAssignment = __occ::NotAssigned;
        type Changes = __occ::NotAssigned;
        type KeyColumns = shelves::id;
        const GENERATED_TOKEN: bool = false;
        #[inline]
        fn guarded(&self) -> Self::Guarded {
            __occ_guarded(self)
        }
        #[inline]
        fn token_assignment(_: &Self::Token) -> Self::TokenAssignment {
            __occ::NotAssigned
        }
        #[inline]
        fn changes(&self, _: &Self::Token) -> Self::Changes {
            __occ::NotAssigned
        }
    }
    #[automatically_derived]
    impl __occ::Tracking for Shelf {
        const FIELDS: &'static [&'static str] = &["label", "qty", "note"];
        type FieldsUpdateStatement = __occ::CachedUpdate<
            __OccGuarded,
            (
                ::std::option::Option<
                    __occ::diesel::dsl::Eq<
                        shelves::label,
                        __occ::Bound<shelves::label, Option<String>>,
                    >,
                >,
                ::std::option::Option<
                    __occ::diesel::dsl::Eq<shelves::qty, __occ::Bound<shelves::qty, i32>>,
                >,
                ::std::option::Option<
                    __occ::diesel::dsl::Eq<
                        shelves::note,
                        __occ::Bound<shelves::note, String>,
                    >,
                >,
            ),
        >;
        #[allow(unused_mut)]
        #[inline]
        fn changed_from(&self, original: &Self) -> __occ::Fields<Self> {
            let _ = original;
            let mut changed = __occ::Fields::<Self>::none();
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
        #[inline]
        fn copy_fields(&mut self, from: &Self, fields: __occ::Fields<Self>) {
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
        #[inline]
        fn fields_update_statement(
            &self,
            original: &Self,
            fields: __occ::Fields<Self>,
            fresh: &Self::Token,
        ) -> Self::FieldsUpdateStatement {
            let _ = fresh;
            __occ::CachedUpdate::new(
                    __occ_guarded(original),
                    (
                        fields
                            .contains_index(0usize)
                            .then(|| {
                                shelves::label
                                    .eq(
                                        <__occ::Bound<
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
                                        <__occ::Bound<
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
                                        <__occ::Bound<
                                            shelves::note,
                                            String,
                                        >>::new(::std::clone::Clone::clone(&self.note)),
                                    )
                            }),
                    ),
                )
                .cached_if(fields == __occ::Fields::all())
        }
        #[inline]
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
    impl __occ::Versioned for Shelf {
        type Table = shelves::table;
        type Token = __OccCheckValues;
        type Key = i32;
        type UpdateStatement = __occ::SaveThroughTracked;
        type DeleteStatement = __occ::diesel::dsl::delete<__OccGuarded>;
        type TokenQuery = __occ::diesel::dsl::Select<
            __occ::diesel::dsl::Filter<
                shelves::table,
                __occ::diesel::dsl::Eq<shelves::id, __occ::Bound<shelves::id, i32>>,
            >,
            (shelves::label, shelves::qty),
        >;
        type FindQuery = __occ::diesel::dsl::Filter<
            shelves::table,
            __occ::diesel::dsl::Eq<shelves::id, __occ::Bound<shelves::id, i32>>,
        >;
        type ValuesRow = ();
        const TABLE_NAME: &'static str = "shelves";
        const TOKEN_COLUMN: &'static str = <shelves::label as __occ::diesel::Column>::NAME;
        const KEY_COLUMNS: &'static [&'static str] = &[
            <shelves::id as __occ::diesel::Column>::NAME,
        ];
        #[inline]
        fn sql_table_name() -> &'static str {
            __occ::sql_table_name::<
                shelves::table,
            >(<Self as __occ::Versioned>::TABLE_NAME)
        }
        #[inline]
        fn token(&self) -> &Self::Token {
            static AS_READ: __OccCheckValues = __OccCheckValues(
                ::std::option::Option::None,
            );
            &AS_READ
        }
        #[inline]
        fn set_token(&mut self, _: Self::Token) {}
        #[inline]
        fn key(&self) -> Self::Key {
            ::std::clone::Clone::clone(&self.id)
        }
        #[inline]
        fn key_values(key: &Self::Key) -> ::std::vec::Vec<::std::string::String> {
            __occ::key_values(&[key])
        }
        #[inline]
        fn update_statement(&self, _: &Self::Token) -> Self::UpdateStatement {
            __occ::SaveThroughTracked
        }
        #[inline]
        fn delete_statement(&self) -> Self::DeleteStatement {
            __occ::diesel::delete(__occ_guarded(self))
        }
        #[inline]
        fn token_query(key: Self::Key) -> Self::TokenQuery {
            shelves::table
                .filter(__occ_key_filter(key))
                .select((shelves::label, shelves::qty))
        }
        #[inline]
        fn find_query(key: Self::Key) -> Self::FindQuery {
            shelves::table.filter(__occ_key_filter(key))
        }
    }
};
