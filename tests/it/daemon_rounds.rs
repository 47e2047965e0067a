//! Rounds against a real PostgreSQL: enqueue -> round -> assignment, cancellation during
//! the solve, rows rejected by the round while the rest is matched, the countdown.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use matchmaker::daemon::clock::ManualClock;
use matchmaker::daemon::round::RoundRunner;
use matchmaker::db::{self, RoundTrigger};

use crate::support::*;

#[tokio::test]
async fn enqueue_round_assignment() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let clock = ManualClock::new(t0());
    enqueue_n(db, "q", "p", 14, t0()).await;
    let config = queue_config("every = \"2m\"");
    let runner = RoundRunner::new(db.clone(), Arc::new(clock.clone()));
    let lease = lead(db, &clock).await;
    clock.advance(secs(1));
    let report = runner
        .run("q", config.clone(), RoundTrigger::Manual, &lease)
        .await
        .unwrap();
    assert_eq!(
        (report.players, report.matches, report.matched),
        (14, 2, 12)
    );
    assert_eq!((report.left_over, report.rejected), (2, 0));

    let status = statuses(db, "q").await;
    assert_eq!(status.values().filter(|s| *s == "matched").count(), 12);
    assert_eq!(status.values().filter(|s| *s == "queued").count(), 2);

    // The assignment as a client reads it, and the match from the ops view.
    let (player, match_id, team): (String, i64, i32) = sqlx::query_as(
        "SELECT player_id, match_id, team FROM player_status
          WHERE queue = 'q' AND status = 'matched' ORDER BY player_id LIMIT 1",
    )
    .fetch_one(db)
    .await
    .unwrap();
    let (teammates, opponents): (Vec<String>, Vec<String>) = sqlx::query_as(
        "SELECT teammates, opponents FROM match_details WHERE match_id = $1 AND player_id = $2",
    )
    .bind(match_id)
    .bind(&player)
    .fetch_one(db)
    .await
    .unwrap();
    assert_eq!((teammates.len(), opponents.len()), (2, 3));
    let same_team: i64 =
        sqlx::query_scalar("SELECT count(*) FROM queue_entries WHERE match_id = $1 AND team = $2")
            .bind(match_id)
            .bind(team)
            .fetch_one(db)
            .await
            .unwrap();
    assert_eq!(same_team, 3);

    // The round row explains itself: trigger, lease, config, counts.
    let (trigger, term, hash, pool_size, cfg): (String, i64, String, i32, serde_json::Value) =
        sqlx::query_as(
            "SELECT trigger, term, config_hash, pool_size, config FROM rounds
              WHERE round_id = $1",
        )
        .bind(report.round_id)
        .fetch_one(db)
        .await
        .unwrap();
    assert_eq!(trigger, "manual");
    assert_eq!(term, lease.term);
    assert_eq!(hash, config.hash());
    assert_eq!(pool_size, 14);
    assert_eq!(cfg["round"]["every"], "2m");

    // The countdown: the next round 2 minutes after this one.
    let next: DateTime<Utc> =
        sqlx::query_scalar("SELECT next_round_at FROM queue_state WHERE queue = 'q'")
            .fetch_one(db)
            .await
            .unwrap();
    assert_eq!(next, t0() + chrono::Duration::seconds(121));
    assert_nobody_matched_twice(db).await;
}

