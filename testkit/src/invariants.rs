//! The invariants every database test may assert, and a fingerprint of what the daemon
//! owns.

use sqlx::PgPool;

/// One number a query returns.
pub async fn count(db: &PgPool, sql: &str) -> i64 {
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
        .fetch_one(db)
        .await
        .unwrap()
}

/// The invariant of every test: no entry in two matches, every matched entry in exactly
/// one match, no player matched in two matches of one round.
pub async fn assert_nobody_matched_twice(db: &PgPool) {
    let bad = count(
        db,
        "SELECT count(*) FROM queue_entries e
          WHERE (e.status = 'matched') <> EXISTS (
                SELECT 1 FROM match_players mp WHERE mp.entry_id = e.entry_id)",
    )
    .await;
    assert_eq!(bad, 0, "matched entries and match_players disagree");
    let twice = count(
        db,
        "SELECT count(*) FROM (SELECT m.round_id, e.owner, mp.player_id FROM match_players mp
           JOIN matches m USING (match_id) JOIN queue_entries e USING (entry_id)
          GROUP BY 1, 2, 3 HAVING count(*) > 1) x",
    )
    .await;
    assert_eq!(twice, 0, "a player in two matches of one round");
}

/// The client contract's invariants over the whole database (every queue), for the
/// contract, abuse, lifecycle and fault suites. Call it as a role that sees every row
/// (the test's superuser pool) after each group of rounds. It assumes what those tests
/// arrange: each player is matched at most once (tests that re-queue a player after a
/// match must not use it).
///
/// * [`assert_nobody_matched_twice`]: entries and match_players agree;
/// * no player in two matches, across all queues (one match per player);
/// * no match holds an entry that is not `matched` (cancelled, expired, withdrawn,
///   rejected, queued), and a matched entry's `match_id` is its match;
/// * no split party: a party (one `enqueue_party` call, `party_key`) with a matched member
///   has every member matched, in that one match; parties written without a key
///   (`party_id` only) are never spread over two matches of one round;
/// * every entry that left the queue without a match (cancelled, rejected, expired,
///   withdrawn) has a reason; a withdrawn entry names the match that won.
///
/// Not checked: that all members of a party share one final status. A party mate still
/// `queued` after a member left is closed by the next sweep of its queue (the snapshot
/// never takes an incomplete party meanwhile), and a cancel racing that sweep may end
/// the rest of the party `cancelled` next to a `withdrawn` member.
pub async fn assert_contract_invariants(db: &PgPool) {
    assert_nobody_matched_twice(db).await;

    let twice: Vec<(String, i64)> = sqlx::query_as(
        "SELECT mp.player_id, count(DISTINCT mp.match_id) FROM match_players mp
           JOIN queue_entries e USING (entry_id)
          GROUP BY e.owner, mp.player_id HAVING count(DISTINCT mp.match_id) > 1
          ORDER BY mp.player_id",
    )
    .fetch_all(db)
    .await
    .unwrap();
    assert!(
        twice.is_empty(),
        "players in more than one match: {twice:?}"
    );

    let wrong: Vec<(i64, String, String, Option<i64>)> = sqlx::query_as(
        "SELECT mp.match_id, mp.player_id, e.status, e.match_id
           FROM match_players mp JOIN queue_entries e USING (entry_id)
          WHERE e.status <> 'matched' OR e.match_id IS DISTINCT FROM mp.match_id
          ORDER BY 1, 2",
    )
    .fetch_all(db)
    .await
    .unwrap();
    assert!(
        wrong.is_empty(),
        "matches holding entries that are not matched into them \
         (match, player, entry status, entry match): {wrong:?}"
    );

    let split: Vec<(i64, String, String)> = sqlx::query_as(
        "SELECT party_key, string_agg(player_id || ':' || status, ' ' ORDER BY player_id),
                string_agg(coalesce(match_id::text, '-'), ' ' ORDER BY player_id)
           FROM queue_entries
          WHERE party_key IS NOT NULL
          GROUP BY party_key
         HAVING bool_or(status = 'matched')
            AND (NOT bool_and(status = 'matched') OR count(DISTINCT match_id) <> 1
                 OR count(*) <> max(party_size))
          ORDER BY 1",
    )
    .fetch_all(db)
    .await
    .unwrap();
    assert!(
        split.is_empty(),
        "split parties (party_key, members:status, match ids): {split:?}"
    );
    let spread: Vec<(Option<i64>, String)> = sqlx::query_as(
        "SELECT round_id, party_id FROM queue_entries
          WHERE status = 'matched' AND party_id IS NOT NULL AND party_key IS NULL
          GROUP BY round_id, party_id HAVING count(DISTINCT match_id) > 1
          ORDER BY 1, 2",
    )
    .fetch_all(db)
    .await
    .unwrap();
    assert!(
        spread.is_empty(),
        "parties spread over two matches of one round (round, party): {spread:?}"
    );

    let silent: Vec<(i64, String, String)> = sqlx::query_as(
        "SELECT entry_id, player_id, status FROM queue_entries
          WHERE (status NOT IN ('queued', 'matched') AND coalesce(reject_reason, '') = '')
             OR (status = 'withdrawn' AND match_id IS NULL)
          ORDER BY 1",
    )
    .fetch_all(db)
    .await
    .unwrap();
    assert!(
        silent.is_empty(),
        "entries that left the queue without a reason (or a withdrawn one without the \
         winning match): {silent:?}"
    );
}

