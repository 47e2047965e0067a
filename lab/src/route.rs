//! A network route the lab can cut: a network namespace that reaches this machine over a
//! veth pair of its own (`10.213.x.y/30`: this side `.1`, the namespace's `.2`). A
//! process started in the namespace (`ip netns exec`) reaches a server listening on the
//! host side's address.
//!
//! [`Route::cut`] drops every packet both ways, silently, as a partition in the network
//! does: each side's neighbour entry for the other is pinned to a hardware address nobody
//! has, so frames still leave and the receiving end discards them as not its own. Both
//! ends' TCP connections stay open and retransmit with their exponential backoff. (Taking
//! a link down instead makes the kernel fail sends locally, "No route to host", and TCP
//! then retries every half second without backing off: a reconnect after the heal would
//! look much faster than across a real partition.) [`Route::heal`] removes the pinned
//! entries, and the next packet resolves the real address again.
//!
//! Needs root (CAP_NET_ADMIN) and iproute2. Names carry the lab's pid, so parallel runs do
//! not collide, and a run that died without cleaning up is cleaned up by the next one.

use std::net::Ipv4Addr;
use std::process::Command;

use anyhow::Context;

/// Namespaces are named `<NETNS_PREFIX><pid>-<index>`.
const NETNS_PREFIX: &str = "mmcut-";

/// How many `/30`s of `10.213.0.0/16` a route may take.
const SLOTS: u32 = 16_384;

/// A namespace and its veth pair, deleted when dropped (the namespace's end of the pair
/// goes with the namespace, and the host's end with it).
#[derive(Debug)]
pub struct Route {
    /// The namespace to run a process in (`ip netns exec <netns> ...`).
    pub netns: String,
    /// The host side's link and the namespace side's.
    host_link: String,
    inner_link: String,
    /// The host side's address: what a server listens on for the namespace.
    pub host: Ipv4Addr,
    /// The namespace side's address: the client address the server sees.
    pub inner: Ipv4Addr,
    cut: bool,
}

impl Route {
    /// A new namespace with a veth pair to this machine, both ends up. Fails, saying what
    /// it needs, when the machine does not allow it.
    pub fn create() -> anyhow::Result<Route> {
        remove_stale();
        let pid = std::process::id();
        let start = (pid.wrapping_mul(7919) ^ next_index()) % SLOTS;
        let used = ip(&["-o", "-4", "addr", "show"]).unwrap_or_default();
        for slot in (0..64).map(|i| (start + i * 97) % SLOTS) {
            let (host, inner) = addresses(slot);
            if used.contains(&format!("{host}/")) || used.contains(&format!("{inner}/")) {
                continue;
            }
            let host_link = format!("mmh{slot}");
            let inner_link = format!("mmn{slot}");
            // Atomic: a name another run holds fails here, and we try the next slot.
            match ip(&[
                "link",
                "add",
                &host_link,
                "type",
                "veth",
                "peer",
                "name",
                &inner_link,
            ]) {
                Ok(_) => {}
                Err(e) if e.to_string().contains("File exists") => continue,
                Err(e) => return Err(e.context(NEEDS)),
            }
            let mut route = Route {
                netns: format!("{NETNS_PREFIX}{pid}-{slot}"),
                host_link,
                inner_link,
                host,
                inner,
                cut: false,
            };
            // On failure the route is dropped, which deletes what was made.
            route.build().context(NEEDS)?;
            return Ok(route);
        }
        anyhow::bail!("no free veth name and 10.213.0.0/16 subnet in 64 tries: {NEEDS}")
    }

    fn build(&mut self) -> anyhow::Result<()> {
        let host = format!("{}/30", self.host);
        let inner = format!("{}/30", self.inner);
        let inner_link = self.inner_link.as_str();
        ip(&["netns", "add", &self.netns])?;
        ip(&["link", "set", inner_link, "netns", &self.netns])?;
        ip(&["addr", "add", &host, "dev", &self.host_link])?;
        ip(&["link", "set", &self.host_link, "up"])?;
        ip(&["-n", &self.netns, "addr", "add", &inner, "dev", inner_link])?;
        ip(&["-n", &self.netns, "link", "set", inner_link, "up"])?;
        ip(&["-n", &self.netns, "link", "set", "lo", "up"])?;
        Ok(())
    }