#[tokio::test]
async fn a_cancel_during_the_solve_wins_and_keeps_the_others_queued() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let clock = ManualClock::new(t0());
    enqueue_n(db, "q", "p", 12, t0()).await;
    let runner = RoundRunner::new(db.clone(), Arc::new(clock.clone()));
    let lease = lead(db, &clock).await;

    let prepared = runner
        .prepare("q", queue_config(""), RoundTrigger::Manual)
        .await
        .unwrap();
    let solved = runner.solve(prepared).await.unwrap();
    assert_eq!(solved.outcome.matches.len(), 2);
    // p0 cancels while "the solver runs" (between snapshot and commit).
    let victim_match = solved
        .outcome
        .matches
        .iter()
        .find(|m| m.teams.iter().flatten().any(|p| p == "p0"))
        .unwrap()
        .clone();
    assert_eq!(db::enqueue::cancel(db, None, "p0").await.unwrap(), 1);
    let report = runner.commit(solved, &lease).await.unwrap();

    assert_eq!((report.matches, report.matched), (1, 6));
    assert_eq!(report.dropped_by_cancel, 5);
    let status = statuses(db, "q").await;
    assert_eq!(status["p0"], "cancelled");
    for p in victim_match.teams.iter().flatten().filter(|p| *p != "p0") {
        assert_eq!(status[p], "queued", "{p} stays queued");
    }
    // ... keeping their original enqueue time, untouched by the round.
    let moved: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM queue_entries
          WHERE status = 'queued' AND (enqueued_at <> $1 OR round_id IS NOT NULL)",
    )
    .bind(t0())
    .fetch_one(db)
    .await
    .unwrap();
    assert_eq!(moved, 0);
    let dropped: i32 = sqlx::query_scalar("SELECT dropped_by_cancel FROM rounds")
        .fetch_one(db)
        .await
        .unwrap();
    assert_eq!(dropped, 5);
    assert_nobody_matched_twice(db).await;
}

#[tokio::test]
async fn unusable_rows_are_rejected_with_a_reason_while_the_rest_is_matched() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let clock = ManualClock::new(t0());
    enqueue_n(db, "q", "p", 6, t0()).await;
    // A row stored before a constraint existed (or written around it): the round must
    // reject it with a reason, not fail, and not drop it.
    sqlx::raw_sql(
        "ALTER TABLE queue_entries DROP CONSTRAINT latencies_must_map_regions_to_non_negative_ms;
         INSERT INTO queue_entries (queue, player_id, skill, latencies, enqueued_at)
         VALUES ('q', 'broken', 1000, '{\"eu\": null}', '2026-01-01T11:59:00Z');",
    )
    .execute(db)
    .await
    .unwrap();
    let runner = RoundRunner::new(db.clone(), Arc::new(clock.clone()));
    let lease = lead(db, &clock).await;
    let report = runner
        .run("q", queue_config(""), RoundTrigger::Manual, &lease)
        .await
        .unwrap();
    assert_eq!(
        (report.matched, report.rejected, report.left_over),
        (6, 1, 0)
    );
    let (status, reason): (String, Option<String>) = sqlx::query_as(
        "SELECT status, reject_reason FROM player_status WHERE player_id = 'broken'",
    )
    .fetch_one(db)
    .await
    .unwrap();
    assert_eq!(status, "rejected");
    assert!(
        reason.unwrap().contains("latencies"),
        "reason names the field"
    );
    assert_nobody_matched_twice(db).await;
}

#[tokio::test]
async fn countdown_shows_seconds_to_the_next_round_and_players_missing() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    // The views count against the database's now(): use a clock near real time.
    let start = chrono::SubsecRound::trunc_subsecs(Utc::now(), 6);
    let clock = ManualClock::new(start);
    enqueue_n(db, "q", "p", 4, start).await;
    let config = queue_config("every = \"90s\"\ntarget_pool = 10\nmin_pool = 6");
    let mut w = worker(db, &clock, "a", config);
    w.step().await.unwrap();

    let mut tx = db.begin().await.unwrap();
    let now: DateTime<Utc> = sqlx::query_scalar("SELECT now()")
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    let (seconds, next, missing, early, waiting): (i32, DateTime<Utc>, i32, bool, String) =
        sqlx::query_as(
            "SELECT seconds_to_next_round, next_round_at, players_missing_for_early_start,
                    may_start_early, waiting_for
               FROM player_status WHERE queue = 'q' AND player_id = 'p1'",
        )
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(next, start + chrono::Duration::seconds(90));
    let expected = ((next - now).num_microseconds().unwrap() as f64 / 1e6)
        .ceil()
        .max(0.0);
    assert_eq!(seconds as f64, expected);
    assert_eq!(missing, 6, "target 10, pool 4");
    assert!(early);
    assert_eq!(waiting, "schedule");

    // A matched player has no countdown but an assignment.
    enqueue_n(db, "q", "x", 6, start).await;
    let outcome = w.step().await.unwrap();
    assert!(matches!(
        outcome,
        matchmaker::daemon::worker::StepOutcome::Ran(_)
    ));
    let (seconds, match_id): (Option<i32>, Option<i64>) = sqlx::query_as(
        "SELECT seconds_to_next_round, match_id FROM player_status
          WHERE queue = 'q' AND status = 'matched' LIMIT 1",
    )
    .fetch_one(db)
    .await
    .unwrap();
    assert_eq!(seconds, None);
    assert!(match_id.is_some());
}

