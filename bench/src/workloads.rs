//! The streams every sketch sees: item ids into a table of item bytes, so a
//! 10M-arrival stream costs 40 MB, not gigabytes.

use rand::distr::{Distribution, Uniform};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::Zipf;
use std::collections::HashMap;
use std::io::BufRead;
use std::path::Path;

pub struct Workload {
    pub name: String,
    pub names: Vec<Vec<u8>>,
    pub stream: Vec<u32>,
    /// Exact count of every id.
    pub exact: Vec<u64>,
    /// The arrivals' bytes back to back, as a log or a socket delivers them,
    /// so that timing measures the sketch rather than pointer chasing.
    bytes: Vec<u8>,
    ends: Vec<u32>,
}

impl Workload {
    /// Fails on an id with no name, which the generators and readers below
    /// never make.
    pub fn new(name: String, names: Vec<Vec<u8>>, stream: Vec<u32>) -> Result<Self, String> {
        let mut exact = vec![0u64; names.len()];
        let mut bytes = Vec::new();
        let mut ends = Vec::with_capacity(stream.len());
        for &id in &stream {
            let unknown = || format!("{name}: id {id} beyond its {} names", names.len());
            *exact.get_mut(id as usize).ok_or_else(unknown)? += 1;
            bytes.extend_from_slice(names.get(id as usize).ok_or_else(unknown)?);
            ends.push(bytes.len() as u32);
        }
        Ok(Self {
            name,
            names,
            stream,
            exact,
            bytes,
            ends,
        })
    }

    /// Every arrival's bytes, in order.
    pub fn arrivals(&self) -> impl Iterator<Item = &[u8]> + '_ {
        let mut start = 0usize;
        // `new` makes the ends ascend within `bytes`: this never stops early.
        self.ends.iter().map_while(move |&end| {
            let item = self.bytes.get(start..end as usize)?;
            start = end as usize;
            Some(item)
        })
    }

    /// The item's bytes; `None` for an id no stream of this workload holds.
    pub fn item(&self, id: u32) -> Option<&[u8]> {
        self.names.get(id as usize).map(Vec::as_slice)
    }

    /// Exact count of an id (0 for one no stream of this workload holds).
    pub fn count(&self, id: u32) -> u64 {
        self.exact.get(id as usize).copied().unwrap_or(0)
    }

    /// Mean byte length of the items that matter (the 1000 most frequent).
    pub fn hot_item_len(&self) -> usize {
        let top = self.top_ids(1000);
        (top.iter()
            .filter_map(|&id| self.item(id))
            .map(<[u8]>::len)
            .sum::<usize>()
            / top.len().max(1))
        .max(1)
    }

    /// Ids by true count, highest first (ties by id).
    pub fn top_ids(&self, n: usize) -> Vec<u32> {
        let mut ids: Vec<u32> = (0..self.names.len() as u32)
            .filter(|&i| self.count(i) > 0)
            .collect();
        ids.sort_by(|&a, &b| self.count(b).cmp(&self.count(a)).then(a.cmp(&b)));
        ids.truncate(n);
        ids
    }

    /// A stream a user's resembles: Zipf or real text (not the adversarial
    /// uniform and shifting ones). The default parameters are judged on these.
    pub fn is_realistic(&self) -> bool {
        ["zipf", "gcide", "python"]
            .iter()
            .any(|p| self.name.starts_with(p))
    }

    pub fn distinct(&self) -> usize {
        self.exact.iter().filter(|&&c| c > 0).count()
    }

    /// Exact count by item bytes.
    pub fn index(&self) -> HashMap<&[u8], u32> {
        self.names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.as_slice(), i as u32))
            .collect()
    }
}

fn key_names(distinct: usize) -> Vec<Vec<u8>> {
    (0..distinct)
        .map(|i| format!("key:{i}").into_bytes())
        .collect()
}

/// Fails when there are no ids to draw (`distinct` 0) or `s` is negative.
fn zipf_ids(
    s: f64,
    distinct: usize,
    arrivals: usize,
    rng: &mut ChaCha8Rng,
) -> Result<Vec<u32>, String> {
    let zipf =
        Zipf::new(distinct as f64, s).map_err(|e| format!("Zipf({s}) over {distinct} ids: {e}"))?;
    Ok((0..arrivals).map(|_| zipf.sample(rng) as u32 - 1).collect())
}

pub fn zipf(s: f64, distinct: usize, arrivals: usize, seed: u64) -> Result<Workload, String> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    // Ranks are shuffled onto names so that popularity is unrelated to the bytes.
    let mut names = key_names(distinct);
    names.shuffle(&mut rng);
    let stream = zipf_ids(s, distinct, arrivals, &mut rng)?;
    Workload::new(format!("zipf-{s}"), names, stream)
}

