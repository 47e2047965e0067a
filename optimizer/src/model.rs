//! The queue model: what a match looks like in one queue (format, network, roles) and how
//! its quality is scored (weights and factor parameters). Pure, validated data; it is the
//! `[queues.NAME]` table of `config/matchmaker.toml` minus the daemon's `round` table.
//!
//! Every key has a default (`#[serde(default)]`), so an empty table is the Awesomenauts
//! 3v3 peer-to-peer queue of the Awesomenauts matchmaker post. The formulas each parameter feeds are documented in
//! `core::factors` (one file per factor); [`QueueModel::validate`] refuses bad values
//! with a message naming the key.
//!
//! Reproducing Alman and McKay's imbalance f = alpha * d_p + v_q (Alman and McKay) exactly:
//! weights `equal_teams = alpha`, `equal_players = 1`, every other weight 0,
//! `equal_teams.team_skill = "norm"`, `equal_teams.p = P`, `equal_players.measure =
//! "uniformity"`, `equal_players.q = Q` (P, Q >= 1 or `"inf"`), both curves
//! `{ kind = "linear", scale = S }` with S at least the largest possible f (e.g. with
//! `skill.cap_max` set). Then every match score is exactly 1 - f / (S * (1 + alpha)).

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::error::PoolError;

/// Match format and scoring of one queue. `Default` is the Awesomenauts format of seed
/// 003: two teams of three, peer-to-peer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct QueueModel {
    /// Number of teams per match (>= 2).
    pub teams: usize,
    /// Players per team (>= 1).
    pub team_size: usize,
    pub network: Network,
    /// Role-restricted queue (Alman and McKay): each team fills every role listed here, once.
    /// Empty: no roles. At most `team_size` roles; remaining slots take any player.
    pub roles: Vec<String>,
    /// `strict`: a team must fill every role (hard constraint); `soft`: scored by the
    /// roles factor.
    pub role_mode: RoleMode,
    /// A player waiting longer than this must be placed whenever any valid match can
    /// include them (the Awesomenauts post's max-wait fallback).
    #[serde(with = "humantime_serde")]
    pub max_wait: Duration,
    /// Alman and McKay's time-sensitive priority g = f + beta * wait: score credit per minute
    /// of wait (capped at `max_wait`) for each player placed in a match rather than left
    /// unmatched.
    pub wait_priority_per_minute: f64,
    /// Round score = power mean of the match scores with this exponent (0 < p <= 1):
    /// 1 is the plain mean of the Awesomenauts matchmaker post; 0.5 (its "square root" remark) makes fixing the
    /// worst matches more important.
    pub round_score_power: f64,
    pub weights: Weights,
    pub skill: SkillParams,
    pub equal_teams: EqualTeamsParams,
    pub equal_players: EqualPlayersParams,
    pub indistinguishable_teams: IndistinguishableParams,
    pub premades: PremadeParams,
    pub ping: PingParams,
    pub opponent_variation: VariationParams,
    pub hosts: HostParams,
    pub predicted_fairness: FairnessParams,
    /// The AccelByte guide's alliance rule: a range of teams and of players per team. Absent
    /// (the default): the one format `teams` x `team_size`. Left out of the written
    /// config when absent (a fixed queue's stored config is unchanged).
    #[serde(skip_serializing_if = "AllianceParams::is_absent")]
    pub alliance: AllianceParams,
    /// Who may meet whom by attributes (`[queues.NAME.filters]`). Absent: anyone.
    #[serde(skip_serializing_if = "FilterParams::is_absent")]
    pub filters: FilterParams,
    /// How players' avoid lists apply in this queue (`[queues.NAME.avoids]`).
    #[serde(skip_serializing_if = "AvoidParams::is_default")]
    pub avoids: AvoidParams,
    /// Quality floors that relax with wait (`[[queues.NAME.floors]]`, FlexMatch's
    /// expansions), by `after` ascending. Empty: no floor.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub floors: Vec<FloorStep>,
    /// The maps a match may be played on (`[queues.NAME.maps]`). Absent: no map is
    /// chosen.
    #[serde(skip_serializing_if = "MapParams::is_absent")]
    pub maps: MapParams,
}

impl Default for QueueModel {
    fn default() -> Self {
        QueueModel {
            teams: 2,
            team_size: 3,
            network: Network::PeerToPeer,
            roles: Vec::new(),
            role_mode: RoleMode::Strict,
            max_wait: Duration::from_secs(10 * 60),
            wait_priority_per_minute: 0.002,
            round_score_power: 1.0,
            weights: Weights::default(),
            skill: SkillParams::default(),
            equal_teams: EqualTeamsParams::default(),
            equal_players: EqualPlayersParams::default(),
            indistinguishable_teams: IndistinguishableParams::default(),
            premades: PremadeParams::default(),
            ping: PingParams::default(),
            opponent_variation: VariationParams::default(),
            hosts: HostParams::default(),
            predicted_fairness: FairnessParams::default(),
            alliance: AllianceParams::default(),
            filters: FilterParams::default(),
            avoids: AvoidParams::default(),
            floors: Vec::new(),
            maps: MapParams::default(),
        }
    }
}

/// Hard limits that keep the exhaustive team split small. A format beyond them is a
/// big format, solved by the lobby path (`crate::lobby`) up to [`MAX_LOBBY_PLAYERS`].
pub const MAX_PLAYERS_PER_MATCH: usize = 16;
/// Most players of one match of a big format (a lobby): 50v50, 25 squads of 4.
pub const MAX_LOBBY_PLAYERS: usize = 100;
pub const MAX_ROLES: usize = 16;
/// Most splits one match may have (all solos): 5v5 has 126, 3x3 280, 3x4 5,775.
pub const MAX_SPLITS: u64 = 20_000;
/// Most formats a flexible queue may have (each is a scorer and a pass over the
/// players left out of the full matches).
pub const MAX_FORMATS: usize = 16;

/// A match format: players per team, largest team first.
pub type Format = Vec<usize>;

impl QueueModel {
    pub fn players_per_match(&self) -> usize {
        self.teams * self.team_size
    }

