//! The one persistent encoding of a sketch, used by RDB, AOF rewrite and
//! digests. Versioned: every version ever written stays decodable.
//!
//! Version 4 ([`ENCODING_VERSION`]), little-endian:
//! ```text
//! u8  version
//! u32 k, u32 width, u32 depth, f64 decay, u64 seed
//! u8  row layout (0: double hashing, as version 1; 1: remixed rows)
//! u8  fading (0/1), f64 half_life_ms, i64 epoch, i64 clock_ms
//! i64 created_ms, u64 arrivals
//! [u8; 32] rng seed, u64 rng stream, u128 rng word position
//! width * depth buckets: u32 fingerprint, f64 count
//! u32 members, each: u32 length, bytes, f64 count   (in heap order)
//! u8  watched (0/1); if 1: u32 length, channel bytes, u8 members,
//!     u8 has_above, f64 above, u8 has_below, f64 below
//! u8  ties (0: by item, 1: RedisBloom); if 1: u32 empty slots, each u32
//!     heap position (increasing): the members fill the other k slots
//! ```
//! Version 3 is the same without the ties (always by item); version 2 also
//! without the watch; version 1 also without the row-layout byte (its rows
//! are always double hashed).
//!
//! The decoder trusts nothing: every field is range-checked, times must be
//! real times, the landmark must be the one the clock implies, and counts
//! must lie under the bound every operation saturates at, so a payload that
//! passes can be used by every command without overflow, NaN or a loop that
//! never ends.

use crate::bucket::Bucket;
use crate::bucket_array::BucketArray;
use crate::count_bound::{is_valid_mass, max_mass};
use crate::fading::{Fading, MAX_TIMESTAMP_MS};
use crate::heavykeeper::{HeavyKeeper, Saved};
use crate::item_hash::{ItemHash, RowLayout};
use crate::params::Params;
use crate::ties::Ties;
use crate::topk::{Entry, TopK};
use crate::watch::WatchSpec;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::fmt;

/// The version [`encode`] writes.
pub const ENCODING_VERSION: u8 = 4;

/// ChaCha's word position is a 68-bit number.
const RNG_WORD_POSITIONS: u128 = 1 << 68;

