//! The fault every backend module injects while the workers run: a killed server
//! session on PostgreSQL and MariaDB (here), the database's write lock held for 50 ms
//! on SQLite (`sqlite.rs`).

use diesel::prelude::*;
use diesel::query_builder::SqlQuery;
use diesel::query_dsl::LoadQuery;

/// One row of a backend's sessions query.
#[derive(QueryableByName)]
pub(crate) struct Session {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    id: i64,
}

/// Kills one session of the soak database other than the injector's own: `sessions`
/// lists their ids (as `id`), `kill` ends one and says whether the server ended a
/// session (one that ended on its own meanwhile is not a fault this run injected).
/// `admin` is the injector's connection, made with `connect` when there is none.
pub(crate) fn kill_server_session<C: Connection>(
    admin: &mut Option<C>,
    connect: impl FnOnce() -> Option<C>,
    sessions: &str,
    kill: fn(&mut C, i64) -> bool,
    rng: &mut fastrand::Rng,
) -> bool
where
    SqlQuery: LoadQuery<'static, C, Session>,
{
    if admin.is_none() {
        *admin = connect();
    }
    let Some(conn) = admin.as_mut() else {
        return false;
    };
    let sessions: Vec<Session> = match diesel::sql_query(sessions).load(conn) {
        Ok(sessions) => sessions,
        Err(_) => {
            *admin = None;
            return false;
        }
    };
    if sessions.is_empty() {
        return false;
    }
    kill(conn, sessions[rng.usize(..sessions.len())].id)
}
