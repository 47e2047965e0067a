//! The deploy files practise least privilege and pin what they run. No container engine
//! runs here, so this reads the files; `deploy/check.sh` starts the stack where one does.

use std::collections::HashMap;

fn read(path: &str) -> String {
    let full = format!("{}/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("read {full}: {e}"))
}

/// `image:` and `FROM` references name a version: a dotted version (`17.6`) or a dated
/// tag (`bookworm-20250811-slim`), not `latest` nor a bare major (`rust:1`); or the
/// stack's own `:local` build.
fn pinned(image: &str) -> bool {
    let Some((_, tag)) = image.rsplit_once(':') else {
        return false;
    };
    let dated = tag
        .split(|c: char| !c.is_ascii_digit())
        .any(|run| run.len() >= 8);
    let dotted = tag
        .split('.')
        .filter(|part| part.starts_with(|c: char| c.is_ascii_digit()))
        .count()
        >= 2;
    tag == "local" || dated || dotted
}

/// The single-database stack and the formation's.
const COMPOSE_FILES: [&str; 2] = ["deploy/compose.yaml", "deploy/compose.ha.yaml"];

#[test]
fn compose_and_dockerfile_images_are_pinned() {
    for file in COMPOSE_FILES {
        let compose = read(file);
        let images: Vec<&str> = compose
            .lines()
            .filter_map(|l| l.trim().strip_prefix("image:"))
            .map(str::trim)
            .collect();
        assert!(images.len() >= 3, "{file} images found: {images:?}");
        for image in &images {
            assert!(
                pinned(image),
                "{file} image {image} is not pinned to a version"
            );
        }
    }
    let dockerfile = read("deploy/Dockerfile");
    let froms: Vec<&str> = dockerfile
        .lines()
        .filter_map(|l| l.strip_prefix("FROM "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|image| *image != "base")
        .collect();
    assert!(froms.len() >= 2, "Dockerfile FROM lines: {froms:?}");
    for image in &froms {
        assert!(
            pinned(image),
            "Dockerfile base {image} is not pinned to a version"
        );
    }
}

#[test]
fn compose_does_not_publish_postgresql_on_a_host_port() {
    for file in COMPOSE_FILES {
        for line in read(file).lines().map(str::trim) {
            if line.starts_with("- \"") && line.contains(':') {
                assert!(
                    !line.trim_end_matches('"').ends_with(":5432"),
                    "{file} publishes PostgreSQL: {line}"
                );
            }
        }
    }
}

/// Each login the compose file connects with, and the group role it is a member of.
fn logins(initdb: &str) -> HashMap<String, String> {
    initdb
        .lines()
        .filter(|l| l.starts_with("CREATE ROLE") && l.contains(" LOGIN "))
        .map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let name = words[2].to_string();
            let group = words
                .iter()
                .position(|w| *w == "IN")
                .map(|i| words[i + 2].trim_end_matches(';').to_string())
                .unwrap_or_default();
            (name, group)
        })
        .collect()
}

#[test]
fn each_compose_process_logs_in_as_the_role_it_needs() {
    let initdb = read("deploy/initdb/10-roles.sql");
    let logins = logins(&initdb);
    for file in COMPOSE_FILES {
        let compose = read(file);
        let urls: Vec<&str> = compose
            .lines()
            .filter_map(|l| l.trim().strip_prefix("DATABASE_URL: postgres://"))
            .collect();
        let users: Vec<&str> = urls.iter().map(|u| u.split(':').next().unwrap()).collect();
        // The shared daemon settings, the migration, the simulated players, in file order.
        assert_eq!(
            users,
            ["mm_daemon", "matchmaker_owner", "mm_backend"],
            "DATABASE_URL logins in {file}"
        );
        assert!(
            !compose.contains("POSTGRES_USER"),
            "the image's superuser is `postgres`, used only by initdb"
        );
        if file.ends_with("ha.yaml") {
            // Every process follows the primary over TLS, whichever node it is.
            for url in &urls {
                assert!(
                    url.contains("@node1:5432,node2:5432/")
                        && url.contains("target_session_attrs=read-write")
                        && url.contains("sslmode=require"),
                    "{file}: {url}"
                );
            }
        }
    }
    assert_eq!(logins["mm_daemon"], "matchmaker_daemon");
    assert_eq!(logins["mm_backend"], "matchmaker_client");
    assert_eq!(logins["mm_ops"], "matchmaker_ops");
    // The owner migrates and owns the schema; it is neither superuser nor role creator.
    let owner = initdb
        .lines()
        .find(|l| l.starts_with("CREATE ROLE matchmaker_owner"))
        .expect("the owner login");
    for power in ["SUPERUSER", "CREATEROLE", "CREATEDB"] {
        assert!(!owner.contains(power), "owner has {power}: {owner}");
    }
    // A committed match is on the standby before the round's commit returns.
    assert!(initdb.contains("ALTER ROLE mm_daemon SET synchronous_commit = on;"));
}

