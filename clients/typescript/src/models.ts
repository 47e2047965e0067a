/**
 * The rows of the matchmaker's views, as typed objects with camelCase fields. Times are
 * `Date`s, durations are seconds (`...S`), ids of entries, matches, rounds and requests
 * are numbers (exact up to 2^53).
 */

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** What a queue's filters read: name -> a string or a list of strings. */
export type Attributes = Record<string, string | string[]>;

/** `queue_countdown`'s `waiting_for`. */
export type WaitingFor = 'schedule' | 'min_pool' | 'players' | 'round';

/** A queue of `queue_catalog`: its format, limits and countdown. */
export interface QueueInfo {
  queue: string;
  teams: number;
  teamSize: number;
  /** Every format the queue forms, full first: `['5v5']`, or `['5v5', '5v4', '4v4']`. */
  formats: string[];
  minPlayersPerMatch: number;
  minTeams: number;
  minTeamSize: number;
  network: 'peer_to_peer' | 'dedicated';
  roles: string[];
  regions: string[];
  maxPartySize: number;
  ticketTtlS: number;
  /** Call keepAlive this often (ticketTtlS / 3). */
  keepAliveEveryS: number;
  maxWaitS: number;
  sameAttributes: string[];
  maxAvoids: number;
  recentMedianWaitS: number | null;
  /** The ready check's timeout (null: the queue has none). */
  readyTimeoutS: number | null;
  declineCooldownS: number | null;
  /** A rated queue's rating pool (null: unrated); enqueue may leave `skill` out. */
  ratingPool: string | null;
  nextRoundAt: Date | null;
  secondsToNextRound: number | null;
  waitingFor: WaitingFor | null;
  poolSize: number | null;
  targetPool: number | null;
  playersMissingForEarlyStart: number | null;
  playersMissing: number | null;
  latestRoundAt: Date | null;
  secondsToLatestRound: number | null;
  roundStartedAt: Date | null;
}

/** A row of `queue_countdown`. */
export interface Countdown {
  queue: string;
  nextRoundAt: Date | null;
  secondsToNextRound: number | null;
  waitingFor: WaitingFor | null;
  poolSize: number | null;
  targetPool: number | null;
  playersMissingForEarlyStart: number | null;
  minPool: number | null;
  playersPerMatch: number | null;
  schedule: string | null;
  lastRoundId: number | null;
  lastRoundAt: Date | null;
  playersMissing: number | null;
  latestRoundAt: Date | null;
  secondsToLatestRound: number | null;
  roundStartedAt: Date | null;
  medianWaitS: number | null;
}

export type EntryStatus =
  | 'queued'
  | 'matched'
  | 'cancelled'
  | 'rejected'
  | 'expired'
  | 'withdrawn'
  | 'pending'
  | 'declined';

export type LeftOver =
  | 'outscored'
  | 'no_host'
  | 'no_valid_match'
  | 'not_found'
  | 'party_sat_out'
  | 'match_dropped'
  | 'filtered'
  | 'avoided'
  | 'floor'
  | 'ready_check'
  | 'no_server';

/** A row of `player_status`: a player's latest entry in a queue. */
export interface PlayerStatus {
  queue: string;
  playerId: string;
  entryId: number;
  status: EntryStatus;
  /** Why, in words, for every status but queued and matched (and queued after a round left them over). */
  reason: string | null;
  leftOver: LeftOver | null;
  partyId: string | null;
  enqueuedAt: Date;
  expiresAt: Date;
  secondsToNextRound: number | null;
  nextRoundAt: Date | null;
  waitingFor: WaitingFor | null;
  playersMissing: number | null;
  latestRoundAt: Date | null;
  secondsToLatestRound: number | null;
  roundStartedAt: Date | null;
  mayStartEarly: boolean;
  playersMissingForEarlyStart: number | null;
  estimatedWaitS: number | null;
  matchId: number | null;
  team: number | null;
  role: string | null;
  region: string | null;
  hosts: string[] | null;
  hostPlayerId: string | null;
  backupHostPlayerId: string | null;
  relay: boolean;
  sessionId: string | null;
  /** pending: accept by then. */
  answerBy: Date | null;
  /** pending: this player's answer (null: not yet). */
  answer: 'accepted' | 'declined' | null;
}

