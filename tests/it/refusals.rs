//! The refusal contract, function by function, as a client login: every malformed input
//! to a client function is an error in SQLSTATE class 22 (the request is wrong: do not
//! retry) and writes nothing. What the functions check reads `field = value: rule` with
//! 22023 (each message asserted whole); a text PostgreSQL cannot parse as the parameter's
//! type keeps PostgreSQL's own message (22P02, 22007). The ready check's refusals, each
//! with a match in the state it needs, likewise. And every refusal example in the docs is
//! what the database answers.

use matchmaker::config::Config;
use sqlx::PgPool;

use crate::support::*;

/// q: a 3v3 peer-to-peer queue, any region, no roles, parties of 2-3. r: roles, two
/// regions, and a match's players share their `build` attribute. d: a 5v5 dedicated-server queue in two regions.
const QUEUES: &str = r#"
default_queue = "q"
[queues.q]
[queues.r]
roles = ["tank", "healer", "dps"]
[queues.r.filters]
same = ["build"]
[queues.r.tickets]
regions = ["eu", "us"]
[queues.d]
teams = 2
team_size = 5
network = "dedicated"
[queues.d.tickets]
regions = ["eu-west", "us-east"]
"#;

/// The client functions and the game server's (section 4 of the schema; grants, section 7).
const CLIENT_FUNCTIONS: [&str; 11] = [
    "enqueue",
    "enqueue_party",
    "cancel",
    "accept_match",
    "decline_match",
    "keep_alive",
    "request_backfill",
    "cancel_backfill",
    "avoid",
    "unavoid",
    "queue_channel",
];

/// SQLSTATE and message of `sql` run as `client`, which must fail.
async fn refusal(client: &PgPool, sql: &str) -> (String, String) {
    let err = sqlx::query(sqlx::AssertSqlSafe(sql.to_string()))
        .execute(client)
        .await
        .err()
        .unwrap_or_else(|| panic!("should be refused: {sql}"));
    db_error(&err)
}

/// `text` as `matchmaker_refuse` shows a value: at most 80 characters.
fn shown(text: &str) -> String {
    if text.chars().count() > 80 {
        format!("{}...", text.chars().take(77).collect::<String>())
    } else {
        text.to_string()
    }
}

