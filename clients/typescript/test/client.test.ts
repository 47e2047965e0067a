/**
 * The client against a real PostgreSQL and a real daemon (see harness.ts). Every call
 * runs as a client or server login made for the test.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, describe, it } from 'node:test';

import { Pool } from 'pg';

import {
  EventStream,
  KeepAlive,
  MatchEvent,
  MatchmakerClient,
  MatchmakerEvent,
  PermissionDenied,
  Refusal,
  Unavailable,
} from '../src';
import { Matchmaker, PACKAGE_DIR, pid, waitFor } from './harness';

let mm: Matchmaker;
const pools: Pool[] = [];
const streams: EventStream[] = [];

before(async () => {
  mm = await Matchmaker.start();
}, { timeout: 180_000 });

after(async () => {
  for (const s of streams) await s.close();
  for (const p of pools) await p.end().catch(() => {});
  if (mm) await mm.stop();
}, { timeout: 120_000 });

/** A fresh login of `role`, with a pool and a client on it. */
async function login(role: 'matchmaker_client' | 'matchmaker_server' = 'matchmaker_client') {
  const url = await mm.login(role);
  const pool = mm.pool(url);
  pools.push(pool);
  return { url, pool, client: new MatchmakerClient(pool) };
}

async function openStream(pool: Pool, queues: string[]): Promise<EventStream> {
  const stream = await EventStream.open({ connect: pool, queues });
  streams.push(stream);
  return stream;
}

/** Match events from `stream` until every one of `players` was named; by player. */
async function matchesOf(
  stream: EventStream,
  players: string[],
  types: MatchEvent['type'][] = ['match'],
  timeoutMs = 30_000,
): Promise<Map<string, MatchEvent>> {
  const found = new Map<string, MatchEvent>();
  const deadline = Date.now() + timeoutMs;
  while (players.some((p) => !found.has(p))) {
    const left = deadline - Date.now();
    const event = left > 0 ? await stream.next(left) : null;
    if (!event) assert.fail(`no ${types.join('/')} event for ${players.filter((p) => !found.has(p))} within ${timeoutMs} ms`);
    if ((event.type === 'match' || event.type === 'ready_check' || event.type === 'ready' || event.type === 'backfill') && types.includes(event.type)) {
      for (const s of event.players) if (players.includes(s.playerId)) found.set(s.playerId, event);
    }
  }
  return found;
}

describe('queues', () => {
  it('reads queue_catalog as typed objects', { timeout: 120_000 }, async () => {
    const { client } = await login();
    const queues = await client.queues();
    const byName = new Map(queues.map((q) => [q.queue, q]));
    const duo = byName.get('ts_duo');
    assert.ok(duo, `ts_duo in ${[...byName.keys()]}`);
    assert.equal(duo.teams, 2);
    assert.equal(duo.teamSize, 2);
    assert.deepEqual(duo.formats, ['2v2']);
    assert.equal(duo.network, 'peer_to_peer');
    assert.equal(duo.ticketTtlS, 300);
    assert.equal(duo.keepAliveEveryS, 100);
    assert.equal(duo.ratingPool, 'ts_duo', 'a rated queue names its pool');
    assert.equal(duo.readyTimeoutS, null);
    assert.equal(byName.get('ts_rc')?.readyTimeoutS, 20);
    assert.deepEqual(byName.get('ts_srv')?.regions, ['eu', 'us']);
    assert.equal(byName.get('ts_srv')?.network, 'dedicated');
    const hold = await client.queue('ts_hold');
    assert.equal(hold?.ratingPool, null);
    assert.equal(await client.queue('no_such_queue'), null);
    const cd = await client.countdown('ts_hold');
    assert.equal(cd?.queue, 'ts_hold');
    assert.ok(cd?.waitingFor, 'the countdown says what it waits for');
    const channel = await client.queueChannel('ts_hold');
    assert.match(channel, /^matchmaker:[0-9a-f]{40}$/);
  });
});