    /// Number of distinct team splits of a match of solos: P! / (T!^K K!), saturating
    /// at `u64::MAX` (a lobby of 64 has far more).
    pub fn solo_splits(&self) -> u64 {
        format_splits(&self.full_format())
    }

    /// A big format: more than [`MAX_PLAYERS_PER_MATCH`] players or more than
    /// [`MAX_SPLITS`] team splits. The exhaustive split cannot take it; the lobby path
    /// (`crate::lobby`) does.
    pub fn is_big(&self) -> bool {
        self.players_per_match() > MAX_PLAYERS_PER_MATCH || self.solo_splits() > MAX_SPLITS
    }

    /// The full format: `teams` teams of `team_size`.
    pub fn full_format(&self) -> Format {
        vec![self.team_size; self.teams]
    }

    /// Every format the queue allows, the full format first, then by players
    /// (descending), member-count difference (ascending) and team sizes (descending).
    /// One entry unless `alliance` gives ranges.
    pub fn formats(&self) -> Vec<Format> {
        let a = &self.alliance;
        let (tmin, tmax) = (a.min_number.unwrap_or(self.teams), self.teams);
        let (pmin, pmax) = (
            a.player_min_number.unwrap_or(self.team_size),
            self.team_size,
        );
        let mut out = vec![self.full_format()];
        if tmin < 2 || pmin < 1 || tmin > tmax || pmin > pmax {
            return out; // refused by `validate`
        }
        fn sizes(k: usize, lo: usize, hi: usize, cur: &mut Format, out: &mut Vec<Format>) {
            if cur.len() == k {
                out.push(cur.clone());
                return;
            }
            let top = cur.last().copied().unwrap_or(hi);
            for s in (lo..=top).rev() {
                cur.push(s);
                sizes(k, lo, hi, cur, out);
                cur.pop();
            }
        }
        let mut all = Vec::new();
        for k in tmin..=tmax {
            sizes(k, pmin, pmax, &mut Vec::new(), &mut all);
        }
        all.retain(|f| *f != out[0]);
        all.sort_by(|a, b| {
            let players = |f: &Format| f.iter().sum::<usize>();
            let spread = |f: &Format| f[0] - f[f.len() - 1];
            players(b)
                .cmp(&players(a))
                .then(spread(a).cmp(&spread(b)))
                .then(b.cmp(a))
        });
        out.extend(all);
        out
    }

    /// Players of the smallest format: the fewest a round needs to form any match
    /// (`players_per_match` for a fixed-format queue).
    pub fn min_players_per_match(&self) -> usize {
        self.formats()
            .iter()
            .map(|f| f.iter().sum::<usize>())
            .min()
            .unwrap_or_else(|| self.players_per_match())
    }

    /// Fewest teams and fewest players per team of any format (the AccelByte guide's
    /// `min_number` and `player_min_number`; the full format's for a fixed queue).
    pub fn min_teams_and_team_size(&self) -> (usize, usize) {
        let formats = self.formats();
        let teams = formats.iter().map(Vec::len).min().unwrap_or(self.teams);
        let size = formats
            .iter()
            .filter_map(|f| f.last().copied())
            .min()
            .unwrap_or(self.team_size);
        (teams, size)
    }

    /// More than one format (the AccelByte guide's relaxed alliance rule).
    pub fn is_flexible(&self) -> bool {
        let a = &self.alliance;
        a.min_number.is_some_and(|m| m != self.teams)
            || a.player_min_number.is_some_and(|m| m != self.team_size)
    }

    /// Refuse values the scoring cannot use; the message names the key.
    pub fn validate(&self) -> Result<(), PoolError> {
        if self.teams < 2 {
            return bad("teams", "must be at least 2");
        }
        if self.team_size < 1 {
            return bad("team_size", "must be at least 1");
        }
        if self.is_big() {
            self.validate_big()?;
        } else {
            self.validate_alliance()?;
            self.validate_sizes()?;
        }
        self.validate_weights()?;
        self.validate_factor_params()?;
        self.validate_meeting()?;
        self.maps.validate()
    }

    /// The alliance's formats: within the full format, few enough to enumerate.
    fn validate_alliance(&self) -> Result<(), PoolError> {
        let a = &self.alliance;
        if let Some(m) = a.max_number
            && m != self.teams
        {
            return bad(
                "alliance.max_number",
                &format!(
                    "must equal teams ({}): teams is the full format",
                    self.teams
                ),
            );
        }
        if let Some(m) = a.player_max_number
            && m != self.team_size
        {
            return bad(
                "alliance.player_max_number",
                &format!(
                    "must equal team_size ({}): team_size is the full format",
                    self.team_size
                ),
            );
        }
        if let Some(m) = a.min_number
            && !(2..=self.teams).contains(&m)
        {
            return bad(
                "alliance.min_number",
                &format!("must be between 2 and teams ({})", self.teams),
            );
        }
        if let Some(m) = a.player_min_number
            && !(1..=self.team_size).contains(&m)
        {
            return bad(
                "alliance.player_min_number",
                &format!("must be between 1 and team_size ({})", self.team_size),
            );
        }
        if !(0.0..=1.0).contains(&a.short_match_min_score) {
            return bad("alliance.short_match_min_score", "must be in [0, 1]");
        }
        let formats = self.formats();
        if formats.len() > MAX_FORMATS {
            return bad(
                "alliance",
                &format!(
                    "{} formats, more than the {MAX_FORMATS} allowed; narrow the ranges",
                    formats.len()
                ),
            );
        }
        for f in &formats[1..] {
            let n = format_splits(f);
            if n > MAX_SPLITS {
                return bad(
                    "alliance",
                    &format!(
                        "format {f:?} has {n} team splits, more than the {MAX_SPLITS} the exhaustive split allows"
                    ),
                );
            }
            if self.roles.len() > f[f.len() - 1] {
                return bad(
                    "alliance.player_min_number",
                    "fewer players per team than roles",
                );
            }
        }
        Ok(())
    }