/// The rows of deploy/README.md's "Database roles" table: role -> its "may" cell.
fn role_table() -> HashMap<String, String> {
    let readme = read("deploy/README.md");
    let section = readme
        .split("## Database roles")
        .nth(1)
        .expect("deploy/README.md has a Database roles section");
    section
        .lines()
        .take_while(|l| !l.starts_with("## "))
        .filter_map(|l| l.strip_prefix("| `matchmaker_"))
        .map(|row| {
            let cells: Vec<&str> = row.split(" | ").collect();
            let role = format!("matchmaker_{}", cells[0].trim_end_matches('`'));
            (role, cells[1].to_string())
        })
        .collect()
}

/// The `code` spans of a piece of text.
fn names(text: &str) -> Vec<String> {
    let mut names: Vec<String> = text
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect();
    names.sort();
    names
}

/// Relations of `kinds` (pg_class.relkind) in schema public on which `role` holds
/// `privilege` (or, with `held = false`, does not), sorted as [`names`] sorts.
async fn relations(
    db: &sqlx::PgPool,
    role: &str,
    kinds: &str,
    privilege: &str,
    held: bool,
) -> Vec<String> {
    let mut names: Vec<String> = sqlx::query_scalar(
        "SELECT c.relname::text FROM pg_class c
          WHERE c.relnamespace = 'public'::regnamespace
            AND position(c.relkind::text IN $2) > 0
            AND CASE WHEN c.relkind = 'S' THEN has_sequence_privilege($1, c.oid, $3)
                     ELSE has_table_privilege($1, c.oid, $3) END = $4",
    )
    .bind(role)
    .bind(kinds)
    .bind(privilege)
    .bind(held)
    .fetch_all(db)
    .await
    .unwrap();
    names.sort();
    names
}

/// Every claim of the role table holds in a migrated database: each part of a role's
/// "may" cell is checked against the catalog, and a part no check knows fails the test.
#[tokio::test]
async fn the_role_table_says_what_the_migrations_grant() {
    let tdb = crate::support::fresh_db().await;
    let db = &tdb.pool;
    let table = role_table();
    let mut roles: Vec<&String> = table.keys().collect();
    roles.sort();
    assert_eq!(
        roles,
        [
            "matchmaker_client",
            "matchmaker_daemon",
            "matchmaker_ops",
            "matchmaker_server"
        ]
    );
    let write = "INSERT, UPDATE, DELETE, TRUNCATE";
    for (role, may) in &table {
        let role = role.as_str();
        for claim in may.split(';').map(str::trim) {
            if let Some(list) = claim.strip_prefix("execute ") {
                let mut executable: Vec<String> = sqlx::query_scalar(
                    // An overloaded function is one name in the table.
                    "SELECT DISTINCT p.proname::text FROM pg_proc p
                      WHERE p.pronamespace = 'public'::regnamespace
                        AND has_function_privilege($1, p.oid, 'EXECUTE')",
                )
                .bind(role)
                .fetch_all(db)
                .await
                .unwrap();
                executable.sort();
                assert_eq!(names(list), executable, "functions {role} may execute");
            } else if let Some(list) = claim.strip_prefix("read the views `") {
                assert_eq!(
                    names(&format!("`{list}")),
                    relations(db, role, "v", "SELECT", true).await,
                    "views {role} may read"
                );
            } else if claim.starts_with("nothing on any table") {
                for privilege in ["SELECT", write] {
                    let held = relations(db, role, "rp", privilege, true).await;
                    assert!(held.is_empty(), "{role} holds {privilege} on {held:?}");
                }
            } else if claim.starts_with(
                "read, write and (for retention) delete the rows of the matchmaker's tables",
            ) {
                for privilege in ["SELECT", "INSERT"] {
                    let lacking = relations(db, role, "rp", privilege, false).await;
                    assert!(
                        lacking
                            .iter()
                            .all(|t| t == "_sqlx_migrations" || t == "channel_key"),
                        "{role} lacks {privilege} on {lacking:?}"
                    );
                }
                let deletes = relations(db, role, "rp", "DELETE", true).await;
                for pruned in ["rounds", "matches", "match_players", "queue_entries"] {
                    assert!(
                        deletes.iter().any(|t| t == pruned),
                        "{role} cannot delete from {pruned}"
                    );
                }
                let (_, sequences) = claim
                    .split_once(", use the sequences ")
                    .expect("the sequences the daemon uses");
                assert_eq!(
                    names(sequences),
                    relations(db, role, "S", "USAGE", true).await,
                    "sequences {role} may use"
                );
            } else if claim.starts_with("read the views and `_sqlx_migrations`") {
                let lacking = relations(db, role, "v", "SELECT", false).await;
                assert!(
                    lacking.is_empty(),
                    "{role} cannot read the views {lacking:?}"
                );
                let migrations = relations(db, role, "r", "SELECT", true).await;
                assert!(migrations.iter().any(|t| t == "_sqlx_migrations"), "{role}");
            } else if claim
                .starts_with("read every table (`_sqlx_migrations` too) and view, write nothing")
            {
                let lacking = relations(db, role, "rpv", "SELECT", false).await;
                assert_eq!(lacking, ["channel_key"], "{role} cannot read");
                let writes = relations(db, role, "rpv", write, true).await;
                assert!(writes.is_empty(), "{role} may write {writes:?}");
                let sequences = relations(db, role, "S", "USAGE, UPDATE", true).await;
                assert!(sequences.is_empty(), "{role} may use {sequences:?}");
            } else if claim.starts_with("nothing on `channel_key`") {
                let held: bool = sqlx::query_scalar(
                    "SELECT has_table_privilege($1, 'channel_key',
                                                'SELECT, INSERT, UPDATE, DELETE, TRUNCATE')",
                )
                .bind(role)
                .fetch_one(db)
                .await
                .unwrap();
                assert!(!held, "{role} holds a privilege on channel_key");
            } else {
                panic!("no check for this claim of {role} in deploy/README.md: {claim:?}");
            }
        }
    }
}

