#!/usr/bin/env python3
"""Near cache: serve the keys the server reports hot from the process's own
memory, and never serve a value a write has replaced.

Three signals, each from where it is known:
- What is worth caching: the heavykeeper module's tracker publishes `hot`
  when a key's rate passes `heavykeeper.track-notify-above` (on
  `heavykeeper.track-channel`). A hot key is admitted at its next read.
- When a cached value is stale: the server's own client-side caching. The
  reading connection speaks RESP3 with `CLIENT TRACKING ON`, so the server
  remembers which keys it read and pushes an invalidation on that same
  connection the moment anyone writes one. Pushes and replies share the
  connection, in the server's order: a value read before a write is followed
  by that write's invalidation, never overtaken by it. Before serving from
  memory, the cache reads every push already delivered.
- When to let go: the cache's own hits. Once a key is cached its reads no
  longer reach the server, whose tracker then sees it cool; that `cool` is
  ignored for cached keys (it would evict a key that is still hot, and the
  reads would come back, re-heat it, and so on once per half-life). A cached
  key is evicted when this process has not read it for `--idle` seconds.

The storefront workload: products 1 and 2 are on the front page, the rest is
a long tail; a writer changes products 1 and 2 (and some others) all the time.
Every value carries a version. A locally served value older than a write
already acknowledged to the writer when the read began is either stale (the
cache never got, or ignored, that write's invalidation) or in flight (the
invalidation was on its way: it arrives right after, and the value was one
delivery behind the writer's acknowledgement). Prints one JSON line at the end:
{"reads": N, "served_locally": N, "stale_reads": N, "admissions": N, "evictions": N,
 "in_flight_reads": N}

    python3 examples/near_cache.py --port 6379 --seconds 10 --configure

`--configure` turns tracking and hot-key events on in the server (CONFIG
SET); leave it out where an operator has set them in redis.conf.
"""
import argparse
import json
import random
import threading
import time

import redis


class NearCache:
    """GET through process memory for the keys the server says are hot."""

    def __init__(self, host, port, channel, idle_seconds):
        # One connection, used by one thread: pushes arrive on it in order.
        self.client = redis.Redis(host=host, port=port, protocol=3,
                                  single_connection_client=True, decode_responses=True)
        self.connection = self.client.connection
        # redis-py's hook for RESP3 invalidation pushes (its own client-side
        # cache uses the same one).
        self.connection._parser.set_invalidation_push_handler(self._on_invalidation)
        self.client.execute_command("CLIENT", "TRACKING", "ON")
        self.idle = idle_seconds
        self.values = {}      # key -> value: admitted keys whose value is current
        self.admitted = {}    # key -> when this process last read it
        self.hot = set()      # keys the tracker says are hot now
        self.lock = threading.Lock()
        self.stats = {"reads": 0, "served_locally": 0, "stale_reads": 0,
                      "admissions": 0, "evictions": 0, "in_flight_reads": 0}
        self.invalidated = set()  # keys invalidated since the last check
        self.next_sweep = time.monotonic() + 1.0
        # Kept: a client that is dropped closes its connections, the
        # subscription's included.
        self.events = redis.Redis(host=host, port=port, protocol=2, decode_responses=True)
        self.pubsub = self.events.pubsub(ignore_subscribe_messages=True)
        self.pubsub.subscribe(**{channel: self._on_event})
        self.thread = self.pubsub.run_in_thread(sleep_time=0.01, daemon=True)
        self._learn_keys_hot_already()

    def _learn_keys_hot_already(self):
        """Keys hot before this process started sent their `hot` already: the
        tracker's own list says which are above the cool line (0.8 of the hot
        line, where a hot key turns cool) now."""
        line = float(self.events.config_get("heavykeeper.track-notify-above")
                     .get("heavykeeper.track-notify-above", 0) or 0)
        if line <= 0:
            return
        line *= 0.8
        rows = self.events.execute_command("HK.HOTKEYS", "READS", "COUNT", 100)
        with self.lock:
            for key, db, rate, _count in zip(*[iter(rows)] * 4):
                if int(db) == 0 and float(rate) >= line:
                    self.hot.add(key)

    def _on_event(self, message):
        event = json.loads(message["data"])
        key = event.get("key")
        if key is None:  # a binary key (key_base64): not one this app reads
            return
        with self.lock:
            if event["event"] == "hot":
                self.hot.add(key)
            elif event["event"] == "cool":
                # Cached keys cool on the server because they are cached:
                # only this process's own reads can say they went cold.
                self.hot.discard(key)

    def _on_invalidation(self, push):
        # ["invalidate", [key, ...]], or ["invalidate", None] after FLUSHALL.
        keys = push[1]
        if keys is None:
            self.values.clear()
            return
        for key in keys:
            key = key.decode() if isinstance(key, bytes) else key
            self.values.pop(key, None)
            self.invalidated.add(key)

    def _read_delivered_pushes(self):
        while self.connection.can_read(timeout=0):
            self.connection.read_response(push_request=True)

    def get(self, key, newest_acknowledged=None):
        """The value of `key`. `newest_acknowledged` (for the measurement
        only) is the newest version a writer had seen acknowledged when this
        read began."""
        now = time.monotonic()
        self.stats["reads"] += 1
        self._read_delivered_pushes()
        if key in self.values:
            value = self.values[key]
            self.admitted[key] = now
            self.stats["served_locally"] += 1
            if newest_acknowledged is not None and version(value) < newest_acknowledged:
                self._classify_old_value(key)
            return value
        value = self.client.get(key)  # also handles pushes that came first
        with self.lock:
            hot = key in self.hot
        if key in self.admitted or hot:
            if key not in self.admitted:
                self.stats["admissions"] += 1
            self.admitted[key] = now
            self.values[key] = value
        if now >= self.next_sweep:
            self._evict_idle(now)
        return value

    def _classify_old_value(self, key):
        """A value older than a write already acknowledged to the writer was
        served. Either the write's invalidation was still on its way (the
        server answers the writer and pushes to its trackers in the same
        event-loop turn, but two sockets are two writes, and the server can
        be preempted between them): it arrives within moments, and the
        value was one delivery behind. Or it never comes, or came already
        and was ignored: the cache is stale."""
        self.invalidated.discard(key)
        deadline = time.monotonic() + 1.0
        while key not in self.invalidated and time.monotonic() < deadline:
            if self.connection.can_read(timeout=0.05):
                self.connection.read_response(push_request=True)
        if key in self.invalidated:
            self.stats["in_flight_reads"] += 1
        else:
            self.stats["stale_reads"] += 1

    def _evict_idle(self, now):
        self.next_sweep = now + 1.0
        for key, last in list(self.admitted.items()):
            if now - last > self.idle:
                del self.admitted[key]
                self.values.pop(key, None)
                self.stats["evictions"] += 1

    def close(self):
        self.thread.stop()  # closes the subscription once its loop ends
        self.thread.join(timeout=1)
        self.client.close()
        self.events.close()


