//! An example game backend: enqueues players through the client functions, LISTENs on
//! its channel of the queue, prints the countdown as it moves and the match once it is made,
//! and exits. It uses only the client API (docs/client-guide.md, docs/client-contract.sql)
//! and its notifications, as a login in the `matchmaker_client` role, and nothing of this
//! crate: a backend in any language with a PostgreSQL driver does the same.
//!
//! ```text
//! cargo run --release --example client -- \
//!     --database-url postgres://game_backend:PASSWORD@HOST/DB --queue ranked_3v3 \
//!     --player alice=1500 [--player bob=1450 --party crew] [--latencies '{"eu": 30}'] \
//!     [--timeout 10m] [--result won]
//! ```
//!
//! `--database-url` may also come from `DATABASE_URL`. Several `--player`s with `--party`
//! are enqueued as one party (`enqueue_party`); without it, each alone (`enqueue`). A
//! player given without a skill plays at their built-in rating on a rated queue
//! (`skill => NULL`), at 1500 elsewhere. With `--result`, once matched, the example plays
//! the game as far as a backend is concerned: it reports each match's result
//! (`report_result`) as its players' team `won`, `lost` or drew (`draw`).
//!
//! How it waits (the pattern docs/client-guide.md, "Notifications", describes):
//! 1. LISTEN on `queue_channel(queue)` BEFORE enqueueing, so no notification is missed;
//! 2. enqueue, then read `player_status` once for the countdown;
//! 3. on a `countdown` notification, print the new countdown; on a `match` notification
//!    naming one of its players, read it in `match_details` (the payload is a hint that
//!    names only ids) and print it;
//! 4. meanwhile call `keep_alive` every `keep_alive_every`, and read `player_status` every
//!    `--poll` as the fallback: a notification is lost while the connection is down;
//! 5. in a queue with a ready check, a player whose status is `pending` accepts the match
//!    (`accept_match`; the game would ask the player first); a `cancelled` match puts the
//!    players who accepted back in the queue, and the example keeps waiting for them.
//!
//! Output, one line each: `listening on "matchmaker:3f2a09c1..."`, `enqueued alice (entry
//! 17)`, `countdown: ...; estimated wait 45 s`, `ready check: alice accepted match 42`,
//! `matched: alice is in match 42 (round 7), team 1; teammates: ...; opponents: ...;
//! predicted chance to win 52%`, `result of match 42: recorded`. Exit status: 0 when every player is matched, 1 when one left the queue
//! without a match (the reason is printed) or on an error, 2 on `--timeout` (the players
//! are cancelled first).
//!
//! An error is printed once, on one line: a database error as its message and SQLSTATE
//! (`error: queue = 'ranked_9v9': unknown queue; queues: ranked_3v3 (SQLSTATE 22023)`).
//! SQLSTATE class 22 means the request is wrong: fix it, do not retry. Classes 08
//! (connection), 53 (resources), 57 (shutdown, cancel) and 40 (serialization, deadlock)
//! mean the server is unavailable for now: retry later.

use std::collections::{BTreeMap, BTreeSet};
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use serde_json::Value;
use sqlx::postgres::{PgConnection, PgListener};
use sqlx::{Connection, Row};
use tokio::sync::mpsc;

#[derive(Parser)]
#[command(
    about = "An example matchmaker client: enqueue, listen, print the countdown and the match"
)]
struct Args {
    /// PostgreSQL URL of the matchmaker's database, as a matchmaker_client login.
    #[arg(long, env = "DATABASE_URL")]
    database_url: String,
    /// The queue (see queue_catalog).
    #[arg(long)]
    queue: String,
    /// A player to enqueue, as ID or ID=SKILL (skill 1500 when left out). Repeat it for a
    /// party (with --party) or for several solo players.
    #[arg(long = "player", required = true)]
    players: Vec<String>,
    /// Enqueue the players as one party with this id.
    #[arg(long)]
    party: Option<String>,
    /// Latencies of every player, a JSON object region -> ms (dedicated-server queues).
    #[arg(long, default_value = "{}")]
    latencies: String,
    /// Give up (and cancel the players) after this long, e.g. 90s or 10m.
    #[arg(long, default_value = "10m", value_parser = humantime::parse_duration)]
    timeout: Duration,
    /// Read player_status this often in case a notification was lost.
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    poll: Duration,
    /// Once matched, report each match's result as the players' team did: won, lost or
    /// draw.
    #[arg(long, value_parser = ["won", "lost", "draw"])]
    result: Option<String>,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {}", error_text(&e));
            ExitCode::from(1)
        }
    }
}