/// The compose stack's client and server logins are bounded, and their limits leave both
/// replicas their connections in PostgreSQL's default 100 slots: each replica checks it
/// at start (`matchmaker::db::login_limits`) and would refuse otherwise.
#[test]
fn the_compose_logins_leave_both_replicas_their_connections() {
    use matchmaker::db::login_limits::{ConnectionSlots, LoginLimit, SlotsKept};
    let compose = read("deploy/compose.yaml");
    let initdb = read("deploy/initdb/10-roles.sql");
    assert!(
        !compose.contains("max_connections") && !initdb.contains("max_connections"),
        "the stack keeps PostgreSQL's default max_connections"
    );
    let mut logins: Vec<LoginLimit> = logins(&initdb)
        .into_iter()
        .filter(|(_, group)| group == "matchmaker_client" || group == "matchmaker_server")
        .map(|(login, _)| {
            let set = format!("ALTER ROLE {login} CONNECTION LIMIT ");
            let limit = initdb
                .lines()
                .find_map(|l| l.strip_prefix(&set))
                .map(|n| n.trim_end_matches(';').parse().unwrap());
            LoginLimit { login, limit }
        })
        .collect();
    logins.sort_by(|a, b| a.login.cmp(&b.login));
    assert_eq!(logins.len(), 2, "{logins:?}");
    // Each replica serves the endpoints (MATCHMAKER_METRICS_ADDR): the console's pool too.
    let replica = matchmaker::db::POOL_CONNECTIONS
        + matchmaker::db::LIMITED_POOL_CONNECTIONS
        + matchmaker::daemon::LISTEN_CONNECTIONS
        + matchmaker::ops::console::read_only::MAX_CONNECTIONS;
    assert!(compose.contains("MATCHMAKER_METRICS_ADDR"));
    let slots = ConnectionSlots {
        server_version: 170_000,
        max_connections: 100,
        superuser_reserved: 3,
        reserved: 0,
        daemon_login: "mm_daemon".into(),
        daemon_uses_reserved: false,
        daemon_needs: 2 * replica,
        logins,
    };
    assert_eq!(slots.check(), Ok(SlotsKept::ByLimits), "{slots:?}");
}

/// deploy/compose.ha.yaml's formation members run deploy/pgaf/start.sh; with no
/// container engine here, deploy/pgaf/check.sh runs that script on this machine and
/// checks the formation it makes with this build's `matchmaker` (TLS, the roles, the
/// multi-host URL across a switchover).
#[test]
fn the_compose_formation_members_form_a_formation_the_matchmaker_uses() {
    let script = format!("{}/deploy/pgaf/check.sh", env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new("bash")
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_matchmaker"))
        .output()
        .expect("run deploy/pgaf/check.sh");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("formation check passed"),
        "{script} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}