/// (statement, the whole message) of inputs the functions check: SQLSTATE 22023.
fn checked() -> Vec<(String, String)> {
    let huge = format!("1{}", "0".repeat(400));
    // jsonb's text form orders keys of equal length bytewise.
    let regions: Vec<String> = (0..33).map(|i| format!("\"r{i:02}\": 20")).collect();
    let map33 = format!("{{{}}}", regions.join(", "));
    let x65 = "x".repeat(65);
    let slots = "must be an array of 2 numbers, the free slots of each team of queue q".to_string();
    let party_size =
        "a party in queue q has 2 to 3 members (enqueue a solo player with enqueue)".to_string();
    let two = r#"{"player_id": "m2", "skill": 1500}"#;
    // jsonb's text form orders keys of equal length bytewise.
    let names: Vec<String> = (0..17).map(|i| format!("\"a{i:02}\": \"x\"")).collect();
    let attributes17 = format!("{{{}}}", names.join(", "));
    let values: Vec<String> = (0..17).map(|i| format!("\"l{i:02}\"")).collect();
    let list17 = format!("[{}]", values.join(", "));
    let attributes = "must be a JSON object of names to a string or a list of strings";
    // 16 names of two 64-character values each: every value within its limits, 2 KB over
    // in all.
    let x64 = "x".repeat(64);
    let wide: Vec<String> = (0..16)
        .map(|i| format!("\"a{i:02}\": [\"{x64}\", \"{x64}\"]"))
        .collect();
    let wide = format!("{{{}}}", wide.join(", "));
    let cases: Vec<(String, String)> = vec![
        // Attributes: an object of names to a string or a list of strings, with limits.
        (
            "SELECT enqueue('q', 'p1', 1500, attributes => '[]')".into(),
            format!("attributes = []: {attributes}"),
        ),
        (
            "SELECT enqueue('q', 'p1', 1500, attributes => NULL)".into(),
            format!("attributes = NULL: {attributes}"),
        ),
        (
            r#"SELECT enqueue('q', 'p1', 1500, attributes => '{"build": 3}')"#.into(),
            "attributes.build = 3: must be a string or a list of strings".into(),
        ),
        (
            r#"SELECT enqueue('q', 'p1', 1500, attributes => '{"language": ["en", 1]}')"#.into(),
            r#"attributes.language = ["en", 1]: must be a string or a list of strings"#.into(),
        ),
        (
            r#"SELECT enqueue('q', 'p1', 1500, attributes => '{"": "x"}')"#.into(),
            "attributes key = '': is required (1-64 characters)".into(),
        ),
        (
            format!(r#"SELECT enqueue('q', 'p1', 1500, attributes => '{{"build": "{x65}"}}')"#),
            format!("attributes.build = '{x65}': is longer than 64 characters"),
        ),
        (
            r"SELECT enqueue('q', 'p1', 1500, attributes => jsonb_build_object('build', E'a\x01'))"
                .into(),
            "attributes.build = 'a\u{1}': contains control characters".into(),
        ),
        (
            "SELECT enqueue('q', 'p1', 1500, attributes =>
                 (SELECT jsonb_object_agg('a' || lpad(i::text, 2, '0'), 'x')
                    FROM generate_series(0, 16) i))"
                .into(),
            format!("attributes = {}: has more than 16 attributes", shown(&attributes17)),
        ),
        (
            "SELECT enqueue('q', 'p1', 1500, attributes =>
                 (SELECT jsonb_object_agg('a' || lpad(i::text, 2, '0'),
                                          jsonb_build_array(repeat('x', 64), repeat('x', 64)))
                    FROM generate_series(0, 15) i))"
                .into(),
            format!(
                "attributes = {}: is {} bytes of JSON; an entry's attributes may take 2048 in all",
                shown(&wide),
                wide.len()
            ),
        ),
        (
            "SELECT enqueue('q', 'p1', 1500, attributes => jsonb_build_object('language',
                 (SELECT jsonb_agg('l' || lpad(i::text, 2, '0')) FROM generate_series(0, 16) i)))"
                .into(),
            format!("attributes.language = {}: has more than 16 values", shown(&list17)),
        ),
        (
            format!(
                r#"SELECT * FROM enqueue_party('q', 'pty', '[{{"player_id": "m1", "skill": 1, "attributes": "x"}}, {two}]')"#
            ),
            format!(r#"members[].attributes = "x": {attributes}"#),
        ),
        (
            r#"SELECT * FROM enqueue_party('r', 'pty', '[{"player_id": "m1", "skill": 1, "attributes": {"build": "1.4"}},
                                                       {"player_id": "m2", "skill": 1, "attributes": {"build": "1.5"}}]')"#
                .into(),
            "members[].attributes.build = 1.4, 1.5: party members must share it (queue r's \
             filters.same)"
                .into(),
        ),
        (
            r#"SELECT request_backfill('q', 's2', '[{"player_id": "m1", "team": 0, "skill": 1, "attributes": {"build": 1}}]', '{2,3}')"#
                .into(),
            "members[].attributes.build = 1: must be a string or a list of strings".into(),
        ),
        // Avoids.
        (
            "SELECT avoid(NULL, 'bob')".into(),
            "player_id = NULL: is required (1-64 characters)".into(),
        ),
        (
            format!("SELECT avoid('alice', '{x65}')"),
            format!("avoided_player_id = '{x65}': is longer than 64 characters"),
        ),
        (
            "SELECT avoid('alice', 'alice')".into(),
            "avoided_player_id = 'alice': is the player: a player cannot avoid themselves".into(),
        ),
        (
            "SELECT avoid('alice', 'bob', interval '10 seconds')".into(),
            "duration = '00:00:10': must be between 1 minute and 365 days (NULL: until unavoid)"
                .into(),
        ),
        (
            "SELECT avoid('alice', 'bob', interval '400 days')".into(),
            "duration = '400 days': must be between 1 minute and 365 days (NULL: until unavoid)"
                .into(),
        ),
        (
            "SELECT unavoid('alice', NULL)".into(),
            "avoided_player_id = NULL: is required (1-64 characters)".into(),
        ),
        (
            r"SELECT unavoid(E'ali	ce', 'bob')".into(),
            "player_id = 'ali\tce': contains control characters".into(),
        ),
        // enqueue: ids, numbers, NULLs.
        (
            "SELECT enqueue('q', NULL, 1500)".into(),
            "player_id = NULL: is required (1-64 characters)".into(),
        ),
        (
            format!("SELECT enqueue('q', '{x65}', 1500)"),
            format!("player_id = '{x65}': is longer than 64 characters"),
        ),
        (
            r"SELECT enqueue('q', E'new\nline', 1500)".into(),
            "player_id = 'new\nline': contains control characters".into(),
        ),
        (
            "SELECT enqueue('q', 'p1', NULL)".into(),
            "skill = NULL: is required (queue q has no built-in rating)".into(),
        ),
        (
            "SELECT enqueue('q', 'p1', 'NaN')".into(),
            "skill = NaN: must be a finite number in [-1000000, 1000000]".into(),
        ),
        (
            "SELECT enqueue('q', 'p1', '-Infinity')".into(),
            "skill = -Infinity: must be a finite number in [-1000000, 1000000]".into(),
        ),
        (
            "SELECT enqueue('q', 'p1', 1500, skill_sigma => 'Infinity')".into(),
            "skill_sigma = Infinity: must be a number in [0, 1000000]".into(),
        ),
        (
            "SELECT enqueue('q', 'p1', 1500, side => 2)".into(),
            "side = 2: must be in [0, 1] (0: first team, 1: second)".into(),
        ),
        // enqueue: JSON of the wrong type, nested wrong types, sizes, ranges.
        (
            "SELECT enqueue('q', 'p1', 1500, latencies => '[]')".into(),
            "latencies = []: must be a JSON object of names to milliseconds".into(),
        ),
        (
            "SELECT enqueue('q', 'p1', 1500, latencies => NULL)".into(),
            "latencies = NULL: must be a JSON object of names to milliseconds".into(),
        ),
        (
            r#"SELECT enqueue('q', 'p1', 1500, latencies => '{"eu": {"ms": 20}}')"#.into(),
            r#"latencies.eu = {"ms": 20}: must be a number of ms"#.into(),
        ),
        (
            r#"SELECT enqueue('q', 'p1', 1500, latencies => '{"eu": [20]}')"#.into(),
            "latencies.eu = [20]: must be a number of ms".into(),
        ),
        (
            format!(r#"SELECT enqueue('q', 'p1', 1500, latencies => '{{"eu": {huge}}}')"#),
            format!(
                "latencies.eu = {}: must be between 0 and 10000 ms",
                shown(&huge)
            ),
        ),
        (
            "SELECT enqueue('q', 'p1', 1500, latencies =>
                 (SELECT jsonb_object_agg('r' || lpad(i::text, 2, '0'), 20)
                    FROM generate_series(0, 32) i))"
                .into(),
            format!("latencies = {}: has more than 32 entries", shown(&map33)),
        ),
        (
            r#"SELECT enqueue('q', 'p1', 1500, latencies => '{"": 20}')"#.into(),
            "latencies key = '': is required (1-64 characters)".into(),
        ),
        (
            r#"SELECT enqueue('q', 'p1', 1500, peer_pings => '{"bob": true}')"#.into(),
            "peer_pings.bob = true: must be a number of ms".into(),
        ),
        (
            r#"SELECT enqueue('q', 'p1', 1500, peer_pings => '"fast"')"#.into(),
            r#"peer_pings = "fast": must be a JSON object of names to milliseconds"#.into(),
        ),
        // Regions: a queue's own, and a dedicated queue's.
        (
            r#"SELECT enqueue('r', 'p1', 1500, latencies => '{"eu": 20, "mars": 20}')"#.into(),
            "latencies = 'mars': unknown region; this queue's regions: eu, us".into(),
        ),
        (
            r#"SELECT enqueue('d', 'p1', 1500, latencies => '{"mars": 40}')"#.into(),
            "latencies = 'mars': unknown region; this queue's regions: eu-west, us-east".into(),
        ),
        // Roles.
        (
            "SELECT enqueue('q', 'p1', 1500, roles => NULL)".into(),
            "roles = NULL: must be an array (empty: any role)".into(),
        ),
        (
            "SELECT enqueue('r', 'p1', 1500, roles => '{{tank},{healer}}')".into(),
            "roles = {{tank},{healer}}: must be a one-dimensional array".into(),
        ),
        (
            "SELECT enqueue('r', 'p1', 1500, roles => '{tank,tank}')".into(),
            "roles = {tank,tank}: names a role twice".into(),
        ),
        (
            "SELECT enqueue('r', 'p1', 1500, roles => '{mage}')".into(),
            "roles = 'mage': unknown role; this queue's roles: tank, healer, dps".into(),
        ),
        // Queues and duplicates.
        (
            "SELECT enqueue('nope', 'p1', 1500)".into(),
            "queue = 'nope': unknown queue; queues: d, q, r".into(),
        ),
        (
            "SELECT enqueue('q', 'alice', 1500)".into(),
            "player_id = 'alice': is already queued in queue q (cancel it first)".into(),
        ),
        // enqueue_party: the array, its objects, their fields.
        (
            "SELECT * FROM enqueue_party('q', 'pty', NULL)".into(),
            "members = NULL: must be a JSON array of members".into(),
        ),
        (
            "SELECT * FROM enqueue_party('q', 'pty', '{}')".into(),
            "members = {}: must be a JSON array of members".into(),
        ),
        (
            "SELECT * FROM enqueue_party('q', 'pty', '[]')".into(),
            format!("members = 0 members: {party_size}"),
        ),
        (
            r#"SELECT * FROM enqueue_party('q', 'pty', '[{"player_id": "m1", "skill": 1500}]')"#
                .into(),
            format!("members = 1 member: {party_size}"),
        ),
        (
            format!("SELECT * FROM enqueue_party('q', 'pty', '[null, {two}]')"),
            "members[] = null: must be a JSON object".into(),
        ),
        (
            format!(
                r#"SELECT * FROM enqueue_party('q', 'pty', '[{{"player_id": 7, "skill": 1}}, {two}]')"#
            ),
            "members[].player_id = 7: must be a string".into(),
        ),
        (
            format!(
                r#"SELECT * FROM enqueue_party('q', 'pty', '[{{"player_id": "m1", "skill": "high"}}, {two}]')"#
            ),
            r#"members[].skill = "high": must be a number"#.into(),
        ),
        (
            format!(
                r#"SELECT * FROM enqueue_party('q', 'pty', '[{{"player_id": "m1", "skill": {huge}}}, {two}]')"#
            ),
            format!(
                "members[].skill = {}: must be in [-1000000, 1000000]",
                shown(&huge)
            ),
        ),
        (
            format!(
                r#"SELECT * FROM enqueue_party('q', 'pty', '[{{"player_id": "m1", "skill": 1, "mmr": 3}}, {two}]')"#
            ),
            "members[].mmr = 3: unknown field (player_id, skill, skill_sigma, latencies, \
             peer_pings, roles, side, attributes)"
                .into(),
        ),
        (
            format!(
                r#"SELECT * FROM enqueue_party('q', 'pty', '[{{"player_id": "m1", "skill": 1, "roles": "tank"}}, {two}]')"#
            ),
            r#"members[].roles = "tank": must be a JSON array of role names"#.into(),
        ),
        (
            format!(
                r#"SELECT * FROM enqueue_party('q', 'pty', '[{{"player_id": "m1", "skill": 1, "latencies": {{"eu": "x"}}}}, {two}]')"#
            ),
            r#"latencies.eu = "x": must be a number of ms"#.into(),
        ),
        (
            format!("SELECT * FROM enqueue_party('q', 'pty', '[{{}}, {two}]')"),
            "player_id = NULL: is required (1-64 characters)".into(),
        ),
        (
            format!("SELECT * FROM enqueue_party('q', 'pty', '[{two}, {two}]')"),
            "members[].player_id = 'm2': appears twice in the party".into(),
        ),
        (
            format!(
                r#"SELECT * FROM enqueue_party('q', NULL, '[{{"player_id": "m1", "skill": 1}}, {two}]')"#
            ),
            "party_id = NULL: is required (1-64 characters)".into(),
        ),
        (
            format!(
                r#"SELECT * FROM enqueue_party('q', 'crew', '[{{"player_id": "m1", "skill": 1}}, {two}]')"#
            ),
            "party_id = 'crew': is already queued in queue q (cancel it first)".into(),
        ),
        // A member already queued: the table's unique index, answered as a refusal.
        (
            format!(
                r#"SELECT * FROM enqueue_party('q', 'pty', '[{{"player_id": "alice", "skill": 1}}, {two}]')"#
            ),
            "members[].player_id = 'alice': is already queued in queue q (cancel it first)"
                .into(),
        ),
        // cancel, keep_alive, queue_channel, cancel_backfill.
        (
            "SELECT cancel(NULL)".into(),
            "player_id = NULL: is required (1-64 characters)".into(),
        ),
        (
            format!("SELECT cancel('{x65}', 'q')"),
            format!("player_id = '{x65}': is longer than 64 characters"),
        ),
        (
            "SELECT cancel('alice', 'nope')".into(),
            "queue = 'nope': unknown queue; queues: d, q, r".into(),
        ),
        (
            "SELECT keep_alive(ARRAY['alice'], 'nope')".into(),
            "queue = 'nope': unknown queue; queues: d, q, r".into(),
        ),
        (
            "SELECT keep_alive(NULL)".into(),
            "player_ids = NULL: must be an array of at most 10000 player ids".into(),
        ),
        (
            "SELECT keep_alive(ARRAY['alice', NULL])".into(),
            "player_ids = {alice,NULL}: must not contain NULL".into(),
        ),
        (
            "SELECT keep_alive((SELECT array_agg('p' || i) FROM generate_series(1, 10001) i))"
                .into(),
            "player_ids = 10001 ids: must be an array of at most 10000 player ids".into(),
        ),
        (
            "SELECT queue_channel(NULL)".into(),
            "queue = NULL: is required (a queue's name)".into(),
        ),
        (
            "SELECT queue_channel('')".into(),
            "queue = '': is required (a queue's name)".into(),
        ),
        (
            "SELECT cancel_backfill(NULL)".into(),
            "request_id = NULL: is required".into(),
        ),
        // accept_match, decline_match: the refusals that need no pending match (those
        // of a ready check itself are asserted whole in ready_check.rs).
        (
            "SELECT accept_match(NULL, 1)".into(),
            "player_id = NULL: is required (1-64 characters)".into(),
        ),
        (
            "SELECT accept_match('alice', NULL)".into(),
            "match_id = NULL: is required".into(),
        ),
        (
            "SELECT decline_match('alice', 999)".into(),
            "match_id = 999: is not a match of player 'alice' of this login".into(),
        ),
        // request_backfill: the queue, the session, the slots, the lifetime, the members.
        (
            r#"SELECT request_backfill(NULL, 's2', '[{"player_id": "m1", "team": 0, "skill": 1}]', '{2,3}')"#
                .into(),
            "queue = NULL: unknown queue; queues: d, q, r".into(),
        ),
        (
            r#"SELECT request_backfill('q', NULL, '[{"player_id": "m1", "team": 0, "skill": 1}]', '{2,3}')"#
                .into(),
            "session_id = NULL: is required (1-64 characters)".into(),
        ),
        (
            r#"SELECT request_backfill('q', 's2', '[{"player_id": "m1", "team": 0, "skill": 1}]', NULL)"#
                .into(),
            format!("open_slots = NULL: {slots}"),
        ),
        (
            r#"SELECT request_backfill('q', 's2', '[{"player_id": "m1", "team": 0, "skill": 1}]', '{{2},{3}}')"#
                .into(),
            format!("open_slots = {{{{2}},{{3}}}}: {slots}"),
        ),
        (
            r#"SELECT request_backfill('q', 's2', '[{"player_id": "m1", "team": 0, "skill": 1}]', '{{2,3},{2,3}}')"#
                .into(),
            format!("open_slots = {{{{2,3}},{{2,3}}}}: {slots}"),
        ),
        (
            r#"SELECT request_backfill('q', 's2', '[{"player_id": "m1", "team": 0, "skill": 1}]', '{{{2}},{{3}}}')"#
                .into(),
            format!("open_slots = {{{{{{2}}}},{{{{3}}}}}}: {slots}"),
        ),
        (
            r#"SELECT request_backfill('q', 's2', '[{"player_id": "m1", "team": 0, "skill": 1}]', '[5:6]={2,3}')"#
                .into(),
            format!("open_slots = [5:6]={{2,3}}: {slots}"),
        ),
        (
            r#"SELECT request_backfill('q', 's2', '[{"player_id": "m1", "team": 0, "skill": 1}]', '{2,9}')"#
                .into(),
            "open_slots[1] = 9: must be between 0 and 3 (team_size)".into(),
        ),
        (
            r#"SELECT request_backfill('q', 's2', '[{"player_id": "m1", "team": 0, "skill": 1}]', '{0,0}')"#
                .into(),
            "open_slots = {0,0}: has no open slot (nothing to backfill)".into(),
        ),
        (
            r#"SELECT request_backfill('q', 's2', '[{"player_id": "m1", "team": 0, "skill": 1}]', '{2,3}', NULL)"#
                .into(),
            "expires_in = NULL: must be between 1 second and 1 hour".into(),
        ),
        (
            r#"SELECT request_backfill('q', 's2', '[{"player_id": "m1", "team": 0, "skill": 1}]', '{2,3}', '2 hours')"#
                .into(),
            "expires_in = '02:00:00': must be between 1 second and 1 hour".into(),
        ),
        (
            "SELECT request_backfill('q', 's2', '{}', '{2,3}')".into(),
            "members = {}: must be a JSON array of the session's current members".into(),
        ),
        (
            r#"SELECT request_backfill('q', 's2', '[{"player_id": "m1", "team": 0.5, "skill": 1}]', '{2,3}')"#
                .into(),
            "members[].team = 0.5: must be a team index from 0 to 1 (queue q has 2 teams)".into(),
        ),
        (
            r#"SELECT request_backfill('q', 's2', '[{"player_id": "m1", "team": "0", "skill": 1}]', '{2,3}')"#
                .into(),
            r#"members[].team = "0": must be a number"#.into(),
        ),
        (
            r#"SELECT request_backfill('q', 's2', '[{"player_id": "m1", "team": 0, "skill": 1}]', '{1,3}')"#
                .into(),
            "open_slots[0] = 1: team 0 has 1 member: members + open slots must be 3 \
             (team_size of queue q)"
                .into(),
        ),
        (
            r#"SELECT request_backfill('q', 's2', '[{"player_id": "m1", "team": 0, "skill": 1},
                                                   {"player_id": "m1", "team": 1, "skill": 1}]', '{2,2}')"#
                .into(),
            "members[].player_id = 'm1': appears twice in the session".into(),
        ),
        // The session's open request: the table's unique index, answered as a refusal.
        (
            r#"SELECT request_backfill('q', 's1', '[{"player_id": "m1", "team": 0, "skill": 1}]', '{2,3}')"#
                .into(),
            "session_id = 's1': already has an open backfill request in queue q (cancel it first)"
                .into(),
        ),
    ];
    cases
}

