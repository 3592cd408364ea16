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
        ::diesel_occ::__private::check_column::<
            diesel_occ::xmin::XminToken,
            notes::xmin,
        >();
        ::diesel_occ::__private::check_column::<String, notes::title>();
    };
    #[automatically_derived]
    impl ::diesel_occ::__private::VersionedParts for Note {
        type TokenColumn = notes::xmin;
        type Guarded = ::diesel_occ::__private::KeyGuarded<Self>;
        type TokenAssignment = ::diesel_occ::__private::NotAssigned;
        type Changes = ::diesel_occ::__private::NotAssigned;
        type KeyColumns = notes::id;
        const GENERATED_TOKEN: bool = true;
        fn guarded(&self) -> Self::Guarded {
            <Self as ::diesel_occ::__private::Versioned>::find_query(
                    <Self as ::diesel_occ::__private::Versioned>::key(self),
                )
                .filter(
                    ::diesel_occ::__private::TokenEq::new(
                        notes::xmin,
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
    for Note {
        type Statement = ::diesel_occ::__private::diesel::dsl::Returning<
            ::diesel_occ::__private::diesel::dsl::Update<
                <Self as ::diesel_occ::__private::VersionedParts>::Guarded,
                (
                    ::diesel_occ::__private::diesel::dsl::Eq<
                        notes::title,
                        ::diesel_occ::__private::Bound<notes::title, String>,
                    >,
                ),
            >,
            notes::xmin,
        >;
    }
    #[automatically_derived]
    impl ::diesel_occ::__private::ReturningStatement<
        ::diesel_occ::__private::ChosenFields,
    > for Note {
        type Statement = ::diesel_occ::__private::diesel::dsl::Returning<
            ::diesel_occ::__private::diesel::dsl::Update<
                <Self as ::diesel_occ::__private::VersionedParts>::Guarded,
                (
                    ::std::option::Option<
                        ::diesel_occ::__private::diesel::dsl::Eq<
                            notes::title,
                            ::diesel_occ::__private::Bound<notes::title, String>,
                        >,
                    >,
                ),
            >,
            notes::xmin,
        >;
    }
    #[automatically_derived]
    impl ::diesel_occ::__private::Tracking for Note {
        const FIELDS: &'static [&'static str] = &["title"];
        type FieldsUpdateStatement = ::diesel_occ::__private::ReturningUpdate<
            Note,
            ::diesel_occ::__private::ChosenFields,
        >;
        #[allow(unused_mut)]
        fn changed_from(
            &self,
            original: &Self,
        ) -> ::diesel_occ::__private::Fields<Self> {
            let _ = original;
            let mut changed = ::diesel_occ::__private::Fields::<Self>::none();
            if !<String as ::std::cmp::PartialEq>::eq(&self.title, &original.title) {
                changed = changed.with_index(0usize).unwrap_or(changed);
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
                self.title = ::std::clone::Clone::clone(&from.title);
            }
        }
        fn fields_update_statement(
            &self,
            original: &Self,
            fields: ::diesel_occ::__private::Fields<Self>,
            fresh: &Self::Token,
        ) -> Self::FieldsUpdateStatement {
            let _ = (original, fields);
            let _ = fresh;
            ::diesel_occ::__private::ReturningUpdate::new(
                ::diesel_occ::__private::diesel::update(
                        ::diesel_occ::__private::VersionedParts::guarded(self),
                    )
                    .set((
                        fields
                            .contains_index(0usize)
                            .then(|| {
                                notes::title
                                    .eq(
                                        <::diesel_occ::__private::Bound<
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
    impl ::diesel_occ::__private::Versioned for Note {
        type Table = notes::table;
        type Token = diesel_occ::xmin::XminToken;
        type Key = i32;
        type UpdateStatement = ::diesel_occ::__private::ReturningUpdate<Note>;
        type DeleteStatement = ::diesel_occ::__private::diesel::dsl::delete<
            <Self as ::diesel_occ::__private::VersionedParts>::Guarded,
        >;
        type TokenQuery = ::diesel_occ::__private::diesel::dsl::Select<
            Self::FindQuery,
            notes::xmin,
        >;
        type FindQuery = ::diesel_occ::__private::diesel::dsl::Filter<
            notes::table,
            ::diesel_occ::__private::diesel::dsl::Eq<
                notes::id,
                ::diesel_occ::__private::Bound<notes::id, i32>,
            >,
        >;
        type ValuesRow = ();
        const TABLE_NAME: &'static str = "notes";
        const TOKEN_COLUMN: &'static str = <notes::xmin as ::diesel_occ::__private::diesel::Column>::NAME;
        const KEY_COLUMNS: &'static [&'static str] = &[
            <notes::id as ::diesel_occ::__private::diesel::Column>::NAME,
        ];
        fn sql_table_name() -> &'static str {
            ::diesel_occ::__private::sql_table_name::<
                notes::table,
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
                        notes::title
                            .eq(
                                <::diesel_occ::__private::Bound<
                                    notes::title,
                                    String,
                                >>::new(::std::clone::Clone::clone(&self.title)),
                            ),
                    ))
                    .returning(notes::xmin),
            )
        }
        fn delete_statement(&self) -> Self::DeleteStatement {
            ::diesel_occ::__private::diesel::delete(
                ::diesel_occ::__private::VersionedParts::guarded(self),
            )
        }
        fn token_query(key: Self::Key) -> Self::TokenQuery {
            Self::find_query(key).select(notes::xmin)
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
