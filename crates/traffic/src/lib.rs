//! Key traffic of known shape sent to a real server, each shape from its own
//! client connection and paced on the clock (not on replies, so a slow
//! server does not thin it): what the tracker's estimates are held against.

// Test support: a panic here fails the test that called it, which is what
// it is for; the workspace's no-panic rules are for code a server runs.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use rand::Rng;
use std::collections::HashMap;
use std::thread;
use std::time::{Duration, Instant};

/// One client's traffic.
#[derive(Clone, Debug)]
pub enum Shape {
    /// A pipeline of `min..=max` `GET key` every `every`: a batch job, a
    /// cache stampede.
    Bursty {
        key: String,
        min: usize,
        max: usize,
        every: Duration,
    },
    /// `per` `GET key` every `every`.
    Steady {
        key: String,
        per: usize,
        every: Duration,
    },
    /// `per` `GET key` every `every` for `on`, then silence for `off`, and
    /// again.
    OnOff {
        key: String,
        per: usize,
        every: Duration,
        on: Duration,
        off: Duration,
    },
    /// `per` `GET`s of random keys `prefix0..prefix{keys-1}` every `every`.
    Background {
        prefix: String,
        keys: usize,
        per: usize,
        every: Duration,
    },
    /// `per` `MGET key bg…` every `every`: each the key and `width - 1`
    /// random keys `prefix0..prefix{keys-1}`.
    Mget {
        key: String,
        prefix: String,
        keys: usize,
        width: usize,
        per: usize,
        every: Duration,
    },
    /// `per` commands the server refuses before they run (unknown
    /// commands, `GET` with too many arguments), naming `key`, every `every`.
    Refused {
        key: String,
        per: usize,
        every: Duration,
    },
}

impl Shape {
    fn every(&self) -> Duration {
        match self {
            Shape::Bursty { every, .. }
            | Shape::Steady { every, .. }
            | Shape::OnOff { every, .. }
            | Shape::Background { every, .. }
            | Shape::Mget { every, .. }
            | Shape::Refused { every, .. } => *every,
        }
    }

    /// Is a round at `elapsed` since the shape began one it sends? (Only an
    /// on-off shape is ever silent.)
    fn sends_at(&self, elapsed: Duration) -> bool {
        match self {
            Shape::OnOff { on, off, .. } => {
                let cycle = (*on + *off).as_nanos().max(1);
                elapsed.as_nanos() % cycle < on.as_nanos()
            }
            _ => true,
        }
    }

    /// One round's pipeline, and the keys it reads (refused commands read none).
    fn round(&self, rng: &mut impl Rng) -> (redis::Pipeline, Vec<String>) {
        let mut pipe = redis::pipe();
        let mut read = Vec::new();
        match self {
            Shape::Bursty { key, min, max, .. } => {
                for _ in 0..rng.random_range(*min..=*max) {
                    pipe.cmd("GET").arg(key);
                    read.push(key.clone());
                }
            }
            Shape::Steady { key, per, .. } | Shape::OnOff { key, per, .. } => {
                for _ in 0..*per {
                    pipe.cmd("GET").arg(key);
                    read.push(key.clone());
                }
            }
            Shape::Background {
                prefix, keys, per, ..
            } => {
                for _ in 0..*per {
                    let key = format!("{prefix}{}", rng.random_range(0..*keys));
                    pipe.cmd("GET").arg(&key);
                    read.push(key);
                }
            }
            Shape::Mget {
                key,
                prefix,
                keys,
                width,
                per,
                ..
            } => {
                for _ in 0..*per {
                    let cmd = pipe.cmd("MGET").arg(key);
                    read.push(key.clone());
                    for _ in 1..*width {
                        let other = format!("{prefix}{}", rng.random_range(0..*keys));
                        cmd.arg(&other);
                        read.push(other);
                    }
                }
            }
            Shape::Refused { key, per, .. } => {
                for i in 0..*per {
                    if i % 2 == 0 {
                        pipe.cmd("NOSUCHCOMMAND").arg(key);
                    } else {
                        pipe.cmd("GET").arg(key).arg("extra");
                    }
                }
            }
        }
        (pipe, read)
    }
}

/// What was sent: reads per key (refused commands are not reads), and for
/// how long.
#[derive(Clone, Debug, Default)]
pub struct Sent {
    pub reads: HashMap<String, u64>,
    pub elapsed: Duration,
}

impl Sent {
    pub fn of(&self, key: &str) -> u64 {
        self.reads.get(key).copied().unwrap_or(0)
    }

    pub fn total(&self) -> u64 {
        self.reads.values().sum()
    }

    /// Commands a second, reads only.
    pub fn rate(&self) -> f64 {
        self.total() as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Sends every shape from its own connection to `url` for `duration`.
/// Replies are read (errors included: refused commands answer errors) but
/// not checked.
pub fn send(url: &str, shapes: &[Shape], duration: Duration) -> redis::RedisResult<Sent> {
    let client = redis::Client::open(url)?;
    let started = Instant::now();
    let workers: Vec<_> = shapes
        .iter()
        .cloned()
        .map(|shape| {
            let con = client.get_connection();
            thread::spawn(move || -> redis::RedisResult<HashMap<String, u64>> {
                drive(&mut con?, &shape, started + duration)
            })
        })
        .collect();
    let mut sent = Sent::default();
    for worker in workers {
        let reads = worker.join().map_err(|_| {
            redis::RedisError::from((redis::ErrorKind::ClientError, "a traffic thread panicked"))
        })??;
        for (key, n) in reads {
            *sent.reads.entry(key).or_default() += n;
        }
    }
    sent.elapsed = started.elapsed();
    Ok(sent)
}

/// One shape until `until`, each round at its time on the clock.
fn drive(
    con: &mut redis::Connection,
    shape: &Shape,
    until: Instant,
) -> redis::RedisResult<HashMap<String, u64>> {
    let mut rng = rand::rng();
    let mut reads: HashMap<String, u64> = HashMap::new();
    let every = shape.every();
    // Shapes start at random phases of their period: nothing lines up.
    let begun = Instant::now();
    let mut next = begun + every.mul_f64(rng.random::<f64>());
    while next < until {
        let now = Instant::now();
        if next > now {
            thread::sleep(next - now);
        }
        if !shape.sends_at(next.saturating_duration_since(begun)) {
            next += every;
            continue;
        }
        let (pipe, read) = shape.round(&mut rng);
        let _: Vec<redis::Value> = pipe.query(con).or_else(|e| {
            // Refused commands answer errors: the round was still sent.
            if matches!(shape, Shape::Refused { .. }) {
                Ok(Vec::new())
            } else {
                Err(e)
            }
        })?;
        for key in read {
            *reads.entry(key).or_default() += 1;
        }
        next += every;
    }
    Ok(reads)
}