describe('players', () => {
  it('enqueues, keeps alive, reads the status, cancels', { timeout: 120_000 }, async () => {
    const { client } = await login();
    const alice = pid('alice');
    const entry = await client.enqueue('ts_hold', alice, { skill: 1500, latencies: { eu: 20 }, side: 0.5, attributes: { build: '1.0' } });
    assert.ok(Number.isInteger(entry) && entry > 0, `entry id ${entry}`);
    const status = await client.status(alice, 'ts_hold');
    assert.ok(status);
    assert.equal(status.status, 'queued');
    assert.equal(status.entryId, entry);
    assert.equal(status.reason, null);
    assert.ok(status.expiresAt instanceof Date && status.expiresAt.getTime() > Date.now());
    assert.ok(status.enqueuedAt instanceof Date);
    assert.ok(['schedule', 'min_pool', 'players', 'round'].includes(status.waitingFor ?? ''), `${status.waitingFor}`);
    assert.equal(await client.keepAlive([alice, pid('ghost')], 'ts_hold'), 1, 'only alice is queued');
    assert.equal(await client.cancel(alice, 'ts_hold'), 1);
    const cancelled = await client.status(alice, 'ts_hold');
    assert.equal(cancelled?.status, 'cancelled');
    assert.equal(cancelled?.reason, 'cancelled by the client');
    assert.equal(await client.cancel(alice, 'ts_hold'), 0, 'nothing left to cancel');
    assert.equal(await client.keepAlive([alice], null), 0);
    // Ids are the login's own: another login sees none of alice.
    const other = await login();
    assert.deepEqual(await other.client.playerStatus({ playerIds: [alice] }), []);
  });

  it('sends the reads of views to the standby source and every write to the primary', { timeout: 120_000 }, async () => {
    // The "standby" is a read-only session of another login: it serves that login's view
    // (none of this login's players), and a write sent there would fail in class 25.
    const { pool } = await login();
    const reader = await mm.login('matchmaker_client');
    const standby = new Pool({ connectionString: reader, options: '-c default_transaction_read_only=on' });
    pools.push(standby);
    const split = new MatchmakerClient(pool, { reads: standby });
    const bob = pid('bob');
    await split.enqueue('ts_hold', bob, { skill: 1500, latencies: { eu: 20 } });
    assert.ok(await new MatchmakerClient(pool).status(bob, 'ts_hold'), 'the enqueue went to the primary');
    assert.equal(await split.status(bob, 'ts_hold'), null, 'the read went to the primary source');
    assert.ok(await split.queue('ts_hold'), 'the catalog is served by the standby');
    assert.equal(await split.cancel(bob, 'ts_hold'), 1);
  });

  it('enqueues a party, whole, and cancels it with one member', { timeout: 120_000 }, async () => {
    const { client } = await login();
    const [bob, carol] = [pid('bob'), pid('carol')];
    const party = await client.enqueueParty('ts_hold', 'crew', [
      { playerId: bob, skill: 1400, latencies: { eu: 30 } },
      { playerId: carol, skill: 1550, latencies: { eu: 41, us: 80 }, roles: [] },
    ]);
    assert.deepEqual(party.map((p) => p.playerId).sort(), [bob, carol].sort());
    const rows = await client.playerStatus({ queue: 'ts_hold' });
    assert.deepEqual(rows.map((r) => [r.playerId, r.partyId, r.status]).sort(), [
      [bob, 'crew', 'queued'],
      [carol, 'crew', 'queued'],
    ].sort());
    assert.equal(await client.keepAlive([bob], 'ts_hold'), 2, 'one member refreshes the party');
    assert.equal(await client.cancel(carol), 2, 'cancelling one member cancels the party');
    assert.equal((await client.status(bob, 'ts_hold'))?.reason, `party member ${carol} cancelled`);
  });

  it('keeps tickets alive on a timer', { timeout: 120_000 }, async () => {
    const { client } = await login();
    const [kept, left] = [pid('kept'), pid('left')];
    await client.enqueue('ts_short', kept, { skill: 1500 });
    await client.enqueue('ts_short', left, { skill: 1500 });
    const keeper = await KeepAlive.start(client, { queue: 'ts_short', players: [kept] });
    try {
      assert.equal(keeper.everyMs, 1000, "the queue's keep_alive_every (ttl 3 s / 3)");
      await waitFor('the untended ticket to expire', async () => (await client.status(left, 'ts_short'))?.status === 'expired', 10_000);
      await new Promise((r) => setTimeout(r, 3500));
      assert.equal((await client.status(kept, 'ts_short'))?.status, 'queued', 'kept alive past its ttl');
      assert.equal(keeper.lastRefreshed, 1);
      assert.equal(keeper.lastError, null);
    } finally {
      await keeper.stop();
    }
    assert.match((await client.status(left, 'ts_short'))?.reason ?? '', /keep_alive/);
    await client.cancel(kept);
  });
});

