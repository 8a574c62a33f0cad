#!/usr/bin/env python3
"""Gateway limiter: answer 429 to the ip+path pairs above 50 requests per second until they cool.

Every request is counted in a fading heavykeeper sketch (`HK.ADD`), which
is watched (`HK.WATCH ... ABOVE 50`): the server publishes `hot` the moment
a pair's rate reaches 50 req/s and `cool` once it falls below 40. The
gateway keeps the hot pairs in a set and answers them 429 without even
counting them (the sketch sees them fade, and tells when to let them in).

    python3 examples/gateway_limiter.py --port 6379 --seconds 10
"""
import argparse
import json
import threading
import time

import redis


class Limiter:
    def __init__(self, client, key, channel, limit):
        self.client = client
        self.key = key
        self.limited = set()
        self.lock = threading.Lock()
        if not client.exists(key):
            client.execute_command("HK.RESERVE", key, 1000, "HALFLIFE", 2)
        client.execute_command("HK.WATCH", key, channel, "ABOVE", limit)
        self.pubsub = client.pubsub(ignore_subscribe_messages=True)
        self.pubsub.subscribe(**{channel: self._on_event})
        self.thread = self.pubsub.run_in_thread(sleep_time=0.01, daemon=True)

    def _on_event(self, message):
        event = json.loads(message["data"])
        pair = event.get("item")
        with self.lock:
            if event["event"] == "hot":
                self.limited.add(pair)
            elif event["event"] == "cool":
                self.limited.discard(pair)

    def handle(self, ip, path):
        """The status a gateway would answer."""
        pair = f"{ip} {path}"
        with self.lock:
            if pair in self.limited:
                return 429
        self.client.execute_command("HK.ADD", self.key, pair)
        return 200

    def close(self):
        self.thread.stop()
        self.thread.join(timeout=1)
        self.pubsub.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=6379)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--limit", type=float, default=50.0)
    args = parser.parse_args()

    client = redis.Redis(host=args.host, port=args.port, protocol=2, decode_responses=True)
    limiter = Limiter(client, "gateway:requests", "gateway:events", args.limit)
    # Twenty ordinary clients at ~5 req/s each, one scraper at ~400 req/s.
    clients = [(f"10.0.0.{i}", "GET /products") for i in range(1, 21)]
    scraper = ("203.0.113.9", "GET /login")
    answered = {}
    start = time.monotonic()
    tick = 0
    while time.monotonic() - start < args.seconds:
        tick += 1
        requests = [scraper] * 2
        if tick % 40 == 0:
            requests += clients
        for ip, path in requests:
            status = limiter.handle(ip, path)
            key = (ip, path)
            answered.setdefault(key, {200: 0, 429: 0})[status] += 1
        time.sleep(0.005)
    limiter.close()

    scraped = answered[scraper]
    others = [answered[c][429] for c in clients if c in answered]
    print(f"scraper {scraper[0]} {scraper[1]}: {scraped[200]} served, {scraped[429]} answered 429")
    print(f"ordinary clients: {sum(answered[c][200] for c in clients if c in answered)} served, "
          f"{sum(others)} answered 429")


if __name__ == "__main__":
    main()
