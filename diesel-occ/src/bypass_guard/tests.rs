use super::*;

const BACKENDS: [Dialect; 3] = [Dialect::Postgres, Dialect::Mysql, Dialect::Sqlite];

#[test]
fn renders_each_backend() {
    let guard = BypassGuard::new("stock", "version", &["id"], TokenKind::Integer);
    let name = guard.trigger_name();
    let pg = guard.install_sql(Dialect::Postgres).unwrap();
    assert!(pg.contains("IF NEW.\"version\" IS NOT DISTINCT FROM OLD.\"version\""));
    assert!(pg.contains("BEFORE UPDATE ON \"stock\""));
    assert!(pg.starts_with(&format!("CREATE FUNCTION \"{name}\"()")));
    let mysql = guard.install_sql(Dialect::Mysql).unwrap();
    assert!(mysql.contains(
        "SET NEW.`version` = IF(NEW.`version` <=> OLD.`version`, CASE WHEN OLD.`version` \
         = 2147483647 THEN (-2147483647 - 1) ELSE OLD.`version` + 1 END, NEW.`version`)"
    ));
    let sqlite = guard.install_sql(Dialect::Sqlite).unwrap();
    assert!(sqlite.contains("WHEN NEW.\"version\" IS OLD.\"version\""));
    assert!(sqlite.contains("WHERE \"id\" = NEW.\"id\""));
    assert_eq!(
        guard.uninstall_sql(Dialect::Mysql).unwrap(),
        format!("DROP TRIGGER IF EXISTS `{name}`;\n")
    );
    for backend in BACKENDS {
        let ddl = guard.install_sql(backend).unwrap();
        assert!(
            !ddl.contains("OR REPLACE"),
            "a collision must fail, not rebind"
        );
    }
}

#[test]
fn timestamps_only_on_postgres() {
    let guard = BypassGuard::new("t", "at", &["id"], TokenKind::Timestamp);
    assert!(guard.install_sql(Dialect::Postgres).is_ok());
    assert_eq!(
        guard.install_sql(Dialect::Sqlite),
        Err(GuardError::Unsupported {
            backend: Dialect::Sqlite,
            kind: TokenKind::Timestamp
        })
    );
}

/// A token the guard cannot advance (a database-generated one such as `xmin`) is a
/// typed refusal on every backend, not DDL that guesses.
#[test]
fn a_token_of_another_kind_is_refused_on_every_backend() {
    let guard = BypassGuard::new("t", "xmin", &["id"], TokenKind::Other);
    for backend in BACKENDS {
        assert_eq!(
            guard.install_sql(backend),
            Err(GuardError::Unsupported {
                backend,
                kind: TokenKind::Other
            })
        );
    }
}

#[test]
fn the_postgres_timestamp_guard_steps_at_the_column_precision_in_utc() {
    let guard = BypassGuard::new("t", "at", &["id"], TokenKind::Timestamp);
    let ddl = guard.install_sql(Dialect::Postgres).unwrap();
    // A write that moves the token back is advanced too.
    assert!(ddl.contains("OR NEW.\"at\" <= OLD.\"at\" THEN"), "{ddl}");
    // The clock as the column's type needs it, never through the session's time zone.
    assert!(ddl.contains("'timestamp with time zone'::regtype"), "{ddl}");
    assert!(
        ddl.contains("clock_timestamp() AT TIME ZONE 'UTC'"),
        "{ddl}"
    );
    // Steps of 1 µs up to 1 s until the column keeps one.
    assert!(ddl.contains("WHILE NOT NEW.\"at\" > OLD.\"at\""), "{ddl}");
    assert!(!ddl.contains("GREATEST"), "{ddl}");
}

#[test]
fn names_that_read_alike_differ_by_their_hash() {
    let a = BypassGuard::new("order_items", "version", &["id"], TokenKind::Integer);
    let b = BypassGuard::new("order", "items_version", &["id"], TokenKind::Integer);
    assert!(
        a.trigger_name()
            .starts_with("occ_guard_order_items_version_")
    );
    assert!(
        b.trigger_name()
            .starts_with("occ_guard_order_items_version_")
    );
    assert_ne!(a.trigger_name(), b.trigger_name());
    // The same names, whatever the key or the kind: a second install collides.
    let c = BypassGuard::new("order_items", "version", &["k"], TokenKind::BigInt);
    assert_eq!(a.trigger_name(), c.trigger_name());
}

#[test]
fn the_name_is_stable() {
    // Pinned: installed triggers are found again (and uninstalled) by this name.
    let guard = BypassGuard::new("stock", "version", &["id"], TokenKind::Integer);
    assert_eq!(
        guard.trigger_name(),
        "occ_guard_stock_version_8e3dfac2f3d11183"
    );
}

#[test]
fn names_fit_in_63_bytes() {
    let long = "é".repeat(100);
    let guard = BypassGuard::new(&long, &long, &["id"], TokenKind::Integer);
    let name = guard.trigger_name();
    assert_eq!(name.len(), 63, "{name}");
    assert!(name.is_ascii());
    let short = BypassGuard::new("t", "v", &["id"], TokenKind::Integer).trigger_name();
    assert!(short.len() <= 63);
}

#[test]
fn a_dollar_quote_in_a_name_cannot_end_the_function_body() {
    let guard = BypassGuard::new(
        "t$occ$",
        "v$occ$; DROP TABLE x; --",
        &["id"],
        TokenKind::Integer,
    );
    let pg = guard.install_sql(Dialect::Postgres).unwrap();
    assert!(pg.contains("AS $occ1$\nBEGIN"), "{pg}");
    assert_eq!(pg.matches("$occ1$").count(), 2, "{pg}");
}