describe('refusals and errors', () => {
  it('parses a refusal into field, value and rule', { timeout: 120_000 }, async () => {
    const { client } = await login();
    await assert.rejects(client.enqueue('ts_hold', pid('bob'), { skill: 1500, latencies: { eu: -3 } }), (err: unknown) => {
      assert.ok(err instanceof Refusal, `${err}`);
      assert.equal(err.sqlstate, '22023');
      assert.equal(err.field, 'latencies.eu');
      assert.equal(err.value, '-3');
      assert.equal(err.rule, 'must be between 0 and 10000 ms');
      return true;
    });
    await assert.rejects(client.enqueue('no_such_queue', 'bob', { skill: 1 }), (err: unknown) => {
      assert.ok(err instanceof Refusal);
      assert.equal(err.field, 'queue');
      assert.equal(err.value, "'no_such_queue'");
      assert.match(err.rule, /^unknown queue; queues: .*ts_hold/);
      return true;
    });
    const dave = pid('dave');
    await client.enqueue('ts_hold', dave, { skill: 1500 });
    await assert.rejects(client.enqueue('ts_hold', dave, { skill: 1500 }), (err: unknown) => {
      assert.ok(err instanceof Refusal);
      assert.equal(err.field, 'player_id');
      assert.equal(err.value, `'${dave}'`);
      assert.equal(err.rule, 'is already queued in queue ts_hold (cancel it first)');
      return true;
    });
    await client.cancel(dave);
    await assert.rejects(
      client.enqueueParty('ts_hold', 'crew', [{ playerId: 'x1', skill: 1, attributes: { build: 'a' } }, { playerId: 'x2', skill: 1, roles: ['tank'] }]),
      (err: unknown) => {
        assert.ok(err instanceof Refusal);
        assert.deepEqual([err.field, err.value, err.rule], ['roles', "'tank'", 'this queue has no roles']);
        return true;
      },
    );
    await assert.rejects(client.enqueue('ts_hold', pid('nos'), {}), (err: unknown) => {
      assert.ok(err instanceof Refusal, 'an unrated queue wants a skill');
      assert.equal(err.field, 'skill');
      assert.equal(err.value, null, 'NULL reads as null');
      assert.equal(err.rule, 'is required (queue ts_hold has no built-in rating)');
      return true;
    });
    // A text PostgreSQL cannot read as the parameter's type: its own message, in class 22.
    await assert.rejects(client.avoid(pid('a'), pid('b'), Number.NaN), (err: unknown) => {
      assert.ok(err instanceof Refusal);
      assert.equal(err.sqlstate, '22008');
      assert.deepEqual([err.field, err.value, err.rule], [null, null, 'interval out of range']);
      return true;
    });
    await assert.rejects(client.avoid('same', 'same'), (err: unknown) => {
      assert.ok(err instanceof Refusal);
      assert.equal(err.field, 'avoided_player_id');
      assert.equal(err.value, "'same'");
      return true;
    });
  });

  it('never retries a refusal', { timeout: 120_000 }, async () => {
    // A pool that counts the statements it is sent.
    const { pool } = await login();
    let sent = 0;
    const counting = {
      totalCount: 0,
      connect: async () => {
        const c = await pool.connect();
        return {
          query: (text: string, values?: unknown[]) => {
            sent += 1;
            return c.query(text, values);
          },
          release: (d?: boolean | Error) => c.release(d),
        };
      },
    };
    const client = new MatchmakerClient(counting, { retry: { attempts: 5, baseDelayMs: 1, maxDelayMs: 1 } });
    await assert.rejects(client.enqueue('ts_hold', '', { skill: 1 }), Refusal);
    assert.equal(sent, 1);
  });

  it('tells a login without the role apart', { timeout: 120_000 }, async () => {
    const { client } = await login('matchmaker_server');
    await assert.rejects(client.enqueue('ts_hold', pid('p'), { skill: 1 }), (err: unknown) => {
      assert.ok(err instanceof PermissionDenied, `${err}`);
      assert.equal(err.sqlstate, '42501');
      return true;
    });
  });

  it('retries while the server is unreachable, then says so', { timeout: 120_000 }, async () => {
    const pool = new Pool({ connectionString: 'postgres://nobody@127.0.0.1:1/none', connectionTimeoutMillis: 2000 });
    pool.on('error', () => {});
    pools.push(pool);
    const client = new MatchmakerClient(pool, { retry: { attempts: 3, baseDelayMs: 10, maxDelayMs: 20 } });
    await assert.rejects(client.queues(), (err: unknown) => {
      assert.ok(err instanceof Unavailable, `${err}`);
      assert.equal(err.attempts, 3);
      assert.equal(err.mayHaveCommitted, false, 'nothing was sent');
      return true;
    });
  });

  it('retries an idempotent call whose connection was cut, not an enqueue', { timeout: 120_000 }, async () => {
    const { client, url } = await login();
    const user = new URL(url).username;
    const held = pid('held');
    await client.enqueue('ts_hold', held, { skill: 1500 });
    const cutWhileBlocked = async <T>(call: () => Promise<T>): Promise<PromiseSettledResult<T>> => {
      // The superuser holds the table's lock; the call waits for it; its backend is cut.
      return mm.superuser(async (su) => {
        await su.query('BEGIN');
        await su.query('LOCK TABLE queue_entries IN EXCLUSIVE MODE');
        const pending = call();
        const settled = pending.then(
          (value) => ({ status: 'fulfilled', value }) as const,
          (reason) => ({ status: 'rejected', reason }) as const,
        );
        await waitFor('the call to wait for the lock', async () => {
          const r = await su.query(
            "SELECT count(*)::int AS n FROM pg_stat_activity WHERE usename = $1 AND wait_event_type = 'Lock'",
            [user],
          );
          return r.rows[0].n > 0;
        }, 10_000, 50);
        await su.query(
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1 AND wait_event_type = 'Lock'",
          [user],
        );
        await new Promise((r) => setTimeout(r, 300));
        await su.query('COMMIT');
        return settled;
      });
    };
    const cancelled = await cutWhileBlocked(() => client.cancel(held, 'ts_hold'));
    assert.deepEqual(cancelled, { status: 'fulfilled', value: 1 }, 'cancel was sent again and took effect once');
    const fresh = pid('fresh');
    const enqueued = await cutWhileBlocked(() => client.enqueue('ts_hold', fresh, { skill: 1500 }));
    assert.equal(enqueued.status, 'rejected');
    const err = (enqueued as PromiseRejectedResult).reason;
    assert.ok(err instanceof Unavailable, `${err}`);
    assert.equal(err.mayHaveCommitted, true);
    assert.equal(err.sqlstate, '57P01');
    assert.equal(await client.status(fresh, 'ts_hold'), null, 'the cut enqueue did not commit, and was not sent again');
  });

  it('cancels a running statement on abort', { timeout: 120_000 }, async () => {
    const { client } = await login();
    const slow = pid('slow');
    await client.enqueue('ts_hold', slow, { skill: 1500 });
    await mm.superuser(async (su) => {
      await su.query('BEGIN');
      await su.query('LOCK TABLE queue_entries IN EXCLUSIVE MODE');
      const started = Date.now();
      await assert.rejects(client.cancel(slow, 'ts_hold', { signal: AbortSignal.timeout(300) }), (err: unknown) => {
        assert.equal((err as Error).name, 'TimeoutError');
        return true;
      });
      assert.ok(Date.now() - started < 2000, 'given up at once');
      await su.query('COMMIT');
    });
    assert.equal((await client.status(slow, 'ts_hold'))?.status, 'queued', 'the cancelled statement wrote nothing');
    const aborted = new AbortController();
    aborted.abort();
    await assert.rejects(client.queues({ signal: aborted.signal }), { name: 'AbortError' });
    await client.cancel(slow);
  });
});