/** A row of `match_details`: one player of a match, with the match. */
export interface MatchPlayer {
  matchId: number;
  roundId: number;
  queue: string;
  createdAt: Date;
  playerId: string;
  partyId: string | null;
  team: number;
  role: string | null;
  skill: number | null;
  waitedSeconds: number | null;
  teammates: string[];
  opponents: string[];
  region: string | null;
  hosts: string[] | null;
  hostPlayerId: string | null;
  backupHostPlayerId: string | null;
  relay: boolean | null;
  matchScore: number | null;
  factors: Json;
  winProbability: number | null;
  /** Once a result is reported: the team's place (1 best). */
  teamRank: number | null;
  leftEarly: boolean | null;
  serverId: string | null;
  serverAddress: string | null;
}

/** A row of `avoid_list`. */
export interface Avoid {
  playerId: string;
  avoidedPlayerId: string;
  createdAt: Date;
  /** null: until unavoid. */
  expiresAt: Date | null;
}

/** A row of `player_ratings`: a built-in rating. */
export interface Rating {
  pool: string;
  playerId: string;
  rating: number;
  uncertainty: number;
  matches: number;
  updatedAt: Date;
}

/** A row of `backfill_status`. */
export interface BackfillStatus {
  requestId: number;
  queue: string;
  sessionId: string;
  status: 'open' | 'filled' | 'expired' | 'cancelled';
  reason: string | null;
  openSlots: number[];
  createdAt: Date;
  expiresAt: Date;
  attemptedAt: Date | null;
  matchId: number | null;
  roundId: number | null;
  filledBy: string[];
  filledPlayers: { playerId: string; team: number; partyId: string | null }[];
}

/** A row of `my_servers`: a game server this login announced. */
export interface Server {
  serverId: string;
  region: string;
  address: string;
  status: 'ready' | 'allocated';
  matchId: number | null;
  announcedAt: Date;
  readySince: Date | null;
  allocatedAt: Date | null;
}

/** What `enqueue` takes beside the queue and the player id. */
export interface Ticket {
  /** A rating with |skill| <= 1e6; leave it out on a rated queue to play at the built-in rating. */
  skill?: number | null;
  /** Region (or relay) -> round-trip ms. */
  latencies?: Record<string, number>;
  /** Other player id -> round-trip ms. */
  peerPings?: Record<string, number>;
  /** The roles the player accepts (empty: any). */
  roles?: string[];
  /** Side preference in [0, 1]: 0 the first team, 1 the second. */
  side?: number | null;
  skillSigma?: number | null;
  attributes?: Attributes;
}

/** A member of `enqueueParty`: the fields of `enqueue`. */
export interface PartyMember extends Ticket {
  playerId: string;
}

/** A current member of a running session, for `requestBackfill`. */
export interface BackfillMember extends Ticket {
  playerId: string;
  team: number;
}

// ---- Row mappers -------------------------------------------------------------------------
// The views' columns arrive as node-postgres parses them by default (int8 and numeric as
// strings); the mappers accept strings, numbers and bigints alike, so an application
// that set its own type parsers still gets the same objects.

export function num(v: unknown): number {
  return typeof v === 'number' ? v : Number(v);
}
export function numOrNull(v: unknown): number | null {
  return v === null || v === undefined ? null : num(v);
}
export function dateOrNull(v: unknown): Date | null {
  if (v === null || v === undefined) return null;
  return v instanceof Date ? v : new Date(v as string);
}
export function date(v: unknown): Date {
  return dateOrNull(v) as Date;
}
function strOrNull(v: unknown): string | null {
  return v === null || v === undefined ? null : String(v);
}
function arr(v: unknown): string[] {
  return Array.isArray(v) ? v.map(String) : [];
}
function arrOrNull(v: unknown): string[] | null {
  return v === null || v === undefined ? null : arr(v);
}
function json(v: unknown): any {
  return typeof v === 'string' ? JSON.parse(v) : v;
}

/** The columns `queueInfo` reads, in SQL (intervals as seconds). */
export const QUEUE_COLUMNS = `queue, teams, team_size, formats, min_players_per_match, min_teams,
  min_team_size, network, roles, regions, max_party_size,
  extract(epoch FROM ticket_ttl)::float8 AS ticket_ttl_s,
  extract(epoch FROM keep_alive_every)::float8 AS keep_alive_every_s,
  extract(epoch FROM max_wait)::float8 AS max_wait_s,
  same_attributes, max_avoids, recent_median_wait_s,
  extract(epoch FROM ready_timeout)::float8 AS ready_timeout_s,
  extract(epoch FROM decline_cooldown)::float8 AS decline_cooldown_s,
  rating_pool, next_round_at, seconds_to_next_round, waiting_for, pool_size, target_pool,
  players_missing_for_early_start, players_missing, latest_round_at,
  seconds_to_latest_round, round_started_at`;