    /// Players per match, team splits and roles.
    fn validate_sizes(&self) -> Result<(), PoolError> {
        if self.players_per_match() > MAX_PLAYERS_PER_MATCH {
            return bad(
                "team_size",
                &format!("teams * team_size must be at most {MAX_PLAYERS_PER_MATCH}"),
            );
        }
        let splits = self.solo_splits();
        if splits > MAX_SPLITS {
            return bad(
                "team_size",
                &format!(
                    "{} teams of {} have {splits} team splits, more than the {MAX_SPLITS} the exhaustive split allows",
                    self.teams, self.team_size
                ),
            );
        }
        if self.roles.len() > self.team_size {
            return bad("roles", "more roles than team_size");
        }
        for (i, r) in self.roles.iter().enumerate() {
            if r.is_empty() {
                return bad("roles", "empty role name");
            }
            if self.roles[..i].contains(r) {
                return bad("roles", &format!("role {r:?} listed twice"));
            }
        }
        Ok(())
    }

    /// What the lobby path (`crate::lobby`) supports of a big format: up to
    /// [`MAX_LOBBY_PLAYERS`] players, dedicated servers, no roles, no alliance ranges,
    /// and a weight on one of the factors it scores.
    fn validate_big(&self) -> Result<(), PoolError> {
        let big = format!(
            "{} teams of {} is a big format (more than {MAX_PLAYERS_PER_MATCH} players or {MAX_SPLITS} team splits)",
            self.teams, self.team_size
        );
        if self.players_per_match() > MAX_LOBBY_PLAYERS {
            return bad(
                "team_size",
                &format!("teams * team_size must be at most {MAX_LOBBY_PLAYERS}"),
            );
        }
        if self.network != Network::Dedicated {
            return bad(
                "network",
                &format!(
                    "{big}: big formats need network = \"dedicated\" (one player cannot host a lobby of {} players)",
                    self.players_per_match()
                ),
            );
        }
        if !self.roles.is_empty() {
            return bad(
                "roles",
                &format!("{big}: roles are not supported in big formats"),
            );
        }
        if !self.alliance.is_absent() {
            return bad(
                "alliance",
                &format!("{big}: alliance ranges are not supported in big formats"),
            );
        }
        let w = &self.weights;
        let scored = if self.teams == 2 {
            w.equal_teams + w.equal_players + w.premades + w.enemy_ping
        } else {
            w.equal_players + w.enemy_ping
        };
        if scored <= 0.0 {
            return bad(
                "weights",
                &format!(
                    "{big}: one of the weights it scores ({}) must be > 0",
                    if self.teams == 2 {
                        "equal_teams, equal_players, premades, enemy_ping"
                    } else {
                        "equal_players, enemy_ping"
                    }
                ),
            );
        }
        Ok(())
    }

    /// The round's weights: each >= 0, at least one that applies > 0.
    fn validate_weights(&self) -> Result<(), PoolError> {
        nonneg("wait_priority_per_minute", self.wait_priority_per_minute)?;
        if !(self.round_score_power > 0.0 && self.round_score_power <= 1.0) {
            return bad("round_score_power", "must be in (0, 1]");
        }
        let w = &self.weights;
        for (name, v) in w.named() {
            nonneg(&format!("weights.{name}"), v)?;
        }
        let flexible = self.is_flexible();
        if w.named()
            .iter()
            .filter(|(n, _)| flexible || *n != "member_count_difference")
            .filter(|(n, _)| self.filters.language.is_some() || *n != "language")
            .filter(|(n, _)| !self.maps.is_absent() || *n != "maps")
            .all(|(_, v)| *v == 0.0)
        {
            return bad("weights", "at least one weight must be > 0");
        }
        Ok(())
    }

    /// The factors' parameters: skill caps, curves, tables, pings, hosts.
    fn validate_factor_params(&self) -> Result<(), PoolError> {
        if let (Some(lo), Some(hi)) = (self.skill.cap_min, self.skill.cap_max)
            && lo > hi
        {
            return bad("skill.cap_min", "must not exceed skill.cap_max");
        }
        for (key, v) in [
            ("skill.cap_min", self.skill.cap_min),
            ("skill.cap_max", self.skill.cap_max),
        ] {
            if let Some(v) = v {
                nonneg(key, v)?;
            }
        }
        if self.equal_teams.p.0.is_nan() || self.equal_teams.p.0 < 1.0 {
            return bad("equal_teams.p", "must be >= 1 or \"inf\"");
        }
        positive("equal_teams.curve.scale", self.equal_teams.curve.scale)?;
        if self.equal_players.q.0.is_nan() || self.equal_players.q.0 < 1.0 {
            return bad("equal_players.q", "must be >= 1 or \"inf\"");
        }
        positive("equal_players.curve.scale", self.equal_players.curve.scale)?;
        positive(
            "indistinguishable_teams.sigma_prior",
            self.indistinguishable_teams.sigma_prior,
        )?;
        positive(
            "indistinguishable_teams.scale",
            self.indistinguishable_teams.scale,
        )?;
        let table = &self.premades.table;
        if table.is_empty() {
            return bad(
                "premades.table",
                "needs at least one [difference, score] point",
            );
        }
        for (i, [x, y]) in table.iter().enumerate() {
            unit("premades.table", *x)?;
            unit("premades.table", *y)?;
            if i > 0 && *x <= table[i - 1][0] {
                return bad("premades.table", "differences must increase");
            }
        }
        positive("ping.good_ms", self.ping.good_ms)?;
        positive("ping.bad_ms", self.ping.bad_ms)?;
        if self.ping.bad_ms <= self.ping.good_ms {
            return bad("ping.bad_ms", "must exceed ping.good_ms");
        }
        nonneg("ping.unknown_ms", self.ping.unknown_ms)?;
        nonneg("ping.relay_overhead_ms", self.ping.relay_overhead_ms)?;
        let v = &self.opponent_variation;
        if v.depth == 0 {
            return bad("opponent_variation.depth", "must be at least 1");
        }
        unit("opponent_variation.decay", v.decay)?;
        unit(
            "opponent_variation.same_relation_cost",
            v.same_relation_cost,
        )?;
        unit(
            "opponent_variation.swapped_relation_cost",
            v.swapped_relation_cost,
        )?;
        positive("hosts.max_ping_ms", self.hosts.max_ping_ms)?;
        unit("hosts.one_host_score", self.hosts.one_host_score)?;
        positive("predicted_fairness.beta", self.predicted_fairness.beta)?;
        positive(
            "predicted_fairness.default_sigma",
            self.predicted_fairness.default_sigma,
        )?;
        Ok(())
    }