describe('matches', () => {
  it('matches a party and solos, shows the match, records the result and moves ratings', { timeout: 120_000 }, async () => {
    const { client, pool } = await login();
    const stream = await openStream(pool, ['ts_duo']);
    const [p1, p2, s1, s2] = [pid('p1'), pid('p2'), pid('s1'), pid('s2')];
    // A rated queue: no skill, the built-in rating.
    await client.enqueueParty('ts_duo', 'duo-crew', [{ playerId: p1 }, { playerId: p2 }]);
    await client.enqueue('ts_duo', s1);
    await client.enqueue('ts_duo', s2);
    const events = await matchesOf(stream, [p1, p2, s1, s2]);
    const matchId = events.get(p1)!.matchId;
    for (const e of events.values()) assert.equal(e.matchId, matchId, 'one match of four');
    const event = events.get(p1)!;
    assert.equal(event.queue, 'ts_duo');
    assert.equal(event.recovered, false);
    assert.equal(event.players.find((s) => s.playerId === p1)?.partyId, 'duo-crew');

    const status = await client.status(p1, 'ts_duo');
    assert.equal(status?.status, 'matched');
    assert.equal(status?.matchId, matchId);
    const roster = await client.matchDetails(matchId);
    assert.equal(roster.length, 4);
    assert.deepEqual(roster.map((r) => r.team), [0, 0, 1, 1], 'ordered by team');
    const mine = roster.find((r) => r.playerId === p1)!;
    assert.deepEqual(mine.teammates, [p2], 'a party plays on one team');
    assert.equal(mine.opponents.length, 2);
    assert.equal(mine.skill, 1500, 'a new player plays at the initial rating');
    assert.ok(mine.createdAt instanceof Date);
    const latest = await client.latestMatch(s1, 'ts_duo');
    assert.equal(latest?.matchId, matchId);

    const winners = mine.team === 0 ? [1, 2] : [2, 1];
    assert.equal(await client.reportResult(matchId, winners), 'recorded');
    await assert.rejects(client.reportResult(matchId, winners), (err: unknown) => err instanceof Refusal && err.field === 'match_id');
    const after = await client.matchDetails(matchId);
    assert.equal(after.find((r) => r.playerId === p1)?.teamRank, 1);
    assert.equal(after.find((r) => r.playerId === p1)?.leftEarly, false);
    // The daemon applies the result before the queue's next round: another match runs one.
    const more = [pid('m1'), pid('m2'), pid('m3'), pid('m4')];
    for (const p of more) await client.enqueue('ts_duo', p);
    await matchesOf(stream, more);
    const ratings = await waitFor('the result to move the ratings', async () => {
      const r = await client.playerRatings({ playerIds: [p1, s1], pool: 'ts_duo' });
      return r.length === 2 && r.every((x) => x.matches === 1) ? r : null;
    }, 20_000);
    assert.ok(ratings.find((r) => r.playerId === p1)!.rating > 1500, 'the winner gained');
  });

  it('runs the ready check: accept, decline, and the events of each', { timeout: 120_000 }, async () => {
    const { client, pool } = await login();
    const stream = await openStream(pool, ['ts_rc']);
    const [a, b] = [pid('a'), pid('b')];
    await client.enqueue('ts_rc', a, { skill: 1500 });
    await client.enqueue('ts_rc', b, { skill: 1500 });
    const checks = await matchesOf(stream, [a, b], ['ready_check']);
    const check = checks.get(a)!;
    assert.ok(check.answerBy instanceof Date && check.answerBy.getTime() > Date.now());
    const pending = await client.status(a, 'ts_rc');
    assert.equal(pending?.status, 'pending');
    assert.equal(pending?.matchId, check.matchId);
    assert.equal(pending?.answer, null);
    assert.equal(await client.acceptMatch(a, check.matchId), 'accepted');
    assert.equal(await client.acceptMatch(a, check.matchId), 'already_accepted');
    assert.equal((await client.status(a, 'ts_rc'))?.answer, 'accepted');
    assert.equal(await client.acceptMatch(b, check.matchId), 'accepted');
    await matchesOf(stream, [a, b], ['ready']);
    assert.equal((await client.status(b, 'ts_rc'))?.status, 'matched');
    await assert.rejects(client.declineMatch(a, check.matchId), (err: unknown) => {
      assert.ok(err instanceof Refusal);
      assert.equal(err.rule, 'is ready: every player accepted (too late to decline)');
      return true;
    });

    const [c, d] = [pid('c'), pid('d')];
    await client.enqueue('ts_rc', c, { skill: 1500 });
    await client.enqueue('ts_rc', d, { skill: 1500 });
    const second = (await matchesOf(stream, [c, d], ['ready_check'])).get(c)!;
    assert.equal(await client.acceptMatch(c, second.matchId), 'accepted');
    assert.equal(await client.declineMatch(d, second.matchId), 'declined');
    const cancelled = await waitFor('the cancelled event', async () => {
      const e = await stream.next(1000);
      return e?.type === 'cancelled' && e.matchId === second.matchId ? e : null;
    }, 20_000);
    assert.deepEqual(cancelled.requeued, [c]);
    assert.deepEqual(cancelled.declined, [d]);
    assert.equal((await client.status(d, 'ts_rc'))?.status, 'declined');
    const requeued = await client.status(c, 'ts_rc');
    assert.equal(requeued?.status, 'queued');
    assert.equal(requeued?.leftOver, 'ready_check');
    await client.cancel(c);
  });
});

