//! An example fleet adapter: turns a fleet's game-server states into `server_ready` /
//! `server_gone` calls, and the matchmaker's allocations into lines a fleet allocator
//! acts on. It uses only the server API (docs/operations.md, "Game servers"), as a login
//! in the `matchmaker_server` role, and nothing of this crate: an adapter in any language
//! with a PostgreSQL driver does the same.
//!
//! ```text
//! kubectl get gameservers -o json --watch | jq -c '...' |   # or your fleet's own events
//! cargo run --release --example fleet -- \
//!     --database-url postgres://fleet_eu:PASSWORD@HOST/DB --queue casual_5v5 \
//!     [--announce-every 10s]
//! ```
//!
//! Input, one JSON object per line on stdin: a game server's state as the fleet reports
//! it, `{"name": "gs-7", "state": "Ready", "region": "eu-west", "address": "10.0.3.7",
//! "port": 7777}` (`port` optional; `region` and `address` needed for Ready). The states
//! are Agones' GameServer states; a fleet of another kind maps its own to them:
//!
//! | fleet state | call |
//! |---|---|
//! | `Ready` | `server_ready(name, region, address:port, ended_match)`: free to host one match; `ended_match` is the match the adapter last saw allocated to it, so a server whose match ended is free again |
//! | `Allocated` | none when the matchmaker allocated it; a server allocated by anything else is withdrawn (`server_gone`), so the matchmaker never counts on it |
//! | `Shutdown`, `Unhealthy`, `Error`, a deleted server (`"state": "Deleted"`) | `server_gone(name)` |
//! | `Creating`, `Starting`, `Scheduled`, `RequestReady`, `Reserved` | none yet (not ready) |
//!
//! Every `--announce-every` (keep it a third of the queues' `[queues.NAME.servers] ttl`)
//! it announces again each server it believes Ready: a server the fleet lost without an
//! event stops being used once its last announcement is older than the ttl.
//!
//! Output, one JSON object per line on stdout, for the fleet's allocator:
//! `{"allocate": "gs-7", "match_id": 42, "queue": "casual_5v5", "address": "10.0.3.7:7777",
//! "teams": [["alice", "bob"], ["carol", "dave"]]}` when a round places a match on a server
//! (with Agones: a GameServerAllocation of that server carrying the roster; for a queue
//! with a ready check the line comes once every player accepted), and `{"release": "gs-7",
//! "match_id": 42}` when its ready check cancelled it before it was played (the server is
//! free again). It exits when stdin ends.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use serde::Deserialize;
use serde_json::{Value, json};
use sqlx::Connection;
use sqlx::postgres::{PgConnection, PgListener};
use tokio::io::AsyncBufReadExt;

#[derive(Parser)]
#[command(
    about = "An example fleet adapter: game-server states in, server_ready / server_gone out"
)]
struct Args {
    /// PostgreSQL URL of the matchmaker's database, as a matchmaker_server login.
    #[arg(long, env = "DATABASE_URL")]
    database_url: String,
    /// The queues whose allocations to hear (repeat it).
    #[arg(long = "queue", required = true)]
    queues: Vec<String>,
    /// Announce every Ready server again this often (a third of the queues' server ttl).
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    announce_every: Duration,
}

/// One line of input: a game server's state.
#[derive(Debug, Deserialize)]
struct ServerState {
    name: String,
    state: String,
    #[serde(default)]
    region: Option<String>,
    #[serde(default)]
    address: Option<String>,
    #[serde(default)]
    port: Option<u16>,
}

/// What the adapter knows of one server.
#[derive(Debug, Default)]
struct Known {
    /// Where it announces itself: (region, address), since the fleet last said Ready.
    at: Option<(String, String)>,
    /// The match the matchmaker allocated to it, until it is Ready again (or the match's
    /// ready check cancelled it).
    hosting: Option<i64>,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}