    /// The filters, avoids and floor steps.
    fn validate_meeting(&self) -> Result<(), PoolError> {
        let f = &self.filters;
        for (i, a) in f.same.iter().enumerate() {
            if a.is_empty() {
                return bad("filters.same", "empty attribute name");
            }
            if f.same[..i].contains(a) {
                return bad("filters.same", &format!("attribute {a:?} listed twice"));
            }
        }
        for (key, v) in [
            ("filters.crossplay", &f.crossplay),
            ("filters.language", &f.language),
        ] {
            if v.as_deref() == Some("") {
                return bad(key, "empty attribute name");
            }
        }
        if self.avoids.max_per_player > 100 {
            return bad("avoids.max_per_player", "must be at most 100");
        }
        let p2p = self.network == Network::PeerToPeer;
        let mut prev: Option<&FloorStep> = None;
        for (i, s) in self.floors.iter().enumerate() {
            let key = |k: &str| format!("floors[{i}].{k}");
            if let Some(v) = s.max_team_gap
                && !(v.is_finite() && v >= 0.0)
            {
                return bad(&key("max_team_gap"), "must be a finite number >= 0");
            }
            if let Some(v) = s.max_enemy_ping_ms
                && !(v.is_finite() && v > 0.0)
            {
                return bad(&key("max_enemy_ping_ms"), "must be a finite number > 0");
            }
            if let Some(v) = s.min_match_score
                && !(0.0..=1.0).contains(&v)
            {
                return bad(&key("min_match_score"), "must be in [0, 1]");
            }
            if s.relax_vetoes && self.maps.is_absent() {
                return bad(
                    &key("relax_vetoes"),
                    "the queue has no maps ([queues.NAME.maps])",
                );
            }
            if s.relay && !p2p {
                return bad(
                    &key("relay"),
                    "only peer-to-peer queues relay (dedicated servers always host)",
                );
            }
            if let Some(p) = prev {
                if s.after <= p.after {
                    return bad(&key("after"), "steps must be in ascending order of after");
                }
                // a limit may only relax with wait: a player must never become
                // harder to match by waiting
                let looser = |now: Option<f64>, before: Option<f64>, up: bool| match (now, before) {
                    (_, None) => now.is_none(),
                    (None, Some(_)) => true,
                    (Some(a), Some(b)) => {
                        if up {
                            a >= b
                        } else {
                            a <= b
                        }
                    }
                };
                for (k, now, before, up) in [
                    ("max_team_gap", s.max_team_gap, p.max_team_gap, true),
                    (
                        "max_enemy_ping_ms",
                        s.max_enemy_ping_ms,
                        p.max_enemy_ping_ms,
                        true,
                    ),
                    (
                        "min_match_score",
                        s.min_match_score,
                        p.min_match_score,
                        false,
                    ),
                ] {
                    if !looser(now, before, up) {
                        return bad(&key(k), "must not tighten the previous step's limit");
                    }
                }
                if p.relay && !s.relay {
                    return bad(&key("relay"), "a later step must keep relay on");
                }
                if p.relax_vetoes && !s.relax_vetoes {
                    return bad(
                        &key("relax_vetoes"),
                        "a later step must keep relax_vetoes on",
                    );
                }
            }
            prev = Some(s);
        }
        Ok(())
    }
}

/// A format as people write it: team sizes largest first, joined by `v` ("5v4",
/// "4v4v3"). The `queues` table publishes these, and the audit compares matches to them.
pub fn format_label(format: &[usize]) -> String {
    let mut sizes = format.to_vec();
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    sizes
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join("v")
}

/// Distinct team splits of a match of solos in `format` (teams of equal size are
/// interchangeable): P! / (prod s_i! x prod over equal sizes m_j!).
/// Saturates at `u64::MAX` (the factorials of a big format overflow any integer).
pub fn format_splits(format: &[usize]) -> u64 {
    // a product of binomials, each exact, divided by the permutations of equal teams
    fn binomial(n: u128, k: u128) -> Option<u128> {
        let mut r: u128 = 1;
        for i in 0..k {
            r = r.checked_mul(n - i)? / (i + 1);
        }
        Some(r)
    }
    let count = || -> Option<u128> {
        let mut left: u128 = format.iter().sum::<usize>() as u128;
        let mut acc: u128 = 1;
        for &s in format {
            acc = acc.checked_mul(binomial(left, s as u128)?)?;
            left -= s as u128;
        }
        let mut i = 0;
        while i < format.len() {
            let j = (i..format.len())
                .find(|&j| format[j] != format[i])
                .unwrap_or(format.len());
            acc /= (1..=(j - i) as u128).product::<u128>();
            i = j;
        }
        Some(acc)
    };
    count().map_or(u64::MAX, |n| n.min(u64::MAX as u128) as u64)
}

/// The AccelByte guide's alliance rule (`[queues.NAME.alliance]`): `min_number`..`max_number`
/// teams of `player_min_number`..`player_max_number` players. The maxima are the full
/// format (`teams`, `team_size`; they may be omitted, and must match when given); the
/// minima default to them (one format).
///
/// A flexible queue forms full matches first; from the players left out it forms
/// smaller matches (e.g. 4v5, 4v4 in a 5v5 queue) whose score, with the
/// `member_count_difference` factor in the average, is at least `short_match_min_score`
/// (the value of leaving those players for the next round).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AllianceParams {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_number: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_number: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub player_min_number: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub player_max_number: Option<usize>,
    /// Score a match smaller than the full format must reach to form (0..=1); 0: any
    /// smaller match forms when the full matches leave its players out.
    pub short_match_min_score: f64,
}

impl AllianceParams {
    /// Nothing set (the default).
    pub fn is_absent(&self) -> bool {
        *self == AllianceParams::default()
    }
}

