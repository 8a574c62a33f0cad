//! Reaching the servers: how to connect and log in ([`settings`]), and
//! which nodes a cluster has ([`nodes`]). Every view and the rebalance
//! connect through here.

pub mod nodes;
pub mod settings;
