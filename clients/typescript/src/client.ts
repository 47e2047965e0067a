/**
 * The client API: one method per SQL function and view of docs/client-guide.md. Each
 * method runs one statement, as the login of the pool or client it was given.
 */
import { run, Source } from './db';
import {
  Avoid,
  avoidRow,
  BackfillMember,
  BackfillStatus,
  backfillRow,
  Countdown,
  countdown,
  COUNTDOWN_COLUMNS,
  MATCH_COLUMNS,
  MatchPlayer,
  matchPlayer,
  memberJson,
  num,
  PartyMember,
  PlayerStatus,
  playerStatus,
  QUEUE_COLUMNS,
  QueueInfo,
  queueInfo,
  Rating,
  ratingRow,
  Server,
  serverRow,
  STATUS_COLUMNS,
  Ticket,
} from './models';
import { DEFAULT_RETRY, RetryPolicy } from './retry';

/** Per call: an AbortSignal (`AbortSignal.timeout(ms)` bounds a call, retries included). */
export interface CallOptions {
  signal?: AbortSignal;
}

export interface ClientOptions {
  /** Retries while the server is unavailable (default DEFAULT_RETRY; NO_RETRY: none). */
  retry?: RetryPolicy;
  /**
   * A second source on a hot standby (a formation's multi-host URL with
   * `target_session_attrs=prefer-standby`) for the reads of views, which are then as old
   * as the standby's replay lag. Every call that writes, and LISTEN, stays on `source`.
   */
  reads?: Source;
}

/** The views a hot standby serves; everything else goes to the primary. */
const STANDBY_VIEWS = new Set([
  'queue_catalog',
  'queue_countdown',
  'player_status',
  'match_details',
  'avoid_list',
  'player_ratings',
  'backfill_status',
  'my_servers',
]);

export type Answer = 'accepted' | 'already_accepted' | 'declined' | 'already_declined';
export type ResultAnswer = 'recorded' | 'confirmed' | 'disputed';

export class MatchmakerClient {
  readonly source: Source;
  readonly retry: RetryPolicy;
  readonly reads: Source | undefined;

  /**
   * `source`: a node-postgres `Pool` (each call borrows a connection; a broken one is
   * replaced, so retries can succeed) or a `Client` / `PoolClient` (calls run on it, in
   * the caller's transaction if one is open, and are never retried). The library never
   * closes it.
   */
  constructor(source: Source, options: ClientOptions = {}) {
    this.source = source;
    this.retry = options.retry ?? DEFAULT_RETRY;
    this.reads = options.reads;
  }

  /** The same source with other options. */
  withOptions(options: ClientOptions): MatchmakerClient {
    return new MatchmakerClient(this.source, { retry: this.retry, reads: this.reads, ...options });
  }

  private rows(
    what: string,
    text: string,
    values: unknown[],
    idempotent: boolean,
    opts: CallOptions | undefined,
  ): Promise<any[]> {
    const source = this.reads && STANDBY_VIEWS.has(what) ? this.reads : this.source;
    return run(source, text, values, {
      what,
      idempotent,
      retry: this.retry,
      signal: opts?.signal,
    });
  }

  private async value(
    what: string,
    text: string,
    values: unknown[],
    idempotent: boolean,
    opts: CallOptions | undefined,
  ): Promise<any> {
    const rows = await this.rows(what, text, values, idempotent, opts);
    return rows[0]?.v;
  }

  // ---- Queues ----------------------------------------------------------------------------

  /** Every queue of `queue_catalog`. */
  async queues(opts?: CallOptions): Promise<QueueInfo[]> {
    const rows = await this.rows(
      'queue_catalog',
      `SELECT ${QUEUE_COLUMNS} FROM queue_catalog ORDER BY queue`,
      [],
      true,
      opts,
    );
    return rows.map(queueInfo);
  }

  /** One queue of `queue_catalog`, or null. */
  async queue(queue: string, opts?: CallOptions): Promise<QueueInfo | null> {
    const rows = await this.rows(
      'queue_catalog',
      `SELECT ${QUEUE_COLUMNS} FROM queue_catalog WHERE queue = $1`,
      [queue],
      true,
      opts,
    );
    return rows.length ? queueInfo(rows[0]) : null;
  }