/// Hard rules over players' attributes (`[queues.NAME.filters]`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FilterParams {
    /// Attributes everyone in a match shares (`["build"]`): a player without the
    /// attribute meets only players without it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub same: Vec<String>,
    /// The attribute holding a player's platform. Set: a player whose `crossplay`
    /// attribute is `"off"` meets only players of their own platform; the others mix
    /// freely. Absent: no crossplay rule.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crossplay: Option<String>,
    /// The attribute holding a player's languages (one or a list), for the soft
    /// language factor: teammates who share one score higher. Absent: no factor.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
}

impl FilterParams {
    pub fn is_absent(&self) -> bool {
        *self == FilterParams::default()
    }
}

/// Where an avoid keeps two players apart.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AvoidScope {
    /// Never in one match.
    #[default]
    Match,
    /// Never on one team (they may still be opponents).
    Team,
}

/// `[queues.NAME.avoids]`: how avoid lists apply in this queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AvoidParams {
    pub scope: AvoidScope,
    /// A player's newest avoids the queue honours (Overwatch keeps a short list: the
    /// oldest goes when a new one comes), so avoids cannot starve a player or the pool.
    pub max_per_player: usize,
}

impl Default for AvoidParams {
    fn default() -> Self {
        AvoidParams {
            scope: AvoidScope::Match,
            max_per_player: 10,
        }
    }
}

impl AvoidParams {
    pub fn is_default(&self) -> bool {
        *self == AvoidParams::default()
    }
}

/// One step of the quality floors (`[[queues.NAME.floors]]`): from `after` of wait of a
/// match's longest-waiting player, the match must meet every limit given here.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FloorStep {
    #[serde(with = "humantime_serde")]
    pub after: Duration,
    /// Largest gap between team mean skills, in skill points.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_team_gap: Option<f64>,
    /// Largest ping between two players on different teams, ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_enemy_ping_ms: Option<f64>,
    /// Smallest match score.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_match_score: Option<f64>,
    /// Peer-to-peer: from this step on, a match nobody in it can host may form, marked
    /// as needing the game's relay.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub relay: bool,
    /// Queues with maps: from this step on, a match whose players leave no map
    /// un-vetoed may form, on the map the fewest of them vetoed.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub relax_vetoes: bool,
}

/// Most maps a queue's pool may hold (a match's choice is a 64-bit mask).
pub const MAX_MAPS: usize = 64;
/// Most vetoes per player (an attribute holds at most 16 values).
pub const MAX_VETOES: usize = 16;
/// Deepest history a map's repeat is counted over.
pub const MAX_REPEAT_DEPTH: usize = 20;

/// `[queues.NAME.maps]`: the maps a match is played on, chosen in the round with its
/// players (`factors::maps`). Players name the maps they veto and prefer in their
/// `veto` and `maps` attributes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MapParams {
    /// The map names, in the order ties are broken. Empty: the queue has no maps.
    pub pool: Vec<String>,
    /// How many maps one player may veto (fewer than the pool, so that every player
    /// can play somewhere). A match is never on a map one of its players vetoed,
    /// unless a floor step with `relax_vetoes` is in force.
    pub vetoes: usize,
    /// How many of a player's last matches count against replaying their map.
    pub repeat_depth: usize,
}

impl Default for MapParams {
    fn default() -> Self {
        MapParams {
            pool: Vec::new(),
            vetoes: 0,
            repeat_depth: 3,
        }
    }
}

impl MapParams {
    pub fn is_absent(&self) -> bool {
        self.pool.is_empty()
    }

    fn validate(&self) -> Result<(), PoolError> {
        if self.is_absent() {
            if self.vetoes > 0 {
                return bad("maps.vetoes", "the queue has no maps.pool");
            }
            return Ok(());
        }
        if self.pool.len() > MAX_MAPS {
            return bad(
                "maps.pool",
                &format!("has {} maps, more than {MAX_MAPS}", self.pool.len()),
            );
        }
        for (i, m) in self.pool.iter().enumerate() {
            if m.is_empty() || m.chars().count() > 64 || m.chars().any(char::is_control) {
                return bad(
                    "maps.pool",
                    &format!("{m:?}: a map name has 1 to 64 characters, none a control character"),
                );
            }
            if self.pool[..i].contains(m) {
                return bad("maps.pool", &format!("map {m:?} listed twice"));
            }
        }
        if self.vetoes >= self.pool.len() || self.vetoes > MAX_VETOES {
            return bad(
                "maps.vetoes",
                &format!(
                    "must be below the pool's size ({}) and at most {MAX_VETOES}: a player must leave a map to play",
                    self.pool.len()
                ),
            );
        }
        if self.repeat_depth > MAX_REPEAT_DEPTH {
            return bad(
                "maps.repeat_depth",
                &format!("must be at most {MAX_REPEAT_DEPTH}"),
            );
        }
        Ok(())
    }
}

/// How players connect: peer-to-peer (one player hosts, the Awesomenauts matchmaker post) or dedicated servers
/// in regions (the match is placed in the region that minimises the worst latency).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Network {
    #[default]
    PeerToPeer,
    Dedicated,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoleMode {
    #[default]
    Strict,
    Soft,
}

/// Weights of the match-score factors (the Awesomenauts post's weighted average). A weight of 0
/// disables the factor. Factors that do not apply to a queue (hosts on dedicated
/// servers, roles without roles) are left out of the average.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Weights {
    pub equal_teams: f64,
    pub equal_players: f64,
    pub indistinguishable_teams: f64,
    pub premades: f64,
    pub enemy_ping: f64,
    pub opponent_variation: f64,
    pub two_hosts: f64,
    pub side_preference: f64,
    pub roles: f64,
    pub predicted_fairness: f64,
    /// The AccelByte guide's member-count difference between teams; only flexible queues
    /// (`alliance` ranges) have it in the average, so fixed formats score as before.
    /// Left out of the written config at its default, so that a fixed queue's stored
    /// config (and its hash) is what it was before flexible formats.
    #[serde(skip_serializing_if = "is_default_member_weight")]
    pub member_count_difference: f64,
    /// Teammates sharing a language (the Awesomenauts post's "same region or
    /// language"); only in the average when `filters.language` is set, and left out of
    /// the written config at its default (as `member_count_difference`).
    #[serde(skip_serializing_if = "is_default_language_weight")]
    pub language: f64,
    /// How much its players like the match's map (`factors::maps`); only in the
    /// average when the queue has a map pool, and left out of the written config at its
    /// default (as `member_count_difference`).
    #[serde(skip_serializing_if = "is_default_maps_weight")]
    pub maps: f64,
}

