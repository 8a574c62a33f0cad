#!/usr/bin/env python3
"""Split key: a key too hot for one primary, kept as copies on different slots
(so, in a cluster, on different primaries); every write goes to all copies,
every read to one copy at random. Merged back into one key when it cools.

This is what `hk-top rebalance` advises for a key no slot move can fix (one
key with half a cluster's traffic), when neither a near cache
(`examples/near_cache.py`) nor read replicas will do.

- The copies: `key{0}` .. `key{n-1}`. The `{i}` is the hash tag, so copy i
  lives on the slot of `i`: ten tags are ten slots, spread over the cluster's
  primaries. (A key with a hash tag of its own cannot be split this way: its
  first tag decides its slot. Give its copies names of their own.)
- Writes go to the key itself and then to every copy, under this process's
  split lock (a split or merge waits for a write to finish, and the other way
  round): once a write returns, every copy holds it. Reads pick a copy at
  random; a copy that is gone (merged back a moment ago) falls back to the key.
  A read that began after a write returned never sees an older value.
- When to split: the heavykeeper tracker's `hot` event (a key's reads plus
  writes per second rising to `heavykeeper.track-notify-above`, on
  `heavykeeper.track-channel`), with `--copies` copies.
- When to merge back: the tracker sends `cool` when a hot key falls below 0.8
  of the line, but a split key is n keys to the tracker, none of them hot
  (each carries a part of the reads) and each counting every write again. So
  the example asks the tracker (`HK.HOTKEYS READS` and `WRITES`) for the copies'
  reads summed, plus the writes of one copy (the key's own), and merges when
  that falls below the same 0.8 of the line: the tracker's own `cool` rule,
  applied to the key as the application sees it. The key's own `cool`, sent
  as its reads move to the copies, is what splitting does, and is ignored.
- Where several processes share a key: keep the split count in the server (a
  hash, `HSET splits key n`, read on each `hot` and every few seconds), and
  write to the key and its copies both while any process may not have seen the
  change: readers fall back to the key, so a write to all never misleads one.

The workload: product 1 is read by two threads at `--hot-rate` reads a second
(or as fast as they can, if slower) for the first 40% of the run (hot: split),
then a few times a second (cool: merged back). The hot rate is paced so that
the run does not depend on the machine: the tracker's rate falls by half each
half-life once the reads slow, so a key read at 30,000/s needs seven half-lives
to cool below the line and a key read at 2,000/s three; a
writer changes it every `--write-every` seconds with a version number. Prints
one JSON line at the end:
{"reads": N, "reads_on_copies": N, "stale_reads": N, "missing_reads": N,
 "writes": N, "splits": N, "merges": N, "copies_left": N}

    python3 examples/split_key.py --port 6379 --seconds 12 --configure

`--configure` turns tracking and hot-key events on (CONFIG SET, with a 1 s
half-life so that a short run sees the key cool); leave it out where an
operator has set them in redis.conf.
"""
import argparse
import json
import random
import threading
import time

import redis

KEY = "product:1"


def copy_names(key, n):
    if "{" in key:
        raise ValueError(f"{key} has a hash tag: name its copies yourself")
    return [f"{key}{{{i}}}" for i in range(n)]


class SplitKeys:
    """GET and SET through split keys, split and merged on the tracker's word."""

    def __init__(self, client, copies, line):
        self.client = client
        self.copies = copies
        self.line = line
        self.split = {}          # key -> its copies' names, while split
        self.lock = threading.Lock()
        self.rng = random.Random(11)
        self.stats = {"splits": 0, "merges": 0, "reads_on_copies": 0}

    def set(self, key, value):
        with self.lock:
            self.client.set(key, value)
            for name in self.split.get(key, ()):
                self.client.set(name, value)

    def get(self, key):
        names = self.split.get(key)
        if names:
            value = self.client.get(self.rng.choice(names))
            if value is not None:
                self.stats["reads_on_copies"] += 1
                return value
        return self.client.get(key)

    def on_event(self, event):
        if event.get("event") == "hot" and event.get("key") == KEY:
            self.split_key(event["key"])

    def split_key(self, key):
        with self.lock:
            if key in self.split:
                return
            names = copy_names(key, self.copies)
            value = self.client.get(key)
            if value is None:
                return
            for name in names:
                self.client.set(name, value)
            self.split[key] = names
            self.stats["splits"] += 1

    def rate_as_one_key(self, key):
        """The key's reads and writes per second as if it were not split: the
        copies' reads summed, and the writes once (each is every copy's)."""
        names = set(self.split.get(key, ())) | {key}

        def rates(kind):
            flat = self.client.execute_command("HK.HOTKEYS", kind, "COUNT", 1000)
            # key, db, rate, count
            return {flat[i]: float(flat[i + 2]) for i in range(0, len(flat), 4)}

        reads, writes = rates("READS"), rates("WRITES")
        return sum(reads.get(n, 0.0) for n in names) + writes.get(key, 0.0)

    def merge_cooled(self):
        for key in list(self.split):
            if self.rate_as_one_key(key) < 0.8 * self.line:
                self.merge(key)

    def merge(self, key):
        with self.lock:
            names = self.split.pop(key, ())
            # Readers that picked a copy already find it gone and read the key.
            if names:
                self.client.delete(*names)
                self.stats["merges"] += 1


