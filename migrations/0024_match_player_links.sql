-- 0024: match_players' links to its match and its entry are written together, not checked
-- row by row.
--
-- The round's commit writes a match, its players' match_players rows and their entries'
-- move to 'matched' in one statement (src/db/commit.rs, write_matches): a match_players
-- row is made from the entry row that statement has just moved, under the match id it has
-- just inserted. As foreign keys, those two links cost every matched player two key
-- checks at the statement's end, each an index probe and a row lock (FOR KEY SHARE: the
-- row written again, a WAL record) on a row the same statement had just written; at 300
-- players about a tenth of the round's database work (`benches/round_work_ab.py`, README
-- "Round database work before and after the contract"). Deleting an entry or a match
-- (retention) also checked match_players.
--
-- What the keys guarded still holds:
--   - only the daemon writes these tables (the client role cannot, 0009);
--   - retention deletes a match's match_players rows first, then its entries and the
--     match (src/db/retention.rs);
--   - UNIQUE (entry_id) stays: an entry goes to at most one match;
--   - matches.round_id keeps its key (one check per match, not per player);
--   - `matchmaker soak` and the fault tests count match_players rows whose match or
--     entry is missing after every fault (db::audit, "match players without their match
--     or entry"), a violation like a player in two matches.

ALTER TABLE match_players
    DROP CONSTRAINT match_players_entry_id_fkey,
    DROP CONSTRAINT match_players_match_id_fkey;

COMMENT ON COLUMN match_players.match_id IS
    'the match; written in the same statement as the match, without a foreign key (0024)';
COMMENT ON COLUMN match_players.entry_id IS
    'the queue entry matched (UNIQUE: one match per entry); written in the same statement '
    'that moves the entry to matched, without a foreign key (0024)';