/// Match ids of one player: as match_players says (expected), as recent_matches holds.
pub type MatchIds = Option<Vec<i64>>;

/// `recent_matches` says what `match_players` says: per queue and
/// player, the ids of their last `depth` matches (newest by `matched_at`), oldest first,
/// and no row for a player without a match.
pub async fn assert_recent_matches_agree(db: &PgPool, depth: usize) {
    let disagree: Vec<(String, String, MatchIds, MatchIds)> = sqlx::query_as(
        "WITH expected AS (
             SELECT queue, player_id, array_agg(match_id ORDER BY match_id) AS ids
               FROM (SELECT queue, player_id, match_id,
                            row_number() OVER (PARTITION BY queue, player_id
                                               ORDER BY matched_at DESC, match_id DESC) AS n
                       FROM match_players) x
              WHERE n <= $1
              GROUP BY queue, player_id)
         SELECT queue, player_id, e.ids, r.match_ids
           FROM expected e FULL JOIN recent_matches r USING (queue, player_id)
          WHERE e.ids IS DISTINCT FROM r.match_ids
          ORDER BY 1, 2",
    )
    .bind(depth as i64)
    .fetch_all(db)
    .await
    .unwrap();
    assert!(
        disagree.is_empty(),
        "recent_matches disagrees with match_players (queue, player, expected, held): {disagree:?}"
    );
}

/// Everything the daemon owns and the clients write, as one string: equal before and
/// after a call means it wrote nothing.
pub async fn fingerprint(db: &PgPool) -> String {
    sqlx::query_scalar(
        "SELECT concat_ws(' / ',
            (SELECT count(*) || ':' || md5(coalesce(string_agg(e::text, ',' ORDER BY entry_id), ''))
               FROM queue_entries e),
            (SELECT count(*) || ':' || md5(coalesce(string_agg(b::text, ',' ORDER BY request_id), ''))
               FROM backfill_requests b),
            (SELECT count(*) || ':' || md5(coalesce(string_agg(a::text, ','
                                                    ORDER BY owner, player_id, avoided_player_id), ''))
               FROM avoids a),
            (SELECT md5(coalesce(string_agg(m::text, ',' ORDER BY match_id), '')) FROM matches m),
            (SELECT md5(coalesce(string_agg(p::text, ',' ORDER BY entry_id), ''))
               FROM match_players p),
            (SELECT md5(coalesce(string_agg(r::text, ',' ORDER BY round_id), '')) FROM rounds r),
            (SELECT md5(coalesce(string_agg(l::text, ',' ORDER BY queue), '')) FROM leases l),
            (SELECT md5(coalesce(string_agg(q::text, ',' ORDER BY queue), '')) FROM queues q),
            (SELECT md5(coalesce(string_agg(s::text, ',' ORDER BY queue), ''))
               FROM queue_state s))",
    )
    .fetch_one(db)
    .await
    .unwrap()
}
