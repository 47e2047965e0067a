//! `matchmaker status` reads its view from the real schema.

use matchmaker::cli::status::{read_status, render};

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
