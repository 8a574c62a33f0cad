//! How to reach and log in to a node: the same credentials and TLS settings
//! for the node given and for every node found in its cluster, as
//! `redis-cli` takes them.

use redis::{
    ClientTlsConfig, Connection, ConnectionAddr, ConnectionInfo, IntoConnectionInfo,
    ProtocolVersion, RedisConnectionInfo, RedisResult, TlsCertificates,
};
use std::time::Duration;

/// TLS as asked for: PEM bytes read once at start.
#[derive(Clone, Debug, Default)]
pub struct Tls {
    /// Accept any certificate (`--insecure`): for tests and broken setups.
    pub insecure: bool,
    /// A CA bundle instead of the system's roots (`--cacert`).
    pub ca: Option<Vec<u8>>,
    /// A client certificate and key, for servers that ask for one.
    pub client: Option<(Vec<u8>, Vec<u8>)>,
}

#[derive(Clone, Debug, Default)]
pub struct ConnectionSettings {
    pub username: Option<String>,
    pub password: Option<String>,
    pub tls: Option<Tls>,
}

/// The first node's `host:port`, with what the URL said about logging in
/// and TLS (`redis://user:pass@host:port`, `rediss://` for TLS).
pub fn from_url(url: &str) -> RedisResult<(String, ConnectionSettings)> {
    let info = url.into_connection_info()?;
    let (address, tls) = match &info.addr {
        ConnectionAddr::Tcp(host, port) => (format!("{host}:{port}"), None),
        ConnectionAddr::TcpTls {
            host,
            port,
            insecure,
            ..
        } => (
            format!("{host}:{port}"),
            Some(Tls {
                insecure: *insecure,
                ..Tls::default()
            }),
        ),
        ConnectionAddr::Unix(path) => (path.display().to_string(), None),
    };
    let connection = ConnectionSettings {
        username: info.redis.username.clone(),
        password: info.redis.password.clone(),
        tls,
    };
    Ok((address, connection))
}

/// `host:port` split at the last colon (an IPv6 host keeps its own).
pub fn host_and_port(address: &str) -> (String, u16) {
    match address.rsplit_once(':') {
        Some((host, port)) => (
            host.trim_start_matches('[')
                .trim_end_matches(']')
                .to_string(),
            port.parse().unwrap_or(6379),
        ),
        None => (address.to_string(), 6379),
    }
}

impl ConnectionSettings {
    /// A RESP2 connection to `address` (`host:port`), logged in; a reply
    /// slower than 5 s is an error.
    pub fn connect(&self, address: &str) -> RedisResult<Connection> {
        self.connect_waiting(address, Duration::from_secs(5))
    }

    /// [`ConnectionSettings::connect`], waiting up to `reply_timeout` for a reply.
    pub fn connect_waiting(
        &self,
        address: &str,
        reply_timeout: Duration,
    ) -> RedisResult<Connection> {
        let (host, port) = host_and_port(address);
        let addr = match &self.tls {
            None => ConnectionAddr::Tcp(host, port),
            Some(tls) => ConnectionAddr::TcpTls {
                host,
                port,
                insecure: tls.insecure,
                tls_params: None,
            },
        };
        let info = ConnectionInfo {
            addr,
            redis: RedisConnectionInfo {
                db: 0,
                username: self.username.clone(),
                password: self.password.clone(),
                protocol: ProtocolVersion::RESP2,
            },
        };
        let client = match &self.tls {
            Some(tls) if tls.ca.is_some() || tls.client.is_some() => redis::Client::build_with_tls(
                info,
                TlsCertificates {
                    client_tls: tls.client.clone().map(|(client_cert, client_key)| {
                        ClientTlsConfig {
                            client_cert,
                            client_key,
                        }
                    }),
                    root_cert: tls.ca.clone(),
                },
            )?,
            _ => redis::Client::open(info)?,
        };
        // The handshake is a reply like any other: never longer than one.
        let handshake = reply_timeout.min(Duration::from_secs(2));
        let con = client.get_connection_with_timeout(handshake)?;
        // A node that accepts and then hangs (a long script, a stopped
        // process) becomes an error, not a view frozen for good.
        con.set_read_timeout(Some(reply_timeout))?;
        con.set_write_timeout(Some(reply_timeout))?;
        Ok(con)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_carry_the_login_and_tls() {
        let (address, connection) = from_url("redis://app:s3cret@10.0.0.5:6380").unwrap();
        assert_eq!(address, "10.0.0.5:6380");
        assert_eq!(connection.username.as_deref(), Some("app"));
        assert_eq!(connection.password.as_deref(), Some("s3cret"));
        assert!(connection.tls.is_none());
        let (address, connection) = from_url("rediss://cache.example:6390").unwrap();
        assert_eq!(address, "cache.example:6390");
        assert!(connection.tls.is_some());
        assert_eq!(host_and_port("[::1]:7000"), ("::1".to_string(), 7000));
    }
}
