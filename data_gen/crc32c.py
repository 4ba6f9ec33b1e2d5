"""CRC-32C (Castagnoli), as TFRecord framing needs it, without TensorFlow.

Uses the C package `google_crc32c` when installed. The fallback is numpy:
CRC is linear over GF(2), so for a message of n >= 4 bytes

    crc(m) = XOR_i T[n-1-i][m'[i]]

where m' is m with the initial register (0xFFFFFFFF) XORed into its first 4
bytes and T[k][b] is the raw register after byte b followed by k zero bytes.
With T precomputed for k < BLOCK, a message is a few numpy operations per
BLOCK bytes instead of a Python loop per byte.
"""
import numpy as np

try:  # optional accelerator (Apache-2.0); the fallback below is always correct
    import google_crc32c as _google_crc32c
except ImportError:  # pragma: no cover - depends on the environment
    _google_crc32c = None

_POLY = 0x82F63B78  # reflected Castagnoli polynomial
BLOCK = 2048


def _byte_table():
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ _POLY if crc & 1 else crc >> 1
        table.append(crc)
    return table


_TABLE = _byte_table()
_TABLE_NP = np.array(_TABLE, dtype=np.uint32)
_POSITION_TABLES = None  # shape [BLOCK, 256]: row k = register after byte, then k zeros


def _position_tables():
    global _POSITION_TABLES
    if _POSITION_TABLES is None:
        tables = np.empty((BLOCK, 256), dtype=np.uint32)
        row = _TABLE_NP.copy()
        for k in range(BLOCK):
            tables[k] = row
            row = _TABLE_NP[row & 0xFF] ^ (row >> 8)
        _POSITION_TABLES = tables
    return _POSITION_TABLES


def crc32c_python(data, crc=0):
    """Byte-at-a-time reference implementation (slow; for tests and tiny data)."""
    crc ^= 0xFFFFFFFF
    table = _TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _crc32c_numpy(data):
    n = len(data)
    if n < 64:  # numpy's fixed cost exceeds the byte loop for short input
        return crc32c_python(data)
    tables = _position_tables()
    message = np.frombuffer(data, dtype=np.uint8)
    register = 0xFFFFFFFF
    for begin in range(0, n, BLOCK):
        block = message[begin:begin + BLOCK]
        if len(block) < 4:  # a short tail: finish byte by byte
            for byte in block.tolist():
                register = _TABLE[(register ^ byte) & 0xFF] ^ (register >> 8)
            break
        block = block.copy()
        block[:4] ^= np.frombuffer(register.to_bytes(4, "little"), dtype=np.uint8)
        length = len(block)
        rows = tables[length - 1::-1]  # row for byte i: k = length - 1 - i
        register = int(np.bitwise_xor.reduce(rows[np.arange(length), block]))
    return register ^ 0xFFFFFFFF


def crc32c(data):
    """CRC-32C of bytes-like `data` as an int."""
    if _google_crc32c is not None:
        return _google_crc32c.value(bytes(data))
    return _crc32c_numpy(data)


def crc32c_many(messages, batch_bytes=1 << 19):
    """CRC-32C of every bytes object in `messages` (list of int), vectorized.

    Messages of 4..BLOCK bytes are done together: each byte's row in the
    position table is (its message's length - 1 - its index), one gather and
    one XOR-reduceat per batch. Others go through crc32c().
    """
    if _google_crc32c is not None:
        return [_google_crc32c.value(bytes(m)) for m in messages]
    results = [0] * len(messages)
    batch = []
    batch_size = 0
    for index, message in enumerate(messages):
        if 4 <= len(message) <= BLOCK:
            batch.append(index)
            batch_size += len(message)
            if batch_size >= batch_bytes:
                _crc_batch(messages, batch, results)
                batch, batch_size = [], 0
        else:
            results[index] = crc32c(message)
    if batch:
        _crc_batch(messages, batch, results)
    return results


def _crc_batch(messages, indexes, results):
    tables = _position_tables()
    lengths = np.fromiter((len(messages[i]) for i in indexes), dtype=np.int64,
                          count=len(indexes))
    data = np.frombuffer(b"".join([messages[i] for i in indexes]), dtype=np.uint8).copy()
    starts = np.zeros(len(indexes), dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    for j in range(4):  # the initial register 0xFFFFFFFF enters the first 4 bytes
        data[starts + j] ^= 0xFF
    # row of byte p in message m: lengths[m] - 1 - (p - starts[m])
    rows = np.repeat(lengths - 1 + starts, lengths) - np.arange(len(data), dtype=np.int64)
    crcs = np.bitwise_xor.reduceat(tables[rows, data], starts) ^ np.uint32(0xFFFFFFFF)
    for i, crc in zip(indexes, crcs.tolist()):
        results[i] = crc


def mask_crc(crc):
    """TFRecord's masking of a CRC value."""
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def masked_crc32c(data):
    """TFRecord's masked CRC: rotate right by 15 and add a constant (mod 2**32)."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def using_accelerator():
    """True when the google_crc32c C extension is in use."""
    return _google_crc32c is not None