/// (statement, SQLSTATE, message) of texts PostgreSQL cannot read as the parameter's
/// type: its own message, in class 22 too.
const UNPARSED: &[(&str, &str, &str)] = &[
    (
        "SELECT enqueue('q', 'p1', 'abc')",
        "22P02",
        r#"invalid input syntax for type double precision: "abc""#,
    ),
    (
        "SELECT enqueue('q', 'p1', 1500, latencies => 'moon')",
        "22P02",
        "invalid input syntax for type json",
    ),
    (
        "SELECT enqueue('q', 'p1', 1500, roles => 'tank')",
        "22P02",
        r#"malformed array literal: "tank""#,
    ),
    (
        "SELECT * FROM enqueue_party('q', 'pty', 'not json')",
        "22P02",
        "invalid input syntax for type json",
    ),
    (
        "SELECT keep_alive('alice')",
        "22P02",
        r#"malformed array literal: "alice""#,
    ),
    (
        "SELECT avoid('alice', 'bob', 'soon')",
        "22007",
        r#"invalid input syntax for type interval: "soon""#,
    ),
    (
        "SELECT cancel_backfill('abc')",
        "22P02",
        r#"invalid input syntax for type bigint: "abc""#,
    ),
    (
        r#"SELECT request_backfill('q', 's2', '[{"player_id": "m1", "team": 0, "skill": 1}]', '{2,3}', 'soon')"#,
        "22007",
        r#"invalid input syntax for type interval: "soon""#,
    ),
];