impl Default for Weights {
    fn default() -> Self {
        Weights {
            equal_teams: 4.0,
            equal_players: 2.0,
            indistinguishable_teams: 0.0,
            premades: 1.0,
            enemy_ping: 3.0,
            opponent_variation: 0.5,
            two_hosts: 1.0,
            side_preference: 0.0,
            roles: 0.0,
            predicted_fairness: 0.0,
            member_count_difference: 1.0,
            language: 1.0,
            maps: 1.0,
        }
    }
}

fn is_default_maps_weight(w: &f64) -> bool {
    *w == Weights::default().maps
}

fn is_default_language_weight(w: &f64) -> bool {
    *w == Weights::default().language
}

fn is_default_member_weight(w: &f64) -> bool {
    *w == Weights::default().member_count_difference
}

impl Weights {
    /// (config key, weight), in the fixed factor order.
    pub fn named(&self) -> [(&'static str, f64); 13] {
        [
            ("equal_teams", self.equal_teams),
            ("equal_players", self.equal_players),
            ("indistinguishable_teams", self.indistinguishable_teams),
            ("premades", self.premades),
            ("enemy_ping", self.enemy_ping),
            ("opponent_variation", self.opponent_variation),
            ("two_hosts", self.two_hosts),
            ("side_preference", self.side_preference),
            ("roles", self.roles),
            ("predicted_fairness", self.predicted_fairness),
            ("member_count_difference", self.member_count_difference),
            ("language", self.language),
            ("maps", self.maps),
        ]
    }
}

/// Skill capping before any skill factor (the Awesomenauts matchmaker post: "we cap them to workable ranges").
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SkillParams {
    /// Skills below this count as this value. None: no lower cap.
    pub cap_min: Option<f64>,
    /// Skills above this count as this value (Awesomenauts: 18000). None: no cap.
    pub cap_max: Option<f64>,
}

/// A curve from a non-negative difference d to a score in [0, 1], x = d / scale:
/// `linear` max(0, 1 - x), `exponential` exp(-x), `reciprocal` 1 / (1 + x),
/// `gaussian` exp(-x^2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Curve {
    pub kind: CurveKind,
    pub scale: f64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CurveKind {
    #[default]
    Linear,
    Exponential,
    Reciprocal,
    Gaussian,
}

impl Default for Curve {
    fn default() -> Self {
        Curve {
            kind: CurveKind::Linear,
            scale: 300.0,
        }
    }
}

impl Curve {
    pub fn score(&self, d: f64) -> f64 {
        self.score_scaled(d / self.scale)
    }

    /// The curve at x = d / scale (hot loops multiply by a precomputed inverse).
    #[inline]
    pub fn score_scaled(&self, x: f64) -> f64 {
        match self.kind {
            CurveKind::Linear => (1.0 - x).max(0.0),
            CurveKind::Exponential => (-x).exp(),
            CurveKind::Reciprocal => 1.0 / (1.0 + x),
            CurveKind::Gaussian => (-x * x).exp(),
        }
    }
}

/// An exponent p >= 1 that may be infinite; written as a number or `"inf"`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Exponent(pub f64);

impl Exponent {
    pub const INFINITE: Exponent = Exponent(f64::INFINITY);
    pub fn is_infinite(self) -> bool {
        self.0.is_infinite()
    }
}

impl fmt::Display for Exponent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_infinite() {
            f.write_str("inf")
        } else {
            write!(f, "{}", self.0)
        }
    }
}

impl Serialize for Exponent {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.is_infinite() {
            s.serialize_str("inf")
        } else {
            s.serialize_f64(self.0)
        }
    }
}

impl<'de> Deserialize<'de> for Exponent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Repr {
            Num(f64),
            Text(String),
        }
        match Repr::deserialize(d)? {
            Repr::Num(v) => Ok(Exponent(v)),
            Repr::Text(t) if matches!(t.as_str(), "inf" | "infinity" | "Infinity") => {
                Ok(Exponent::INFINITE)
            }
            Repr::Text(t) => Err(serde::de::Error::custom(format!(
                "expected a number or \"inf\", got {t:?}"
            ))),
        }
    }
}

/// Factor 1, equal teams (the Awesomenauts matchmaker post; Alman and McKay).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EqualTeamsParams {
    /// `mean`: team skill is the power mean (mean of s^p)^(1/p), the plain mean for
    /// p = 1 (the Awesomenauts matchmaker post). `norm`: Alman and McKay's p-norm (sum of s^p)^(1/p).
    pub team_skill: TeamSkill,
    /// p >= 1 or "inf" (team skill = best player).
    pub p: Exponent,
    /// Curve of the difference between the strongest and weakest team.
    pub curve: Curve,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TeamSkill {
    #[default]
    Mean,
    Norm,
}

impl Default for EqualTeamsParams {
    fn default() -> Self {
        EqualTeamsParams {
            team_skill: TeamSkill::Mean,
            p: Exponent(1.0),
            curve: Curve {
                kind: CurveKind::Linear,
                scale: 300.0,
            },
        }
    }
}

/// Factor 2, equal players (the Awesomenauts matchmaker post; Alman and McKay).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EqualPlayersParams {
    /// `pairwise`: mean absolute difference over all pairs (the Awesomenauts post's 15 pairs for 6
    /// players). `uniformity`: Alman and McKay's v_q = (mean |s - mean|^q)^(1/q).
    pub measure: SpreadMeasure,
    /// q >= 1 or "inf" (largest deviation), for `uniformity`.
    pub q: Exponent,
    pub curve: Curve,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpreadMeasure {
    #[default]
    Pairwise,
    Uniformity,
}

impl Default for EqualPlayersParams {
    fn default() -> Self {
        EqualPlayersParams {
            measure: SpreadMeasure::Pairwise,
            q: Exponent(2.0),
            curve: Curve {
                kind: CurveKind::Linear,
                scale: 600.0,
            },
        }
    }
}