describe('avoids', () => {
  it('adds, lists and removes avoids', { timeout: 120_000 }, async () => {
    const { client } = await login();
    const [a, b, c] = [pid('a'), pid('b'), pid('c')];
    assert.equal(await client.avoid(a, b), 1);
    assert.equal(await client.avoid(a, c, 3600), 2);
    const list = await client.avoidList(a);
    assert.equal(list.length, 2);
    assert.equal(list.find((x) => x.avoidedPlayerId === b)?.expiresAt, null);
    const week = list.find((x) => x.avoidedPlayerId === c)!.expiresAt!;
    assert.ok(Math.abs(week.getTime() - Date.now() - 3600_000) < 60_000, `${week}`);
    assert.equal(await client.unavoid(a, c), true);
    assert.equal(await client.unavoid(a, c), false);
    assert.deepEqual((await client.avoidList()).map((x) => x.avoidedPlayerId), [b]);
  });
});

describe('game servers and backfill', () => {
  it('announces a server, hosts a match on it, frees and withdraws it', { timeout: 120_000 }, async () => {
    const server = await login('matchmaker_server');
    const player = await login();
    const serverStream = await openStream(server.pool, ['ts_srv']);
    const sid = pid('srv');
    assert.equal(await server.client.serverReady(sid, 'eu', '10.0.0.7:7777'), 'ready');
    assert.deepEqual((await server.client.myServers()).map((s) => [s.serverId, s.status]), [[sid, 'ready']]);
    const [x, y] = [pid('x'), pid('y')];
    await player.client.enqueue('ts_srv', x, { skill: 1500, latencies: { eu: 20 } });
    await player.client.enqueue('ts_srv', y, { skill: 1500, latencies: { eu: 25, us: 90 } });
    const placed = await waitFor('the match on the server', async () => {
      const s = await player.client.status(x, 'ts_srv');
      return s?.status === 'matched' ? s : null;
    });
    const roster = await player.client.matchDetails(placed.matchId!);
    assert.equal(roster[0]?.serverId, sid);
    assert.equal(roster[0]?.serverAddress, '10.0.0.7:7777');
    assert.equal(roster[0]?.region, 'eu');
    // The server's login hears of the match on its own channel.
    const told = await matchesOf(serverStream, [x, y]);
    assert.equal(told.get(x)?.serverId, sid);
    const mine = await server.client.myServers();
    assert.deepEqual(mine.map((s) => [s.status, s.matchId]), [['allocated', placed.matchId]]);
    assert.equal(await server.client.serverReady(sid, 'eu', '10.0.0.7:7777'), 'allocated', 'still hosting');
    assert.equal(await server.client.serverReady(sid, 'eu', '10.0.0.7:7777', placed.matchId), 'ready');
    assert.equal(await server.client.reportResult(placed.matchId!, [1, 1]), 'recorded', 'a draw, from the server');
    assert.equal(await server.client.serverGone(sid), true);
    assert.equal(await server.client.serverGone(sid), false);
    await assert.rejects(server.client.serverReady(pid('s'), 'mars', 'h:1'), (err: unknown) => err instanceof Refusal && err.field === 'region');
  });

  it('asks for backfill, gets it filled, cancels another request', { timeout: 120_000 }, async () => {
    const server = await login('matchmaker_server');
    const player = await login();
    const session = pid('sess');
    const requestId = await server.client.requestBackfill(
      'ts_bf',
      session,
      [
        { playerId: 'm1', team: 0, skill: 1500 },
        { playerId: 'm2', team: 1, skill: 1500 },
        { playerId: 'm3', team: 1, skill: 1500 },
      ],
      [1, 0],
      30,
    );
    const open = await server.client.backfillStatus({ requestId });
    assert.equal(open[0]?.status, 'open');
    assert.deepEqual(open[0]?.openSlots, [1, 0]);
    const filler = pid('filler');
    await player.client.enqueue('ts_bf', filler, { skill: 1500 });
    const filled = await waitFor('the fill', async () => {
      const [s] = await server.client.backfillStatus({ sessionId: session });
      return s?.status === 'filled' ? s : null;
    });
    assert.deepEqual(filled.filledBy, [filler]);
    assert.deepEqual(filled.filledPlayers, [{ playerId: filler, team: 0, partyId: null }]);
    const status = await player.client.status(filler, 'ts_bf');
    assert.equal(status?.status, 'matched');
    assert.equal(status?.sessionId, session);

    const other = await server.client.requestBackfill('ts_bf', pid('sess'), [{ playerId: 'm1', team: 0, skill: 1500 }], [1, 2]);
    assert.equal(await server.client.cancelBackfill(other), true);
    assert.equal(await server.client.cancelBackfill(other), false);
    assert.equal((await server.client.backfillStatus({ requestId: other }))[0]?.status, 'cancelled');
  });
});

