//! `matchmaker status` reads its view from the real schema.

use matchmaker::ops::status::{read_status, render};

use crate::support::fresh_db;

#[tokio::test]
async fn status_shows_waiting_players_before_any_daemon_ran() {
    let db = fresh_db().await;
    sqlx::query(
        "INSERT INTO queue_entries (queue, player_id, skill)
         SELECT 'ranked_3v3', 'p' || g, 1500 FROM generate_series(1, 7) g",
    )
    .execute(&db.pool)
    .await
    .unwrap();
    let view = read_status(&db.pool, None, 5).await.expect("status reads");
    assert_eq!(view.queues.len(), 1);
    assert_eq!(view.queues[0].queue, "ranked_3v3");
    assert_eq!(view.queues[0].pool_size, 7);
    assert_eq!(view.queues[0].waiting_for, "no daemon");
    assert!(view.rounds.is_empty());
    let text = render(&view, false);
    assert!(text.contains("no rounds yet"), "{text}");
}

#[tokio::test]
async fn status_names_the_leader_only_while_its_lease_is_live() {
    let db = fresh_db().await;
    for sql in [
        "INSERT INTO queue_entries (queue, player_id, skill) VALUES ('a', 'p1', 1500), ('b', 'p2', 1500)",
        "INSERT INTO leases (queue, holder, term, acquired_at, expires_at) VALUES
             ('a', 'replica-1', 3, now(), now() + interval '1 hour'),
             ('b', 'replica-2', 5, now() - interval '2 hours', now() - interval '1 hour')",
    ] {
        sqlx::query(sql).execute(&db.pool).await.unwrap();
    }
    let view = read_status(&db.pool, None, 5).await.expect("status reads");
    let leader = |queue: &str| {
        view.queues
            .iter()
            .find(|q| q.queue == queue)
            .unwrap()
            .leader
            .clone()
    };
    assert_eq!(leader("a").as_deref(), Some("replica-1 (term 3)"));
    assert_eq!(leader("b"), None, "an expired lease names no leader");
}
