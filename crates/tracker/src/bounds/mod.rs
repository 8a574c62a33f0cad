//! How far an estimate can be from the truth: each one's 95% interval, and
//! a listed row told apart from the background's noise.

pub mod error_bar;
pub mod noise_floor;
