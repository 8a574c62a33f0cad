//! How busy each node is: the CPU its main thread used between two looks
//! (`INFO cpu`: `used_cpu_sys_main_thread` plus `used_cpu_user_main_thread`,
//! the process's where a server has no per-thread figure), as a share of
//! one core. What `--watch` pauses on: moving slots costs the source and
//! the target work of their own, and a node already at its limit should
//! not be handed more.

use super::link::Link;
use std::collections::HashMap;
use std::time::Instant;

#[derive(Default)]
pub struct CpuWatch {
    last: HashMap<String, (Instant, f64)>,
}

impl CpuWatch {
    /// Each node's share of a core since it was last looked at (none the
    /// first time, or where `INFO` does not answer).
    pub fn sample(&mut self, link: &mut dyn Link, addresses: &[String]) -> HashMap<String, f64> {
        let mut shares = HashMap::new();
        for address in addresses {
            let Some(seconds) = used_seconds(link, address) else {
                continue;
            };
            let now = Instant::now();
            if let Some((then, before)) = self.last.insert(address.clone(), (now, seconds)) {
                let wall = now.duration_since(then).as_secs_f64();
                if wall > 0.0 && seconds >= before {
                    shares.insert(address.clone(), (seconds - before) / wall);
                }
            }
        }
        shares
    }
}

fn used_seconds(link: &mut dyn Link, address: &str) -> Option<f64> {
    let info = link.ask(address, redis::cmd("INFO").arg("cpu")).ok()?;
    let info: String = redis::from_redis_value(&info).ok()?;
    parse(&info)
}

fn parse(info: &str) -> Option<f64> {
    let field = |name: &str| -> Option<f64> {
        info.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|v| v.trim().parse().ok())
    };
    match (
        field("used_cpu_sys_main_thread"),
        field("used_cpu_user_main_thread"),
    ) {
        (Some(sys), Some(user)) => Some(sys + user),
        _ => Some(field("used_cpu_sys")? + field("used_cpu_user")?),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_main_threads_figure_first_the_processs_otherwise() {
        let info = "used_cpu_sys:2.5\r\nused_cpu_user:3.5\r\nused_cpu_sys_main_thread:1.0\r\nused_cpu_user_main_thread:2.0\r\n";
        assert_eq!(parse(info), Some(3.0));
        assert_eq!(
            parse("used_cpu_sys:2.5\r\nused_cpu_user:3.5\r\n"),
            Some(6.0)
        );
        assert_eq!(parse("nothing"), None);
    }
}
