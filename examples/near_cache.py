#!/usr/bin/env python3
"""Near cache: serve the keys the server reports hot from the process's own memory.

The heavykeeper module tracks every key the server's clients touch
(`heavykeeper.track yes`) and publishes `hot` when a key's rate rises to
`heavykeeper.track-notify-above` requests per second, `cool` when it falls
below 0.8 of that, on `heavykeeper.track-channel`. This client listens, and
serves the hot keys from a small in-process cache with a short TTL until
they cool. It prints how much traffic it kept off the server.

    python3 examples/near_cache.py --port 6379 --seconds 10 --configure

`--configure` turns tracking on in the server (CONFIG SET); leave it out
where an operator has set it in redis.conf.
"""
import argparse
import json
import random
import threading
import time

import redis


class NearCache:
    """GET through a local cache for the keys the server says are hot."""

    def __init__(self, client, channel, ttl_seconds):
        self.client = client
        self.ttl = ttl_seconds
        self.hot = set()
        self.cache = {}
        self.lock = threading.Lock()
        self.server_reads = 0
        self.local_reads = 0
        self.pubsub = client.pubsub(ignore_subscribe_messages=True)
        self.pubsub.subscribe(**{channel: self._on_event})
        self.thread = self.pubsub.run_in_thread(sleep_time=0.01, daemon=True)

    def _on_event(self, message):
        event = json.loads(message["data"])
        key = event.get("key")
        if key is None:  # a binary key (key_base64): not one this app reads
            return
        with self.lock:
            if event["event"] == "hot":
                self.hot.add(key)
            elif event["event"] == "cool":
                self.hot.discard(key)
                self.cache.pop(key, None)

    def get(self, key):
        now = time.monotonic()
        with self.lock:
            hot = key in self.hot
            cached = self.cache.get(key)
        if hot and cached and cached[1] > now:
            self.local_reads += 1
            return cached[0]
        value = self.client.get(key)
        self.server_reads += 1
        if hot:
            with self.lock:
                self.cache[key] = (value, now + self.ttl)
        return value

    def close(self):
        self.thread.stop()
        self.thread.join(timeout=1)
        self.pubsub.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=6379)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--channel", default="heavykeeper:hotkeys")
    parser.add_argument("--configure", action="store_true",
                        help="turn tracking and hot-key events on in the server")
    args = parser.parse_args()

    client = redis.Redis(host=args.host, port=args.port, protocol=2, decode_responses=True)
    if args.configure:
        client.config_set("heavykeeper.track", "yes")
        client.config_set("heavykeeper.track-notify-above", "200")
        client.config_set("heavykeeper.track-channel", args.channel)
    for i in range(1000):
        client.set(f"product:{i}", f"details of product {i}")

    cache = NearCache(client, args.channel, ttl_seconds=0.5)
    rng = random.Random(7)
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        # A storefront: product 1 and 2 are on the front page, the rest is a long tail.
        r = rng.random()
        product = 1 if r < 0.5 else 2 if r < 0.7 else rng.randrange(3, 1000)
        cache.get(f"product:{product}")
    cache.close()

    total = cache.server_reads + cache.local_reads
    share = 100.0 * cache.local_reads / max(total, 1)
    print(f"reads: {total}, served from the near cache: {cache.local_reads} ({share:.1f}%), "
          f"sent to the server: {cache.server_reads}")
    print(f"hot keys at the end: {sorted(cache.hot)}")


if __name__ == "__main__":
    main()