#[tokio::test]
async fn every_malformed_input_to_a_client_function_is_refused_in_class_22() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    publish(
        db,
        &Config::from_toml_str(QUEUES).expect("valid config"),
        "refusals",
    )
    .await;
    // The client functions and the game server's (backfill), as one login in both roles.
    let (_, client) = client_server_login(&tdb, 1).await;
    let (_, other) = client_login(&tdb, 1).await;
    // What the refusals must leave alone: this login's players, party and backfill
    // request, and another login's player.
    for sql in [
        "SELECT enqueue('q', 'alice', 1500)",
        r#"SELECT * FROM enqueue_party('q', 'crew', '[{"player_id": "bob", "skill": 1500},
                                                    {"player_id": "carol", "skill": 1450}]')"#,
        r#"SELECT request_backfill('q', 's1', '[{"player_id": "m1", "team": 0, "skill": 1}]', '{2,3}')"#,
    ] {
        sqlx::query(sql).execute(&client).await.unwrap();
    }
    sqlx::query("SELECT enqueue('q', 'zoe', 1500)")
        .execute(&other)
        .await
        .unwrap();

    let checked = checked();
    assert!(
        checked.len() + UNPARSED.len() >= 30,
        "{} cases",
        checked.len() + UNPARSED.len()
    );
    for function in CLIENT_FUNCTIONS {
        let call = format!(" {function}(");
        assert!(
            checked.iter().any(|(sql, _)| sql.contains(&call)),
            "{function}: no checked case"
        );
    }

    let before = fingerprint(db).await;
    let mut failures = Vec::new();
    for (sql, message) in &checked {
        let (code, got) = refusal(&client, sql).await;
        if code != "22023" || &got != message {
            failures.push(format!(
                "{sql}\n  expected 22023 {message}\n  got      {code} {got}"
            ));
        }
    }
    for (sql, code, message) in UNPARSED {
        let (got_code, got) = refusal(&client, sql).await;
        assert!(got_code.starts_with("22"), "{sql}: {got_code} {got}");
        if got_code != *code || got != *message {
            failures.push(format!(
                "{sql}\n  expected {code} {message}\n  got      {got_code} {got}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(fingerprint(db).await, before, "a refusal wrote something");

    // Inputs close to a refusal are served: a team written 1.0.
    let id: i64 = sqlx::query_scalar(
        r#"SELECT request_backfill('q', 's3', '[{"player_id": "m7", "team": 1.0, "skill": 1}]', '{3,2}')"#,
    )
    .fetch_one(&client)
    .await
    .unwrap();
    let slots: Vec<i32> =
        sqlx::query_scalar("SELECT open_slots FROM backfill_requests WHERE request_id = $1")
            .bind(id)
            .fetch_one(db)
            .await
            .unwrap();
    assert_eq!(slots, [3, 2]);
}

/// A dedicated-server queue checks regions against its own; the config refuses one that
/// lists none (tests/it/config.rs). Its known regions are accepted.
#[tokio::test]
async fn a_dedicated_queue_accepts_its_regions_only() {
    let tdb = fresh_db().await;
    publish(
        &tdb.pool,
        &Config::from_toml_str(QUEUES).unwrap(),
        "refusals",
    )
    .await;
    let (_, client) = client_login(&tdb, 1).await;
    sqlx::query(
        r#"SELECT enqueue('d', 'p1', 1500, latencies => '{"eu-west": 30, "us-east": 90}')"#,
    )
    .execute(&client)
    .await
    .unwrap();
    let (code, message) = refusal(
        &client,
        r#"SELECT enqueue('d', 'p2', 1500, latencies => '{"eu-west": 30, "mars": 900}')"#,
    )
    .await;
    assert_eq!(
        (code.as_str(), message.as_str()),
        (
            "22023",
            "latencies = 'mars': unknown region; this queue's regions: eu-west, us-east"
        )
    );
}

/// One refusal example of the docs: the statement, and `ERROR:  SQLSTATE: message` as
/// psql prints it with `\set VERBOSITY verbose`.
#[derive(Debug)]
struct Example {
    file: &'static str,
    statement: String,
    code: String,
    message: String,
}

/// Runs the SQL blocks of a doc that show a refusal, statement by statement in order:
/// a statement followed by `-- ERROR:  CODE: message` must fail with exactly that, the
/// others must run. Every line of those blocks shaped like a refusal (`field = value:
/// rule`) must be such an `ERROR:` line.
fn doc_examples(file: &'static str, text: &str) -> Vec<(String, Option<Example>)> {
    let refusal_shape = regex_lite(text);
    let mut steps: Vec<(String, Option<Example>)> = Vec::new();
    let mut in_block = false;
    let mut block: Vec<&str> = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            if in_block {
                if block
                    .iter()
                    .any(|l| l.trim_start().starts_with("-- ERROR:"))
                {
                    steps.extend(block_steps(file, &block));
                }
                block.clear();
            }
            in_block = !in_block;
            continue;
        }
        if in_block {
            block.push(line);
        }
    }
    for (i, line) in refusal_shape.iter().enumerate() {
        assert!(
            steps
                .iter()
                .any(|(_, e)| e.as_ref().is_some_and(|e| line.contains(&e.message))),
            "{file}: refusal example {i} is not after a statement a test runs: {line}"
        );
    }
    steps
}

/// The lines of `text`'s code blocks shaped like a refusal message.
fn regex_lite(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut in_block = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            continue;
        }
        let t = line.trim_start_matches(['-', ' ']).trim();
        let t = t.strip_prefix("ERROR:").map(str::trim).unwrap_or(t);
        let field_end = t.find(" = ");
        if in_block
            && !t.contains('#')
            && let Some(end) = field_end
            && end > 0
            && t[..end]
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_.[]-".contains(c))
            && t[end..].contains(": ")
            && !t.starts_with("SELECT")
        {
            found.push(line.to_string());
        }
    }
    found
}