export function queueInfo(r: any): QueueInfo {
  return {
    queue: r.queue,
    teams: num(r.teams),
    teamSize: num(r.team_size),
    formats: arr(r.formats),
    minPlayersPerMatch: num(r.min_players_per_match),
    minTeams: num(r.min_teams),
    minTeamSize: num(r.min_team_size),
    network: r.network,
    roles: arr(r.roles),
    regions: arr(r.regions),
    maxPartySize: num(r.max_party_size),
    ticketTtlS: num(r.ticket_ttl_s),
    keepAliveEveryS: num(r.keep_alive_every_s),
    maxWaitS: num(r.max_wait_s),
    sameAttributes: arr(r.same_attributes),
    maxAvoids: num(r.max_avoids),
    recentMedianWaitS: numOrNull(r.recent_median_wait_s),
    readyTimeoutS: numOrNull(r.ready_timeout_s),
    declineCooldownS: numOrNull(r.decline_cooldown_s),
    ratingPool: strOrNull(r.rating_pool),
    nextRoundAt: dateOrNull(r.next_round_at),
    secondsToNextRound: numOrNull(r.seconds_to_next_round),
    waitingFor: r.waiting_for ?? null,
    poolSize: numOrNull(r.pool_size),
    targetPool: numOrNull(r.target_pool),
    playersMissingForEarlyStart: numOrNull(r.players_missing_for_early_start),
    playersMissing: numOrNull(r.players_missing),
    latestRoundAt: dateOrNull(r.latest_round_at),
    secondsToLatestRound: numOrNull(r.seconds_to_latest_round),
    roundStartedAt: dateOrNull(r.round_started_at),
  };
}

export const COUNTDOWN_COLUMNS = `queue, next_round_at, waiting_for, seconds_to_next_round,
  pool_size, target_pool, players_missing_for_early_start, min_pool, players_per_match,
  schedule, last_round_id, last_round_at, players_missing, latest_round_at,
  seconds_to_latest_round, round_started_at, median_wait_s`;

export function countdown(r: any): Countdown {
  return {
    queue: r.queue,
    nextRoundAt: dateOrNull(r.next_round_at),
    secondsToNextRound: numOrNull(r.seconds_to_next_round),
    waitingFor: r.waiting_for ?? null,
    poolSize: numOrNull(r.pool_size),
    targetPool: numOrNull(r.target_pool),
    playersMissingForEarlyStart: numOrNull(r.players_missing_for_early_start),
    minPool: numOrNull(r.min_pool),
    playersPerMatch: numOrNull(r.players_per_match),
    schedule: strOrNull(r.schedule),
    lastRoundId: numOrNull(r.last_round_id),
    lastRoundAt: dateOrNull(r.last_round_at),
    playersMissing: numOrNull(r.players_missing),
    latestRoundAt: dateOrNull(r.latest_round_at),
    secondsToLatestRound: numOrNull(r.seconds_to_latest_round),
    roundStartedAt: dateOrNull(r.round_started_at),
    medianWaitS: numOrNull(r.median_wait_s),
  };
}

export const STATUS_COLUMNS = `queue, player_id, entry_id, status, reason, left_over, party_id,
  enqueued_at, expires_at, seconds_to_next_round, next_round_at, waiting_for,
  players_missing, latest_round_at, seconds_to_latest_round, round_started_at,
  may_start_early, players_missing_for_early_start, estimated_wait_s, match_id, team, role,
  region, hosts, host_player_id, backup_host_player_id, relay, session_id, answer_by, answer`;

export function playerStatus(r: any): PlayerStatus {
  return {
    queue: r.queue,
    playerId: r.player_id,
    entryId: num(r.entry_id),
    status: r.status,
    reason: strOrNull(r.reason),
    leftOver: r.left_over ?? null,
    partyId: strOrNull(r.party_id),
    enqueuedAt: date(r.enqueued_at),
    expiresAt: date(r.expires_at),
    secondsToNextRound: numOrNull(r.seconds_to_next_round),
    nextRoundAt: dateOrNull(r.next_round_at),
    waitingFor: r.waiting_for ?? null,
    playersMissing: numOrNull(r.players_missing),
    latestRoundAt: dateOrNull(r.latest_round_at),
    secondsToLatestRound: numOrNull(r.seconds_to_latest_round),
    roundStartedAt: dateOrNull(r.round_started_at),
    mayStartEarly: r.may_start_early === true,
    playersMissingForEarlyStart: numOrNull(r.players_missing_for_early_start),
    estimatedWaitS: numOrNull(r.estimated_wait_s),
    matchId: numOrNull(r.match_id),
    team: numOrNull(r.team),
    role: strOrNull(r.role),
    region: strOrNull(r.region),
    hosts: arrOrNull(r.hosts),
    hostPlayerId: strOrNull(r.host_player_id),
    backupHostPlayerId: strOrNull(r.backup_host_player_id),
    relay: r.relay === true,
    sessionId: strOrNull(r.session_id),
    answerBy: dateOrNull(r.answer_by),
    answer: r.answer ?? null,
  };
}

