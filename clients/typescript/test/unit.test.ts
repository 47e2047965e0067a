/** The parsers, on the messages and payloads the migrations write (no database needed). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { parseNotification, parseRefusal } from '../src';

describe('parseRefusal', () => {
  it('splits field = value: rule', () => {
    assert.deepEqual(parseRefusal('latencies.eu-west = -3: must be between 0 and 10000 ms'), {
      field: 'latencies.eu-west',
      value: '-3',
      rule: 'must be between 0 and 10000 ms',
    });
    assert.deepEqual(
      parseRefusal("latencies = 'moon': unknown region; this queue's regions: eu-west, us-east"),
      { field: 'latencies', value: "'moon'", rule: "unknown region; this queue's regions: eu-west, us-east" },
    );
    assert.deepEqual(parseRefusal('members[].mmr = 3: unknown field (player_id, skill)'), {
      field: 'members[].mmr',
      value: '3',
      rule: 'unknown field (player_id, skill)',
    });
    assert.deepEqual(parseRefusal('skill = NULL: is required'), { field: 'skill', value: null, rule: 'is required' });
  });

  it('reads a quoted value to its closing quote', () => {
    assert.deepEqual(parseRefusal("player_id = 'a: b''c': is already queued in queue q (cancel it first)"), {
      field: 'player_id',
      value: "'a: b''c'",
      rule: 'is already queued in queue q (cancel it first)',
    });
    assert.deepEqual(parseRefusal("player_id = E'a\\\\: b': contains control characters"), {
      field: 'player_id',
      value: "E'a\\\\: b'",
      rule: 'contains control characters',
    });
    // A value cut at 80 characters has no closing quote.
    assert.deepEqual(parseRefusal("player_id = 'aaaa...: is longer than 64 characters"), {
      field: 'player_id',
      value: "'aaaa...",
      rule: 'is longer than 64 characters',
    });
  });

  it('leaves other messages alone', () => {
    assert.equal(parseRefusal('invalid input syntax for type json'), null);
    assert.equal(parseRefusal('interval out of range'), null);
  });
});

describe('parseNotification', () => {
  it('reads a match in parts, a ready check, a cancellation, a countdown', () => {
    const match = parseNotification(
      'q',
      '{"event":"match","queue":"q","round_id":7,"match_id":42,"server_id":"s1","server_address":"h:1","relay":true,"part":1,"parts":2,' +
        '"players":[{"player_id":"bob","team":0,"party_id":"crew"},{"player_id":"al","team":1,"role":"tank"}]}',
    );
    assert.deepEqual(match, {
      type: 'match',
      queue: 'q',
      roundId: 7,
      matchId: 42,
      part: 1,
      parts: 2,
      players: [
        { playerId: 'bob', team: 0, partyId: 'crew', role: null },
        { playerId: 'al', team: 1, partyId: null, role: 'tank' },
      ],
      playersOmitted: false,
      relay: true,
      serverId: 's1',
      serverAddress: 'h:1',
      answerBy: null,
      recovered: false,
    });
    const check = parseNotification(
      'q',
      '{"event":"ready_check","queue":"q","round_id":7,"match_id":42,"answer_by":"2026-01-01T12:00:20.000000Z","part":1,"parts":1,"players":[]}',
    );
    assert.equal(check.type, 'ready_check');
    assert.equal(check.type === 'ready_check' && check.answerBy?.toISOString(), '2026-01-01T12:00:20.000Z');
    // players_omitted carries no queue: the channel's is used.
    const omitted = parseNotification('q', '{"event":"match","round_id":7,"match_id":42,"part":1,"parts":1,"players_omitted":true}');
    assert.equal(omitted.type === 'match' && omitted.playersOmitted && omitted.queue, 'q');
    assert.deepEqual(
      parseNotification('q', '{"event":"cancelled","queue":"q","match_id":42,"reason":"declined by bob","requeued":["al"],"declined":["bob"]}'),
      { type: 'cancelled', queue: 'q', matchId: 42, reason: 'declined by bob', requeued: ['al'], declined: ['bob'], playersOmitted: false, serverId: null },
    );
    const cd = parseNotification(
      'q',
      '{"event":"countdown","queue":"q","next_round_at":"2026-01-01T12:02:00.000000Z","seconds_to_next_round":118,"waiting_for":"schedule",' +
        '"cause":"round","players_missing":0,"latest_round_at":null,"seconds_to_latest_round":null,"round_started_at":null,"round_id":7,"trigger":"pool_size"}',
    );
    assert.equal(cd.type, 'countdown');
    if (cd.type === 'countdown') {
      assert.equal(cd.secondsToNextRound, 118);
      assert.equal(cd.latestRoundAt, null);
      assert.equal(cd.trigger, 'pool_size');
      assert.equal(cd.nextRoundAt?.toISOString(), '2026-01-01T12:02:00.000Z');
    }
    assert.deepEqual(parseNotification('q', '{"event":"news"}'), { type: 'other', queue: 'q', payload: { event: 'news' } });
  });
});
