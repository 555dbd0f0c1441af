#!/usr/bin/env python3
"""Benchmarks/hitratio/refs.py - the hit-ratio references of `make bench`.

    refs.py traces DIR            writes the synthetic traces (raw big-endian int32 keys) to DIR
    refs.py run OUT.json NAME=PATH...   replays each trace through libCacheSim 0.3.5 (PyPI
                                  `libcachesim`): LRU, Sieve, S3FIFO, ARC, LIRS, TwoQ, WTinyLFU and
                                  Belady, every object of size 1, at 2/10/30 % of the distinct keys

The synthetic traces are deterministic (fixed seeds), so the committed reference file
(Benchmarks/results/hitratio-references.json) stays valid; Benchmarks/run recomputes it only
with --refresh-references. Needs numpy and libcachesim (pip install libcachesim==0.3.5).
"""
import json
import lzma
import os
import struct
import sys
import tempfile

import numpy as np

PCTS = (2, 10, 30)
REFS = ["LRU", "Sieve", "S3FIFO", "ARC", "LIRS", "TwoQ", "WTinyLFU", "Belady"]


def zipf_ranks(rng, n_keys, n_req, alpha):
    w = 1.0 / np.power(np.arange(1, n_keys + 1, dtype=np.float64), alpha)
    cdf = np.cumsum(w)
    cdf /= cdf[-1]
    return np.searchsorted(cdf, rng.random(n_req))


def synthetic():
    """name -> numpy int32 keys. Small enough for a quick replay, large enough to separate."""
    rng = np.random.default_rng(20261202)
    out = {}
    # A loop over 1,000 keys (larger than every cache size), 100 times.
    out["loop"] = np.tile(np.arange(1000, dtype=np.int32), 100)
    # Forward then backward over 1,000 keys: recency-friendly (LRU is optimal here).
    fwd = np.arange(1000, dtype=np.int32)
    out["reverse-loop"] = np.tile(np.concatenate([fwd, fwd[::-1]]), 50)
    # Zipf(0.9) over 10,000 keys; every 10,000 requests a scan of 2,000 one-time keys.
    parts, fresh = [], 1_000_000
    for _ in range(20):
        parts.append(zipf_ranks(rng, 10000, 10000, 0.9).astype(np.int32))
        parts.append(np.arange(fresh, fresh + 2000, dtype=np.int32))
        fresh += 2000
    out["zipf-scan"] = np.concatenate(parts)
    # A working set of 2,000 keys (Zipf 0.8 inside it) that moves to fresh keys every 40,000
    # requests, five times.
    parts = []
    for phase in range(5):
        ranks = zipf_ranks(rng, 2000, 40000, 0.8)
        perm = rng.permutation(2000)
        parts.append((perm[ranks] + phase * 2000).astype(np.int32))
    out["shifting"] = np.concatenate(parts)
    # Pure Zipf(0.99) over 20,000 keys.
    out["zipf"] = rng.permutation(20000)[zipf_ranks(rng, 20000, 400000, 0.99)].astype(np.int32)
    return out


def load(path):
    raw = lzma.open(path).read() if path.endswith(".xz") else open(path, "rb").read()
    return np.frombuffer(raw, dtype=">i4").astype(np.int64)


def oracle_file(keys, path):
    """libCacheSim's oracleGeneral format: packed (u32 time, u64 id, u32 size, i64 next vtime)."""
    n = len(keys)
    nxt = np.full(n, -1, dtype=np.int64)
    last = {}
    # next access index per request (vectorised: sort by key then index)
    order = np.lexsort((np.arange(n), keys))
    sk = keys[order]
    same = sk[1:] == sk[:-1]
    nxt[order[:-1][same]] = order[1:][same]
    rec = np.zeros(n, dtype=[("t", "<u4"), ("id", "<u8"), ("sz", "<u4"), ("nv", "<i8")])
    rec["t"] = np.arange(n, dtype=np.uint32)
    rec["id"] = (keys.astype(np.int64) & 0xFFFFFFFF).astype(np.uint64) + 1
    rec["sz"] = 1
    rec["nv"] = nxt
    rec.tofile(path)
    del last


def run(out_path, specs):
    import libcachesim as lcs
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for spec in specs:
            name, path = spec.split("=", 1)
            keys = load(path)
            distinct = len(np.unique(keys))
            of = os.path.join(tmp, name + ".oracleGeneral")
            oracle_file(keys, of)
            for pct in PCTS:
                size = max(1, distinct * pct // 100)
                for ref in REFS:
                    reader = lcs.TraceReader(of, lcs.TraceType.ORACLE_GENERAL_TRACE)
                    cache = getattr(lcs, ref)(cache_size=size)
                    miss, _ = cache.process_trace(reader)
                    results.append({"trace": name, "requests": int(len(keys)), "distinct": int(distinct),
                                    "size_pct": pct, "size": size, "policy": "lcs-" + ref.lower(),
                                    "hit_ratio": round(1.0 - miss, 6)})
                    print(json.dumps(results[-1]), flush=True)
    with open(out_path, "w") as f:
        json.dump({"libcachesim": lcs.__version__ if hasattr(lcs, "__version__") else "0.3.5",
                   "rows": results}, f, indent=0)
        f.write("\n")


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "traces":
        os.makedirs(sys.argv[2], exist_ok=True)
        for name, keys in synthetic().items():
            keys.astype(">i4").tofile(os.path.join(sys.argv[2], name + ".trace"))
            print(name, len(keys), len(np.unique(keys)))
        return
    if len(sys.argv) >= 4 and sys.argv[1] == "run":
        run(sys.argv[2], sys.argv[3:])
        return
    sys.exit(__doc__)


if __name__ == "__main__":
    main()