export const MATCH_COLUMNS = `match_id, round_id, queue, created_at, player_id, party_id, team,
  role, skill, waited_seconds, teammates, opponents, region, hosts, host_player_id,
  backup_host_player_id, relay, match_score, factors, win_probability, team_rank,
  left_early, server_id, server_address`;

export function matchPlayer(r: any): MatchPlayer {
  return {
    matchId: num(r.match_id),
    roundId: num(r.round_id),
    queue: r.queue,
    createdAt: date(r.created_at),
    playerId: r.player_id,
    partyId: strOrNull(r.party_id),
    team: num(r.team),
    role: strOrNull(r.role),
    skill: numOrNull(r.skill),
    waitedSeconds: numOrNull(r.waited_seconds),
    teammates: arr(r.teammates),
    opponents: arr(r.opponents),
    region: strOrNull(r.region),
    hosts: arrOrNull(r.hosts),
    hostPlayerId: strOrNull(r.host_player_id),
    backupHostPlayerId: strOrNull(r.backup_host_player_id),
    relay: r.relay ?? null,
    matchScore: numOrNull(r.match_score),
    factors: json(r.factors) ?? null,
    winProbability: numOrNull(r.win_probability),
    teamRank: numOrNull(r.team_rank),
    leftEarly: r.left_early ?? null,
    serverId: strOrNull(r.server_id),
    serverAddress: strOrNull(r.server_address),
  };
}

export function avoidRow(r: any): Avoid {
  return {
    playerId: r.player_id,
    avoidedPlayerId: r.avoided_player_id,
    createdAt: date(r.created_at),
    expiresAt: dateOrNull(r.expires_at),
  };
}

export function ratingRow(r: any): Rating {
  return {
    pool: r.pool,
    playerId: r.player_id,
    rating: num(r.rating),
    uncertainty: num(r.uncertainty),
    matches: num(r.matches),
    updatedAt: date(r.updated_at),
  };
}

export function backfillRow(r: any): BackfillStatus {
  const filled = (json(r.filled_players) ?? []) as any[];
  return {
    requestId: num(r.request_id),
    queue: r.queue,
    sessionId: r.session_id,
    status: r.status,
    reason: strOrNull(r.reason),
    openSlots: Array.isArray(r.open_slots) ? r.open_slots.map(num) : [],
    createdAt: date(r.created_at),
    expiresAt: date(r.expires_at),
    attemptedAt: dateOrNull(r.attempted_at),
    matchId: numOrNull(r.match_id),
    roundId: numOrNull(r.round_id),
    filledBy: arr(r.filled_by),
    filledPlayers: filled.map((p) => ({
      playerId: p.player_id,
      team: num(p.team),
      partyId: p.party_id ?? null,
    })),
  };
}

export function serverRow(r: any): Server {
  return {
    serverId: r.server_id,
    region: r.region,
    address: r.address,
    status: r.status,
    matchId: numOrNull(r.match_id),
    announcedAt: date(r.announced_at),
    readySince: dateOrNull(r.ready_since),
    allocatedAt: dateOrNull(r.allocated_at),
  };
}

/** A ticket as the functions' JSON members read it (snake_case; absent fields left out). */
export function memberJson(m: PartyMember | BackfillMember): Record<string, unknown> {
  const out: Record<string, unknown> = { player_id: m.playerId };
  if ('team' in m) out.team = m.team;
  if (m.skill !== undefined) out.skill = m.skill;
  if (m.latencies !== undefined) out.latencies = m.latencies;
  if (m.peerPings !== undefined) out.peer_pings = m.peerPings;
  if (m.roles !== undefined) out.roles = m.roles;
  if (m.side !== undefined) out.side = m.side;
  if (m.skillSigma !== undefined) out.skill_sigma = m.skillSigma;
  if (m.attributes !== undefined) out.attributes = m.attributes;
  return out;
}