def version(value):
    """`v<n>:...` -> n (-1 for a value without one)."""
    try:
        return int(value.split(":", 1)[0][1:])
    except (AttributeError, ValueError):
        return -1


class Writer(threading.Thread):
    """Changes the front-page products (and some of the tail) all the time,
    remembering the newest version each key had acknowledged."""

    def __init__(self, host, port, period):
        super().__init__(daemon=True)
        self.client = redis.Redis(host=host, port=port, protocol=2, decode_responses=True)
        self.period = period
        self.acknowledged = {}
        self.lock = threading.Lock()
        self.running = True
        self.writes = 0

    def run(self):
        rng = random.Random(11)
        n = 1000
        while self.running:
            r = rng.random()
            product = 1 if r < 0.4 else 2 if r < 0.8 else rng.randrange(3, 1000)
            key = f"product:{product}"
            n += 1
            self.client.set(key, f"v{n}:details of product {product}")
            with self.lock:
                self.acknowledged[key] = n
            self.writes += 1
            time.sleep(self.period)

    def newest(self, key):
        with self.lock:
            return self.acknowledged.get(key)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=6379)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--channel", default="heavykeeper:hotkeys")
    parser.add_argument("--idle", type=float, default=5.0,
                        help="evict a cached key not read for this many seconds")
    parser.add_argument("--write-every", type=float, default=0.002,
                        help="seconds between the writer's writes")
    parser.add_argument("--configure", action="store_true",
                        help="turn tracking and hot-key events on in the server")
    args = parser.parse_args()

    admin = redis.Redis(host=args.host, port=args.port, protocol=2, decode_responses=True)
    if args.configure:
        admin.config_set("heavykeeper.track", "yes")
        admin.config_set("heavykeeper.track-notify-above", "200")
        admin.config_set("heavykeeper.track-channel", args.channel)
    for i in range(1000):
        admin.set(f"product:{i}", f"v{i}:details of product {i}")

    cache = NearCache(args.host, args.port, args.channel, args.idle)
    writer = Writer(args.host, args.port, args.write_every)
    writer.start()
    rng = random.Random(7)
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        # A storefront: product 1 and 2 are on the front page, the rest is a long tail.
        r = rng.random()
        product = 1 if r < 0.5 else 2 if r < 0.7 else rng.randrange(3, 1000)
        key = f"product:{product}"
        cache.get(key, newest_acknowledged=writer.newest(key))
    writer.running = False
    writer.join(timeout=2)
    cache.close()
    print(json.dumps(cache.stats))


if __name__ == "__main__":
    main()