#[test]
fn quotes_are_doubled() {
    let guard = BypassGuard::new("a\"b`c", "v", &["i\"d"], TokenKind::Integer);
    let pg = guard.install_sql(Dialect::Postgres).unwrap();
    assert!(pg.contains("ON \"a\"\"b`c\""));
    let mysql = guard.install_sql(Dialect::Mysql).unwrap();
    assert!(mysql.contains("ON `a\"b``c`"));
    let sqlite = guard.install_sql(Dialect::Sqlite).unwrap();
    assert!(sqlite.contains("\"i\"\"d\" = NEW.\"i\"\"d\""));
}

#[test]
fn names_no_backend_can_hold_are_refused() {
    let nul = BypassGuard::new("t\0; DROP TABLE x", "v", &["id"], TokenKind::Integer);
    for backend in BACKENDS {
        assert_eq!(
            nul.install_sql(backend),
            Err(GuardError::InvalidName {
                backend,
                part: NamePart::Table,
                problem: NameProblem::ContainsNul
            })
        );
        assert!(nul.uninstall_sql(backend).is_err());
    }
    let empty = BypassGuard::new("t", "", &["id"], TokenKind::Integer);
    assert!(matches!(
        empty.install_sql(Dialect::Sqlite),
        Err(GuardError::InvalidName {
            part: NamePart::TokenColumn,
            problem: NameProblem::Empty,
            ..
        })
    ));
    let keyless = BypassGuard::new("t", "v", &[], TokenKind::Integer);
    assert!(matches!(
        keyless.install_sql(Dialect::Sqlite),
        Err(GuardError::NoKeyColumns { .. })
    ));
    assert!(keyless.install_sql(Dialect::Postgres).is_ok());
}

#[test]
fn identifier_limits_per_backend() {
    let at_limit = BypassGuard::new(&"t".repeat(63), "v", &["id"], TokenKind::Integer);
    assert!(at_limit.install_sql(Dialect::Postgres).is_ok());
    let over = BypassGuard::new(&"t".repeat(64), "v", &["id"], TokenKind::Integer);
    assert!(matches!(
        over.install_sql(Dialect::Postgres),
        Err(GuardError::InvalidName {
            part: NamePart::Table,
            problem: NameProblem::TooLong,
            ..
        })
    ));
    assert!(over.install_sql(Dialect::Mysql).is_ok());
    assert!(over.install_sql(Dialect::Sqlite).is_ok());
    // PostgreSQL counts bytes: 32 two-byte characters are 64 bytes.
    let wide = BypassGuard::new(&"é".repeat(32), "v", &["id"], TokenKind::Integer);
    assert!(wide.install_sql(Dialect::Postgres).is_err());
    assert!(wide.install_sql(Dialect::Mysql).is_ok());
    let schema = BypassGuard::new("t", "v", &["id"], TokenKind::Integer).in_schema(&"s".repeat(65));
    assert!(matches!(
        schema.install_sql(Dialect::Mysql),
        Err(GuardError::InvalidName {
            part: NamePart::Schema,
            ..
        })
    ));
}

#[test]
fn errors_do_not_echo_the_name() {
    let guard = BypassGuard::new("secret\0name", "v", &["id"], TokenKind::Integer);
    let error = guard.install_sql(Dialect::Postgres).unwrap_err();
    assert_eq!(
        error.to_string(),
        "the bypass guard's table name contains a NUL character on PostgreSQL"
    );
    assert!(!format!("{error:?}").contains("secret"));
}

#[test]
fn integer_tokens_wrap_at_their_max() {
    for (kind, max) in [
        (TokenKind::SmallInt, "32767 THEN (-32767 - 1)"),
        (TokenKind::Integer, "2147483647 THEN (-2147483647 - 1)"),
        (
            TokenKind::BigInt,
            "9223372036854775807 THEN (-9223372036854775807 - 1)",
        ),
    ] {
        let guard = BypassGuard::new("t", "v", &["id"], kind);
        for backend in BACKENDS {
            let ddl = guard.install_sql(backend).unwrap();
            assert!(ddl.contains(max), "{backend}: {ddl}");
        }
    }
}

#[test]
fn schemas_qualify_per_backend() {
    let guard = BypassGuard::new("items", "v", &["id"], TokenKind::Integer).in_schema("shop");
    let name = guard.trigger_name();
    let pg = guard.install_sql(Dialect::Postgres).unwrap();
    assert!(pg.contains(&format!("CREATE FUNCTION \"shop\".\"{name}\"()")));
    assert!(pg.contains(&format!(
        "CREATE TRIGGER \"{name}\" BEFORE UPDATE ON \"shop\".\"items\""
    )));
    let sqlite = guard.install_sql(Dialect::Sqlite).unwrap();
    assert!(sqlite.contains(&format!(
        "CREATE TRIGGER \"shop\".\"{name}\" AFTER UPDATE ON \"items\""
    )));
    assert!(sqlite.contains("UPDATE \"items\" SET"));
    assert_eq!(
        guard.uninstall_sql(Dialect::Postgres).unwrap(),
        format!(
            "DROP TRIGGER IF EXISTS \"{name}\" ON \"shop\".\"items\";\n\
             DROP FUNCTION IF EXISTS \"shop\".\"{name}\"();\n"
        )
    );
}
