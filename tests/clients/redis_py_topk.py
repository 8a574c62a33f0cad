"""RedisBloom's TopK as redis-py's own `topk()` client sees it, against a
server running heavykeeper with `topk-compat yes`. Exits non-zero, with the
failing check, if any reply differs from what RedisBloom would give.

    python3 redis_py_topk.py --port 6379 --protocol 2
"""

import argparse
import sys

import redis


def check(what, got, expected):
    if got != expected:
        sys.exit(f"{what}: got {got!r}, expected {expected!r}")


def refused(what, call, message):
    try:
        call()
    except redis.ResponseError as e:
        check(what, str(e), message)
        return
    sys.exit(f"{what}: no error, expected {message!r}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--protocol", type=int, choices=[2, 3], required=True)
    args = parser.parse_args()
    r = redis.Redis(port=args.port, protocol=args.protocol, decode_responses=True)
    topk = r.topk()
    p = f"p{args.protocol}:"

    check("reserve", topk.reserve(p + "t", 3, 50, 4, 0.925), True)
    check("add", topk.add(p + "t", "a", "b", "c", "a"), [None, None, None, None])
    check("incrby", topk.incrby(p + "t", ["a", "d"], [5, 0]), [None, None])
    check("query", topk.query(p + "t", "a", "z"), [1, 0])
    # TOPK.COUNT is deprecated in RedisBloom (and in redis-py), still served.
    check("count", r.execute_command("TOPK.COUNT", p + "t", "a", "b", "z"), [7, 1, 0])
    # b and c tie at 1: RedisBloom lists them in its heap's order, c first.
    check("list", topk.list(p + "t"), ["a", "c", "b"])
    check("list withcount", topk.list(p + "t", withcount=True), ["a", 7, "c", 1, "b", 1])
    # A fourth item that reaches the minimum expels the heap's root, c.
    check("expel", topk.incrby(p + "t", ["e"], [3]), ["c"])
    if args.protocol == 3:
        check("query answers booleans on RESP3", topk.query(p + "t", "a", "z"), [True, False])

    # A TopKInfo on RESP2, the map itself on RESP3: both index by name.
    info = topk.info(p + "t")
    check("info k", info["k"], 3)
    check("info width", info["width"], 50)
    check("info depth", info["depth"], 4)
    check("info decay", float(info["decay"]), 0.925)
    # The reply itself, without the callbacks `topk()` installed on `r`.
    plain = redis.Redis(port=args.port, protocol=args.protocol, decode_responses=True)
    raw = plain.execute_command("TOPK.INFO", p + "t")
    if args.protocol == 3:
        check("info on RESP3 is a map, in order", list(raw.keys()), ["k", "width", "depth", "decay"])
        check("decay is a double on RESP3", type(raw["decay"]), float)
    else:
        check("info on RESP2 is flat", raw[0::2], ["k", "width", "depth", "decay"])

    # RedisBloom's defaults when only k is given.
    check("reserve defaults", plain.execute_command("TOPK.RESERVE", p + "d", 5), "OK")
    info = topk.info(p + "d")
    check("default shape", (info["k"], info["width"], info["depth"], float(info["decay"])), (5, 8, 7, 0.9))

    refused("existing key", lambda: topk.reserve(p + "t", 3, 8, 7, 0.9), "TopK: key already exists")
    refused("missing key", lambda: topk.add(p + "missing", "a"), "TopK: key does not exist")
    refused("missing key info", lambda: topk.info(p + "missing"), "TopK: key does not exist")
    refused("bad k", lambda: r.execute_command("TOPK.RESERVE", p + "x", 0), "TopK: invalid k")
    refused("bad width", lambda: topk.reserve(p + "x", 3, 0, 7, 0.9), "TopK: invalid width")
    refused("bad depth", lambda: topk.reserve(p + "x", 3, 8, -1, 0.9), "TopK: invalid depth")
    refused("bad decay", lambda: topk.reserve(p + "x", 3, 8, 7, 1.5), "TopK: invalid decay value. must be '<= 1' & '> 0'")
    # A bad increment is an error inside the array, as RedisBloom answers it.
    bad = topk.incrby(p + "t", ["a"], [100001])
    check("bad increment is an element", [type(e) for e in bad], [redis.ResponseError])
    check(
        "bad increment text",
        str(bad[0]),
        "TopK: increment must be an integer greater or equal to 0" + " " * 28 + "and smaller or equal to 100,000",
    )
    refused("bad list option", lambda: r.execute_command("TOPK.LIST", p + "t", "WITHCOUNTS"), "WITHCOUNT keyword expected")
    r.set(p + "string", "x")
    try:
        topk.add(p + "string", "a")
        sys.exit("a string key accepted TOPK.ADD")
    except redis.ResponseError as e:
        check("wrong type", str(e).split()[0], "WRONGTYPE")
    print("ok")


if __name__ == "__main__":
    main()