fn block_steps(file: &'static str, block: &[&str]) -> Vec<(String, Option<Example>)> {
    let mut steps: Vec<(String, Option<Example>)> = Vec::new();
    let mut open = String::new();
    for line in block {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("-- ERROR:") {
            let rest = rest.trim();
            let (code, message) = rest
                .split_once(": ")
                .unwrap_or_else(|| panic!("{file}: `-- ERROR:  CODE: message`: {t}"));
            let last = steps
                .last_mut()
                .unwrap_or_else(|| panic!("{file}: an ERROR line after no statement: {t}"));
            last.1 = Some(Example {
                file,
                statement: last.0.clone(),
                code: code.to_string(),
                message: message.to_string(),
            });
            continue;
        }
        if t.starts_with("--") || t.is_empty() {
            continue;
        }
        if !open.is_empty() {
            open.push('\n');
        }
        open.push_str(t);
        if t.ends_with(';') {
            steps.push((std::mem::take(&mut open), None));
        }
    }
    steps
}

#[tokio::test]
async fn every_refusal_example_in_the_docs_is_what_the_database_answers() {
    let docs: [(&'static str, &str); 2] = [
        ("README.md", include_str!("../../README.md")),
        (
            "docs/client-guide.md",
            include_str!("../../docs/client-guide.md"),
        ),
    ];
    let mut examples = 0;
    for (file, text) in docs {
        let steps = doc_examples(file, text);
        // Each doc's story on a database of its own, with the shipped config's queues.
        let tdb = fresh_db().await;
        publish(&tdb.pool, &Config::embedded_default(), "refusals").await;
        // A backend that runs its own game servers: the guide's backfill examples too.
        let (_, client) = client_server_login(&tdb, 1).await;
        for (statement, example) in steps {
            let result = sqlx::query(sqlx::AssertSqlSafe(statement.clone()))
                .execute(&client)
                .await;
            match (example, result) {
                (None, Ok(_)) => {}
                (None, Err(e)) => panic!("{file}: {statement}\n  fails: {e}"),
                (Some(e), Ok(_)) => panic!("{}: {}\n  is not refused", e.file, e.statement),
                (Some(e), Err(err)) => {
                    let (code, message) = db_error(&err);
                    assert_eq!(
                        (code.as_str(), message.as_str()),
                        (e.code.as_str(), e.message.as_str()),
                        "{}: {}",
                        e.file,
                        e.statement
                    );
                    examples += 1;
                }
            }
        }
    }
    assert!(examples >= 6, "{examples} examples");
}

/// l: at most 2 queued entries and 1 open backfill request per login. t: an enqueue rate
/// a test cannot refill (a burst of 3, the largest party). Both: at most 2 avoids per
/// login (avoid() takes the largest of the active queues').
const QUOTA_QUEUES: &str = r#"
default_queue = "l"
[queues.l]
[queues.l.limits]
max_queued_per_login = 2
max_backfill_requests_per_login = 1
max_avoids_per_login = 2
[queues.t]
[queues.t.limits]
enqueue_rate = 0.001
enqueue_burst = 3.0
max_avoids_per_login = 2
"#;

/// A login over a quota is refused in class 22, `field = value: rule`, writes nothing,
/// and another login is served as before.
#[tokio::test]
async fn a_login_over_its_quota_is_refused_and_nobody_else_is() {
    let tdb = fresh_db().await;
    let db = &tdb.pool;
    publish(
        db,
        &Config::from_toml_str(QUOTA_QUEUES).expect("valid config"),
        "refusals",
    )
    .await;
    let (_, client) = client_server_login(&tdb, 1).await;
    let (_, other) = client_server_login(&tdb, 1).await;
    for sql in [
        "SELECT enqueue('l', 'a', 1500)",
        "SELECT enqueue('l', 'b', 1500)",
        "SELECT enqueue('t', 'a', 1500)",
        r#"SELECT * FROM enqueue_party('t', 'crew', '[{"player_id": "b", "skill": 1},
                                                    {"player_id": "c", "skill": 1}]')"#,
        r#"SELECT request_backfill('l', 's1', '[{"player_id": "m1", "team": 0, "skill": 1}]', '{2,3}')"#,
        "SELECT avoid('a', 'x')",
        "SELECT avoid('b', 'y', interval '1 day')",
    ] {
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .execute(&client)
            .await
            .unwrap();
    }
    let cases = [
        (
            "SELECT enqueue('l', 'c', 1500)",
            "queue = 'l': this login has 2 of its 2 queued entries (limits.max_queued_per_login); wait for matches or cancel some",
        ),
        (
            r#"SELECT * FROM enqueue_party('l', 'duo', '[{"player_id": "d", "skill": 1},
                                                       {"player_id": "e", "skill": 1}]')"#,
            "queue = 'l': this login has 2 of its 2 queued entries (limits.max_queued_per_login); wait for matches or cancel some",
        ),
        (
            "SELECT enqueue('t', 'd', 1500)",
            "queue = 't': this connection enqueues more than 0.001 players a second (limits.enqueue_rate); retry later",
        ),
        (
            r#"SELECT request_backfill('l', 's2', '[{"player_id": "m1", "team": 0, "skill": 1}]', '{2,3}')"#,
            "session_id = 's2': this login has 1 open backfill requests in queue l, its quota (limits.max_backfill_requests_per_login); cancel one or wait for one to end",
        ),
        (
            "SELECT avoid('c', 'x')",
            "player_id = 'c': this login has 2 avoids (limits.max_avoids_per_login); unavoid some or let them expire",
        ),
    ];
    let before = fingerprint(db).await;
    for (sql, message) in cases {
        let (code, got) = refusal(&client, sql).await;
        assert_eq!((code.as_str(), got.as_str()), ("22023", message), "{sql}");
    }
    assert_eq!(fingerprint(db).await, before, "a refusal wrote something");
    // The other login has quotas of its own, untouched by the first one's.
    for sql in [cases[0].0, cases[2].0, cases[3].0, cases[4].0] {
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .execute(&other)
            .await
            .unwrap_or_else(|e| panic!("{sql} as another login: {e}"));
    }
    // A cancel frees a place in the quota.
    let cancelled: i32 = sqlx::query_scalar("SELECT cancel('a', 'l')")
        .fetch_one(&client)
        .await
        .unwrap();
    assert_eq!(cancelled, 1);
    sqlx::query("SELECT enqueue('l', 'e', 1500)")
        .execute(&client)
        .await
        .unwrap();
    // Renewing an avoid adds none: it is served at the quota; an unavoid frees a place.
    sqlx::query("SELECT avoid('b', 'y', interval '7 days')")
        .execute(&client)
        .await
        .unwrap();
    let removed: bool = sqlx::query_scalar("SELECT unavoid('a', 'x')")
        .fetch_one(&client)
        .await
        .unwrap();
    assert!(removed);
    sqlx::query(sqlx::AssertSqlSafe(cases[4].0))
        .execute(&client)
        .await
        .unwrap();
    // The daemon and operators have no quota.
    sqlx::query("SELECT enqueue('l', 'x', 1500), enqueue('l', 'y', 1500), enqueue('l', 'z', 1500)")
        .execute(db)
        .await
        .unwrap();
    sqlx::query("SELECT avoid('a', 'x'), avoid('b', 'x'), avoid('c', 'x')")
        .execute(db)
        .await
        .unwrap();
}