/// Factor 3, indistinguishable teams (the mutual-information balancing note).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IndistinguishableParams {
    /// Prior added to every standard deviation (skill points), so that equal skills do
    /// not give log 0.
    pub sigma_prior: f64,
    /// Score = exp(-D / scale), D the summed KL divergence.
    pub scale: f64,
}

impl Default for IndistinguishableParams {
    fn default() -> Self {
        IndistinguishableParams {
            sigma_prior: 50.0,
            scale: 1.0,
        }
    }
}

/// Factor 4, premades (the Awesomenauts matchmaker post).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PremadeParams {
    /// Piecewise-linear score of the relative premade difference between the teams,
    /// as [difference, score] points with increasing difference in [0, 1]. The default
    /// reproduces the Awesomenauts matchmaker post for 3v3: same structure 1, 3 vs 2+1 0.6, 3 vs 1+1+1 0.
    pub table: Vec<[f64; 2]>,
}

impl Default for PremadeParams {
    fn default() -> Self {
        PremadeParams {
            table: vec![[0.0, 1.0], [0.5, 0.6], [1.0, 0.0]],
        }
    }
}

/// Factor 5, ping with enemies (the Awesomenauts matchmaker post), and the ping estimate used by hosts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PingParams {
    /// Pings at or below this score 1.
    pub good_ms: f64,
    /// Pings at or above this score 0; in between the score falls with log(ping), so
    /// 110 -> 100 ms counts twice as much as 210 -> 200 ms.
    pub bad_ms: f64,
    /// Ping assumed when neither a peer ping nor a shared region latency is known.
    pub unknown_ms: f64,
    /// Added to the relay estimate lat(a, r) + lat(b, r).
    pub relay_overhead_ms: f64,
}

impl Default for PingParams {
    fn default() -> Self {
        PingParams {
            good_ms: 30.0,
            bad_ms: 300.0,
            unknown_ms: 150.0,
            relay_overhead_ms: 0.0,
        }
    }
}

impl PingParams {
    /// The perceived ping score: 1 up to `good_ms`, 0 from `bad_ms`, log-linear between.
    pub fn score(&self, ping: f64) -> f64 {
        if ping <= self.good_ms {
            1.0
        } else if ping >= self.bad_ms {
            0.0
        } else {
            1.0 - (ping / self.good_ms).ln() / (self.bad_ms / self.good_ms).ln()
        }
    }
}

/// Factor 6, opponent variation (the Awesomenauts matchmaker post).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VariationParams {
    /// How many of each player's most recent past matches count (the Awesomenauts matchmaker post: 1).
    pub depth: usize,
    /// Weight of an older match: decay^k for the k-th most recent (k = 0 newest).
    pub decay: f64,
    /// Cost of meeting in the same relation as before (opponents again, teammates again).
    pub same_relation_cost: f64,
    /// Cost of meeting in the swapped relation (the Awesomenauts matchmaker post: "slightly better").
    pub swapped_relation_cost: f64,
}

impl Default for VariationParams {
    fn default() -> Self {
        VariationParams {
            depth: 1,
            decay: 0.5,
            same_relation_cost: 1.0,
            swapped_relation_cost: 0.7,
        }
    }
}

/// Factor 7, two possible hosts (the Awesomenauts matchmaker post, peer-to-peer only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HostParams {
    /// A player can host when their ping to every other player is at most this.
    pub max_ping_ms: f64,
    /// Score when exactly one player can host (two or more: 1, none: 0).
    pub one_host_score: f64,
}

impl Default for HostParams {
    fn default() -> Self {
        HostParams {
            max_ping_ms: 150.0,
            one_host_score: 0.5,
        }
    }
}

/// Factor 10, predicted fairness (Weng-Lin, through the `skillratings` crate).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FairnessParams {
    /// Skill-class width in skill points (Weng-Lin beta).
    pub beta: f64,
    /// Sigma for players without `skill_sigma`.
    pub default_sigma: f64,
}

impl Default for FairnessParams {
    fn default() -> Self {
        FairnessParams {
            beta: 200.0,
            default_sigma: 100.0,
        }
    }
}

/// A refused model value: the key and what is wrong with it.
fn bad(key: &str, problem: &str) -> Result<(), PoolError> {
    Err(PoolError::Model(format!("{key}: {problem}")))
}

fn nonneg(key: &str, v: f64) -> Result<(), PoolError> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        bad(key, "must be a finite number >= 0")
    }
}

fn positive(key: &str, v: f64) -> Result<(), PoolError> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        bad(key, "must be a finite number > 0")
    }
}

