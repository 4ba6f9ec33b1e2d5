"""Tiny vocab and corpus builders shared by the data_gen tests."""
import os
import pathlib

import pytest

SPECIALS = ["[PAD]", "[unused1]", "[unused2]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "<S>"]
ENGLISH = ["hello", "world", "play", "##ing", "##ed", "un", "##want", "run", "##n",
           "the", "a", "##s", "t", "2019", "1", "2", "3", ",", ".", "!", "?"]

# Real Chinese sentences: jieba finds multi-character words in them.
SENTENCES = [
    "中华人民共和国成立于一九四九年。",
    "北京大学的图书馆藏书非常丰富。",
    "我们今天下午去公园散步。",
    "人工智能技术正在改变世界。",
    "这家餐厅的胡辣汤味道很好。",
    "天气预报说明天有大雨。",
    "他在上海工作了三年。",
    "自然语言处理是计算机科学的一个分支。",
    "小明喜欢打篮球和踢足球。",
    "中国的长城是世界著名的建筑。",
    "经济发展需要科技创新。",
    "学生们正在教室里认真学习。",
    "这本书讲述了一个感人的故事。",
    "火车站附近有很多酒店。",
    "妈妈做的饭菜特别好吃。",
    "政府发布了新的环境保护政策。",
]


def corpus_chars():
    chars = set()
    for sentence in SENTENCES:
        chars.update(sentence)
    return sorted(chars)


def write_vocab(directory, extra=(), drop=()):
    """Writes a vocab (specials, English pieces, corpus chars, ## chars) -> path."""
    tokens = [t for t in SPECIALS if t not in drop] + ENGLISH
    tokens += [c for c in corpus_chars() if c not in tokens]
    tokens += ["##" + c for c in corpus_chars()[:10]]  # must never be produced for Chinese
    tokens += [t for t in extra if t not in tokens]
    path = pathlib.Path(directory) / "vocab.txt"
    path.write_text("\n".join(tokens) + "\n", encoding="utf-8")
    return path


def documents(num_documents, sentences_per_document=3, offset=0):
    """Deterministic documents cycling through SENTENCES."""
    docs = []
    index = offset
    for _ in range(num_documents):
        doc = []
        for _ in range(sentences_per_document):
            doc.append(SENTENCES[index % len(SENTENCES)])
            index += 1
        docs.append(doc)
    return docs


def write_corpus(path, docs, newline="\n", bom=False):
    """Writes documents one sentence per line, blank line between documents."""
    text = (newline + newline).join(newline.join(doc) for doc in docs) + newline
    data = text.encode("utf-8")
    if bom:
        data = b"\xef\xbb\xbf" + data
    pathlib.Path(path).write_bytes(data)
    return path


def feature_spec(max_seq_length, max_predictions_per_seq, token_boundary=False):
    """google-research/bert's reader spec (run_pretraining.input_fn_builder)."""
    import tensorflow as tf
    spec = {
        "input_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "input_mask": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "masked_lm_positions": tf.io.FixedLenFeature([max_predictions_per_seq], tf.int64),
        "masked_lm_ids": tf.io.FixedLenFeature([max_predictions_per_seq], tf.int64),
        "masked_lm_weights": tf.io.FixedLenFeature([max_predictions_per_seq], tf.float32),
        "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64),
    }
    if token_boundary:
        spec["token_boundary"] = tf.io.FixedLenFeature([max_seq_length], tf.int64)
    return spec


def read_records(path, max_seq_length, max_predictions_per_seq, token_boundary=False,
                 compression=None):
    """Parses a TFRecord file with tf.data and the BERT spec -> list of numpy dicts."""
    import tensorflow as tf
    spec = feature_spec(max_seq_length, max_predictions_per_seq, token_boundary)
    dataset = tf.data.TFRecordDataset(str(path), compression_type=compression)
    dataset = dataset.map(lambda record: tf.io.parse_single_example(record, spec))
    return [{key: value.numpy() for key, value in example.items()} for example in dataset]


def resident_bytes():
    """This process's resident memory (Linux /proc; skips the test elsewhere)."""
    if not os.path.exists("/proc/self/statm"):
        pytest.skip("needs Linux /proc/self/statm to read the resident memory")
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