  /** A queue's countdown (`queue_countdown`), or null when the queue is unknown. */
  async countdown(queue: string, opts?: CallOptions): Promise<Countdown | null> {
    const rows = await this.rows(
      'queue_countdown',
      `SELECT ${COUNTDOWN_COLUMNS} FROM queue_countdown WHERE queue = $1`,
      [queue],
      true,
      opts,
    );
    return rows.length ? countdown(rows[0]) : null;
  }

  /** Every queue's countdown. */
  async countdowns(opts?: CallOptions): Promise<Countdown[]> {
    const rows = await this.rows(
      'queue_countdown',
      `SELECT ${COUNTDOWN_COLUMNS} FROM queue_countdown ORDER BY queue`,
      [],
      true,
      opts,
    );
    return rows.map(countdown);
  }

  /** This login's notification channel of a queue (EventStream asks it itself). */
  async queueChannel(queue: string, opts?: CallOptions): Promise<string> {
    return this.value('queue_channel', 'SELECT queue_channel(queue => $1) AS v', [queue], true, opts);
  }

  // ---- Players ---------------------------------------------------------------------------

  /**
   * Queue a solo player; the new entry's id. `skill` may be left out on a rated queue
   * (the player plays at their built-in rating); other queues refuse that.
   */
  async enqueue(queue: string, playerId: string, ticket: Ticket = {}, opts?: CallOptions): Promise<number> {
    const v = await this.value(
      'enqueue',
      `SELECT enqueue(queue => $1, player_id => $2, skill => $3::float8,
                      latencies => $4::jsonb, peer_pings => $5::jsonb, roles => $6::text[],
                      side => $7::float8, skill_sigma => $8::float8,
                      attributes => $9::jsonb) AS v`,
      [
        queue,
        playerId,
        ticket.skill ?? null,
        JSON.stringify(ticket.latencies ?? {}),
        JSON.stringify(ticket.peerPings ?? {}),
        ticket.roles ?? [],
        ticket.side ?? null,
        ticket.skillSigma ?? null,
        JSON.stringify(ticket.attributes ?? {}),
      ],
      false,
      opts,
    );
    return num(v);
  }

  /** Queue a party, whole: each member's entry id. */
  async enqueueParty(
    queue: string,
    partyId: string,
    members: PartyMember[],
    opts?: CallOptions,
  ): Promise<{ playerId: string; entryId: number }[]> {
    const rows = await this.rows(
      'enqueue_party',
      `SELECT player_id, entry_id
         FROM enqueue_party(queue => $1, party_id => $2, members => $3::jsonb)`,
      [queue, partyId, JSON.stringify(members.map(memberJson))],
      false,
      opts,
    );
    return rows.map((r) => ({ playerId: r.player_id, entryId: num(r.entry_id) }));
  }

  /**
   * Keep waiting players' tickets alive (a party's, with any member); how many entries
   * were refreshed. Fewer than sent: some left the queue (read playerStatus). queue
   * null: every queue.
   */
  async keepAlive(playerIds: string[], queue: string | null = null, opts?: CallOptions): Promise<number> {
    const v = await this.value(
      'keep_alive',
      'SELECT keep_alive(player_ids => $1::text[], queue => $2) AS v',
      [playerIds, queue],
      true,
      opts,
    );
    return num(v);
  }

  /**
   * Take a player out of a queue (null: every queue), with their party; how many entries
   * were cancelled (0: nothing was queued, e.g. a round matched them a moment ago).
   */
  async cancel(playerId: string, queue: string | null = null, opts?: CallOptions): Promise<number> {
    const v = await this.value(
      'cancel',
      'SELECT cancel(player_id => $1, queue => $2) AS v',
      [playerId, queue],
      true,
      opts,
    );
    return num(v);
  }

  /** `player_status` rows of this login's players: all, or those named, in one queue or all. */
  async playerStatus(
    filter: { playerIds?: string[]; queue?: string } = {},
    opts?: CallOptions,
  ): Promise<PlayerStatus[]> {
    const rows = await this.rows(
      'player_status',
      // Named players: the keyed function finds them by index; the view lists them all.
      filter.playerIds
        ? `SELECT ${STATUS_COLUMNS} FROM player_status($1::text[])
            WHERE ($2::text IS NULL OR queue = $2) ORDER BY queue, player_id`
        : `SELECT ${STATUS_COLUMNS} FROM player_status
            WHERE $1::text[] IS NULL AND ($2::text IS NULL OR queue = $2)
            ORDER BY queue, player_id`,
      [filter.playerIds ?? null, filter.queue ?? null],
      true,
      opts,
    );
    return rows.map(playerStatus);
  }