class Writer(threading.Thread):
    def __init__(self, keys, every):
        super().__init__(daemon=True)
        self.keys = keys
        self.every = every
        self.version = 0
        self.acknowledged = 0
        self.running = True

    def run(self):
        while self.running:
            self.version += 1
            self.keys.set(KEY, f"v{self.version}")
            self.acknowledged = self.version
            time.sleep(self.every)


class Reader(threading.Thread):
    def __init__(self, keys, writer, hot_rate, until_hot_ends, until):
        super().__init__(daemon=True)
        self.keys, self.writer = keys, writer
        self.hot_gap = 1.0 / hot_rate
        self.hot_until, self.until = until_hot_ends, until
        self.stats = {"reads": 0, "stale_reads": 0, "missing_reads": 0}

    def run(self):
        due = time.monotonic()
        while time.monotonic() < self.until:
            # Paced while hot: each read has its time; a reader that falls
            # behind reads at once, and never makes up for more than a moment.
            now = time.monotonic()
            due = max(due + self.hot_gap, now - 0.1)
            if now < due and now < self.hot_until:
                time.sleep(due - now)
            newest = self.writer.acknowledged
            value = self.keys.get(KEY)
            self.stats["reads"] += 1
            if value is None:
                self.stats["missing_reads"] += 1
            elif int(value[1:]) < newest:
                self.stats["stale_reads"] += 1
            if time.monotonic() > self.hot_until:
                time.sleep(0.2)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=6379)
    parser.add_argument("--seconds", type=float, default=12.0)
    parser.add_argument("--channel", default="heavykeeper:hotkeys")
    parser.add_argument("--copies", type=int, default=4)
    parser.add_argument("--line", type=int, default=300,
                        help="track-notify-above: the rate at which a key is split")
    parser.add_argument("--hot-rate", type=float, default=2000.0,
                        help="reads a second of the hot key while it is hot")
    parser.add_argument("--write-every", type=float, default=0.02)
    parser.add_argument("--configure", action="store_true",
                        help="turn tracking and hot-key events on in the server")
    args = parser.parse_args()

    admin = redis.Redis(host=args.host, port=args.port, protocol=2, decode_responses=True)
    if args.configure:
        admin.config_set("heavykeeper.track", "yes")
        admin.config_set("heavykeeper.track-sample", "1")
        admin.config_set("heavykeeper.track-halflife", "1")
        admin.config_set("heavykeeper.track-notify-above", str(args.line))
        admin.config_set("heavykeeper.track-channel", args.channel)
    line = int(admin.config_get("heavykeeper.track-notify-above")
               .get("heavykeeper.track-notify-above", args.line) or args.line)
    admin.set(KEY, "v0")

    client = redis.Redis(host=args.host, port=args.port, protocol=2, decode_responses=True)
    keys = SplitKeys(client, args.copies, line)
    events = redis.Redis(host=args.host, port=args.port, protocol=2, decode_responses=True)
    pubsub = events.pubsub(ignore_subscribe_messages=True)
    pubsub.subscribe(**{args.channel: lambda m: keys.on_event(json.loads(m["data"]))})
    ending = threading.Event()

    def on_listener_error(error, _pubsub, thread):
        # The subscription's connection closing as the run ends is no error.
        thread.stop()
        if not ending.is_set():
            raise error

    listener = pubsub.run_in_thread(sleep_time=0.01, daemon=True,
                                    exception_handler=on_listener_error)

    writer = Writer(keys, args.write_every)
    writer.start()
    start = time.monotonic()
    hot_ends, end = start + 0.4 * args.seconds, start + args.seconds
    readers = [Reader(keys, writer, args.hot_rate / 2, hot_ends, end) for _ in range(2)]
    for r in readers:
        r.start()
    while time.monotonic() < end:
        time.sleep(0.25)
        keys.merge_cooled()
    for r in readers:
        r.join()
    writer.running = False
    writer.join()
    ending.set()
    listener.stop()
    listener.join(timeout=2)

    stats = {name: sum(r.stats[name] for r in readers)
             for name in ("reads", "stale_reads", "missing_reads")}
    stats.update(keys.stats)
    stats["writes"] = writer.version
    stats["copies_left"] = sum(admin.exists(n) for n in copy_names(KEY, args.copies))
    print(json.dumps(stats))


if __name__ == "__main__":
    main()
