/**
 * Quickstart: enqueue N players into QUEUE and print one line per player's match as it
 * arrives.
 *
 *   DATABASE_URL=postgres://game_backend:PASSWORD@HOST/DB npm run quickstart -- QUEUE N
 *
 * The login is a member of matchmaker_client. Exits 0 once every player is matched, 1 if
 * one left the queue without a match, 2 after QUICKSTART_TIMEOUT_S (default 120 s),
 * having cancelled the players still waiting.
 */
import { randomBytes } from 'node:crypto';

import { Pool } from 'pg';

import { EventStream, KeepAlive, MatchmakerClient } from '../src';

async function main(): Promise<number> {
  const [queue, count] = [process.argv[2], Number(process.argv[3] ?? '2')];
  const url = process.env.DATABASE_URL;
  if (!queue || !Number.isInteger(count) || count < 1 || !url) {
    console.error('usage: DATABASE_URL=... npm run quickstart -- QUEUE N');
    return 64;
  }
  const pool = new Pool({ connectionString: url, max: 2 });
  pool.on('error', () => {}); // a lost idle connection is replaced on the next call
  const client = new MatchmakerClient(pool);
  const info = await client.queue(queue);
  if (!info) throw new Error(`no queue ${queue} in queue_catalog`);

  // LISTEN before enqueueing, so that no match is missed.
  const events = await EventStream.open({ connect: pool, queues: [queue] });
  const tag = randomBytes(3).toString('hex');
  const players = Array.from({ length: count }, (_, i) => `qs-${tag}-${i + 1}`);
  const waiting = new Set(players);
  const latencies = info.regions.length ? { [info.regions[0]!]: 30 } : {};
  for (const player of players) {
    // A rated queue plays each player at their built-in rating.
    await client.enqueue(queue, player, { skill: info.ratingPool ? null : 1500, latencies });
  }
  const keeper = await KeepAlive.start(client, { queue, players });
  const deadline = Date.now() + Number(process.env.QUICKSTART_TIMEOUT_S ?? '120') * 1000;
  let code = 2;
  try {
    while (waiting.size && Date.now() < deadline) {
      const event = await events.next(Math.min(5000, deadline - Date.now()));
      if (event?.type === 'ready_check') {
        for (const s of event.players) if (waiting.has(s.playerId)) await client.acceptMatch(s.playerId, event.matchId);
      } else if (event?.type === 'match' || event?.type === 'ready') {
        for (const s of event.players) {
          if (!waiting.delete(s.playerId)) continue;
          keeper.delete(s.playerId);
          console.log(`matched: ${s.playerId} in match ${event.matchId} (round ${event.roundId}), team ${s.team}`);
        }
      } else if (event === null) {
        // Quiet: the views are the truth.
        for (const s of await client.playerStatus({ playerIds: [...waiting], queue })) {
          if (s.status === 'matched' && s.matchId !== null) {
            const mine = (await client.matchDetails(s.matchId)).find((r) => r.playerId === s.playerId);
            waiting.delete(s.playerId);
            console.log(`matched: ${s.playerId} in match ${s.matchId} (round ${mine?.roundId}), team ${s.team}`);
          } else if (s.status !== 'queued' && s.status !== 'pending') {
            console.error(`${s.playerId}: ${s.status} (${s.reason})`);
            return 1;
          }
        }
      }
    }
    code = waiting.size ? 2 : 0;
    return code;
  } finally {
    await keeper.stop();
    for (const player of waiting) await client.cancel(player, queue).catch(() => {});
    await events.close();
    await pool.end();
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  },
);