pub fn uniform(distinct: usize, arrivals: usize, seed: u64) -> Result<Workload, String> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let ids = Uniform::new(0, distinct as u32)
        .map_err(|e| format!("uniform over {distinct} ids: {e}"))?;
    let stream = (0..arrivals).map(|_| ids.sample(&mut rng)).collect();
    Workload::new("uniform".into(), key_names(distinct), stream)
}

/// Zipf(1.0) whose hot set is replaced by a disjoint one halfway through.
pub fn shifting(distinct: usize, arrivals: usize, seed: u64) -> Result<Workload, String> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let half = distinct / 2;
    let mut stream = zipf_ids(1.0, half, arrivals / 2, &mut rng)?;
    let second = zipf_ids(1.0, half, arrivals - arrivals / 2, &mut rng)?;
    stream.extend(second.into_iter().map(|id| id + half as u32));
    Workload::new("shifting".into(), key_names(half * 2), stream)
}

/// A workload of `items` in order, each distinct item an id (by first
/// arrival).
fn interned(
    name: String,
    items: impl IntoIterator<Item = std::io::Result<Vec<u8>>>,
) -> std::io::Result<Workload> {
    let mut ids: HashMap<Vec<u8>, u32> = HashMap::new();
    let mut names = Vec::new();
    let stream = (items.into_iter())
        .map(|item| {
            let (item, next) = (item?, names.len() as u32);
            Ok(*ids.entry(item.clone()).or_insert_with(|| {
                names.push(item);
                next
            }))
        })
        .collect::<std::io::Result<_>>()?;
    Workload::new(name, names, stream).map_err(std::io::Error::other)
}

/// One item per line, as given (the `STREAM=path` workload).
pub fn lines_of(path: &Path) -> std::io::Result<Workload> {
    let file = std::fs::File::open(path)?;
    let name = path
        .file_name()
        .map_or("stream".into(), |n| n.to_string_lossy().into_owned());
    interned(name, std::io::BufReader::new(file).split(b'\n'))
}

/// Identifier tokens of a tree of source files, in path order: source code's
/// frequencies are flat at the top (`self`, `if`, `return` aside), with many
/// near-ties at the k-th count, the hard case for a top-k sketch.
pub fn source_tokens(name: &str, root: &Path, extension: &str) -> std::io::Result<Workload> {
    let mut files = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let path = entry?.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == extension) {
                files.push(path);
            }
        }
    }
    files.sort();
    if files.is_empty() {
        return Err(std::io::Error::other(format!("no .{extension} files")));
    }
    let texts = files.iter().filter_map(|file| std::fs::read(file).ok());
    let tokens = texts.flat_map(|text| {
        let runs = text.split(|b| !(b.is_ascii_alphanumeric() || *b == b'_'));
        // A token starts at a letter or `_`: `2x` is the token `x`.
        let tokens = runs.map(|run| {
            let digits = run.iter().take_while(|b| b.is_ascii_digit()).count();
            run.get(digits..).unwrap_or_default()
        });
        (tokens.filter(|t| !t.is_empty()))
            .map(|t| Ok(t.to_vec()))
            .collect::<Vec<_>>()
    });
    interned(name.into(), tokens)
}

/// The Python standard library Debian installs (`libpython3-stdlib`), the
/// newest version present.
pub fn python_tokens() -> std::io::Result<Workload> {
    let root = std::fs::read_dir("/usr/lib")?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("python3.") && p.join("os.py").exists())
        })
        .max()
        .ok_or_else(|| std::io::Error::other("no /usr/lib/python3.*/os.py"))?;
    source_tokens("python-tokens", &root, "py")
}

/// The GNU dictionary's words, lower-cased, in order, from Debian's
/// `dict-gcide` (dictzip is gzip).
pub fn gcide(path: &Path, limit: Option<usize>) -> std::io::Result<Workload> {
    let text = flate2::read::MultiGzDecoder::new(std::fs::File::open(path)?);
    let lines = std::io::BufReader::new(text)
        .split(b'\n')
        .map_while(Result::ok);
    let words = lines.flat_map(|line| {
        (line.split(|b| !b.is_ascii_alphabetic()))
            .filter(|w| !w.is_empty())
            .map(|w| Ok(w.to_ascii_lowercase()))
            .collect::<Vec<_>>()
    });
    let mut w = interned("gcide-words".into(), words)?;
    if let Some(n) = limit {
        w.stream.truncate(n);
        w = Workload::new(w.name, w.names, w.stream).map_err(std::io::Error::other)?;
    }
    Ok(w)
}
