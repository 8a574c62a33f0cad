//! What can stop a rebalance, as values the code decides on (never as
//! text it matches), each with the exit status the run ends with.

use heavykeeper_rebalance::PlanProblem;
use std::fmt;
use std::process::ExitCode;

#[derive(Clone, Debug, PartialEq)]
pub enum Error {
    /// The cluster is not fit to move slots in (a node down, a slot
    /// half-migrated by someone else, ...): nothing was done.
    Unfit(String),
    /// Another run holds the cluster's lease (it lapses `lapses_s` after
    /// its holder's last renewal): nothing was done.
    Held { holder: String, lapses_s: u64 },
    /// The plan file fails its check: nothing was done.
    Plan(Vec<PlanProblem>),
    /// The command line asks for something that cannot be done.
    Usage(String),
    /// The lease could not be kept: the run stopped between two slots.
    LeaseLost(String),
    /// A node answered a step with an error, or did not answer within the
    /// patience.
    Node {
        node: String,
        step: String,
        reply: String,
    },
    /// The server refused its own slot migration (a module that has not
    /// declared it can follow one).
    AtomicRefused { node: String, reply: String },
    /// A slot could be neither finished nor given back: it is left
    /// half-way, in the journal, for the next run.
    HalfWay {
        slot: u16,
        source: String,
        target: String,
        cause: Box<Error>,
    },
    /// This machine: the journal, a plan file, a thread.
    Local(String),
}

impl Error {
    pub fn node(node: &str, step: impl Into<String>, reply: impl fmt::Display) -> Error {
        Error::Node {
            node: node.to_string(),
            step: step.into(),
            reply: reply.to_string(),
        }
    }

    /// 3 where nothing was done because the cluster or the plan said no;
    /// 2 for a command line that cannot be; 1 for a run that stopped.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            Error::Unfit(_) | Error::Held { .. } | Error::Plan(_) => ExitCode::from(3),
            Error::Usage(_) => ExitCode::from(2),
            _ => ExitCode::FAILURE,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Unfit(why) => write!(f, "refusing to move slots: {why}"),
            Error::Held { holder, lapses_s } => write!(
                f,
                "refusing to move slots: another rebalance holds this cluster: {holder}; its lease lapses {lapses_s} s after its last renewal if it died"
            ),
            Error::Plan(problems) => {
                let said: Vec<String> = problems.iter().map(ToString::to_string).collect();
                write!(f, "refusing the plan, nothing moved: {}", said.join("; "))
            }
            Error::Usage(what) => f.write_str(what),
            Error::LeaseLost(why) => write!(
                f,
                "stopped between two slots: the cluster's lease is lost ({why})"
            ),
            Error::Node { node, step, reply } => write!(f, "{node}: {step}: {reply}"),
            Error::AtomicRefused { node, reply } => {
                write!(f, "{node}: the server's own slot migration is refused: {reply}")
            }
            Error::HalfWay {
                slot,
                source,
                target,
                cause,
            } => write!(
                f,
                "slot {slot} is left half-way from {source} to {target} ({cause}): run hk-top rebalance --apply (to finish it) or --roll-back once both answer"
            ),
            Error::Local(what) => f.write_str(what),
        }
    }
}