/// The ready check's refusals, each needing a match in some state: a final match, a
/// pending one already declined, one past its time to answer, one cancelled, one ready.
/// Each is class 22 with its whole text, and changes nothing (match_players' answers
/// included).
#[tokio::test]
async fn every_ready_check_refusal_needs_its_match_and_changes_nothing() {
    use std::sync::Arc;
    use std::time::Duration;

    use matchmaker::daemon::clock::ManualClock;
    use matchmaker::daemon::round::RoundRunner;
    use matchmaker::daemon::worker::{QueueWorker, StepOutcome};

    let tdb = fresh_db().await;
    let db = &tdb.pool;
    // Rounds start as soon as 6 players wait (the clock never moves): rc has a 4 s ready
    // check, f none.
    let config = Config::from_toml_str(
        "default_queue = \"rc\"\n\
         [queues.rc.round]\nevery = \"1h\"\nbudget = \"50ms\"\ntarget_pool = 6\n\
         [queues.rc.ready_check]\ntimeout = \"4s\"\n\
         [queues.f.round]\nevery = \"1h\"\nbudget = \"50ms\"\ntarget_pool = 6\n",
    )
    .expect("valid config");
    let clock = ManualClock::new(chrono::Utc::now());
    let worker = |queue: &str| {
        QueueWorker::new(
            queue,
            "refusals",
            RoundRunner::new(db.clone(), Arc::new(clock.clone())),
            Arc::new(config.queues[queue].clone()),
            secs(15),
        )
    };
    let (mut rc, mut f) = (worker("rc"), worker("f"));
    rc.step().await.unwrap();
    f.step().await.unwrap();
    let (_, client) = client_login(&tdb, 2).await;
    // Six players in `queue` named prefix0..5, matched by the next look; their match.
    let matched = async |w: &mut QueueWorker, queue: &str, prefix: &str| -> i64 {
        for i in 0..6 {
            sqlx::query("SELECT enqueue($1, $2, $3)")
                .bind(queue)
                .bind(format!("{prefix}{i}"))
                .bind(1500.0 + i as f64)
                .execute(&client)
                .await
                .unwrap();
        }
        let outcome = w.step().await.unwrap();
        assert!(matches!(outcome, StepOutcome::Ran(_)), "{outcome:?}");
        sqlx::query_scalar("SELECT match_id FROM player_status WHERE queue = $1 AND player_id = $2")
            .bind(queue)
            .bind(format!("{prefix}0"))
            .fetch_one(&client)
            .await
            .unwrap()
    };
    let answers = async || -> String {
        sqlx::query_scalar(
            "SELECT concat_ws(' / ',
                (SELECT md5(coalesce(string_agg(mp::text, ',' ORDER BY match_id, entry_id), ''))
                   FROM match_players mp),
                (SELECT md5(coalesce(string_agg(m::text, ',' ORDER BY match_id), ''))
                   FROM matches m))",
        )
        .fetch_one(db)
        .await
        .unwrap()
    };
    let refused = async |sql: String, message: String| {
        let (before, before_answers) = (fingerprint(db).await, answers().await);
        let (code, text) = refusal(&client, &sql).await;
        assert_eq!(
            (code.as_str(), text.as_str()),
            ("22023", message.as_str()),
            "{sql}"
        );
        assert_eq!(fingerprint(db).await, before, "{sql} wrote nothing");
        assert_eq!(answers().await, before_answers, "{sql} answered nothing");
    };

    let fin = matched(&mut f, "f", "f").await;
    refused(
        format!("SELECT accept_match('f0', {fin})"),
        format!("match_id = {fin}: has no ready check: the match is final"),
    )
    .await;

    // Declined, then answered again: refused; once cancelled, refused with the reason.
    let m1 = matched(&mut rc, "rc", "a").await;
    let said: String = sqlx::query_scalar("SELECT decline_match('a0', $1)")
        .bind(m1)
        .fetch_one(&client)
        .await
        .unwrap();
    assert_eq!(said, "declined");
    refused(
        format!("SELECT accept_match('a0', {m1})"),
        format!("match_id = {m1}: player 'a0' has declined this match already"),
    )
    .await;
    rc.step().await.unwrap();
    refused(
        format!("SELECT accept_match('a1', {m1})"),
        format!(
            "match_id = {m1}: was cancelled by its ready check; read player_status for player 'a1'"
        ),
    )
    .await;

    // Every player accepts: ready, too late to decline.
    let m2 = matched(&mut rc, "rc", "b").await;
    for i in 0..6 {
        sqlx::query("SELECT accept_match($1, $2)")
            .bind(format!("b{i}"))
            .bind(m2)
            .execute(&client)
            .await
            .unwrap();
    }
    rc.step().await.unwrap();
    refused(
        format!("SELECT decline_match('b0', {m2})"),
        format!("match_id = {m2}: is ready: every player accepted (too late to decline)"),
    )
    .await;

    // Past its time to answer, before the leader has cancelled it.
    let m3 = matched(&mut rc, "rc", "c").await;
    let answer_by: String = sqlx::query_scalar(
        "SELECT to_char(answer_by AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')
           FROM matches WHERE match_id = $1",
    )
    .bind(m3)
    .fetch_one(db)
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(4500)).await;
    refused(
        format!("SELECT accept_match('c0', {m3})"),
        format!(
            "match_id = {m3}: the time to answer ended at {answer_by}; the match is being cancelled"
        ),
    )
    .await;
}