    /// Cut the route: from now on packets between the namespace and this machine are
    /// dropped without a word to either side.
    pub fn cut(&mut self) -> anyhow::Result<()> {
        let (host, inner) = (self.host.to_string(), self.inner.to_string());
        let pin = ["lladdr", NOBODY, "nud", "permanent"];
        ip(&[
            &["neigh", "replace", &inner, "dev", &self.host_link][..],
            &pin,
        ]
        .concat())?;
        self.cut = true;
        ip(&[
            &[
                "-n",
                &self.netns,
                "neigh",
                "replace",
                &host,
                "dev",
                &self.inner_link,
            ][..],
            &pin,
        ]
        .concat())?;
        Ok(())
    }

    /// Heal it: each side resolves the other's real hardware address again.
    pub fn heal(&mut self) -> anyhow::Result<()> {
        let (host, inner) = (self.host.to_string(), self.inner.to_string());
        ip(&["neigh", "del", &inner, "dev", &self.host_link])?;
        ip(&[
            "-n",
            &self.netns,
            "neigh",
            "del",
            &host,
            "dev",
            &self.inner_link,
        ])?;
        self.cut = false;
        Ok(())
    }

    pub fn is_cut(&self) -> bool {
        self.cut
    }
}

impl Drop for Route {
    fn drop(&mut self) {
        let _ = ip(&["netns", "delete", &self.netns]);
        // Gone with the namespace once it held the other end; not before.
        let _ = ip(&["link", "delete", &self.host_link]);
    }
}

/// A locally administered unicast address no interface here has.
const NOBODY: &str = "02:00:00:00:00:00";

const NEEDS: &str = "cutting a route needs a network namespace and a veth pair (`ip netns \
                     add`, `ip link add .. type veth`): run as root (CAP_NET_ADMIN) with \
                     iproute2 installed";

/// `10.213.0.0/16` in `/30`s: the host side's and the namespace side's address of `slot`.
fn addresses(slot: u32) -> (Ipv4Addr, Ipv4Addr) {
    let base = (10 << 24) | (213 << 16) | (slot * 4);
    (Ipv4Addr::from(base + 1), Ipv4Addr::from(base + 2))
}

fn next_index() -> u32 {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        .wrapping_mul(131)
}

/// Delete the namespaces of runs whose process is gone (killed before they cleaned up);
/// their veth pairs go with them.
fn remove_stale() {
    let Ok(list) = ip(&["netns", "list"]) else {
        return;
    };
    for name in list.lines().filter_map(|l| l.split_whitespace().next()) {
        let Some(pid) = name
            .strip_prefix(NETNS_PREFIX)
            .and_then(|rest| rest.split('-').next())
        else {
            continue;
        };
        if !std::path::Path::new("/proc").join(pid).exists() {
            let _ = ip(&["netns", "delete", name]);
        }
    }
}

/// Run `ip ARGS`; its stdout, or an error with its stderr.
fn ip(args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .context("running `ip` (iproute2)")?;
    anyhow::ensure!(
        out.status.success(),
        "`ip {}` failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_distinct_slash_30s_of_the_lab_subnet() {
        assert_eq!(
            addresses(0),
            (Ipv4Addr::new(10, 213, 0, 1), Ipv4Addr::new(10, 213, 0, 2))
        );
        assert_eq!(
            addresses(SLOTS - 1),
            (
                Ipv4Addr::new(10, 213, 255, 253),
                Ipv4Addr::new(10, 213, 255, 254)
            )
        );
        assert_ne!(addresses(1).0, addresses(0).0);
    }
}
