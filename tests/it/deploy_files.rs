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

#[test]
fn compose_and_dockerfile_images_are_pinned() {
    let compose = read("deploy/compose.yaml");
    let images: Vec<&str> = compose
        .lines()
        .filter_map(|l| l.trim().strip_prefix("image:"))
        .map(str::trim)
        .collect();
    assert!(images.len() >= 4, "compose images found: {images:?}");
    for image in &images {
        assert!(
            pinned(image),
            "compose image {image} is not pinned to a version"
        );
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
    let compose = read("deploy/compose.yaml");
    for line in compose.lines().map(str::trim) {
        if line.starts_with("- \"") && line.contains(':') {
            assert!(
                !line.trim_end_matches('"').ends_with(":5432"),
                "compose publishes PostgreSQL: {line}"
            );
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
    let compose = read("deploy/compose.yaml");
    let initdb = read("deploy/initdb/10-roles.sql");
    let logins = logins(&initdb);
    let users: Vec<String> = compose
        .lines()
        .filter_map(|l| l.trim().strip_prefix("DATABASE_URL: postgres://"))
        .map(|rest| rest.split(':').next().unwrap().to_string())
        .collect();
    // The shared daemon settings, the migration, the simulated players, in file order.
    assert_eq!(
        users,
        ["mm_daemon", "matchmaker_owner", "mm_backend"],
        "DATABASE_URL logins in compose.yaml"
    );
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
    assert!(
        !compose.contains("POSTGRES_USER"),
        "the image's superuser is `postgres`, used only by initdb"
    );
}