#[tokio::test]
async fn the_size_cap_takes_the_oldest_and_never_splits_a_party() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let mut players = Vec::new();
    for i in 0..8 {
        let mut p = player(
            &format!("p{i}"),
            1000.0,
            t0() + chrono::Duration::seconds(i),
        );
        if i == 5 || i == 7 {
            p.party = Some("duo".into());
        }
        players.push(p);
    }
    db::enqueue::enqueue_many(db, "q", &players, t0())
        .await
        .unwrap();
    let snapshot = db::snapshot_pool(db, "q", 6, 1).await.unwrap();
    let ids: Vec<&str> = snapshot
        .entries
        .iter()
        .map(|e| e.player_id.as_str())
        .collect();
    assert_eq!(ids, ["p0", "p1", "p2", "p3", "p4", "p5", "p7"]);
}

#[tokio::test]
async fn parties_play_together_and_an_oversized_party_is_rejected() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let clock = ManualClock::new(t0());
    let mut players = Vec::new();
    for i in 0..24 {
        let mut p = player(&format!("p{i}"), 1000.0 + 5.0 * i as f64, t0());
        p.party = match i {
            0..=2 => Some("trio".into()),
            5 | 9 => Some("duo".into()),
            12..=15 => Some("four".into()), // larger than a team of three
            _ => None,
        };
        players.push(p);
    }
    db::enqueue::enqueue_many(db, "q", &players, t0())
        .await
        .unwrap();
    let runner = RoundRunner::new(db.clone(), Arc::new(clock.clone()));
    let lease = lead(db, &clock).await;
    let report = runner
        .run(
            "q",
            queue_config("budget = \"300ms\"\nseed = 1\nstrategy = \"awesomenauts\""),
            RoundTrigger::Manual,
            &lease,
        )
        .await
        .unwrap();
    assert_eq!(report.rejected, 4, "the party of four cannot play 3v3");
    assert_eq!(report.matched + report.left_over, 20);

    type Row = (String, String, Option<i64>, Option<i32>, Option<String>);
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT player_id, status, match_id, team, reject_reason FROM queue_entries
          WHERE party_id IS NOT NULL ORDER BY player_id",
    )
    .fetch_all(db)
    .await
    .unwrap();
    let mut parties_matched = 0;
    for party in [["p0", "p1", "p2"].as_slice(), ["p5", "p9"].as_slice()] {
        let members: Vec<_> = rows
            .iter()
            .filter(|r| party.contains(&r.0.as_str()))
            .collect();
        // Together: same status, and once matched the same team of the same match.
        assert!(
            members
                .iter()
                .all(|m| (&m.1, m.2, m.3) == (&members[0].1, members[0].2, members[0].3)),
            "party on one team of one match: {members:?}"
        );
        parties_matched += usize::from(members[0].1 == "matched");
    }
    assert!(parties_matched > 0, "some party was matched: {rows:?}");
    for r in rows
        .iter()
        .filter(|r| ["p12", "p13", "p14", "p15"].contains(&r.0.as_str()))
    {
        assert_eq!(r.1, "rejected");
        assert!(r.4.as_deref().is_some_and(|reason| !reason.is_empty()));
    }
    assert_nobody_matched_twice(db).await;
}