describe('the event stream', () => {
  it('delivers every match of the login once across a database restart', { timeout: 120_000 }, async () => {
    const { client, url, pool } = await login();
    // A second stream of the same login on its pool, ungated: it reconnects as soon as
    // it can, and must deliver the same matches once each too.
    const pooled = await openStream(pool, ['ts_stream']);
    // The stream's own connections, gated: after the restart it stays down until the
    // test lets it reconnect, so that matches are made while it is away.
    let gate: Promise<void> = Promise.resolve();
    let openGate = () => {};
    const errors: unknown[] = [];
    const { Client } = await import('pg');
    const stream = await EventStream.open({
      queues: ['ts_stream'],
      connect: async () => {
        await gate;
        const c = new Client({ connectionString: url });
        c.on('error', () => {});
        await c.connect();
        return c;
      },
      pingEveryMs: 500,
      reconnect: { baseDelayMs: 100, maxDelayMs: 500 },
      onError: (e) => errors.push(e),
    });
    streams.push(stream);
    const delivered: MatchmakerEvent[] = [];
    const matched = new Set<string>();
    const collect = async (players: string[], timeoutMs = 30_000) => {
      const deadline = Date.now() + timeoutMs;
      while (players.some((p) => !matched.has(p))) {
        const e = await stream.next(Math.max(1, deadline - Date.now()));
        if (!e) assert.fail(`not delivered within ${timeoutMs} ms: ${players.filter((p) => !matched.has(p))}`);
        delivered.push(e);
        if (e.type === 'match') for (const s of e.players) matched.add(s.playerId);
      }
    };
    // As the guide says: an enqueue that may have been lost is checked in player_status
    // before it is sent again (a connection the restart cut may be handed out once).
    const enqueue = async (player: string) => {
      for (let attempt = 1; ; attempt++) {
        try {
          await client.enqueue('ts_stream', player, { skill: 1500 });
          return;
        } catch (err) {
          if (!(err instanceof Unavailable) || attempt >= 5) throw err;
          if (err.mayHaveCommitted && (await client.status(player, 'ts_stream'))) return;
        }
      }
    };
    const enqueuePair = async (tag: string) => {
      const pair = [pid(`${tag}a`), pid(`${tag}b`)];
      for (const p of pair) await enqueue(p);
      return pair;
    };

    const before = [...(await enqueuePair('b1')), ...(await enqueuePair('b2'))];
    await collect(before);
    let during: string[] = [];
    const restartedUnder = async (_: EventStream) => {
      await mm.restartDatabase();
      // Matches made while the stream is away.
      during = [...(await enqueuePair('d1')), ...(await enqueuePair('d2')), ...(await enqueuePair('d3'))];
      await waitFor('the daemon to match the players', async () => {
        const rows = await client.playerStatus({ playerIds: during, queue: 'ts_stream' }).catch(() => []);
        return rows.length === during.length && rows.every((r) => r.status === 'matched');
      }, 60_000);
      assert.ok(errors.length >= 1, 'the stream saw its connection go');
    };

    gate = new Promise((r) => (openGate = r));
    try {
      await restartedUnder(stream);
    } finally {
      openGate();
    }
    await collect(during);
    const after = await enqueuePair('a1');
    await collect(after);

    // Every match of the login's players: delivered once, none twice.
    const all = [...before, ...during, ...after];
    const statuses = await client.playerStatus({ playerIds: all, queue: 'ts_stream' });
    assert.equal(statuses.length, all.length);
    const deliveries = (events: MatchmakerEvent[]) => {
      const seen = new Map<string, number>();
      for (const e of events) {
        if (e.type !== 'match') continue;
        for (const s of e.players) {
          const key = `${e.matchId}:${s.playerId}`;
          seen.set(key, (seen.get(key) ?? 0) + 1);
        }
      }
      return seen;
    };
    const seen = deliveries(delivered);
    for (const s of statuses) {
      assert.equal(s.status, 'matched', s.playerId);
      assert.equal(seen.get(`${s.matchId}:${s.playerId}`), 1, `${s.playerId} in match ${s.matchId}, delivered once`);
    }
    assert.equal(seen.size, all.length, 'no other deliveries');

    // The pooled stream: drained until it has every match, then a moment longer for any
    // second delivery.
    const pooledEvents: MatchmakerEvent[] = [];
    await waitFor('the pooled stream to deliver every match', async () => {
      for (let e = await pooled.next(200); e; e = await pooled.next(200)) pooledEvents.push(e);
      return deliveries(pooledEvents).size >= all.length;
    }, 30_000, 0);
    for (let e = await pooled.next(1500); e; e = await pooled.next(500)) pooledEvents.push(e);
    const pooledSeen = deliveries(pooledEvents);
    assert.deepEqual([...pooledSeen.keys()].sort(), [...seen.keys()].sort(), 'the same matches');
    assert.ok([...pooledSeen.values()].every((n) => n === 1), 'each once');
    assert.ok(pooledEvents.some((e) => e.type === 'reconnected'));
    assert.ok(delivered.some((e) => e.type === 'reconnected'), 'the reconnect is told');
    const recovered = delivered.filter((e) => e.type === 'match' && e.recovered) as MatchEvent[];
    assert.deepEqual(
      new Set(recovered.flatMap((e) => e.players.map((s) => s.playerId))),
      new Set(during),
      'the matches made while away were read back',
    );
    assert.ok(delivered.some((e) => e.type === 'countdown' && e.cause === 'resync'));
  });

  it('rejects a stream on a queue that does not exist', { timeout: 120_000 }, async () => {
    const { pool } = await login();
    await assert.rejects(EventStream.open({ connect: pool, queues: ['ts_hold', 'no_such_queue'] }), (err: unknown) => {
      assert.ok(err instanceof Refusal);
      assert.deepEqual([err.field, err.value], ['queues', "'no_such_queue'"]);
      return true;
    });
  });
});

describe('the quickstart', () => {
  it('prints one line per matched player', { timeout: 120_000 }, async () => {
    const { url } = await login();
    const child = spawn('npm', ['run', '--silent', 'quickstart', '--', 'ts_quick', '4'], {
      cwd: PACKAGE_DIR,
      env: { ...process.env, DATABASE_URL: url },
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    assert.equal(code, 0, `exit ${code}\n${out}\n${err}`);
    const lines = out.trim().split('\n');
    assert.equal(lines.length, 4, out);
    const players = new Set<string>();
    for (const line of lines) {
      const m = /^matched: (\S+) in match (\d+) \(round \d+\), team [01]$/.exec(line);
      assert.ok(m, `a match line: ${line}`);
      players.add(m[1]!);
    }
    assert.equal(players.size, 4, 'one line per player');
  });
});