  /** One player's status in a queue, or null. */
  async status(playerId: string, queue: string, opts?: CallOptions): Promise<PlayerStatus | null> {
    const rows = await this.playerStatus({ playerIds: [playerId], queue }, opts);
    return rows[0] ?? null;
  }

  /** A match's whole roster (a match holding one of this login's players), by team. */
  async matchDetails(matchId: number, opts?: CallOptions): Promise<MatchPlayer[]> {
    const rows = await this.rows(
      'match_details',
      `SELECT ${MATCH_COLUMNS} FROM match_details($1::bigint) ORDER BY team, player_id`,
      [matchId],
      true,
      opts,
    );
    return rows.map(matchPlayer);
  }

  /** A player's latest match (their own row of it), or null. */
  async latestMatch(playerId: string, queue: string | null = null, opts?: CallOptions): Promise<MatchPlayer | null> {
    const rows = await this.rows(
      'match_details',
      `SELECT ${MATCH_COLUMNS} FROM player_matches($1)
        WHERE $2::text IS NULL OR queue = $2
        ORDER BY created_at DESC, match_id DESC LIMIT 1`,
      [playerId, queue],
      true,
      opts,
    );
    return rows.length ? matchPlayer(rows[0]) : null;
  }

  // ---- The ready check -------------------------------------------------------------------

  /** Accept a pending match for a player: `accepted` (`already_accepted` the second time). */
  async acceptMatch(playerId: string, matchId: number, opts?: CallOptions): Promise<Answer> {
    return this.value(
      'accept_match',
      'SELECT accept_match(player_id => $1, match_id => $2::bigint) AS v',
      [playerId, matchId],
      true,
      opts,
    );
  }

  /** Decline a pending match for a player: `declined` (`already_declined`). */
  async declineMatch(playerId: string, matchId: number, opts?: CallOptions): Promise<Answer> {
    return this.value(
      'decline_match',
      'SELECT decline_match(player_id => $1, match_id => $2::bigint) AS v',
      [playerId, matchId],
      true,
      opts,
    );
  }

  // ---- Avoids, results, ratings ----------------------------------------------------------

  /**
   * A player stops meeting another, for `durationS` seconds (null: until unavoid); how
   * many avoids the player holds. Again: renews it.
   */
  async avoid(
    playerId: string,
    avoidedPlayerId: string,
    durationS: number | null = null,
    opts?: CallOptions,
  ): Promise<number> {
    const v = await this.value(
      'avoid',
      `SELECT avoid(player_id => $1, avoided_player_id => $2,
                    duration => make_interval(secs => $3::float8)) AS v`,
      [playerId, avoidedPlayerId, durationS],
      true,
      opts,
    );
    return num(v);
  }

  /** Remove an avoid; whether there was one. */
  async unavoid(playerId: string, avoidedPlayerId: string, opts?: CallOptions): Promise<boolean> {
    return this.value(
      'unavoid',
      'SELECT unavoid(player_id => $1, avoided_player_id => $2) AS v',
      [playerId, avoidedPlayerId],
      true,
      opts,
    );
  }

  /** This login's players' avoids that hold now (of one player, or all). */
  async avoidList(playerId: string | null = null, opts?: CallOptions): Promise<Avoid[]> {
    const rows = await this.rows(
      'avoid_list',
      `SELECT player_id, avoided_player_id, created_at, expires_at FROM avoid_list
        WHERE $1::text IS NULL OR player_id = $1
        ORDER BY player_id, created_at, avoided_player_id`,
      [playerId],
      true,
      opts,
    );
    return rows.map(avoidRow);
  }

  /**
   * Report a played match's result, once: `teamRanks[k]` is the place of team k (1 best,
   * equal ranks a draw); `leftEarly` names players who abandoned it. Not retried after a
   * connection lost while committing (a second report by the same login is refused).
   */
  async reportResult(
    matchId: number,
    teamRanks: number[],
    leftEarly: string[] | null = null,
    opts?: CallOptions,
  ): Promise<ResultAnswer> {
    return this.value(
      'report_result',
      `SELECT report_result(match_id => $1::bigint, team_ranks => $2::integer[],
                            left_early => $3::text[]) AS v`,
      [matchId, teamRanks, leftEarly],
      false,
      opts,
    );
  }

