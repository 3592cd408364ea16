use diesel::sql_types::Text;
use diesel_occ::Versioned;

diesel::table! {
    articles (id) {
        id -> Integer,
        title -> Text,
        version -> Integer,
    }
}

/// A column type without `PartialEq`: a tracked entity cannot compare it.
#[derive(Debug, Clone, diesel::AsExpression)]
#[diesel(sql_type = Text)]
struct Title(String);

impl<DB: diesel::backend::Backend> diesel::serialize::ToSql<Text, DB> for Title
where
    String: diesel::serialize::ToSql<Text, DB>,
{
    fn to_sql<'b>(
        &'b self,
        out: &mut diesel::serialize::Output<'b, '_, DB>,
    ) -> diesel::serialize::Result {
        self.0.to_sql(out)
    }
}

#[derive(Clone, Versioned)]
#[diesel(table_name = articles)]
#[occ(track)]
struct Article {
    id: i32,
    title: Title,
    #[occ(version)]
    version: i32,
}

fn main() {}