fn unit(key: &str, v: f64) -> Result<(), PoolError> {
    if (0.0..=1.0).contains(&v) {
        Ok(())
    } else {
        bad(key, "must be in [0, 1]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_model_is_valid() {
        QueueModel::default().validate().unwrap();
    }

    #[test]
    fn curves_have_documented_values() {
        let c = |kind| Curve { kind, scale: 100.0 };
        assert_eq!(c(CurveKind::Linear).score(25.0), 0.75);
        assert_eq!(c(CurveKind::Linear).score(250.0), 0.0);
        assert!((c(CurveKind::Exponential).score(100.0) - (-1.0f64).exp()).abs() < 1e-12);
        assert_eq!(c(CurveKind::Reciprocal).score(100.0), 0.5);
        assert!((c(CurveKind::Gaussian).score(200.0) - (-4.0f64).exp()).abs() < 1e-12);
    }

    #[test]
    fn ping_curve_is_perceived() {
        let p = PingParams::default();
        assert_eq!(p.score(20.0), 1.0);
        assert_eq!(p.score(400.0), 0.0);
        let near = p.score(100.0) - p.score(110.0);
        let far = p.score(200.0) - p.score(210.0);
        // log curve: the 100 -> 110 step costs ln(1.1)/ln(1.05) ~ 1.95x the 200 -> 210 step
        assert!((near / far - 1.1f64.ln() / 1.05f64.ln()).abs() < 1e-9);
        assert!((p.score(300.0f64.sqrt() * 30.0f64.sqrt()) - 0.5).abs() < 1e-12);
    }

    #[test]
    fn exponent_accepts_inf_in_toml() {
        let m: QueueModel =
            toml::from_str("[equal_teams]\np = \"inf\"\n[equal_players]\nq = inf\n").unwrap();
        assert!(m.equal_teams.p.is_infinite());
        assert!(m.equal_players.q.is_infinite());
        m.validate().unwrap();
    }

    #[test]
    fn split_counts_and_limit() {
        let m = |teams, team_size| QueueModel {
            teams,
            team_size,
            ..QueueModel::default()
        };
        assert_eq!(m(2, 3).solo_splits(), 10);
        assert_eq!(m(2, 5).solo_splits(), 126);
        assert_eq!(m(3, 3).solo_splits(), 280);
        assert_eq!(m(3, 4).solo_splits(), 5775);
        m(3, 4).validate().unwrap();
        assert_eq!(m(3, 5).solo_splits(), 126126);
        assert_eq!(m(2, 32).solo_splits(), 916_312_070_471_295_267);
        assert_eq!(m(2, 50).solo_splits(), u64::MAX);
        assert!(m(3, 5).is_big() && m(2, 16).is_big() && !m(3, 4).is_big());
        // a big format takes the lobby path, which needs dedicated servers
        let err = m(3, 5).validate().unwrap_err().to_string();
        assert!(
            err.contains("network") && err.contains("big format"),
            "{err}"
        );
        let dedicated = |teams, team_size| QueueModel {
            network: Network::Dedicated,
            ..m(teams, team_size)
        };
        dedicated(2, 16).validate().unwrap();
        dedicated(25, 4).validate().unwrap();
        dedicated(2, 50).validate().unwrap();
        let err = dedicated(2, 51).validate().unwrap_err().to_string();
        assert!(err.contains("team_size") && err.contains("100"), "{err}");
        let err = QueueModel {
            roles: vec!["tank".into()],
            ..dedicated(2, 16)
        }
        .validate()
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("roles") && err.contains("big formats"),
            "{err}"
        );
        let mut flexible = dedicated(2, 16);
        flexible.alliance.player_min_number = Some(12);
        let err = flexible.validate().unwrap_err().to_string();
        assert!(
            err.contains("alliance") && err.contains("big formats"),
            "{err}"
        );
    }

    #[test]
    fn alliance_ranges_give_the_formats() {
        let m: QueueModel = toml::from_str(
            "teams = 2\nteam_size = 5\n[alliance]\nplayer_min_number = 4\nshort_match_min_score = 0.9\n",
        )
        .unwrap();
        m.validate().unwrap();
        assert!(m.is_flexible());
        assert_eq!(m.formats(), [vec![5, 5], vec![5, 4], vec![4, 4]]);
        assert_eq!(m.min_players_per_match(), 8);
        assert_eq!(m.min_teams_and_team_size(), (2, 4));
        assert_eq!(format_label(&[4, 5]), "5v4");
        let m: QueueModel =
            toml::from_str("teams = 3\nteam_size = 2\n[alliance]\nmin_number = 2\n").unwrap();
        m.validate().unwrap();
        assert_eq!(m.formats(), [vec![2, 2, 2], vec![2, 2]]);
        assert_eq!(m.min_players_per_match(), 4);
        assert_eq!(m.min_teams_and_team_size(), (2, 2));
        assert_eq!(format_label(&m.formats()[0]), "2v2v2");
        // the maxima only restate the full format: still one format
        let m: QueueModel = toml::from_str(
            "[alliance]\nmin_number = 2\nmax_number = 2\nplayer_min_number = 3\nplayer_max_number = 3\n",
        )
        .unwrap();
        m.validate().unwrap();
        assert!(!m.is_flexible());
        assert_eq!(m.formats(), [vec![3, 3]]);
        assert_eq!(QueueModel::default().formats(), [vec![3, 3]]);
        assert_eq!(QueueModel::default().min_players_per_match(), 6);
        assert_eq!(QueueModel::default().min_teams_and_team_size(), (2, 3));
        assert_eq!(format_splits(&[5, 4]), 126);
        assert_eq!(format_splits(&[3, 3]), 10);
    }

    #[test]
    fn fixed_queues_write_no_alliance_and_no_member_count_weight() {
        let json = serde_json::to_string(&QueueModel::default()).unwrap();
        assert!(
            !json.contains("alliance") && !json.contains("member_count"),
            "{json}"
        );
    }

    #[test]
    fn bad_alliance_values_name_the_key() {
        let err = |toml: &str| {
            let m: QueueModel = toml::from_str(toml).unwrap();
            m.validate().unwrap_err().to_string()
        };
        let e = err("teams = 2\n[alliance]\nmax_number = 3\n");
        assert!(
            e.contains("alliance.max_number") && e.contains("teams (2)"),
            "{e}"
        );
        let e = err("[alliance]\nplayer_max_number = 4\n");
        assert!(e.contains("alliance.player_max_number"), "{e}");
        let e = err("[alliance]\nplayer_min_number = 0\n");
        assert!(e.contains("alliance.player_min_number"), "{e}");
        let e = err("[alliance]\nmin_number = 1\n");
        assert!(e.contains("alliance.min_number"), "{e}");
        let e = err("[alliance]\nplayer_min_number = 2\nshort_match_min_score = 1.5\n");
        assert!(e.contains("alliance.short_match_min_score"), "{e}");
        let e =
            err("teams = 3\nteam_size = 4\n[alliance]\nmin_number = 2\nplayer_min_number = 1\n");
        assert!(e.contains("alliance") && e.contains("formats"), "{e}");
        let e = err("team_size = 3\nroles = [\"a\", \"b\"]\n[alliance]\nplayer_min_number = 1\n");
        assert!(e.contains("fewer players per team than roles"), "{e}");
        assert!(toml::from_str::<QueueModel>("[alliance]\nmin_teams = 2\n").is_err());
    }

    #[test]
    fn validation_names_the_key() {
        let mut m = QueueModel::default();
        m.weights.enemy_ping = f64::NAN;
        let err = m.validate().unwrap_err().to_string();
        assert!(err.contains("weights.enemy_ping"), "{err}");
        let m = QueueModel {
            teams: 1,
            ..QueueModel::default()
        };
        assert!(m.validate().unwrap_err().to_string().contains("teams"));
    }
}