#[tokio::test]
async fn a_party_whose_members_enqueued_at_different_times_plays_together() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let clock = ManualClock::new(t0() + chrono::Duration::seconds(10));
    // Two members of one party, written three seconds apart in separate statements (as
    // rows written straight into the table before enqueue_party existed), and four solos.
    for (i, at) in [(0, t0()), (1, t0() + chrono::Duration::seconds(3))] {
        let mut p = player(&format!("duo{i}"), 1500.0, at);
        p.party = Some("duo".into());
        db::enqueue::enqueue_many(db, "q", &[p], at).await.unwrap();
    }
    enqueue_n(db, "q", "solo", 4, t0()).await;
    let runner = RoundRunner::new(db.clone(), Arc::new(clock.clone()));
    let lease = lead(db, &clock).await;
    let report = runner
        .run("q", queue_config("seed = 1"), RoundTrigger::Manual, &lease)
        .await
        .unwrap();
    assert_eq!((report.matched, report.rejected), (6, 0));
    let teams: Vec<Option<i32>> = sqlx::query_scalar(
        "SELECT team FROM queue_entries WHERE party_id = 'duo' ORDER BY player_id",
    )
    .fetch_all(db)
    .await
    .unwrap();
    assert_eq!(teams.len(), 2);
    assert!(teams[0].is_some() && teams[0] == teams[1], "{teams:?}");
}

#[tokio::test]
async fn a_row_that_fails_the_commit_is_rejected_and_the_round_commits_without_it() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    let clock = ManualClock::new(t0());
    enqueue_n(db, "q", "p", 12, t0()).await;
    // A row the database refuses at commit time, whatever the reason: here a trigger
    // standing in for any constraint of match_players that one row breaks.
    sqlx::raw_sql(
        "CREATE FUNCTION refuse_p3() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN
             IF NEW.player_id = 'p3' THEN
                 RAISE EXCEPTION 'p3 may not play' USING ERRCODE = 'check_violation';
             END IF;
             RETURN NEW;
         END $$;
         CREATE TRIGGER refuse_p3 BEFORE INSERT ON match_players
             FOR EACH ROW EXECUTE FUNCTION refuse_p3();",
    )
    .execute(db)
    .await
    .unwrap();
    let runner = RoundRunner::new(db.clone(), Arc::new(clock.clone()));
    let lease = lead(db, &clock).await;
    clock.advance(secs(1));
    let report = runner
        .run("q", queue_config("seed = 3"), RoundTrigger::Manual, &lease)
        .await
        .expect("the round commits without the bad row");
    assert_eq!((report.matches, report.matched, report.rejected), (1, 6, 1));
    assert_eq!(report.dropped_by_cancel, 5, "p3's match-mates stay queued");
    let status = statuses(db, "q").await;
    assert_eq!(status["p3"], "rejected");
    assert_eq!(status.values().filter(|s| *s == "queued").count(), 5);
    let reason: String =
        sqlx::query_scalar("SELECT reject_reason FROM queue_entries WHERE player_id = 'p3'")
            .fetch_one(db)
            .await
            .unwrap();
    assert!(reason.contains("p3 may not play"), "{reason}");
    let (matched, rejected, dropped): (i32, i32, i32) = sqlx::query_as(
        "SELECT matched, rejected, dropped_by_cancel FROM rounds WHERE round_id = $1",
    )
    .bind(report.round_id)
    .fetch_one(db)
    .await
    .unwrap();
    assert_eq!(
        (matched, rejected, dropped),
        (6, 1, 5),
        "the round row counts what was written"
    );
    assert_nobody_matched_twice(db).await;
}
