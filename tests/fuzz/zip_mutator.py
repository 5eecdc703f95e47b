"""Structure-aware mutations for zip checkpoints, for the mpamp.load fuzz target.

Zip members carry CRC-32s, so a byte flip inside data.pkl or a storage record is almost always
refused by the zip layer before the unpickler sees it. Most mutations therefore open the
archive, mutate one member (its bytes with libFuzzer's own mutator, or its name, or drop or
copy it) and write a valid archive again; the rest mutate the raw file, which is how the zip
layer itself gets fuzzed.
"""
import io
import random
import warnings
import zipfile


def _members(data):
    """[(name, bytes)] of a readable archive, or None."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            return [(info.filename, zf.read(info)) for info in zf.infolist()]
    except Exception:        # noqa: BLE001 - not a readable archive: mutate it raw
        return None


def _pick(members, rng):
    """Mostly data.pkl (where the interesting structure is), else any member."""
    pkl = [i for i, (name, _) in enumerate(members) if name.endswith("data.pkl")]
    if pkl and rng.random() < 0.6:
        return pkl[0]
    return rng.randrange(len(members))


def _rezip(members):
    buf = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        warnings.simplefilter("ignore")          # duplicate names are one of the mutations
        for name, body in members:
            zf.writestr(zipfile.ZipInfo(name or "x", date_time=(1980, 1, 1, 0, 0, 0)), body)
    return buf.getvalue()


def mutate(data, max_size, seed, raw_mutate):
    """One mutation of data; raw_mutate(bytes, max_size) is libFuzzer's byte-level mutator."""
    rng = random.Random(seed)
    members = _members(data) if rng.random() < 0.8 else None
    if not members:
        return raw_mutate(data, max_size)
    i = _pick(members, rng)
    name, body = members[i]
    op = rng.random()
    if op < 0.85:
        members[i] = (name, raw_mutate(body, max(2 * len(body), 64)))
    elif op < 0.92:
        members[i] = (raw_mutate(name.encode(), 64).decode("utf-8", "replace"), body)
    elif op < 0.96:
        del members[i]
    else:
        members.insert(rng.randrange(len(members) + 1), (name, body))
    out = _rezip(members)
    return out if len(out) <= max_size else raw_mutate(data, max_size)
