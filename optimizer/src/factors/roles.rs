//! Factor 9, roles (Alman and McKay's role-restricted queue).
//!
//! A queue with `roles = [...]` (at most `team_size`) needs each team to fill every role
//! with a distinct player who accepts it (a player without `roles` accepts any); the
//! other `team_size - roles` slots take anyone. With `role_mode = "strict"` a split
//! that cannot fill every role is invalid (hard constraint) and the factor is 1; with
//! `"soft"` the factor is filled role slots / all role slots (a maximum bipartite
//! matching per team). The output gives each player's role.

/// Maximum matching of players (accepted-role masks) to roles: returns the number of
/// roles filled and, per role, the index of the player in `masks` who takes it.
pub fn fill(masks: &[u32], nroles: usize) -> (usize, [i8; 16]) {
    let mut owner = [-1i8; 16];
    let mut filled = 0;
    for p in 0..masks.len() {
        let mut seen = 0u32;
        if augment(p, masks, &mut owner, &mut seen, nroles) {
            filled += 1;
        }
    }
    (filled, owner)
}

fn augment(p: usize, masks: &[u32], owner: &mut [i8; 16], seen: &mut u32, nroles: usize) -> bool {
    let mut m = masks[p] & !*seen;
    while m != 0 {
        let r = m.trailing_zeros() as usize;
        m &= m - 1;
        if r >= nroles {
            break;
        }
        *seen |= 1 << r;
        if owner[r] < 0 || augment(owner[r] as usize, masks, owner, seen, nroles) {
            owner[r] = p as i8;
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matching_reassigns_to_fill_roles() {
        // p0 accepts {0, 1}, p1 only {0}: p0 must move to role 1
        let (filled, owner) = fill(&[0b11, 0b01], 2);
        assert_eq!(filled, 2);
        assert_eq!(owner[0], 1);
        assert_eq!(owner[1], 0);
    }

    #[test]
    fn unfillable_role_counts_short() {
        let (filled, _) = fill(&[0b01, 0b01, 0b01], 3);
        assert_eq!(filled, 1);
    }
}
