// Input of #[derive(Versioned)]:

#[diesel(table_name = notes)]
#[occ(track)]
struct Note {
    id: i32,
    title: String,
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
        <Note as __occ::versioned_entities_are_written_with_save_checked_not_AsChangeset<
            _,
        >>::check();
        <&'static Note as __occ::versioned_entities_are_written_with_save_checked_not_AsChangeset<
            _,
        >>::check();
    }
    const _: fn() = || {
        __occ::check_column::<i32, notes::id>();
        __occ::check_column::<diesel_occ::xmin::XminToken, notes::xmin>();
        __occ::check_column::<String, notes::title>();
    };
    #[automatically_derived]
    impl __occ::VersionedParts for Note {
        type TokenColumn = notes::xmin;
        type Guarded = __occ::KeyGuarded<Self>;
        type TokenAssignment = __occ::NotAssigned;
        type Changes = __occ::NotAssigned;
        type KeyColumns = notes::id;
        const GENERATED_TOKEN: bool = true;
        #[inline]
        fn guarded(&self) -> Self::Guarded {
            <Self as __occ::Versioned>::find_query(<Self as __occ::Versioned>::key(self))
                .filter(
                    __occ::TokenEq::new(
                        notes::xmin,
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
    impl __occ::ReturningStatement<__occ::AllFields> for Note {
        type Statement = __occ::diesel::dsl::Returning<
            __occ::diesel::dsl::Update<
                <Self as __occ::VersionedParts>::Guarded,
                (
                    __occ::diesel::dsl::Eq<
                        notes::title,
                        __occ::Bound<notes::title, String>,
                    >,
                ),
            >,
            notes::xmin,
        >;
    }
    #[automatically_derived]
    impl __occ::ReturningStatement<__occ::ChosenFields> for Note {
        type Statement = __occ::diesel::dsl::Returning<
            __occ::diesel::dsl::Update<
                <Self as __occ::VersionedParts>::Guarded,
                (
                    ::std::option::Option<
                        __occ::diesel::dsl::Eq<
                            notes::title,
                            __occ::Bound<notes::title, String>,
                        >,
                    >,
                ),
            >,
            notes::xmin,
        >;
    }
    #[automatically_derived]
    impl __occ::Tracking for Note {
        const FIELDS: &'static [&'static str] = &["title"];
        type FieldsUpdateStatement = __occ::ReturningUpdate<Note, __occ::ChosenFields>;
        #[allow(unused_mut)]
        #[inline]
        fn changed_from(&self, original: &Self) -> __occ::Fields<Self> {
            let _ = original;
            let mut changed = __occ::Fields::<Self>::none();
            if !<String as ::std::cmp::PartialEq>::eq(&self.title, &original.title) {
                changed = changed.with_index(0usize).unwrap_or(changed);
            }
            changed
        }
        #[inline]
        fn copy_fields(&mut self, from: &Self, fields: __occ::Fields<Self>) {
            let _ = (from, fields);
            if fields.contains_index(0usize) {
                self.title = ::std::clone::Clone::clone(&from.title);
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
            let _ = fresh;
            __occ::ReturningUpdate::new(
                __occ::diesel::update(__occ::VersionedParts::guarded(self))
                    .set((
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
                    ))
                    .returning(notes::xmin),
            )
        }
    }
    #[automatically_derived]
    impl __occ::Versioned for Note {
        type Table = notes::table;
        type Token = diesel_occ::xmin::XminToken;
        type Key = i32;
        type UpdateStatement = __occ::ReturningUpdate<Note>;
        type DeleteStatement = __occ::diesel::dsl::delete<
            <Self as __occ::VersionedParts>::Guarded,
        >;
        type TokenQuery = __occ::diesel::dsl::Select<Self::FindQuery, notes::xmin>;
        type FindQuery = __occ::diesel::dsl::Filter<
            notes::table,
            __occ::diesel::dsl::Eq<notes::id, __occ::Bound<notes::id, i32>>,
        >;
        type ValuesRow = ();
        const TABLE_NAME: &'static str = "notes";
        const TOKEN_COLUMN: &'static str = <notes::xmin as __occ::diesel::Column>::NAME;
        const KEY_COLUMNS: &'static [&'static str] = &[
            <notes::id as __occ::diesel::Column>::NAME,
        ];
        #[inline]
        fn sql_table_name() -> &'static str {
            __occ::sql_table_name::<notes::table>(<Self as __occ::Versioned>::TABLE_NAME)
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
                        notes::title
                            .eq(
                                <__occ::Bound<
                                    notes::title,
                                    String,
                                >>::new(::std::clone::Clone::clone(&self.title)),
                            ),
                    ))
                    .returning(notes::xmin),
            )
        }
        #[inline]
        fn delete_statement(&self) -> Self::DeleteStatement {
            __occ::diesel::delete(__occ::VersionedParts::guarded(self))
        }
        #[inline]
        fn token_query(key: Self::Key) -> Self::TokenQuery {
            Self::find_query(key).select(notes::xmin)
        }
        #[inline]
        fn find_query(key: Self::Key) -> Self::FindQuery {
            notes::table.filter(notes::id.eq(<__occ::Bound<notes::id, i32>>::new(key)))
        }
    }
};