  /** Built-in ratings of this login's players (`player_ratings`). */
  async playerRatings(
    filter: { playerIds?: string[]; pool?: string } = {},
    opts?: CallOptions,
  ): Promise<Rating[]> {
    const rows = await this.rows(
      'player_ratings',
      `SELECT pool, player_id, rating, uncertainty, matches, updated_at FROM player_ratings
        WHERE ($1::text[] IS NULL OR player_id = ANY ($1::text[]))
          AND ($2::text IS NULL OR pool = $2)
        ORDER BY pool, player_id`,
      [filter.playerIds ?? null, filter.pool ?? null],
      true,
      opts,
    );
    return rows.map(ratingRow);
  }

  // ---- Game servers (logins in matchmaker_server) ---------------------------------------

  /**
   * A game server is free to host a match (at start, every ttl / 3, and when its match
   * ends, naming it): `ready`, or `allocated` while it hosts a match not named as ended.
   */
  async serverReady(
    serverId: string,
    region: string,
    address: string,
    endedMatch: number | null = null,
    opts?: CallOptions,
  ): Promise<'ready' | 'allocated'> {
    return this.value(
      'server_ready',
      `SELECT server_ready(server_id => $1, region => $2, address => $3,
                           ended_match => $4::bigint) AS v`,
      [serverId, region, address, endedMatch],
      true,
      opts,
    );
  }

  /** Withdraw a game server; whether this login had announced it. */
  async serverGone(serverId: string, opts?: CallOptions): Promise<boolean> {
    return this.value('server_gone', 'SELECT server_gone(server_id => $1) AS v', [serverId], true, opts);
  }

  /** This login's game servers (`my_servers`). */
  async myServers(opts?: CallOptions): Promise<Server[]> {
    const rows = await this.rows(
      'my_servers',
      `SELECT server_id, region, address, status, match_id, announced_at, ready_since,
              allocated_at FROM my_servers ORDER BY server_id`,
      [],
      true,
      opts,
    );
    return rows.map(serverRow);
  }

  /**
   * Ask for players for a running session: its current members (with their teams) and
   * the open slots of each team; the request id. Not retried after a connection lost
   * while committing. `map`: the map the session is played on, in a queue with maps
   * (nobody who vetoes it is sent).
   */
  async requestBackfill(
    queue: string,
    sessionId: string,
    members: BackfillMember[],
    openSlots: number[],
    expiresInS: number | null = null,
    opts?: CallOptions,
    map: string | null = null,
  ): Promise<number> {
    const v = await this.value(
      'request_backfill',
      `SELECT request_backfill(queue => $1, session_id => $2, members => $3::jsonb,
                               open_slots => $4::integer[],
                               expires_in => coalesce(make_interval(secs => $5::float8),
                                                      interval '60 seconds'),
                               map => $6::text) AS v`,
      [queue, sessionId, JSON.stringify(members.map(memberJson)), openSlots, expiresInS, map],
      false,
      opts,
    );
    return num(v);
  }

  /** Cancel an open backfill request of this login's; whether one was cancelled. */
  async cancelBackfill(requestId: number, opts?: CallOptions): Promise<boolean> {
    return this.value(
      'cancel_backfill',
      'SELECT cancel_backfill(request_id => $1::bigint) AS v',
      [requestId],
      true,
      opts,
    );
  }

  /** This login's backfill requests (`backfill_status`), of a session or by id. */
  async backfillStatus(
    filter: { sessionId?: string; requestId?: number } = {},
    opts?: CallOptions,
  ): Promise<BackfillStatus[]> {
    const rows = await this.rows(
      'backfill_status',
      `SELECT request_id, queue, session_id, status, reason, open_slots, created_at,
              expires_at, attempted_at, match_id, round_id, filled_by, filled_players
         FROM ${filter.requestId != null ? 'backfill_status($2::bigint)' : 'backfill_status'}
        WHERE ($1::text IS NULL OR session_id = $1)
          AND ($2::bigint IS NULL OR request_id = $2::bigint)
        ORDER BY request_id`,
      [filter.sessionId ?? null, filter.requestId ?? null],
      true,
      opts,
    );
    return rows.map(backfillRow);
  }
}
