-- Leases and replicas: which daemon runs each queue's rounds. Several replicas of
-- `matchmaker run` share the queues: each registers in replicas and asks for a lease on
-- its fair share of them; a lease's holder alone commits the queue's rounds (0005), its
-- term fencing every commit.


-- ---- leases: who runs each queue's rounds -----------------------------------------------
-- Leader election per queue (River's river_leader, Oban's peers): the holder renews
-- expires_at on a timer; anyone may take an expired lease, which bumps the term. A round
-- commits only while its (holder, term) still owns an unexpired lease, so a paused or
-- partitioned old leader cannot write.
CREATE TABLE leases (
    queue       text PRIMARY KEY,
    holder      text NOT NULL,
    term        bigint NOT NULL,
    acquired_at timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL
);

-- ---- replicas: the running daemons ------------------------------------------------------
-- Each replica registers here so that each can count the live ones and lead its fair
-- share of the queues it lists, instead of the first replica taking every lease (Oban
-- keeps the same kind of table, oban_peers). A replica writes its own row at every pass of
-- its leadership loop (every daemon.lease_renew), with times from the database's clock
-- like the leases'. Live = expires_at in the future. A replica that stops deletes its
-- row; one that dies is no longer counted once its row expires (daemon.lease_ttl after
-- its last heartbeat, which is never after its leases expire: it heartbeats before it
-- renews them). This table only decides who should ask for a lease, never who holds one:
-- leadership stays in leases, so the term fencing of every commit is unchanged.
CREATE TABLE replicas (
    -- The replica's name, as in leases.holder (`matchmaker run --holder`; default
    -- hostname-pid).
    replica      text PRIMARY KEY
        CONSTRAINT replica_must_not_be_empty CHECK (replica <> ''),
    started_at   timestamptz NOT NULL,
    heartbeat_at timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    -- The queues its config lists: the only queues it may lead. Replicas with different
    -- configs (a rolling config change) share each queue among those that list it.
    queues       text[] NOT NULL DEFAULT '{}',
    -- The binary's version, for the operator during a rolling upgrade.
    version      text NOT NULL DEFAULT ''
);
COMMENT ON TABLE replicas IS
    'One row per running daemon replica, heartbeated every daemon.lease_renew by the '
    'database clock; live while expires_at > now(). Each live replica leads about its '
    'share of the queues it lists; leases stays the only proof of leadership.';

-- Who leads what, per replica (`matchmaker status` reads the same): live replicas,
-- expired rows not yet removed, and holders of live leases that never registered.
CREATE VIEW replica_leadership AS
SELECT coalesce(r.replica, l.holder) AS replica,
       coalesce(r.expires_at > now(), false) AS live,
       r.started_at,
       r.heartbeat_at,
       r.expires_at,
       coalesce(r.queues, '{}') AS serves,
       coalesce(l.queues, '{}') AS leads,
       r.version
  FROM replicas r
  FULL JOIN (SELECT holder, array_agg(queue ORDER BY queue) AS queues
               FROM leases
              WHERE expires_at > now()
              GROUP BY holder) l
    ON l.holder = r.replica;
COMMENT ON VIEW replica_leadership IS
    'Per replica: live or not, last heartbeat, the queues it lists (serves) and the '
    'queues whose live lease it holds (leads).';

-- ---- Privileges -------------------------------------------------------------------------
REVOKE ALL ON leases, replicas, replica_leadership FROM PUBLIC;
-- DELETE on replicas: a replica deletes its own row at shutdown, and rows long expired.
GRANT SELECT, INSERT, UPDATE, DELETE ON replicas TO matchmaker_daemon;
GRANT SELECT, INSERT, UPDATE ON leases TO matchmaker_daemon;
GRANT SELECT ON replica_leadership TO matchmaker_daemon;
GRANT SELECT ON leases, replicas, replica_leadership TO matchmaker_ops;