/// Why bytes could not be turned back into a sketch.
#[derive(Clone, Debug, PartialEq)]
pub enum DecodeError {
    /// Written by a newer version of the module.
    NewerVersion(u8),
    /// Truncated, inconsistent or otherwise not a sketch.
    Corrupt(String),
    /// A valid sketch, larger than the caller allows.
    TooLarge(String),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::NewerVersion(v) => write!(
                f,
                "encoding version {v} is newer than this module supports ({ENCODING_VERSION})"
            ),
            DecodeError::Corrupt(why) => write!(f, "corrupt sketch payload: {why}"),
            DecodeError::TooLarge(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for DecodeError {}

/// The bytes of `sketch`, in the current version.
pub fn encode(sketch: &HeavyKeeper) -> Vec<u8> {
    let p = sketch.params();
    let item_bytes: usize = sketch
        .topk()
        .heap_order()
        .map(|(item, _)| item.len() + 12)
        .sum();
    let mut out = Vec::with_capacity(128 + sketch.buckets().len() * Bucket::BYTES + item_bytes);
    out.push(ENCODING_VERSION);
    out.extend_from_slice(&p.k.to_le_bytes());
    out.extend_from_slice(&p.width.to_le_bytes());
    out.extend_from_slice(&p.depth.to_le_bytes());
    out.extend_from_slice(&p.decay.to_le_bytes());
    out.extend_from_slice(&p.seed.to_le_bytes());
    out.push(p.layout.code());
    let fading = sketch.fading().copied();
    out.push(u8::from(fading.is_some()));
    out.extend_from_slice(&fading.map_or(0.0, |f| f.half_life_ms()).to_le_bytes());
    out.extend_from_slice(&fading.map_or(0, |f| f.epoch()).to_le_bytes());
    out.extend_from_slice(&sketch.stored_clock_ms().to_le_bytes());
    out.extend_from_slice(&sketch.created_ms().to_le_bytes());
    out.extend_from_slice(&sketch.arrivals().to_le_bytes());
    out.extend_from_slice(&sketch.rng().get_seed());
    out.extend_from_slice(&sketch.rng().get_stream().to_le_bytes());
    out.extend_from_slice(&sketch.rng().get_word_pos().to_le_bytes());
    for bucket in sketch.buckets().iter() {
        let (fingerprint, count) = (bucket.fingerprint, bucket.count);
        out.extend_from_slice(&fingerprint.to_le_bytes());
        out.extend_from_slice(&count.to_le_bytes());
    }
    out.extend_from_slice(&(sketch.topk().len() as u32).to_le_bytes());
    for (item, count) in sketch.topk().heap_order() {
        out.extend_from_slice(&(item.len() as u32).to_le_bytes());
        out.extend_from_slice(item);
        out.extend_from_slice(&count.to_le_bytes());
    }
    encode_watch(sketch.watch(), &mut out);
    encode_ties(sketch.topk(), &mut out);
    out
}

fn encode_ties(topk: &TopK, out: &mut Vec<u8>) {
    out.push(topk.ties().code());
    if topk.ties() == Ties::RedisBloom {
        let empty: Vec<usize> = topk.empty_slots().collect();
        out.extend_from_slice(&(empty.len() as u32).to_le_bytes());
        for place in empty {
            out.extend_from_slice(&(place as u32).to_le_bytes());
        }
    }
}

fn encode_watch(watch: Option<&WatchSpec>, out: &mut Vec<u8>) {
    let Some(w) = watch else {
        out.push(0);
        return;
    };
    out.push(1);
    out.extend_from_slice(&(w.channel.len() as u32).to_le_bytes());
    out.extend_from_slice(&w.channel);
    out.push(u8::from(w.members));
    for line in [w.above, w.below] {
        out.push(u8::from(line.is_some()));
        out.extend_from_slice(&line.unwrap_or(0.0).to_le_bytes());
    }
}

/// A sketch from bytes written by any version of [`encode`]. Everything is
/// checked before it is trusted; nothing is allocated beyond what the bytes
/// themselves show to exist. A valid sketch whose fixed footprint exceeds
/// `max_bytes` is refused as [`DecodeError::TooLarge`], not as corrupt.
pub fn decode(bytes: &[u8], max_bytes: u64) -> Result<HeavyKeeper, DecodeError> {
    let mut r = Reader { bytes };
    match r.u8()? {
        v @ 1..=4 => decode_body(&mut r, v, max_bytes),
        0 => Err(corrupt("version 0 does not exist")),
        v => Err(DecodeError::NewerVersion(v)),
    }
}

fn decode_body(
    r: &mut Reader<'_>,
    version: u8,
    max_bytes: u64,
) -> Result<HeavyKeeper, DecodeError> {
    let (k, width, depth) = (r.u32()?, r.u32()?, r.u32()?);
    let (decay, seed) = (r.f64()?, r.u64()?);
    let layout = if version >= 2 {
        RowLayout::from_code(r.u8()?).ok_or_else(|| corrupt("unknown row layout"))?
    } else {
        RowLayout::DoubleHash
    };
    let has_fading = r.flag("bad fading flag")?;
    let (half_life_ms, epoch, clock_ms) = (r.f64()?, r.i64()?, r.i64()?);
    let (created_ms, arrivals) = (r.i64()?, r.u64()?);
    let params = Params {
        k,
        width,
        depth,
        decay,
        seed,
        half_life_ms: has_fading.then_some(half_life_ms),
        layout,
    };
    params
        .validate_shape()
        .map_err(|e| corrupt(&e.to_string()))?;
    let fading = check_clock(&params, half_life_ms, epoch, clock_ms, created_ms)?;
    params
        .check_size(max_bytes)
        .map_err(|e| DecodeError::TooLarge(e.to_string()))?;

    let mut rng = ChaCha8Rng::from_seed(r.array::<32>()?);
    rng.set_stream(r.u64()?);
    let word_pos = r.u128()?;
    if word_pos >= RNG_WORD_POSITIONS {
        return Err(corrupt("random state out of range"));
    }
    rng.set_word_pos(word_pos);

    // Every stored mass lies under the bound at the sketch's clock.
    let cap = max_mass(fading.map_or(1.0, |f| f.weight(clock_ms)));
    let cells = width as usize * depth as usize;
    let buckets = decode_buckets(r, cells, fading.is_some(), cap)?;
    let members = decode_members(r, k, seed, cap, fading.is_some())?;
    let watch = if version >= 3 { decode_watch(r)? } else { None };
    let ties = if version >= 4 {
        Ties::from_code(r.u8()?).ok_or_else(|| corrupt("unknown tie rule"))?
    } else {
        Ties::ByItem
    };
    let topk = match ties {
        Ties::ByItem => TopK::from_heap_order(k as usize, members),
        Ties::RedisBloom => TopK::from_slots(k as usize, decode_slots(r, k, members)?),
    }
    .map_err(corrupt)?;
    if !r.bytes.is_empty() {
        return Err(corrupt("trailing bytes"));
    }
    Ok(HeavyKeeper::restore(Saved {
        params,
        buckets,
        topk,
        rng,
        fading,
        clock_ms,
        created_ms,
        arrivals,
        watch,
    }))
}

fn decode_watch(r: &mut Reader<'_>) -> Result<Option<WatchSpec>, DecodeError> {
    if !r.flag("bad watch flag")? {
        return Ok(None);
    }
    let len = r.u32()? as usize;
    let channel = r.take(len)?.bytes.to_vec();
    let members = r.flag("bad watch members flag")?;
    let mut line = || -> Result<Option<f64>, DecodeError> {
        let present = r.flag("bad watch line flag")?;
        Ok(present.then_some(r.f64()?))
    };
    let (above, below) = (line()?, line()?);
    let spec = WatchSpec {
        channel,
        members,
        above,
        below,
    };
    spec.validate().map_err(|e| corrupt(e.0))?;
    Ok(Some(spec))
}

/// Times must be real times (0 to the year 9999), the clock no earlier than
/// the creation, and the landmark exactly the one the clock implies: every
/// weight is then in `[1, 2^32)` at the clock and nothing can overflow.
/// Without fading there is no clock and no landmark: both are stored as 0.
/// Returns the fading clock, if the sketch fades.
fn check_clock(
    params: &Params,
    half_life_ms: f64,
    epoch: i64,
    clock_ms: i64,
    created_ms: i64,
) -> Result<Option<Fading>, DecodeError> {
    if !(0..=MAX_TIMESTAMP_MS).contains(&created_ms) {
        return Err(corrupt("creation time out of range"));
    }
    let Some(half_life) = params.half_life_ms else {
        if half_life_ms != 0.0 || epoch != 0 || clock_ms != 0 {
            return Err(corrupt("fading fields set on a sketch that does not fade"));
        }
        return Ok(None);
    };
    if !(created_ms..=MAX_TIMESTAMP_MS).contains(&clock_ms) {
        return Err(corrupt("clock out of range"));
    }
    let fading = Fading::from_parts(half_life, epoch);
    if fading.epoch_at(clock_ms) != epoch {
        return Err(corrupt("landmark does not match the clock"));
    }
    Ok(Some(fading))
}

fn decode_buckets(
    r: &mut Reader<'_>,
    cells: usize,
    fading: bool,
    cap: f64,
) -> Result<BucketArray, DecodeError> {
    // The bytes must be there before the buckets are allocated.
    let mut raw = r.take(
        cells
            .checked_mul(Bucket::BYTES)
            .ok_or_else(|| corrupt("too many buckets"))?,
    )?;
    let mut buckets = BucketArray::try_with_capacity(cells, fading)
        .map_err(|_| DecodeError::TooLarge("not enough memory for the buckets".into()))?;
    for _ in 0..cells {
        let fingerprint = raw.u32()?;
        let count = raw.f64()?;
        check_count(count, cap, fading, "bucket count out of range")?;
        buckets.push(Bucket { fingerprint, count });
    }
    Ok(buckets)
}

/// A RedisBloom heap's k slots: the empty positions as stored, the members
/// in heap order in the others.
fn decode_slots(
    r: &mut Reader<'_>,
    k: u32,
    members: Vec<Entry>,
) -> Result<Vec<Option<Entry>>, DecodeError> {
    let empty = r.u32()?;
    if u64::from(empty) + members.len() as u64 != u64::from(k) {
        return Err(corrupt("members and empty slots do not make k"));
    }
    // Every position is read before k slots are allocated: a payload
    // claiming a huge k must also carry that many bytes.
    let mut positions = Vec::with_capacity((empty as usize).min(r.bytes.len() / 4));
    for _ in 0..empty {
        let place = r.u32()?;
        if place >= k || positions.last().is_some_and(|&last| place <= last) {
            return Err(corrupt("empty slots out of order"));
        }
        positions.push(place);
    }
    let mut members = members.into_iter();
    let mut empty_at = positions.into_iter().peekable();
    Ok((0..k)
        .map(|place| {
            if empty_at.next_if_eq(&place).is_some() {
                None
            } else {
                members.next()
            }
        })
        .collect())
}

fn decode_members(
    r: &mut Reader<'_>,
    k: u32,
    seed: u64,
    cap: f64,
    fading: bool,
) -> Result<Vec<Entry>, DecodeError> {
    let members = r.u32()?;
    if members > k {
        return Err(corrupt("more members than k"));
    }
    let mut entries = Vec::with_capacity((members as usize).min(r.bytes.len() / 12));
    for _ in 0..members {
        let len = r.u32()? as usize;
        let item: Box<[u8]> = r.take(len)?.bytes.into();
        let count = r.f64()?;
        check_count(count, cap, fading, "member count out of range")?;
        let hash = ItemHash::of(&item, seed).value();
        entries.push(Entry { item, hash, count });
    }
    Ok(entries)
}

/// A stored count under the bound (`out_of_range` otherwise). Without
/// fading every count is a number of arrivals: a fraction there is no
/// sketch's state, and would cost a side-table entry per bucket (a whole
/// count up to 2^32 fits in the bucket's own word).
fn check_count(count: f64, cap: f64, fading: bool, out_of_range: &str) -> Result<(), DecodeError> {
    if !is_valid_mass(count, cap) {
        Err(corrupt(out_of_range))
    } else if fading || count.fract() == 0.0 {
        Ok(())
    } else {
        Err(corrupt("a count without fading must be a whole number"))
    }
}

fn corrupt(why: &str) -> DecodeError {
    DecodeError::Corrupt(why.to_string())
}

/// A cursor that refuses to read past the end.
struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<Reader<'a>, DecodeError> {
        if n > self.bytes.len() {
            return Err(corrupt("truncated"));
        }
        let (head, tail) = self.bytes.split_at(n);
        self.bytes = tail;
        Ok(Reader { bytes: head })
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?.bytes);
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.array::<1>()?[0])
    }

    /// A byte that must be 0 or 1.
    fn flag(&mut self, why: &str) -> Result<bool, DecodeError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(corrupt(why)),
        }
    }

    fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    fn i64(&mut self) -> Result<i64, DecodeError> {
        Ok(i64::from_le_bytes(self.array()?))
    }

    fn u128(&mut self) -> Result<u128, DecodeError> {
        Ok(u128::from_le_bytes(self.array()?))
    }

    fn f64(&mut self) -> Result<f64, DecodeError> {
        Ok(f64::from_le_bytes(self.array()?))
    }
}
