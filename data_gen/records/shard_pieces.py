"""Output shards made of per-chunk pieces: the one layout every runner writes.

Record j of chunk k goes to shard (k + j) mod N, N being the number of output
files. A shard file is its pieces in chunk order; a piece is the chunk's
records for that shard, TFRecord-framed, and with --compression=gzip one
gzip member. So a shard's bytes depend only on the chunks, never on which
process made a piece or when: the local CLI with any --num_workers and the
Beam pipeline on any runner write the same files.
"""
import collections
import dataclasses

from data_gen.records.tfrecord_writer import encode_framed


@dataclasses.dataclass
class ShardPiece:
    """One chunk's records for one shard; `data` is None once a worker has written it."""
    chunk: int
    shard: int
    records: int
    masked: int
    max_id: int
    data: bytes = None


@dataclasses.dataclass
class ChunkOutcome:
    """What a worker returns for chunk `index`: its pieces and its account.

    end: the stream offset where the chunk ends (progress); counts: Counter of
    what was read, skipped and made; timing: its data_gen.runner.worker_profile.ChunkTiming.
    """
    index: int
    end: int
    counts: collections.Counter
    pieces: list
    timing: object = None


def piece_name(chunk, shard):
    return f"chunk-{chunk:09d}-shard-{shard:05d}"


def shard_pieces(result, num_shards, compression):
    """The non-empty ShardPieces of a ChunkResult (data_gen.runner.chunk_processing), by shard."""
    pieces = []
    k = result.chunk_index
    for shard in range(num_shards):
        framed, records, masked, max_id = result.select((shard - k) % num_shards, num_shards)
        if records:
            pieces.append(ShardPiece(k, shard, records, masked, max_id,
                                     data=encode_framed(framed, compression)))
    return pieces


class ShardTotals:
    """Per-shard instance, masked-token and largest-id counts, summed over pieces."""

    def __init__(self, num_shards):
        self.counts = [collections.Counter() for _ in range(num_shards)]
        self.max_ids = [0] * num_shards

    def add(self, piece):
        self.counts[piece.shard]["instances"] += piece.records
        self.counts[piece.shard]["masked_tokens"] += piece.masked
        self.max_ids[piece.shard] = max(self.max_ids[piece.shard], piece.max_id)

    def file_counts(self, shard):
        """The sidecar's file_counts of one shard (both keys, even when zero)."""
        counts = self.counts[shard]
        return {"instances": counts["instances"], "masked_tokens": counts["masked_tokens"]}

    def total(self, key):
        return sum(counts[key] for counts in self.counts)