/// An error's causes, each once. A database error is its message and SQLSTATE: sqlx's own
/// text repeats the message with the server's source line (`... at line 3907`), and says
/// nothing a client acts on.
fn error_text(err: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in err.chain() {
        if let Some(sqlx::Error::Database(db)) = cause.downcast_ref::<sqlx::Error>() {
            let code = db
                .code()
                .map(|c| format!(" (SQLSTATE {c})"))
                .unwrap_or_default();
            parts.push(format!("{}{code}", db.message()));
            break;
        }
        let text = cause.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
    }
    parts.join(": ")
}

/// What became of the players.
enum Outcome {
    Matched,
    Left,
}

async fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let players = parse_players(&args.players)?;
    let latencies: Value = serde_json::from_str(&args.latencies)
        .map_err(|e| anyhow::anyhow!("--latencies is not JSON: {e}"))?;
    let mut db = PgConnection::connect(&args.database_url).await?;

    // 1. LISTEN first: a round may commit right after the enqueue.
    let channel: String = sqlx::query_scalar("SELECT queue_channel(queue => $1)")
        .bind(&args.queue)
        .fetch_one(&mut db)
        .await?;
    let mut listener = PgListener::connect(&args.database_url).await?;
    listener.listen(&channel).await?;
    println!("listening on {channel:?}");
    // recv() in a task of its own: the main loop's select! may drop its future at any
    // time, and a channel receive is safe to drop.
    let (notes_tx, mut notes) = mpsc::unbounded_channel::<String>();
    tokio::spawn(async move {
        loop {
            match listener.recv().await {
                Ok(n) => {
                    if notes_tx.send(n.payload().to_string()).is_err() {
                        return;
                    }
                }
                Err(e) => {
                    eprintln!("LISTEN connection: {e}; reconnecting (polling meanwhile)");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
    });

    // 2. Enqueue.
    let keep_alive_every: f64 = sqlx::query_scalar(
        "SELECT extract(epoch FROM keep_alive_every)::float8 FROM queue_catalog WHERE queue = $1",
    )
    .bind(&args.queue)
    .fetch_optional(&mut db)
    .await?
    .unwrap_or(60.0);
    enqueue(&mut db, args, &players, &latencies).await?;
    let ids: Vec<String> = players.keys().cloned().collect();
    let mut waiting: BTreeSet<String> = players.keys().cloned().collect();
    if let Some(outcome) = check_status(&mut db, &args.queue, &mut waiting, true).await? {
        return finish(&mut db, args, &ids, outcome).await;
    }

    // 3. and 4.
    let deadline = tokio::time::Instant::now() + args.timeout;
    let mut keep_alive = tokio::time::interval(Duration::from_secs_f64(keep_alive_every.max(1.0)));
    let mut poll = tokio::time::interval(args.poll);
    keep_alive.tick().await;
    poll.tick().await;
    loop {
        tokio::select! {
            note = notes.recv() => {
                let Some(payload) = note else { anyhow::bail!("the listener stopped") };
                if let Some(outcome) = on_notification(&mut db, args, &mut waiting, &payload).await? {
                    return finish(&mut db, args, &ids, outcome).await;
                }
            }
            _ = poll.tick() => {
                if let Some(outcome) = check_status(&mut db, &args.queue, &mut waiting, false).await? {
                    return finish(&mut db, args, &ids, outcome).await;
                }
            }
            _ = keep_alive.tick() => {
                sqlx::query("SELECT keep_alive(player_ids => $1, queue => $2)")
                    .bind(&ids)
                    .bind(&args.queue)
                    .execute(&mut db)
                    .await?;
            }
            _ = tokio::time::sleep_until(deadline) => {
                for player in &waiting {
                    sqlx::query("SELECT cancel(player_id => $1, queue => $2)")
                        .bind(player)
                        .bind(&args.queue)
                        .execute(&mut db)
                        .await?;
                }
                println!("timeout: no match within {}; cancelled {}",
                         humantime::format_duration(args.timeout),
                         waiting.iter().cloned().collect::<Vec<_>>().join(", "));
                return Ok(ExitCode::from(2));
            }
        }
    }
}

/// Every player placed or gone: with `--result`, report the matches' results, then exit.
async fn finish(
    db: &mut PgConnection,
    args: &Args,
    players: &[String],
    outcome: Outcome,
) -> anyhow::Result<ExitCode> {
    if let Some(result) = &args.result {
        // Each match of our players once, from the side of our players' team.
        let matches: Vec<(i64, i32, i64)> = sqlx::query_as(
            "SELECT DISTINCT ON (d.match_id) d.match_id, d.team,
                    (SELECT count(DISTINCT o.team) FROM match_details(d.match_id) o)
               FROM player_status($2::text[]) s
               CROSS JOIN LATERAL match_details(s.match_id) d
              WHERE d.player_id = s.player_id AND d.owner = s.owner
                AND s.queue = $1 AND s.status = 'matched'
              ORDER BY d.match_id",
        )
        .bind(&args.queue)
        .bind(players)
        .fetch_all(&mut *db)
        .await?;
        for (match_id, team, teams) in matches {
            // Ours 1 and the others 2 (won), the reverse (lost), or all 1 (a draw); the
            // ranks go in ascending team order.
            let ranks: Vec<i32> = (0..teams as i32)
                .map(|t| match (result.as_str(), t == team) {
                    ("draw", _) | ("won", true) | ("lost", false) => 1,
                    _ => 2,
                })
                .collect();
            let answer: String = sqlx::query_scalar("SELECT report_result($1, $2)")
                .bind(match_id)
                .bind(&ranks)
                .fetch_one(&mut *db)
                .await?;
            println!("result of match {match_id}: {answer}");
        }
    }
    Ok(exit(outcome))
}

fn exit(outcome: Outcome) -> ExitCode {
    match outcome {
        Outcome::Matched => ExitCode::SUCCESS,
        Outcome::Left => ExitCode::from(1),
    }
}

/// `ID` or `ID=SKILL`, in the order given; no skill: the player's rating on a rated queue.
fn parse_players(specs: &[String]) -> anyhow::Result<BTreeMap<String, Option<f64>>> {
    let mut players = BTreeMap::new();
    for spec in specs {
        let (id, skill) = match spec.split_once('=') {
            Some((id, skill)) => (
                id,
                Some(skill.parse::<f64>().map_err(|e| {
                    anyhow::anyhow!("--player {spec}: the skill is not a number: {e}")
                })?),
            ),
            None => (spec.as_str(), None),
        };
        if players.insert(id.to_string(), skill).is_some() {
            anyhow::bail!("--player {id} is given twice");
        }
    }
    Ok(players)
}

async fn enqueue(
    db: &mut PgConnection,
    args: &Args,
    players: &BTreeMap<String, Option<f64>>,
    latencies: &Value,
) -> anyhow::Result<()> {
    // A player without a skill: NULL (their rating) on a rated queue, 1500 elsewhere.
    let rated: bool = sqlx::query_scalar(
        "SELECT coalesce(bool_or(rating_pool IS NOT NULL), false) FROM queue_catalog
          WHERE queue = $1",
    )
    .bind(&args.queue)
    .fetch_one(&mut *db)
    .await?;
    let players: BTreeMap<&String, Option<f64>> = players
        .iter()
        .map(|(id, skill)| (id, skill.or((!rated).then_some(1500.0))))
        .collect();
    if let Some(party) = &args.party {
        let members: Vec<Value> = players
            .iter()
            .map(|(id, skill)| {
                serde_json::json!({"player_id": id, "skill": skill, "latencies": latencies})
            })
            .collect();
        let rows = sqlx::query(
            "SELECT player_id, entry_id
               FROM enqueue_party(queue => $1, party_id => $2, members => $3)",
        )
        .bind(&args.queue)
        .bind(party)
        .bind(Value::Array(members))
        .fetch_all(&mut *db)
        .await?;
        for row in rows {
            let (player, entry): (String, i64) = (row.get(0), row.get(1));
            println!("enqueued {player} (entry {entry}, party {party})");
        }
    } else {
        for (id, skill) in players {
            let entry: i64 = sqlx::query_scalar(
                "SELECT enqueue(queue => $1, player_id => $2, skill => $3, latencies => $4)",
            )
            .bind(&args.queue)
            .bind(id)
            .bind(skill)
            .bind(latencies)
            .fetch_one(&mut *db)
            .await?;
            println!("enqueued {id} (entry {entry})");
        }
    }
    Ok(())
}

/// A notification on this login's channel of the queue.
async fn on_notification(
    db: &mut PgConnection,
    args: &Args,
    waiting: &mut BTreeSet<String>,
    payload: &str,
) -> anyhow::Result<Option<Outcome>> {
    let Ok(note) = serde_json::from_str::<Value>(payload) else {
        eprintln!("ignored a notification that is not JSON: {payload}");
        return Ok(None);
    };
    match note["event"].as_str() {
        Some("countdown") => {
            let cause = note["cause"].as_str().unwrap_or("?");
            let why = match (cause, note["trigger"].as_str()) {
                ("round", Some(trigger)) => format!("after round {} ({trigger})", note["round_id"]),
                ("config", _) => "the queue's config changed".to_string(),
                ("pool", _) => "the pool changed".to_string(),
                _ => cause.to_string(),
            };
            println!(
                "countdown: {} [{why}]",
                countdown_text(
                    note["seconds_to_next_round"].as_i64(),
                    note["waiting_for"].as_str().unwrap_or("?"),
                    None
                )
            );
            Ok(None)
        }
        Some("cancelled") => {
            println!(
                "match {} cancelled: {}",
                note["match_id"],
                note["reason"].as_str().unwrap_or("?")
            );
            check_status(db, &args.queue, waiting, false).await
        }
        Some("match" | "backfill" | "ready_check" | "ready") => {
            // Ours? The payload names the players of its part (or omits them when the
            // match is too large to describe: then ask the database).
            let ours = note["players_omitted"].as_bool() == Some(true)
                || note["players"].as_array().is_some_and(|ps| {
                    ps.iter().any(|p| {
                        p["player_id"]
                            .as_str()
                            .is_some_and(|id| waiting.contains(id))
                    })
                });
            if !ours {
                return Ok(None);
            }
            check_status(db, &args.queue, waiting, false).await
        }
        _ => Ok(None),
    }
}

/// Read our players' status: print the countdown (`first`), the matches, the reasons.
/// Some(outcome) once no player is waiting any more.
async fn check_status(
    db: &mut PgConnection,
    queue: &str,
    waiting: &mut BTreeSet<String>,
    first: bool,
) -> anyhow::Result<Option<Outcome>> {
    let ids: Vec<String> = waiting.iter().cloned().collect();
    let rows = sqlx::query(
        "SELECT player_id, status, match_id, seconds_to_next_round, waiting_for,
                players_missing_for_early_start, reason, estimated_wait_s, answer
           FROM player_status($2::text[]) WHERE queue = $1",
    )
    .bind(queue)
    .bind(&ids)
    .fetch_all(&mut *db)
    .await?;
    let mut left = false;
    let mut countdown_printed = false;
    for row in rows {
        let player: String = row.get("player_id");
        let status: String = row.get("status");
        match status.as_str() {
            "queued" => {
                if first && !countdown_printed {
                    countdown_printed = true;
                    let estimate = row
                        .get::<Option<i32>, _>("estimated_wait_s")
                        .map(|s| format!("; estimated wait {s} s"))
                        .unwrap_or_default();
                    println!(
                        "countdown: {}{estimate}",
                        countdown_text(
                            row.get::<Option<i32>, _>("seconds_to_next_round")
                                .map(i64::from),
                            row.get::<Option<String>, _>("waiting_for")
                                .as_deref()
                                .unwrap_or("?"),
                            row.get::<Option<i32>, _>("players_missing_for_early_start"),
                        )
                    );
                }
            }
            "matched" => {
                let match_id: i64 = row.get("match_id");
                print_match(db, &player, match_id).await?;
                waiting.remove(&player);
            }
            // The ready check: a game asks the player; this example accepts for them.
            // A second accept (a status read before the first one's NOTIFY) answers
            // already_accepted and changes nothing.
            "pending" if row.get::<Option<String>, _>("answer").is_none() => {
                let match_id: i64 = row.get("match_id");
                let answer: Result<String, sqlx::Error> =
                    sqlx::query_scalar("SELECT accept_match($1, $2)")
                        .bind(&player)
                        .bind(match_id)
                        .fetch_one(&mut *db)
                        .await;
                match answer {
                    Ok(answer) => println!("ready check: {player} {answer} match {match_id}"),
                    // Refused (class 22): too late, or the match was cancelled meanwhile;
                    // player_status tells what follows.
                    Err(sqlx::Error::Database(e))
                        if e.code().is_some_and(|c| c.starts_with("22")) =>
                    {
                        println!("ready check: {player} could not accept: {}", e.message())
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            "pending" => {}
            _ => {
                let reason: Option<String> = row.get("reason");
                println!(
                    "left the queue: {player} is {status}: {}",
                    reason.unwrap_or_default()
                );
                waiting.remove(&player);
                left = true;
            }
        }
    }
    Ok(match (waiting.is_empty(), left) {
        (false, _) => None,
        (true, true) => Some(Outcome::Left),
        (true, false) => Some(Outcome::Matched),
    })
}

/// The match as match_details shows it to this login (only matches of its own players).
async fn print_match(db: &mut PgConnection, player: &str, match_id: i64) -> anyhow::Result<()> {
    let row = sqlx::query(
        "SELECT round_id, team, teammates, opponents, region, hosts, win_probability
           FROM match_details($1::bigint) WHERE player_id = $2 AND owner = session_user",
    )
    .bind(match_id)
    .bind(player)
    .fetch_one(&mut *db)
    .await?;
    let round: i64 = row.get("round_id");
    let team: i32 = row.get("team");
    let teammates: Vec<String> = row.get("teammates");
    let opponents: Vec<String> = row.get("opponents");
    let region: Option<String> = row.get("region");
    let hosts: Vec<String> = row.get("hosts");
    let mut place = match region {
        Some(region) => format!("; server region {region}"),
        None if !hosts.is_empty() => format!("; hosts {}", hosts.join(", ")),
        None => String::new(),
    };
    if let Some(p) = row.get::<Option<f64>, _>("win_probability") {
        place.push_str(&format!("; predicted chance to win {:.0}%", 100.0 * p));
    }
    println!(
        "matched: {player} is in match {match_id} (round {round}), team {team}; teammates: {}; opponents: {}{place}",
        if teammates.is_empty() {
            "none".to_string()
        } else {
            teammates.join(", ")
        },
        opponents.join(", ")
    );
    Ok(())
}

fn countdown_text(seconds: Option<i64>, waiting_for: &str, missing: Option<i32>) -> String {
    let early = match missing {
        Some(n) if n > 0 => format!("; {n} more players start it early"),
        _ => String::new(),
    };
    match (seconds, waiting_for) {
        (Some(s), "schedule") => format!("next round in {s} s{early}"),
        (Some(s), _) => {
            format!("next round in {s} s at the latest (waiting for {waiting_for}){early}")
        }
        (None, _) => format!("waiting for {waiting_for}; no round time yet{early}"),
    }
}
