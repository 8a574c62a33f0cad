//! What a client is called, for the rows that say who drives a key: its
//! address, name, library and user, as `CLIENT LIST` writes them; each
//! host's number (the counting side counts hosts by number); and what was
//! known of clients that have gone, while their accesses may still be in a
//! row.

use hashbrown::HashMap;
use std::collections::VecDeque;

/// How the clients of a row are grouped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupBy {
    /// The address without its port: a service's many connections as one.
    Host,
    Connection,
    /// `CLIENT SETNAME`.
    Name,
    /// `CLIENT SETINFO LIB-NAME`.
    Lib,
    /// The ACL user.
    User,
}

impl GroupBy {
    pub const NAMES: [(&'static str, GroupBy); 5] = [
        ("HOST", GroupBy::Host),
        ("CONNECTION", GroupBy::Connection),
        ("NAME", GroupBy::Name),
        ("LIB", GroupBy::Lib),
        ("USER", GroupBy::User),
    ];

    /// The row label of client `id`, known as `info` (if known at all).
    pub fn label(self, id: u64, info: Option<&ClientInfo>) -> Vec<u8> {
        let Some(info) = info else {
            return format!("id={id} (gone)").into_bytes();
        };
        match self {
            GroupBy::Host => info.host().to_vec(),
            GroupBy::Connection => [format!("id={id} ").as_bytes(), &info.addr].concat(),
            GroupBy::Name => info.name.clone(),
            GroupBy::Lib => info.lib.clone(),
            GroupBy::User => info.user.clone(),
        }
    }
}

/// A client as `CLIENT LIST` tells it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClientInfo {
    pub addr: Vec<u8>,
    pub name: Vec<u8>,
    pub lib: Vec<u8>,
    pub user: Vec<u8>,
}

impl ClientInfo {
    /// The address without its port (`10.0.0.5:41234` → `10.0.0.5`,
    /// `[::1]:41234` → `[::1]`, a unix socket's path as it is).
    pub fn host(&self) -> &[u8] {
        host_of(&self.addr)
    }

    /// One line of `CLIENT LIST`: its id and what it says of the client.
    pub fn from_client_list(line: &[u8]) -> Option<(u64, ClientInfo)> {
        let mut id = None;
        let mut info = ClientInfo::default();
        for field in line.split(|&b| b == b' ') {
            let mut parts = field.splitn(2, |&b| b == b'=');
            let (Some(name), Some(value)) = (parts.next(), parts.next()) else {
                continue;
            };
            let value = value.to_vec();
            match name {
                b"id" => id = std::str::from_utf8(&value).ok()?.parse().ok(),
                b"addr" => info.addr = value,
                b"name" => info.name = value,
                b"lib-name" => info.lib = value,
                b"user" => info.user = value,
                _ => {}
            }
        }
        Some((id?, info))
    }
}

/// `addr` without its port.
pub fn host_of(addr: &[u8]) -> &[u8] {
    let mut parts = addr.rsplitn(2, |&b| b == b':');
    match (parts.next(), parts.next()) {
        (Some(port), Some(host)) if port.iter().all(u8::is_ascii_digit) => host,
        _ => addr,
    }
}

/// Hosts by number, each number for good (the counts hold numbers). Past
/// [`MAX_HOSTS`] every new host is [`OTHER_HOSTS`].
#[derive(Debug, Default)]
pub struct HostNumbers {
    numbers: HashMap<Vec<u8>, u32>,
    hosts: Vec<Vec<u8>>,
}

pub const MAX_HOSTS: usize = 1 << 16;
/// The number of every host past [`MAX_HOSTS`].
pub const OTHER_HOSTS: u32 = u32::MAX;

impl HostNumbers {
    /// The number of `host` (given one at first sight).
    pub fn number(&mut self, host: &[u8]) -> u32 {
        if let Some(&n) = self.numbers.get(host) {
            return n;
        }
        if self.hosts.len() >= MAX_HOSTS {
            return OTHER_HOSTS;
        }
        let n = self.hosts.len() as u32;
        self.hosts.push(host.to_vec());
        self.numbers.insert(host.to_vec(), n);
        n
    }

    pub fn host(&self, number: u32) -> &[u8] {
        (self.hosts.get(number as usize)).map_or(b"other hosts", Vec::as_slice)
    }

    pub fn heap_bytes(&self) -> usize {
        let names: usize = self.hosts.iter().map(|h| 2 * h.capacity()).sum();
        names + self.numbers.allocation_size() + self.hosts.capacity() * 24
    }
}

/// What was known of the clients that went, the last [`KEPT_GONE`] of them.
#[derive(Debug, Default)]
pub struct GoneClients {
    known: HashMap<u64, ClientInfo>,
    order: VecDeque<u64>,
}

pub const KEPT_GONE: usize = 4_096;

impl GoneClients {
    pub fn gone(&mut self, id: u64, info: ClientInfo) {
        if self.known.insert(id, info).is_none() {
            self.order.push_back(id);
        }
        while self.order.len() > KEPT_GONE {
            if let Some(oldest) = self.order.pop_front() {
                self.known.remove(&oldest);
            }
        }
    }

    pub fn get(&self, id: u64) -> Option<&ClientInfo> {
        self.known.get(&id)
    }

    pub fn heap_bytes(&self) -> usize {
        let info: usize = (self.known.values())
            .map(|i| i.addr.capacity() + i.name.capacity() + i.lib.capacity() + i.user.capacity())
            .sum();
        info + self.known.allocation_size() + self.order.capacity() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_list_line_names_the_client() {
        let line = b"id=7 addr=127.0.0.3:5123 laddr=127.0.0.1:6379 fd=8 name=checkout age=3 \
            db=0 user=svc lib-name=redis-py lib-ver=5.0 cmd=get";
        let (id, info) = ClientInfo::from_client_list(line).unwrap();
        assert_eq!(id, 7);
        assert_eq!(info.host(), b"127.0.0.3");
        assert_eq!(
            GroupBy::Connection.label(7, Some(&info)),
            b"id=7 127.0.0.3:5123"
        );
        assert_eq!(GroupBy::Name.label(7, Some(&info)), b"checkout");
        assert_eq!(GroupBy::Lib.label(7, Some(&info)), b"redis-py");
        assert_eq!(GroupBy::User.label(7, Some(&info)), b"svc");
        assert_eq!(GroupBy::Host.label(8, None), b"id=8 (gone)");
        assert_eq!(host_of(b"[::1]:6000"), b"[::1]");
        assert_eq!(host_of(b"/tmp/redis.sock:0"), b"/tmp/redis.sock");
        assert_eq!(ClientInfo::from_client_list(b"addr=x"), None);
    }

    #[test]
    fn hosts_keep_their_numbers_and_gone_clients_are_bounded() {
        let mut hosts = HostNumbers::default();
        assert_eq!(
            (hosts.number(b"a"), hosts.number(b"b"), hosts.number(b"a")),
            (0, 1, 0)
        );
        assert_eq!(
            (hosts.host(1), hosts.host(OTHER_HOSTS)),
            (&b"b"[..], &b"other hosts"[..])
        );
        let mut gone = GoneClients::default();
        for id in 0..KEPT_GONE as u64 + 10 {
            gone.gone(id, ClientInfo::default());
        }
        assert!(gone.get(9).is_none() && gone.get(10).is_some());
    }
}
