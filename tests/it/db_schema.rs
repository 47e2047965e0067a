//! The enqueue contract: constraints refuse bad rows at INSERT time with readable errors.

use crate::support::{count, fresh_db};

async fn insert_err(db: &sqlx::PgPool, sql: &'static str) -> String {
    match sqlx::query(sql).execute(db).await {
        Ok(_) => panic!("insert should fail: {sql}"),
        Err(e) => e.to_string(),
    }
}

#[tokio::test]
async fn constraints_refuse_bad_rows_with_named_rules() {
    let db = fresh_db().await;
    let pool = &db.pool;
    sqlx::query(
        "INSERT INTO queue_entries (queue, player_id, skill, latencies, roles, side)
         VALUES ('q', 'ok', 1500, '{\"eu\": 20.5}', '{tank}', 0.5)",
    )
    .execute(pool)
    .await
    .expect("a good row is accepted");

    let cases: [(&'static str, &str); 13] = [
        (
            "INSERT INTO queue_entries (queue, player_id, skill) VALUES ('q', 'ok', 1)",
            "queue_entries_one_queued_row_per_player",
        ),
        (
            "INSERT INTO queue_entries (queue, player_id, skill) VALUES ('q', 'n', 'NaN')",
            "skill_must_be_finite",
        ),
        (
            "INSERT INTO queue_entries (queue, player_id, skill) VALUES ('q', 'i', 'Infinity')",
            "skill_must_be_finite",
        ),
        (
            "INSERT INTO queue_entries (queue, player_id, skill) VALUES ('q', '', 1)",
            "player_id_must_not_be_empty",
        ),
        (
            "INSERT INTO queue_entries (queue, player_id, skill) VALUES ('', 'x', 1)",
            "queue_must_not_be_empty",
        ),
        (
            "INSERT INTO queue_entries (queue, player_id, skill, side) VALUES ('q', 's', 1, 1.5)",
            "side_must_be_between_0_and_1",
        ),
        (
            "INSERT INTO queue_entries (queue, player_id, skill, latencies)
             VALUES ('q', 'l', 1, '{\"eu\": -3}')",
            "latencies_must_map_regions_to_non_negative_ms",
        ),
        (
            "INSERT INTO queue_entries (queue, player_id, skill, latencies)
             VALUES ('q', 'l', 1, '{\"eu\": \"fast\"}')",
            "latencies_must_map_regions_to_non_negative_ms",
        ),
        (
            "INSERT INTO queue_entries (queue, player_id, skill, latencies)
             VALUES ('q', 'l', 1, '{\"eu\": [20]}')",
            "latencies_must_map_regions_to_non_negative_ms",
        ),
        (
            "INSERT INTO queue_entries (queue, player_id, skill, latencies)
             VALUES ('q', 'l', 1, '{\"eu\": 1e400}')",
            "latencies_must_map_regions_to_non_negative_ms",
        ),
        (
            "INSERT INTO queue_entries (queue, player_id, skill, latencies)
             VALUES ('q', 'l', 1, '{\"\": 20}')",
            "latencies_must_map_regions_to_non_negative_ms",
        ),
        (
            "INSERT INTO queue_entries (queue, player_id, skill, peer_pings)
             VALUES ('q', 'p', 1, '[10, 20]')",
            "peer_pings_must_map_players_to_non_negative_ms",
        ),
        (
            "INSERT INTO queue_entries (queue, player_id, skill, status)
             VALUES ('q', 'st', 1, 'waiting')",
            "status_must_be_known",
        ),
    ];
    for (sql, rule) in cases {
        let err = insert_err(pool, sql).await;
        assert!(err.contains(rule), "{sql}\nexpected {rule}, got: {err}");
    }

    // Once the first row is no longer queued, the player may enqueue again.
    sqlx::query("UPDATE queue_entries SET status = 'cancelled' WHERE player_id = 'ok'")
        .execute(pool)
        .await
        .unwrap();
    sqlx::query("INSERT INTO queue_entries (queue, player_id, skill) VALUES ('q', 'ok', 1)")
        .execute(pool)
        .await
        .expect("re-enqueue after cancel");
    let rows: i64 = count(pool, "SELECT count(*) FROM queue_entries").await;
    assert_eq!(rows, 2, "bad rows were not stored");
}