async fn run(args: &Args) -> anyhow::Result<()> {
    let mut db = PgConnection::connect(&args.database_url).await?;
    let mut listener = PgListener::connect(&args.database_url).await?;
    for queue in &args.queues {
        let channel: String = sqlx::query_scalar("SELECT queue_channel(queue => $1)")
            .bind(queue)
            .fetch_one(&mut db)
            .await?;
        listener.listen(&channel).await?;
    }
    let (notes_tx, mut notes) = tokio::sync::mpsc::unbounded_channel::<String>();
    tokio::spawn(async move {
        while let Ok(n) = listener.recv().await {
            if notes_tx.send(n.payload().to_string()).is_err() {
                return;
            }
        }
    });
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    let mut servers: BTreeMap<String, Known> = BTreeMap::new();
    let mut announce = tokio::time::interval(args.announce_every);
    announce.tick().await;
    loop {
        tokio::select! {
            line = lines.next_line() => {
                let Some(line) = line? else { return Ok(()) };
                if line.trim().is_empty() {
                    continue;
                }
                match serde_json::from_str::<ServerState>(&line) {
                    Ok(s) => on_state(&mut db, &mut servers, s).await?,
                    Err(e) => eprintln!("skipped a line that is not a server state ({e}): {line}"),
                }
            }
            note = notes.recv() => {
                let Some(payload) = note else { anyhow::bail!("the listener stopped") };
                on_notification(&mut servers, &payload);
            }
            _ = announce.tick() => {
                for (name, known) in &servers {
                    if let (Some((region, address)), None) = (&known.at, known.hosting) {
                        server_ready(&mut db, name, region, address, None).await?;
                    }
                }
            }
        }
    }
}

/// One state change of the fleet, as a call.
async fn on_state(
    db: &mut PgConnection,
    servers: &mut BTreeMap<String, Known>,
    s: ServerState,
) -> anyhow::Result<()> {
    let known = servers.entry(s.name.clone()).or_default();
    match s.state.as_str() {
        "Ready" => {
            let (Some(region), Some(address)) = (s.region, s.address) else {
                eprintln!("{}: Ready without region and address; skipped", s.name);
                return Ok(());
            };
            let address = match s.port {
                Some(port) => format!("{address}:{port}"),
                None => address,
            };
            // Ready again after a match: name it, so the matchmaker frees the server.
            let ended = known.hosting.take();
            server_ready(db, &s.name, &region, &address, ended).await?;
            known.at = Some((region, address));
        }
        // Allocated by something else: the matchmaker must not count on it.
        "Allocated" if known.hosting.is_none() => {
            known.at = None;
            server_gone(db, &s.name).await?;
        }
        "Shutdown" | "Unhealthy" | "Error" | "Deleted" => {
            servers.remove(&s.name);
            server_gone(db, &s.name).await?;
        }
        _ => {} // not ready yet
    }
    Ok(())
}

/// An allocation (`match`, `ready`) or a release (`cancelled`) of one of the login's
/// servers, printed for the fleet's allocator.
fn on_notification(servers: &mut BTreeMap<String, Known>, payload: &str) {
    let Ok(note) = serde_json::from_str::<Value>(payload) else {
        return;
    };
    let (Some(server), Some(match_id)) = (note["server_id"].as_str(), note["match_id"].as_i64())
    else {
        return;
    };
    let known = servers.entry(server.to_string()).or_default();
    match note["event"].as_str() {
        // Allocated, waiting for its players to accept: hold it.
        Some("ready_check") => {
            known.hosting = Some(match_id);
        }
        // A ready check's match is final at "ready"; without one, at "match".
        Some("match") | Some("ready") => {
            let mut teams: Vec<Vec<String>> = Vec::new();
            for p in note["players"].as_array().into_iter().flatten() {
                let team = p["team"].as_u64().unwrap_or(0) as usize;
                if teams.len() <= team {
                    teams.resize(team + 1, Vec::new());
                }
                teams[team].push(p["player_id"].as_str().unwrap_or_default().to_string());
            }
            known.hosting = Some(match_id);
            println!(
                "{}",
                json!({
                    "allocate": server,
                    "match_id": match_id,
                    "queue": note["queue"],
                    "address": note["server_address"],
                    "teams": teams,
                })
            );
        }
        Some("cancelled") => {
            known.hosting = None;
            println!("{}", json!({"release": server, "match_id": match_id}));
        }
        _ => {}
    }
}

async fn server_ready(
    db: &mut PgConnection,
    name: &str,
    region: &str,
    address: &str,
    ended_match: Option<i64>,
) -> anyhow::Result<String> {
    Ok(
        sqlx::query_scalar("SELECT server_ready($1, $2, $3, ended_match => $4)")
            .bind(name)
            .bind(region)
            .bind(address)
            .bind(ended_match)
            .fetch_one(db)
            .await?,
    )
}

async fn server_gone(db: &mut PgConnection, name: &str) -> anyhow::Result<bool> {
    Ok(sqlx::query_scalar("SELECT server_gone($1)")
        .bind(name)
        .fetch_one(db)
        .await?)
}
