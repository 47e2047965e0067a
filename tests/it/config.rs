//! The config file: the shipped default is valid; bad values are refused naming queue
//! and key.

use std::time::Duration;

use matchmaker::config::{Config, ConfigError};

fn err(toml: &str) -> String {
    match Config::from_toml_str(toml) {
        Ok(_) => panic!("should be refused:\n{toml}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn shipped_config_is_valid_and_has_the_default_queue() {
    let config = Config::load(std::path::Path::new("config/matchmaker.toml")).unwrap();
    assert_eq!(config, Config::embedded_default());
    assert_eq!(config.default_queue, "ranked_3v3");
    let q = &config.queues["ranked_3v3"];
    assert_eq!(q.model.players_per_match(), 6);
    assert_eq!(q.round.target_pool, Some(300));
    assert!(config.queues.contains_key("casual_5v5"));
    // The file shows every model key of ranked_3v3 with its default value, and the
    // quality floors a ranked queue ships with (none by default).
    let mut model = q.model.clone();
    assert!(model.floors.len() >= 2, "ranked floors relax with wait");
    model.floors.clear();
    assert_eq!(model, matchmaker_optimizer::QueueModel::default());
}

/// A flexible queue's round can form its smallest format: `min_pool` defaults to it and
/// may be set as low as it, not lower; a fixed queue keeps one full match.
#[test]
fn min_pool_defaults_to_the_smallest_format() {
    let flexible = "[queues.a]\nteams = 2\nteam_size = 5\n\
                    [queues.a.alliance]\nplayer_min_number = 4\n[queues.a.round]\n";
    let config = Config::from_toml_str(flexible).unwrap();
    assert_eq!(config.queues["a"].min_pool(), 8, "4v4");
    let config = Config::from_toml_str(&format!("{flexible}min_pool = 8\n")).unwrap();
    assert_eq!(config.queues["a"].round.min_pool, Some(8));
    let message = err(&format!("{flexible}min_pool = 7\n"));
    assert!(
        message.contains("queues.a.round.min_pool")
            && message.contains("smallest format the alliance allows (8 players)"),
        "{message}"
    );
    let fixed = "[queues.a]\nteams = 2\nteam_size = 5\n[queues.a.round]\n";
    assert_eq!(
        Config::from_toml_str(fixed).unwrap().queues["a"].min_pool(),
        10
    );
    let message = err(&format!("{fixed}min_pool = 8\n"));
    assert!(message.contains("one match (10 players)"), "{message}");
}

#[test]
fn bad_values_are_refused_naming_queue_and_key() {
    let cases = [
        (
            "[queues.a.round]\nevery = \"2m\"\nmin_pool = 3\n",
            "queues.a.round.min_pool",
        ),
        (
            "[queues.a.round]\nevery = \"2m\"\ncron = \"* * * * *\"\n",
            "queues.a.round.every",
        ),
        (
            "[queues.a.round]\ncron = \"nonsense\"\n",
            "queues.a.round.cron",
        ),
        ("[queues.a]\nteams = 1\n", "queues.a"),
        ("[queues.a]\ncolour = \"red\"\n", "queues.a"),
        (
            "[queues.a.round]\nbudget = \"0s\"\n",
            "queues.a.round.budget",
        ),
        (
            "[queues.a.round]\ntarget_pool = 10\nmin_pool = 60\n",
            "queues.a.round.target_pool",
        ),
        (
            "[queues.a.weights]\nenemy_ping = -1.0\n",
            "weights.enemy_ping",
        ),
        ("default_queue = \"b\"\n[queues.a]\n", "default_queue"),
        (
            "[queues.a.limits]\nmax_avoids_per_login = 0\n",
            "queues.a.limits.max_avoids_per_login",
        ),
        (
            "[queues.a.alliance]\nmax_number = 3\n",
            "alliance.max_number",
        ),
        (
            "[queues.a.alliance]\nplayer_min_number = 2\nshort_match_min_score = 2.0\n",
            "alliance.short_match_min_score",
        ),
        (
            "[daemon]\nlease_ttl = \"5s\"\nlease_renew = \"10s\"\n[queues.a]\n",
            "daemon.lease_renew",
        ),
        (
            "[daemon]\nstep_timeout = \"500ms\"\n[queues.a]\n",
            "daemon.step_timeout",
        ),
    ];
    // A queue name past the 52 characters of its notification channel.
    let long = format!("default_queue = \"{0}\"\n[queues.{0}]\n", "q".repeat(53));
    assert!(
        err(&long).contains("queue names are 1-52"),
        "{}",
        err(&long)
    );
    let longest = format!("default_queue = \"{0}\"\n[queues.{0}]\n", "q".repeat(52));
    assert!(Config::from_toml_str(&longest).is_ok());
    for (toml, key) in cases {
        let message = err(toml);
        assert!(
            message.contains(key),
            "{toml}\nexpected `{key}` in: {message}"
        );
    }
    assert!(matches!(
        Config::from_toml_str("queues = ["),
        Err(ConfigError::Toml(_))
    ));
}

#[test]
fn a_step_is_given_up_past_the_step_timeout_or_a_lease_ttl_beyond_its_budget() {
    let round = "[queues.a.round]\nbudget = \"2s\"\n";
    let c = Config::from_toml_str(&format!("[daemon]\nlease_ttl = \"20s\"\n{round}")).unwrap();
    let budget = c.queues["a"].round.budget;
    assert_eq!(c.daemon.step_limit(budget), Duration::from_secs(22));
    let c = Config::from_toml_str(&format!(
        "[daemon]\nlease_ttl = \"20s\"\nstep_timeout = \"2m\"\n{round}"
    ))
    .unwrap();
    assert_eq!(c.daemon.step_limit(budget), Duration::from_secs(122));
}

#[test]
fn config_hash_changes_with_any_effective_setting() {
    let a = Config::from_toml_str("[queues.a.round]\nevery = \"2m\"\n").unwrap();
    let a2 = Config::from_toml_str("[queues.a]\n[queues.a.round]\nevery = \"120s\"\n").unwrap();
    let (qa, qa2) = (&a.queues["a"], &a2.queues["a"]);
    assert_eq!(qa.hash(), qa2.hash(), "same effective config, same hash");
    assert_eq!(qa.to_json()["round"]["every"], "2m");

    // Every setting the queue's full config file writes out (backfill and limits
    // included: each is written only when it differs from its default), changed one at a
    // time: each change the config accepts changes the hash.
    let base = Config::from_toml_str(
        "[queues.a.round]\nevery = \"2m\"\n[queues.a.backfill]\ndelay = \"3s\"\n\
         [queues.a.limits]\nmax_avoids_per_login = 5000\n",
    )
    .unwrap();
    let base = &base.queues["a"];
    let full: toml::Table = base.to_toml("a").parse().expect("to_toml is TOML");
    let mut leaves = Vec::new();
    collect_leaves(
        &toml::Value::Table(full.clone()),
        &mut Vec::new(),
        &mut leaves,
    );
    let (mut changed, mut refused, mut kept) = (Vec::new(), Vec::new(), Vec::new());
    for (path, value) in &leaves {
        let Some(other) = changed_value(value) else {
            continue;
        };
        let mut doc = toml::Value::Table(full.clone());
        set_leaf(&mut doc, path, other);
        let text = toml::to_string(&doc).unwrap();
        match Config::from_toml_str(&text) {
            Err(_) => refused.push(path.join(".")),
            Ok(c) if c.queues["a"].hash() == base.hash() => kept.push(path.join(".")),
            Ok(_) => changed.push(path.join(".")),
        }
    }
    assert!(
        kept.is_empty(),
        "settings changed without changing the hash: {kept:?}"
    );
    // Most settings take a neighbouring value; the rest are refused (a bound, a sum).
    assert!(
        changed.len() >= 20 && changed.len() > refused.len(),
        "changed {changed:?}, refused {refused:?}"
    );
    for must in [
        "round.every",
        "round.budget",
        "tickets.ttl",
        "backfill.delay",
        "limits.max_queued_per_login",
        "limits.max_avoids_per_login",
    ] {
        let key = format!("queues.a.{must}");
        assert!(changed.contains(&key), "{key} not among {changed:?}");
    }
}

fn collect_leaves(
    value: &toml::Value,
    path: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, toml::Value)>,
) {
    match value {
        toml::Value::Table(t) => {
            for (k, v) in t {
                path.push(k.clone());
                collect_leaves(v, path, out);
                path.pop();
            }
        }
        leaf => out.push((path.clone(), leaf.clone())),
    }
}

fn set_leaf(doc: &mut toml::Value, path: &[String], value: toml::Value) {
    let mut at = doc;
    for k in path {
        at = at.get_mut(k.as_str()).expect("the path exists");
    }
    *at = value;
}

/// A neighbouring value of the same kind; None for arrays and names.
fn changed_value(value: &toml::Value) -> Option<toml::Value> {
    Some(match value {
        toml::Value::Integer(i) => toml::Value::Integer(i + 1),
        toml::Value::Float(f) => toml::Value::Float(if *f == 0.0 { 0.25 } else { f * 0.75 }),
        toml::Value::Boolean(b) => toml::Value::Boolean(!b),
        toml::Value::String(s) => {
            let d = humantime::parse_duration(s).ok()?;
            toml::Value::String(
                humantime::format_duration(d + std::time::Duration::from_secs(1)).to_string(),
            )
        }
        _ => return None,
    })
}

#[test]
fn a_flexible_queue_loads_with_its_formats() {
    let config = Config::from_toml_str(
        "[queues.a]\nteams = 2\nteam_size = 5\n[queues.a.alliance]\nplayer_min_number = 4\n",
    )
    .unwrap();
    let m = &config.queues["a"].model;
    assert!(m.is_flexible());
    assert_eq!(m.formats(), [vec![5, 5], vec![5, 4], vec![4, 4]]);
}

/// A value of the wrong type or an unknown key is named by its own key, however deep,
/// not by the table it is in.
#[test]
fn a_refused_value_is_named_by_its_own_key() {
    let cases = [
        (
            "[queues.a.round]\nevery = 5\n",
            "config key `queues.a.round.every`: ",
        ),
        (
            "[queues.a.round]\nbudget = \"soon\"\n",
            "config key `queues.a.round.budget`: ",
        ),
        (
            "[queues.a.tickets]\nregions = \"eu\"\n",
            "config key `queues.a.tickets.regions`: ",
        ),
        (
            "[queues.a.weights]\nenemy_ping = \"high\"\n",
            "config key `queues.a.weights.enemy_ping`: ",
        ),
        (
            "[daemon]\npoll_interval = true\n[queues.a]\n",
            "config key `daemon.poll_interval`: ",
        ),
        (
            "[retention]\nbatch_size = -1\n[queues.a]\n",
            "config key `retention.batch_size`: ",
        ),
    ];
    for (toml, start) in cases {
        let message = err(toml);
        assert!(message.starts_with(start), "{toml}\n{message}");
    }
    // An unknown key is named too, and the message lists the known ones.
    let message = err("[queues.a.round]\nevry = \"5s\"\n");
    assert!(
        message.starts_with(
            "config key `queues.a.round.evry`: unknown field `evry`, expected one of `every`, "
        ),
        "{message}"
    );
}

/// A reload of an invalid file is refused naming the key at fault, and the running
/// config stays.
#[test]
fn an_invalid_reload_names_the_key_and_keeps_the_config() {
    use std::sync::Arc;
    let dir = std::env::temp_dir().join(format!("mm-reload-key-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("matchmaker.toml");
    std::fs::write(&path, "[queues.ranked_3v3.round]\nevery = \"1m\"\n").unwrap();
    let running = Arc::new(Config::load(&path).unwrap());
    let (current, _) = tokio::sync::watch::channel(running.clone());
    std::fs::write(
        &path,
        "[queues.ranked_3v3.round]\nevery = \"1m\"\nrestarts = \"many\"\n",
    )
    .unwrap();
    let refused = matchmaker::daemon::reload::reload_config(&path, &current).unwrap_err();
    let message = refused.to_string();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        message.starts_with("config key `queues.ranked_3v3.round.restarts`: "),
        "{message}"
    );
    assert_eq!(*current.borrow(), running, "the running config stays");
}

/// A dedicated-server queue places each match in one of its regions: it must list them.
#[test]
fn a_dedicated_queue_must_list_its_regions() {
    let message = err("[queues.a]\nnetwork = \"dedicated\"\n");
    assert_eq!(
        message,
        "config key `queues.a.tickets.regions`: a dedicated-server queue must list its regions \
         (the datacenters a match may be placed in; latencies may name only these)"
    );
    let listed = "[queues.a]\nnetwork = \"dedicated\"\n[queues.a.tickets]\nregions = [\"eu\"]\n";
    assert_eq!(
        Config::from_toml_str(listed).unwrap().queues["a"]
            .tickets
            .regions,
        ["eu"]
    );
    // A peer-to-peer queue may leave them open (any name).
    assert!(Config::from_toml_str("[queues.a]\n").is_ok());
}

/// `matchmaker check-config` with the environment of a deployment whose database is
/// unreachable: the command must not need it.
fn check_config(dir: &std::path::Path, file: &std::path::Path) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_matchmaker"))
        .arg("check-config")
        .arg("--config")
        .arg(file)
        .current_dir(dir)
        .env("DATABASE_URL", "postgres://nobody@127.0.0.1:1/nowhere")
        .env_remove("MATCHMAKER_CONFIG")
        .output()
        .expect("run matchmaker check-config")
}

/// `check-config` loads a file as `run` does: a good one gives one line naming its
/// queues and exit 0, a bad one the daemon's own refusal (the key at fault) and a
/// non-zero exit; neither opens a database (no private server is started either).
#[test]
fn check_config_passes_a_good_file_and_names_the_key_of_a_bad_one() {
    let dir = tempfile::tempdir().unwrap();
    let shipped = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config/matchmaker.toml");
    let out = check_config(dir.path(), &shipped);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(stdout.lines().count(), 1, "one line: {stdout}");
    assert!(stdout.contains("valid"), "{stdout}");
    for queue in Config::embedded_default().queues.keys() {
        assert!(stdout.contains(queue.as_str()), "{queue} named: {stdout}");
    }
    assert!(stdout.contains("ranked_3v3 (3v3, "), "{stdout}");

    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "[queues.a.round]\nbudget = \"soon\"\n").unwrap();
    let out = check_config(dir.path(), &bad);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{out:?}");
    assert!(out.stdout.is_empty(), "nothing on stdout: {out:?}");
    assert_eq!(
        stderr.trim_end(),
        format!("error: {}", err("[queues.a.round]\nbudget = \"soon\"\n")),
        "the daemon's own refusal"
    );
    assert!(stderr.contains("queues.a.round.budget"), "{stderr}");

    let out = check_config(dir.path(), &dir.path().join("missing.toml"));
    assert!(!out.status.success(), "a missing file is refused: {out:?}");
    assert!(
        !dir.path().join(".local-pg").exists(),
        "no private PostgreSQL was started"
    );
}
