//! A work item's status, stored as text.

use diesel::backend::Backend;
use diesel::deserialize::{self, FromSql, FromSqlRow};
use diesel::expression::AsExpression;
use diesel::serialize::{self, Output, ToSql};
use diesel::sql_types::Text;

/// A work item's state, stored as text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, AsExpression, FromSqlRow)]
#[diesel(sql_type = Text)]
pub enum Status {
    /// Waiting for a worker.
    Pending,
    /// Claimed by a worker whose lease may or may not have expired.
    Processing,
    /// Handled.
    Done,
}

impl Status {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "PENDING",
            Status::Processing => "PROCESSING",
            Status::Done => "DONE",
        }
    }
}

impl<DB> ToSql<Text, DB> for Status
where
    DB: Backend,
    str: ToSql<Text, DB>,
{
    fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, DB>) -> serialize::Result {
        self.as_str().to_sql(out)
    }
}

impl<DB> FromSql<Text, DB> for Status
where
    DB: Backend,
    String: FromSql<Text, DB>,
{
    fn from_sql(bytes: DB::RawValue<'_>) -> deserialize::Result<Self> {
        match String::from_sql(bytes)?.as_str() {
            "PENDING" => Ok(Status::Pending),
            "PROCESSING" => Ok(Status::Processing),
            "DONE" => Ok(Status::Done),
            other => Err(format!("unknown work item status {other:?}").into()),
        }
    }
}
